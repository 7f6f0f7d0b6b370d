/* A CUDA program in miniature for the share shim's tests. It reaches the driver as the CUDA
 * runtime does (dlopen("libcuda.so.1"), dlsym("cuGetProcAddress"), then cuGetProcAddress), or
 * by dlsym of the _v2 symbol, or by the exported symbol (linked directly). Commands, in order:
 *   ctx                       makes device 0's primary context current (a real driver needs
 *                             one before cuMemGetInfo and cuMemAlloc); prints "ctx=<N>"
 *   info                      prints "total=<MiB> free=<MiB>" (cuMemGetInfo) and
 *                             "device_total=<MiB>" (cuDeviceTotalMem)
 *   alloc PATH MIB            PATH: gpa | gpa2 | dlsym | direct | async | pool; prints "rc=<N>"
 *   free                      frees the last allocation through the gpa path; prints "rc=<N>"
 *   next                      prints "next=ok" if dlsym(RTLD_NEXT, "dlsym") finds the first
 *                             definition after the program
 *   hold                      prints "holding" and sleeps until killed
 * Exit status 0 unless a command could not run. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../cuda_min.h"

CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t bytes); /* linked: the direct path */

typedef CUresult (*gpa_fn)(const char*, void**, int, cuuint64_t);
typedef CUresult (*gpa2_fn)(const char*, void**, int, cuuint64_t, int*);
typedef CUresult (*alloc_fn)(CUdeviceptr*, size_t);
typedef CUresult (*alloc_async_fn)(CUdeviceptr*, size_t, CUstream);
typedef CUresult (*alloc_pool_fn)(CUdeviceptr*, size_t, CUmemoryPool, CUstream);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*info_fn)(size_t*, size_t*);
typedef CUresult (*total_fn)(size_t*, CUdevice);

static void* g_cuda;
static gpa_fn g_gpa;

static void* lookup(const char* base) {
  void* f = NULL;
  if (g_gpa(base, &f, 12000, 0) != CUDA_SUCCESS) return NULL;
  return f;
}

int main(int argc, char** argv) {
  g_cuda = dlopen("libcuda.so.1", RTLD_NOW);
  if (!g_cuda) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 3;
  }
  g_gpa = (gpa_fn)dlsym(g_cuda, "cuGetProcAddress");
  if (!g_gpa) return 3;
  ((CUresult(*)(unsigned))lookup("cuInit"))(0);
  CUdeviceptr last = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "ctx") == 0) {
      typedef CUresult (*retain_fn)(CUcontext*, CUdevice);
      typedef CUresult (*set_fn)(CUcontext);
      CUcontext ctx = NULL;
      CUresult rc = ((retain_fn)lookup("cuDevicePrimaryCtxRetain"))(&ctx, 0);
      if (rc == CUDA_SUCCESS) rc = ((set_fn)lookup("cuCtxSetCurrent"))(ctx);
      printf("ctx=%d\n", rc);
    } else if (strcmp(argv[i], "info") == 0) {
      size_t free_b = 0, total_b = 0, dev_total = 0;
      ((info_fn)lookup("cuMemGetInfo"))(&free_b, &total_b);
      ((total_fn)lookup("cuDeviceTotalMem"))(&dev_total, 0);
      printf("total=%zu free=%zu device_total=%zu\n", total_b >> 20, free_b >> 20, dev_total >> 20);
    } else if (strcmp(argv[i], "alloc") == 0 && i + 2 < argc) {
      const char* path = argv[++i];
      size_t bytes = (size_t)strtoull(argv[++i], NULL, 10) << 20;
      CUresult rc = -1;
      if (strcmp(path, "gpa") == 0) {
        rc = ((alloc_fn)lookup("cuMemAlloc"))(&last, bytes);
      } else if (strcmp(path, "gpa2") == 0) {
        gpa2_fn g2 = NULL;
        g_gpa("cuGetProcAddress_v2", (void**)&g2, 12000, 0);
        if (!g2) g2 = (gpa2_fn)dlsym(g_cuda, "cuGetProcAddress_v2");
        void* f = NULL;
        int status = 0;
        g2("cuMemAlloc", &f, 12000, 0, &status);
        rc = ((alloc_fn)f)(&last, bytes);
      } else if (strcmp(path, "dlsym") == 0) {
        rc = ((alloc_fn)dlsym(g_cuda, "cuMemAlloc_v2"))(&last, bytes);
      } else if (strcmp(path, "direct") == 0) {
        rc = cuMemAlloc_v2(&last, bytes);
      } else if (strcmp(path, "async") == 0) {
        rc = ((alloc_async_fn)lookup("cuMemAllocAsync"))(&last, bytes, NULL);
      } else if (strcmp(path, "pool") == 0) {
        rc = ((alloc_pool_fn)lookup("cuMemAllocFromPoolAsync"))(&last, bytes, NULL, NULL);
      } else {
        return 2;
      }
      printf("rc=%d\n", rc);
    } else if (strcmp(argv[i], "free") == 0) {
      printf("rc=%d\n", ((free_fn)lookup("cuMemFree"))(last));
    } else if (strcmp(argv[i], "freeasync") == 0) {
      typedef CUresult (*fa)(CUdeviceptr, CUstream);
      printf("rc=%d\n", ((fa)lookup("cuMemFreeAsync"))(last, NULL));
    } else if (strcmp(argv[i], "next") == 0) {
      /* With the shim preloaded, the first dlsym after the program is the shim's own (from the
       * shim's place it would be libc's). */
      void* next = dlsym(RTLD_NEXT, "dlsym");
      printf("next=%s\n", next && next == dlsym(RTLD_DEFAULT, "dlsym") ? "ok" : "wrong");
    } else if (strcmp(argv[i], "hold") == 0) {
      printf("holding\n");
      fflush(stdout);
      for (;;) pause();
    } else {
      return 2;
    }
    fflush(stdout);
  }
  return 0;
}
