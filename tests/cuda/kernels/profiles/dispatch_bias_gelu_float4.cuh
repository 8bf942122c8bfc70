// Bias + GeLU in place behind a host entry, in the style of DeepSpeed
// inference's launch_bias_gelu (written for these tests): each thread moves
// one float4 at VALUES_PER_THREAD elements past the one before.
#pragma once
#include <cuda_runtime.h>

__device__ __forceinline__ float gelu(const float x) {
  const float sqrt_param = 0.79788456080286535587989211986876f;
  const float mul_param = 0.044715;
  return x * 0.5f * (1.0f + tanhf(sqrt_param * (x + mul_param * x * x * x)));
}

template <typename T>
__global__ void fused_bias_gelu(T *input, const T *bias, int total_count,
                                int intermediate_size) {
  constexpr int values_per_access = sizeof(float4) / sizeof(T);
  const int offset = (blockIdx.x * blockDim.x + threadIdx.x) * VALUES_PER_THREAD;
  if (offset < total_count) {
    T data[values_per_access];
    T data_bias[values_per_access];
    *reinterpret_cast<float4 *>(data) = *reinterpret_cast<const float4 *>(input + offset);
    *reinterpret_cast<float4 *>(data_bias) =
        *reinterpret_cast<const float4 *>(bias + offset % intermediate_size);
#pragma unroll
    for (int i = 0; i < values_per_access; i++)
      data[i] = gelu(data[i] + data_bias[i]);
    *reinterpret_cast<float4 *>(input + offset) = *reinterpret_cast<float4 *>(data);
  }
}

template <typename T>
void launch_bias_gelu(T *input, const T *bias, int intermediate_size, int batch_size,
                      cudaStream_t stream) {
  constexpr int threads = 256;
  constexpr int values_per_access = sizeof(float4) / sizeof(T);
  const int total_count = batch_size * intermediate_size;
  const int elems_per_block = threads * values_per_access;
  dim3 block_dims(threads);
  dim3 grid_dims((total_count + elems_per_block - 1) / elems_per_block);
  fused_bias_gelu<<<grid_dims, block_dims, 0, stream>>>(input, bias, total_count,
                                                        intermediate_size);
}

template void launch_bias_gelu<float>(float *, const float *, int, int, cudaStream_t);
