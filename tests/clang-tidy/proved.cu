// RUN: shardproof-shared-memory-race,shardproof-out-of-bounds,shardproof-divergent-barrier,shardproof-kernel-mismatch,shardproof-uninitialised-read
// CHECK-MESSAGES-NOT: warning:
// A block reduction with a barrier after every step, guarded and proved equal
// to its reference: no check reports anything.
#include <cuda_runtime.h>

// shardproof: launch row_sum<8> grid=(2) block=(8)
// shardproof: arg x = float32[2,8]
// shardproof: arg out = float32[2]
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
    __syncthreads();
  }
  if (tid == 0)
    out[blockIdx.x] = partial[0];
}
