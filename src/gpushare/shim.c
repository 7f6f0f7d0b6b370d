/* libcorral_gpushare.so: caps a job's device memory at its share of a GPU.
 *
 * The agent puts it in LD_PRELOAD of a job that holds a share (isolation "memory") with
 *   CORRAL_GPU_MEMORY_LIMIT  the share in bytes (suffixes k, m, g accepted; 0 or unset: no cap)
 *   CORRAL_GPU_SHARE_FILE    the job's ledger in its run directory (share_ledger.h)
 * (share_contract.h: the names and units the head and the agent write them with).
 *
 * The CUDA runtime does not call the driver through its exported symbols: it dlopen()s
 * libcuda.so.1 and finds entry points with dlsym() and then cuGetProcAddress(). So the shim
 * answers all three ways: it exports the driver's allocation symbols (direct linking), and it
 * wraps dlsym() and cuGetProcAddress/_v2 so that a lookup of a hooked name returns the hook.
 *
 * Allocations past the share fail with CUDA_ERROR_OUT_OF_MEMORY before reaching the driver;
 * cuMemGetInfo and cuDeviceTotalMem report the share (never more than the device has); free
 * memory is never negative. Synchronous, managed, pitched, async, pool and virtual-memory
 * (cuMemCreate) allocations are counted; their frees release what they took.
 *
 * Cooperative: a process that unsets LD_PRELOAD or calls the driver through raw ioctls is not
 * capped (the isolation mode "memory" is recorded as such). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_min.h"
#include "share_contract.h"
#include "share_ledger.h"

#define EXPORT __attribute__((visibility("default")))

typedef void* (*dlsym_fn)(void*, const char*);

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static dlsym_fn g_real_dlsym;
static void* g_libcuda;
static uint64_t g_limit; /* 0: no cap */
static struct share_ledger* g_ledger;

/* Allocation sizes by address (or handle), for frees. Open addressing; grows. */
struct alloc_entry {
  unsigned long long key;
  uint64_t bytes;
};
static struct alloc_entry* g_allocs;
static size_t g_alloc_cap, g_alloc_n;

static dlsym_fn real_dlsym(void) {
  if (!g_real_dlsym) {
    /* The real dlsym, without going through ours: glibc 2.34+ versions it GLIBC_2.34. */
    g_real_dlsym = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!g_real_dlsym) g_real_dlsym = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  }
  return g_real_dlsym;
}

static uint64_t parse_size(const char* s) {
  if (!s || !*s) return 0;
  char* end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  switch (end && *end ? *end : 0) {
    case 'k':
    case 'K':
      return (uint64_t)v << 10;
    case 'm':
    case 'M':
      return (uint64_t)v << 20;
    case 'g':
    case 'G':
      return (uint64_t)v << 30;
    default:
      return (uint64_t)v;
  }
}

static void init(void) {
  g_limit = parse_size(getenv(CORRAL_ENV_GPU_MEMORY_LIMIT));
  g_ledger = share_ledger_open(getenv(CORRAL_ENV_GPU_SHARE_FILE));
  g_libcuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_GLOBAL);
}

static void* real(const char* name) {
  pthread_once(&g_once, init);
  if (!g_libcuda || !real_dlsym()) return NULL;
  return real_dlsym()(g_libcuda, name);
}

static int capped(void) {
  pthread_once(&g_once, init);
  return g_limit > 0 && g_ledger != NULL;
}

static size_t slot_of(unsigned long long key, size_t cap) {
  return (size_t)((key >> 8) * 0x9E3779B97F4A7C15ull) & (cap - 1);
}

static void remember(unsigned long long key, uint64_t bytes) {
  if ((g_alloc_n + 1) * 2 > g_alloc_cap) {
    size_t cap = g_alloc_cap ? g_alloc_cap * 2 : 1024;
    struct alloc_entry* t = calloc(cap, sizeof *t);
    if (!t) return;
    for (size_t i = 0; i < g_alloc_cap; ++i) {
      if (!g_allocs[i].key) continue;
      size_t j = slot_of(g_allocs[i].key, cap);
      while (t[j].key) j = (j + 1) & (cap - 1);
      t[j] = g_allocs[i];
    }
    free(g_allocs);
    g_allocs = t;
    g_alloc_cap = cap;
  }
  size_t j = slot_of(key, g_alloc_cap);
  while (g_allocs[j].key && g_allocs[j].key != key) j = (j + 1) & (g_alloc_cap - 1);
  if (!g_allocs[j].key) ++g_alloc_n;
  g_allocs[j].key = key;
  g_allocs[j].bytes = bytes;
}

