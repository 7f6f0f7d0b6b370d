/* A stand-in libcuda.so.1 for the share shim's tests: one fake device of 16 GiB whose memory
 * this process allocates from. Entry points are found the ways the CUDA runtime finds them:
 * exported symbols, dlsym, and cuGetProcAddress(_v2) by base name. */
#include <string.h>

#include "../cuda_min.h"

#define EXPORT __attribute__((visibility("default")))

static const unsigned long long kTotal = 16ull << 30;
static unsigned long long g_used;
static unsigned long long g_next = 0x100000000ull;

struct block {
  unsigned long long addr, bytes;
};
static struct block g_blocks[4096];

static CUresult take(CUdeviceptr* p, size_t bytes) {
  if (!p || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (bytes > kTotal - g_used) return CUDA_ERROR_OUT_OF_MEMORY;
  for (int i = 0; i < 4096; ++i) {
    if (g_blocks[i].addr) continue;
    g_blocks[i].addr = g_next;
    g_blocks[i].bytes = bytes;
    *p = g_next;
    g_next += (bytes + 0xfffff) & ~0xfffffull;
    g_used += bytes;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult give(unsigned long long addr) {
  for (int i = 0; i < 4096; ++i) {
    if (g_blocks[i].addr != addr) continue;
    g_used -= g_blocks[i].bytes;
    g_blocks[i].addr = 0;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuInit(unsigned int flags) { return flags == 0 ? CUDA_SUCCESS : 1; }
EXPORT CUresult cuDeviceGet(CUdevice* d, int ordinal) {
  if (!d || ordinal != 0) return CUDA_ERROR_INVALID_VALUE;
  *d = 0;
  return CUDA_SUCCESS;
}
/* A real driver wants a current context before memory calls; the stub has one, always. */
static char g_context;
EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice d) {
  if (!ctx || d != 0) return CUDA_ERROR_INVALID_VALUE;
  *ctx = &g_context;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  return ctx == &g_context ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice d) {
  if (!bytes || d != 0) return CUDA_ERROR_INVALID_VALUE;
  *bytes = kTotal;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total) {
  *free_bytes = kTotal - g_used;
  *total = kTotal;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t bytes) { return take(p, bytes); }
EXPORT CUresult cuMemFree_v2(CUdeviceptr p) { return give(p); }
EXPORT CUresult cuMemAllocAsync(CUdeviceptr* p, size_t bytes, CUstream s) {
  (void)s;
  return take(p, bytes);
}
EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* p, size_t bytes, CUmemoryPool pool,
                                        CUstream s) {
  (void)pool;
  (void)s;
  return take(p, bytes);
}
EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) {
  (void)s;
  return give(p);
}

EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags);

static const struct {
  const char* base;
  void* fn;
} k_table[] = {
    {"cuInit", (void*)cuInit},
    {"cuDeviceGet", (void*)cuDeviceGet},
    {"cuDevicePrimaryCtxRetain", (void*)cuDevicePrimaryCtxRetain},
    {"cuCtxSetCurrent", (void*)cuCtxSetCurrent},
    {"cuDeviceTotalMem", (void*)cuDeviceTotalMem_v2},
    {"cuMemGetInfo", (void*)cuMemGetInfo_v2},
    {"cuMemAlloc", (void*)cuMemAlloc_v2},
    {"cuMemFree", (void*)cuMemFree_v2},
    {"cuMemAllocAsync", (void*)cuMemAllocAsync},
    {"cuMemAllocFromPoolAsync", (void*)cuMemAllocFromPoolAsync},
    {"cuMemFreeAsync", (void*)cuMemFreeAsync},
    {"cuGetProcAddress", (void*)cuGetProcAddress},
};

EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  (void)version;
  (void)flags;
  for (size_t i = 0; i < sizeof k_table / sizeof k_table[0]; ++i) {
    if (strcmp(symbol, k_table[i].base) == 0) {
      *pfn = k_table[i].fn;
      return CUDA_SUCCESS;
    }
  }
  *pfn = 0;
  return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                    int* status) {
  CUresult rc = cuGetProcAddress(symbol, pfn, version, flags);
  if (status) *status = rc == CUDA_SUCCESS ? 0 : 1;
  return rc;
}
