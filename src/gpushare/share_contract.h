/* The contract about a share of a GPU between the head, the agent and the share shim
 * (libcorral_gpushare.so): the variables of a task's environment, who sets each, what it holds
 * and in which unit. The head's job environment (core/task_env.cc), the agent
 * (agent/gpu_share_env.cc, agent/mps.cc) and the shim (shim.c) all spell them from here.
 * Plain C: the shim is C (docs/gpu-sharing.md). */
#ifndef CORRAL_GPUSHARE_SHARE_CONTRACT_H
#define CORRAL_GPUSHARE_SHARE_CONTRACT_H

/* Set by the head for a replica placed on a share of a GPU. */

/* The share, in milli-GPUs (1000: the whole GPU), in decimal. */
#define CORRAL_ENV_GPU_SHARE_MILLI "CORRAL_GPU_SHARE_MILLI"
/* How the node isolates it: the name of a GpuIsolation (core/resources.h), "memory" (the shim)
 * or "mps". */
#define CORRAL_ENV_GPU_ISOLATION "CORRAL_GPU_ISOLATION"
/* The device memory it may use, where the share has a limit: decimal mebibytes followed by
 * CORRAL_GPU_MEMORY_LIMIT_UNIT. The shim reads it (also with k or g, or plain bytes). */
#define CORRAL_ENV_GPU_MEMORY_LIMIT "CORRAL_GPU_MEMORY_LIMIT"
#define CORRAL_GPU_MEMORY_LIMIT_UNIT "m"
/* MPS shares: the memory limit as MPS reads it, "0=" then decimal mebibytes then
 * CORRAL_MPS_MEMORY_LIMIT_UNIT (device 0 of the client's CUDA_VISIBLE_DEVICES). */
#define CORRAL_ENV_MPS_MEMORY_LIMIT "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"
#define CORRAL_MPS_MEMORY_LIMIT_UNIT "M"
/* MPS shares: the share in percent of the GPU's threads, share milli-GPUs / 10, at least 1. */
#define CORRAL_ENV_MPS_THREAD_PERCENTAGE "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"

/* Set by the agent. */

/* Shim shares: the replica's ledger of its processes' allocations (share_ledger.h), a path. */
#define CORRAL_ENV_GPU_SHARE_FILE "CORRAL_GPU_SHARE_FILE"
/* "1": the shim or an MPS server enforces the share; "0": nothing on the node does. */
#define CORRAL_ENV_GPU_SHARE_ENFORCED "CORRAL_GPU_SHARE_ENFORCED"
/* MPS shares: the owner's MPS server for the GPU, its pipe and log directories. */
#define CORRAL_ENV_MPS_PIPE_DIRECTORY "CUDA_MPS_PIPE_DIRECTORY"
#define CORRAL_ENV_MPS_LOG_DIRECTORY "CUDA_MPS_LOG_DIRECTORY"

/* The shim's file name, which the agent looks for beside its own executable and preloads. */
#define CORRAL_GPUSHARE_LIBRARY "libcorral_gpushare.so"

#endif /* CORRAL_GPUSHARE_SHARE_CONTRACT_H */
