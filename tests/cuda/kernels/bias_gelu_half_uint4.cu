// Bias + GeLU over float16 rows in the style of DeepSpeed inference: each
// thread moves sixteen bytes (eight halves) with one uint4 load or store
// (mem_access::load_global<16>); the bias load is predicated, zero when
// there is no bias.
#include <cuda_fp16.h>

#include "mem_access.cuh"

__device__ float gelu(float x) {
  return x * 0.5f * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
}

// shardproof: launch bias_gelu_half grid=(2) block=(2)
// shardproof: arg input = float16[2,16]
// shardproof: arg bias = float16[16]
// shardproof: arg out = float16[2,16]
// shardproof: arg total = 32
// shardproof: arg cols = 16
// shardproof: reference out = (input + bias) * 0.5 * (1.0 + torch.tanh(0.7978845608 * ((input + bias) + 0.044715 * (input + bias) * (input + bias) * (input + bias))))
__global__ void bias_gelu_half(const __half *input, const __half *bias, __half *out,
                               int total, int cols) {
  constexpr int vals = 16 / sizeof(__half);
  int offset = (blockIdx.x * blockDim.x + threadIdx.x) * vals;
  if (offset < total) {
    __half data[vals];
    __half data_bias[vals];
    mem_access::load_global<16>(data, input + offset);
    mem_access::load_global<16>(data_bias, bias + offset % cols, bias != nullptr);
    for (int i = 0; i < vals; i++) {
      float x = __half2float(data[i]) + __half2float(data_bias[i]);
      data[i] = __float2half(gelu(x));
    }
    mem_access::store_global<16>(out + offset, data);
  }
}
