// A block sum whose last step reads a partial sum no thread wrote: the
// shared array has room for 64 partial sums, the block writes 32 of them.
#include <cuda_runtime.h>

// shardproof: launch block_sum grid=(1) block=(32)
// shardproof: arg x = float32[32]
// shardproof: arg out = float32[1]
// shardproof: reference out = x.sum().reshape(1)
__global__ void block_sum(const float *x, float *out) {
  __shared__ float partial[64];
  int tid = threadIdx.x;
  partial[tid] = x[tid];
  __syncthreads();
  if (tid == 0) {
    float total = 0.0f;
    for (int i = 0; i < 64; ++i)
      total += partial[i];
    out[0] = total;
  }
}
