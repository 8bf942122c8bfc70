// RUN: shardproof-divergent-barrier
// A pairwise sum whose barrier sits inside the branch only the lower half of
// the block takes: the upper half never reaches it.
#include <cuda_runtime.h>

// shardproof: launch fold grid=(1) block=(32)
// shardproof: arg x = float32[32]
// shardproof: arg out = float32[16]
// shardproof: reference out = x[:16] + x[16:]
__global__ void fold(const float *x, float *out) {
  __shared__ float upper[16];
  int tid = threadIdx.x;
  if (tid >= 16)
    upper[tid - 16] = x[tid];
  if (tid < 16) {
    __syncthreads();
// CHECK-MESSAGES: :[[@LINE-1]]:5: warning: __syncthreads() is reached by thread (0,0,0) of block (0,0,0) but not by thread (16,0,0) of block (0,0,0), which has not exited: a barrier in divergent code [shardproof-divergent-barrier]
    out[tid] = x[tid] + upper[tid];
  }
}
