// A scaled softmax over rows of 64, one warp per row: each lane holds two
// elements, the row's max and sum are reduced with xor shuffles.
#include <cuda_runtime.h>

constexpr unsigned kFullMask = 0xffffffffu;

__device__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(kFullMask, v, offset, 32));
  return v;
}

__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_xor_sync(kFullMask, v, offset, 32);
  return v;
}

// shardproof: launch scaled_softmax grid=(2) block=(32,2)
// shardproof: arg x = float32[4,64]
// shardproof: arg out = float32[4,64]
// shardproof: arg cols = 64
// shardproof: arg scale = 0.125
// shardproof: reference out = torch.softmax(x * scale, dim=-1)
__global__ void scaled_softmax(const float *x, float *out, int cols, float scale) {
  int row = blockIdx.x * blockDim.y + threadIdx.y;
  const float *in = x + row * cols;
  float a = in[threadIdx.x] * scale;
  float b = in[threadIdx.x + 32] * scale;
  float m = warp_max(fmaxf(a, b));
  float ea = expf(a - m), eb = expf(b - m);
  float total = warp_sum(ea + eb);
  out[row * cols + threadIdx.x] = ea / total;
  out[row * cols + threadIdx.x + 32] = eb / total;
}