/* Removes key and returns its size (0: unknown). Backward-shift deletion keeps probes intact. */
static uint64_t forget(unsigned long long key) {
  if (!g_alloc_cap || !key) return 0;
  size_t j = slot_of(key, g_alloc_cap);
  while (g_allocs[j].key && g_allocs[j].key != key) j = (j + 1) & (g_alloc_cap - 1);
  if (!g_allocs[j].key) return 0;
  uint64_t bytes = g_allocs[j].bytes;
  g_allocs[j].key = 0;
  --g_alloc_n;
  for (size_t k = (j + 1) & (g_alloc_cap - 1); g_allocs[k].key; k = (k + 1) & (g_alloc_cap - 1)) {
    struct alloc_entry e = g_allocs[k];
    g_allocs[k].key = 0;
    size_t h = slot_of(e.key, g_alloc_cap);
    while (g_allocs[h].key) h = (h + 1) & (g_alloc_cap - 1);
    g_allocs[h] = e;
  }
  return bytes;
}

static int reserve(uint64_t bytes) {
  if (!capped()) return 0;
  pthread_mutex_lock(&g_mu);
  int rc = share_ledger_reserve(g_ledger, bytes, g_limit);
  pthread_mutex_unlock(&g_mu);
  return rc;
}

static void unreserve(uint64_t bytes) {
  if (!capped()) return;
  pthread_mutex_lock(&g_mu);
  share_ledger_release(g_ledger, bytes);
  pthread_mutex_unlock(&g_mu);
}

static void track(unsigned long long key, uint64_t bytes) {
  if (!capped()) return;
  pthread_mutex_lock(&g_mu);
  remember(key, bytes);
  pthread_mutex_unlock(&g_mu);
}

static void untrack(unsigned long long key) {
  if (!capped()) return;
  pthread_mutex_lock(&g_mu);
  uint64_t bytes = forget(key);
  if (bytes) share_ledger_release(g_ledger, bytes);
  pthread_mutex_unlock(&g_mu);
}

#define REAL(name, type) ((type)real(name))

