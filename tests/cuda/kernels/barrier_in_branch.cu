// A reduction with its barrier inside the branch that only the first half
// of the block takes: the other half never reaches it.
#include <cuda_runtime.h>

// shardproof: launch half_sum grid=(1) block=(32)
// shardproof: arg x = float32[32]
// shardproof: arg out = float32[16]
// shardproof: reference out = x[:16] + x[16:]
__global__ void half_sum(const float *x, float *out) {
  __shared__ float upper[16];
  int tid = threadIdx.x;
  if (tid >= 16)
    upper[tid - 16] = x[tid];
  if (tid < 16) {
    __syncthreads();
    out[tid] = x[tid] + upper[tid];
  }
}
