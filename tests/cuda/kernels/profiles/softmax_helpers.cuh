// Helpers in the style of apex's and Megatron's fused softmax headers
// (written for these tests): per-lane vector copies, reduction functors and
// a warp reduction over WARP_BATCH rows at once.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include <limits>

#define C10_WARP_SIZE 32

template <typename T, int N>
__device__ __inline__ void copy_vector(T *dst, const T *src) {
#pragma unroll
  for (int k = 0; k < N; ++k)
    dst[k] = src[k];
}

template <typename T> struct Add {
  __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};

template <typename T> struct Max {
  __device__ __forceinline__ T operator()(T a, T b) const { return a < b ? b : a; }
};

template <typename T>
__device__ __forceinline__ T WARP_SHFL_XOR_NATIVE(T value, int lane_mask,
                                                  int width = warpSize,
                                                  unsigned int mask = 0xffffffff) {
  return __shfl_xor_sync(mask, value, lane_mask, width);
}

template <typename acc_t, int WARP_BATCH, int WARP_SIZE,
          template <typename> class ReduceOp>
__device__ __forceinline__ void warp_reduce(acc_t *values) {
  ReduceOp<acc_t> op;
#pragma unroll
  for (int offset = WARP_SIZE / 2; offset > 0; offset /= 2) {
#pragma unroll
    for (int i = 0; i < WARP_BATCH; ++i) {
      acc_t other = WARP_SHFL_XOR_NATIVE(values[i], offset, WARP_SIZE);
      values[i] = op(values[i], other);
    }
  }
}
