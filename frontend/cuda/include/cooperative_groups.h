// shardproof's stand-in for the toolkit's cooperative_groups.h (parsing
// only; the lifter does not model cooperative groups yet).
#pragma once
#include "shardproof_cuda_device.h"

namespace cooperative_groups {
struct thread_block {
  __device__ void sync() const { __syncthreads(); }
  __device__ unsigned thread_rank() const { return threadIdx.x; }
  __device__ unsigned size() const { return blockDim.x; }
};
static __device__ __inline__ thread_block this_thread_block() { return {}; }
} // namespace cooperative_groups
