// Bias + GeLU over float4 vectors: each thread loads four activations and
// four bias values with one vector load each, and stores four results.
#include <cuda_runtime.h>

__device__ float gelu(float v) {
  return v * 0.5f * (1.0f + tanhf(0.79788456f * v * (1.0f + 0.044715f * v * v)));
}

// shardproof: launch bias_gelu4 grid=(2) block=(8)
// shardproof: arg x = float32[4,16]
// shardproof: arg bias = float32[16]
// shardproof: arg out = float32[4,16]
// shardproof: arg cols = 16
// shardproof: reference out = (x + bias) * 0.5 * (1.0 + torch.tanh(0.79788456 * (x + bias) * (1 + 0.044715 * (x + bias) * (x + bias))))
__global__ void bias_gelu4(const float *x, const float *bias, float *out, int cols) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  float4 v = *reinterpret_cast<const float4 *>(x + i);
  const float4 b = reinterpret_cast<const float4 *>(bias)[(i % cols) / 4];
  float4 r;
  r.x = gelu(v.x + b.x);
  r.y = gelu(v.y + b.y);
  r.z = gelu(v.z + b.z);
  r.w = gelu(v.w + b.w);
  reinterpret_cast<float4 *>(out)[i / 4] = r;
}
