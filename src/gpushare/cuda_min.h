/* The few CUDA driver API types the share shim and the test stub use, declared here so that
 * neither needs the CUDA toolkit (the driver ABI is stable: these are the _v2 entry points). */
#ifndef CORRAL_GPUSHARE_CUDA_MIN_H
#define CORRAL_GPUSHARE_CUDA_MIN_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void* CUstream;
typedef void* CUcontext;
typedef void* CUmemoryPool;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef uint64_t cuuint64_t;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_FOUND 500

#endif
