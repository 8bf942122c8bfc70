// warp_sum_syncwarp.cu relying on implicit warp lockstep: no __syncwarp
// between one step's writes and the next step's reads of them.
#include <cuda_runtime.h>

// shardproof: launch warp_sum grid=(2) block=(32)
// shardproof: arg x = float32[2,32]
// shardproof: arg out = float32[2]
// shardproof: reference out = x.sum(dim=1)
__global__ void warp_sum(const float *x, float *out) {
  __shared__ float partial[32];
  unsigned lane = threadIdx.x;
  partial[lane] = x[blockIdx.x * 32 + lane];
  __syncwarp();
  for (int stride = 16; stride > 0; stride /= 2) {
    float other = lane < stride ? partial[lane + stride] : 0.0f;
    __syncwarp();
    if (lane < stride)
      partial[lane] += other;
  }
  if (lane == 0)
    out[blockIdx.x] = partial[0];
}
