// Bias + GeLU (tanh approximation), one thread per element of a [rows, cols]
// activation; the bias is broadcast over the rows.
#include <cuda_runtime.h>

__device__ float gelu(float v) {
  const float k = 0.79788456f;
  return v * 0.5f * (1.0f + tanhf(k * v * (1.0f + 0.044715f * v * v)));
}

// shardproof: launch bias_gelu grid=(3) block=(32)
// shardproof: arg x = float32[4,20]
// shardproof: arg bias = float32[20]
// shardproof: arg out = float32[4,20]
// shardproof: arg rows = 4
// shardproof: arg cols = 20
// shardproof: reference out = (x + bias) * 0.5 * (1.0 + torch.tanh(0.79788456 * (x + bias) * (1 + 0.044715 * (x + bias) * (x + bias))))
__global__ void bias_gelu(const float *x, const float *bias, float *out, int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows * cols)
    return;
  int col = i % cols;
  out[i] = gelu(x[i] + bias[col]);
}