/* ---- allocations ---- */

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes) {
  typedef CUresult (*fn)(CUdeviceptr*, size_t);
  fn f = REAL("cuMemAlloc_v2", fn);
  if (!f) return CUDA_ERROR_NOT_FOUND;
  if (reserve(bytes) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult rc = f(dptr, bytes);
  if (rc == CUDA_SUCCESS) {
    track(*dptr, bytes);
  } else {
    unreserve(bytes);
  }
  return rc;
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytes, unsigned int flags) {
  typedef CUresult (*fn)(CUdeviceptr*, size_t, unsigned int);
  fn f = REAL("cuMemAllocManaged", fn);
  if (!f) return CUDA_ERROR_NOT_FOUND;
  if (reserve(bytes) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult rc = f(dptr, bytes, flags);
  if (rc == CUDA_SUCCESS) {
    track(*dptr, bytes);
  } else {
    unreserve(bytes);
  }
  return rc;
}

EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                                   unsigned int elem) {
  typedef CUresult (*fn)(CUdeviceptr*, size_t*, size_t, size_t, unsigned int);
  fn f = REAL("cuMemAllocPitch_v2", fn);
  if (!f) return CUDA_ERROR_NOT_FOUND;
  /* The pitch is known only after; reserve the row rounded up to 512 bytes (the driver's). */
  uint64_t guess = (uint64_t)((width + 511) / 512 * 512) * height;
  if (reserve(guess) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult rc = f(dptr, pitch, width, height, elem);
  if (rc == CUDA_SUCCESS) {
    track(*dptr, guess);
  } else {
    unreserve(guess);
  }
  return rc;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  typedef CUresult (*fn)(CUdeviceptr);
  fn f = REAL("cuMemFree_v2", fn);
  if (!f) return CUDA_ERROR_NOT_FOUND;
  CUresult rc = f(dptr);
  if (rc == CUDA_SUCCESS) untrack(dptr);
  return rc;
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytes, CUstream stream) {
  typedef CUresult (*fn)(CUdeviceptr*, size_t, CUstream);
  fn f = REAL("cuMemAllocAsync", fn);
  if (!f) return CUDA_ERROR_NOT_FOUND;
  if (reserve(bytes) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult rc = f(dptr, bytes, stream);
  if (rc == CUDA_SUCCESS) {
    track(*dptr, bytes);
  } else {
    unreserve(bytes);
  }
  return rc;
}

EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool,
                                        CUstream stream) {
  typedef CUresult (*fn)(CUdeviceptr*, size_t, CUmemoryPool, CUstream);
  fn f = REAL("cuMemAllocFromPoolAsync", fn);
  if (!f) return CUDA_ERROR_NOT_FOUND;
  if (reserve(bytes) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult rc = f(dptr, bytes, pool, stream);
  if (rc == CUDA_SUCCESS) {
    track(*dptr, bytes);
  } else {
    unreserve(bytes);
  }
  return rc;
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) {
  typedef CUresult (*fn)(CUdeviceptr, CUstream);
  fn f = REAL("cuMemFreeAsync", fn);
  if (!f) return CUDA_ERROR_NOT_FOUND;
  CUresult rc = f(dptr, stream);
  if (rc == CUDA_SUCCESS) untrack(dptr);
  return rc;
}

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t bytes, const void* prop,
                            unsigned long long flags) {
  typedef CUresult (*fn)(CUmemGenericAllocationHandle*, size_t, const void*, unsigned long long);
  fn f = REAL("cuMemCreate", fn);
  if (!f) return CUDA_ERROR_NOT_FOUND;
  if (reserve(bytes) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult rc = f(handle, bytes, prop, flags);
  if (rc == CUDA_SUCCESS) {
    track(*handle, bytes);
  } else {
    unreserve(bytes);
  }
  return rc;
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  typedef CUresult (*fn)(CUmemGenericAllocationHandle);
  fn f = REAL("cuMemRelease", fn);
  if (!f) return CUDA_ERROR_NOT_FOUND;
  CUresult rc = f(handle);
  if (rc == CUDA_SUCCESS) untrack(handle);
  return rc;
}

/* ---- what the job is told ---- */

EXPORT CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  typedef CUresult (*fn)(size_t*, size_t*);
  fn f = REAL("cuMemGetInfo_v2", fn);
  if (!f) return CUDA_ERROR_NOT_FOUND;
  size_t dev_free = 0, dev_total = 0;
  CUresult rc = f(&dev_free, &dev_total);
  if (rc != CUDA_SUCCESS || !capped()) {
    if (free_bytes) *free_bytes = dev_free;
    if (total_bytes) *total_bytes = dev_total;
    return rc;
  }
  pthread_mutex_lock(&g_mu);
  uint64_t used = share_ledger_used(g_ledger);
  pthread_mutex_unlock(&g_mu);
  uint64_t total = g_limit < dev_total ? g_limit : dev_total;
  uint64_t left = used < total ? total - used : 0; /* never negative */
  if (left > dev_free) left = dev_free;
  if (free_bytes) *free_bytes = (size_t)left;
  if (total_bytes) *total_bytes = (size_t)total;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  typedef CUresult (*fn)(size_t*, CUdevice);
  fn f = REAL("cuDeviceTotalMem_v2", fn);
  if (!f) return CUDA_ERROR_NOT_FOUND;
  CUresult rc = f(bytes, dev);
  if (rc == CUDA_SUCCESS && bytes && capped() && g_limit < *bytes) *bytes = (size_t)g_limit;
  return rc;
}

/* ---- lookups ---- */

struct hook {
  const char* name; /* as dlsym sees it */
  const char* base; /* as cuGetProcAddress sees it (no _vN suffix) */
  void* fn;
};

EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags);
EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                    int* status);

