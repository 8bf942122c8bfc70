// The two-shot all-reduce of the test kernels (all_reduce_two_shot.cu,
// all_reduce_rank_data.cu), its flag barrier and float sums. The barrier is in the style of vLLM's custom
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

// FENCED: the fence before the flags (all_reduce_no_fence.cu leaves it out).
template <int NRANKS, bool FENCED = true>
__device__ void barrier_across_ranks(unsigned *const *signals, int rank, int barrier) {
  __syncthreads(); // the block's writes so far come before its flags
  if (threadIdx.x < NRANKS) {
    int slot = (barrier * gridDim.x + blockIdx.x) * NRANKS;
    if (FENCED)
      __threadfence_system();
    volatile unsigned *peer_flags = signals[threadIdx.x] + slot;
    peer_flags[rank] = 1;
    volatile unsigned *own_flags = signals[rank] + slot;
    while (own_flags[threadIdx.x] != 1) {
    }
  }
  __syncthreads(); // what the block does next comes after every peer's flag
}

// The two stages: rank `rank`'s launch, its peers' buffers through arrays
// of pointers.
template <typename T, int NRANKS, bool FENCED = true>
__device__ void two_shot(const T *const *inputs, T *const *scratch,
                         unsigned *const *signals, T *out, int rank, int size) {
  int part = size / NRANKS;
  int first = blockIdx.x * blockDim.x + threadIdx.x;
  int stride = gridDim.x * blockDim.x;
  barrier_across_ranks<NRANKS, FENCED>(signals, rank, 0);
  // Stage 1: this rank's slice, summed over the ranks' inputs.
  int begin = rank * part;
  int end = rank == NRANKS - 1 ? size : begin + part;
  for (int i = begin + first; i < end; i += stride) {
    float sum = 0.f;
    for (int p = 0; p < NRANKS; ++p)
      sum += to_float(inputs[p][i]);
    scratch[rank][i] = from_float<T>(sum);
  }
  barrier_across_ranks<NRANKS, FENCED>(signals, rank, 1);
  // Stage 2: each rank's reduced slice, own first, as vLLM orders them.
  for (int k = 0; k < NRANKS; ++k) {
    int peer = (rank + k) % NRANKS;
    int peer_begin = peer * part;
    int peer_end = peer == NRANKS - 1 ? size : peer_begin + part;
    for (int i = peer_begin + first; i < peer_end; i += stride)
      out[i] = scratch[peer][i];
  }
}
