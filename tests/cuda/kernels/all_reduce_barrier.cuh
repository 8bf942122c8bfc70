// The flag barrier of the all-reduce test kernels (all_reduce_*.cu), in the
// style of vLLM's custom all-reduce: every rank's flags are
// [barrier][block][peer]; thread p of a block sets this rank's flag in peer
// p's flags, after a system fence, then waits for peer p's in its own.
#pragma once
#include <cuda_runtime.h>

template <int NRANKS>
__device__ void barrier_across_ranks(unsigned *const *signals, int rank, int barrier) {
  __syncthreads(); // the block's writes so far come before its flags
  if (threadIdx.x < NRANKS) {
    int slot = (barrier * gridDim.x + blockIdx.x) * NRANKS;
    __threadfence_system();
    volatile unsigned *peer_flags = signals[threadIdx.x] + slot;
    peer_flags[rank] = 1;
    volatile unsigned *own_flags = signals[rank] + slot;
    while (own_flags[threadIdx.x] != 1) {
    }
  }
  __syncthreads(); // what the block does next comes after every peer's flag
}
