// The flag barrier and the float sums of the all-reduce test kernels
// (all_reduce_*.cu). The barrier is in the style of vLLM's custom
// all-reduce: every rank's flags are [barrier][block][peer]; thread p of a
// block sets this rank's flag in peer p's flags, after a system fence, then
// waits for peer p's in its own.
#pragma once
#include <cuda_fp16.h>
#include <cuda_runtime.h>

// Elements summed in float, whatever their type.
__device__ inline float to_float(float x) { return x; }
__device__ inline float to_float(__half x) { return __half2float(x); }
template <typename T> __device__ inline T from_float(float x);
template <> __device__ inline float from_float<float>(float x) { return x; }
template <> __device__ inline __half from_float<__half>(float x) { return __float2half(x); }

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
