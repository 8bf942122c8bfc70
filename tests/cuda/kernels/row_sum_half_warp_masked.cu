// row_sum_half_warp_butterfly.cu with each exchange weighted by whether its
// lane is in the launch (branch-free, as vectorised reductions write it):
// what a lane past the launch gave is read and multiplied by 0.
#include <cuda_runtime.h>

// shardproof: launch row_sum grid=(2) block=(16)
// shardproof: arg x = float32[2,16]
// shardproof: arg out = float32[2]
// shardproof: reference out = x.sum(-1)
__global__ void row_sum(const float *x, float *out) {
  float v = x[blockIdx.x * blockDim.x + threadIdx.x];
  for (int offset = 16; offset > 0; offset >>= 1) {
    float live = (threadIdx.x ^ offset) < blockDim.x ? 1.0f : 0.0f;
    v += live * __shfl_xor_sync(0xffffffffu, v, offset);
  }
  if (threadIdx.x == 0)
    out[blockIdx.x] = v;
}
