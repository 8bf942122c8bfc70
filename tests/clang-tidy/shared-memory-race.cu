// RUN: shardproof-shared-memory-race
// A block reduction that steps without a barrier between its steps: a thread
// reads partial[tid + stride] while its owner may still be adding into it.
#include <cuda_runtime.h>

// shardproof: launch row_sum<8> grid=(1) block=(8)
// shardproof: arg x = float32[1,8]
// shardproof: arg out = float32[1]
// shardproof: reference out = x.sum(dim=1)
template <int THREADS>
__global__ void row_sum(const float *x, float *out) {
  __shared__ float partial[THREADS];
  int tid = threadIdx.x;
  partial[tid] = x[blockIdx.x * THREADS + tid];
  __syncthreads();
  for (int stride = THREADS / 2; stride > 0; stride >>= 1) {
    if (tid < stride)
      partial[tid] += partial[tid + stride];
// CHECK-MESSAGES: :[[@LINE-1]]:23: warning: shared-memory race on partial[2]: thread (0,0,0) of block (0,0,0) reads it here and thread (2,0,0) of block (0,0,0) writes it at {{.*}}shared-memory-race.cu:18:7 with no barrier between [shardproof-shared-memory-race]
// CHECK-MESSAGES: :[[@LINE-2]]:7: note: thread (2,0,0) of block (0,0,0) writes partial[2] here
  }
  if (tid == 0)
    out[blockIdx.x] = partial[0];
}