static const struct hook k_hooks[] = {
    {"cuMemAlloc_v2", "cuMemAlloc", (void*)cuMemAlloc_v2},
    {"cuMemAllocManaged", "cuMemAllocManaged", (void*)cuMemAllocManaged},
    {"cuMemAllocPitch_v2", "cuMemAllocPitch", (void*)cuMemAllocPitch_v2},
    {"cuMemFree_v2", "cuMemFree", (void*)cuMemFree_v2},
    {"cuMemAllocAsync", "cuMemAllocAsync", (void*)cuMemAllocAsync},
    {"cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync", (void*)cuMemAllocFromPoolAsync},
    {"cuMemFreeAsync", "cuMemFreeAsync", (void*)cuMemFreeAsync},
    {"cuMemCreate", "cuMemCreate", (void*)cuMemCreate},
    {"cuMemRelease", "cuMemRelease", (void*)cuMemRelease},
    {"cuMemGetInfo_v2", "cuMemGetInfo", (void*)cuMemGetInfo_v2},
    {"cuDeviceTotalMem_v2", "cuDeviceTotalMem", (void*)cuDeviceTotalMem_v2},
    {"cuGetProcAddress", "cuGetProcAddress", (void*)cuGetProcAddress},
    {"cuGetProcAddress_v2", "cuGetProcAddress_v2", (void*)cuGetProcAddress_v2},
};
#define HOOK_COUNT (sizeof k_hooks / sizeof k_hooks[0])

static void* hook_by_name(const char* name) {
  for (size_t i = 0; i < HOOK_COUNT; ++i) {
    if (strcmp(name, k_hooks[i].name) == 0) return k_hooks[i].fn;
  }
  return NULL;
}

static void* hook_by_base(const char* base) {
  for (size_t i = 0; i < HOOK_COUNT; ++i) {
    if (strcmp(base, k_hooks[i].base) == 0) return k_hooks[i].fn;
  }
  return NULL;
}

EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  typedef CUresult (*fn)(const char*, void**, int, cuuint64_t);
  fn f = REAL("cuGetProcAddress", fn);
  if (!f) return CUDA_ERROR_NOT_FOUND;
  CUresult rc = f(symbol, pfn, version, flags);
  if (rc == CUDA_SUCCESS && symbol && pfn && *pfn) {
    void* h = hook_by_base(symbol);
    if (h) *pfn = h;
  }
  return rc;
}

EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                    int* status) {
  typedef CUresult (*fn)(const char*, void**, int, cuuint64_t, int*);
  fn f = REAL("cuGetProcAddress_v2", fn);
  if (!f) return CUDA_ERROR_NOT_FOUND;
  CUresult rc = f(symbol, pfn, version, flags, status);
  if (rc == CUDA_SUCCESS && symbol && pfn && *pfn) {
    void* h = hook_by_base(symbol);
    if (h) *pfn = h;
  }
  return rc;
}

/* RTLD_NEXT means "after the caller", and the real dlsym takes the caller from its return
 * address, which here is the shim: emulate it by searching the objects loaded after the
 * caller's, in load order (an interposer of malloc calling dlsym(RTLD_NEXT, "malloc") must
 * not find itself). */
struct next_search {
  const char* caller; /* the caller's object path */
  const char* name;
  int past; /* the caller's object was seen */
  void* found;
};

static int next_in(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  struct next_search* s = data;
  const char* path = info->dlpi_name ? info->dlpi_name : "";
  if (!s->past) {
    if (strcmp(path, s->caller) == 0) s->past = 1;
    return 0;
  }
  void* h = dlopen(*path ? path : NULL, RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return 0;
  void* f = real_dlsym()(h, s->name);
  dlclose(h);
  if (f) {
    s->found = f;
    return 1;
  }
  return 0;
}

static void* dlsym_next(const char* name, const void* caller_addr) {
  Dl_info info;
  if (!dladdr(caller_addr, &info) || !info.dli_fname) return real_dlsym()(RTLD_NEXT, name);
  struct next_search s = {info.dli_fname, name, 0, NULL};
  dl_iterate_phdr(next_in, &s);
  if (!s.past) { /* the caller is the main program: its object has no name there */
    s.caller = "";
    dl_iterate_phdr(next_in, &s);
  }
  return s.found;
}

/* dlsym(handle, "cuMemAlloc_v2") on libcuda's handle would bypass the exported hooks. */
EXPORT void* dlsym(void* handle, const char* name) {
  dlsym_fn f = real_dlsym();
  if (!f) return NULL;
  if (name[0] == 'c' && name[1] == 'u') {
    void* h = hook_by_name(name);
    if (h) {
      /* Only where the library looked in has the symbol (a probe for a missing one stays
       * missing). */
      return f(handle, name) ? h : NULL;
    }
  }
  if (handle == RTLD_NEXT) return dlsym_next(name, __builtin_return_address(0));
  return f(handle, name);
}
