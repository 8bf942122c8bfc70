// shardproof's stand-in for ATen/cuda/DeviceUtils.cuh (see ATen/ATen.h):
// PyTorch's warp shuffles, as the CUDA intrinsics they call.
#pragma once
#include <ATen/cuda/CUDAContext.h>

template <typename T>
__device__ __forceinline__ T WARP_SHFL_XOR(T value, int laneMask, int width = warpSize,
                                           unsigned int mask = 0xffffffff) {
  return __shfl_xor_sync(mask, value, laneMask, width);
}
template <typename T>
__device__ __forceinline__ T WARP_SHFL(T value, int srcLane, int width = warpSize,
                                       unsigned int mask = 0xffffffff) {
  return __shfl_sync(mask, value, srcLane, width);
}
template <typename T>
__device__ __forceinline__ T WARP_SHFL_UP(T value, unsigned int delta, int width = warpSize,
                                          unsigned int mask = 0xffffffff) {
  return __shfl_up_sync(mask, value, delta, width);
}
template <typename T>
__device__ __forceinline__ T WARP_SHFL_DOWN(T value, unsigned int delta, int width = warpSize,
                                            unsigned int mask = 0xffffffff) {
  return __shfl_down_sync(mask, value, delta, width);
}
