// block_sum.cu without the barrier between the reduction's steps: a thread
// reads partial[tid + stride] while its owner may still be adding into it.
#include <cuda_runtime.h>

// shardproof: launch block_sum<8> grid=(2) block=(8)
// shardproof: arg x = float32[2,8]
// shardproof: arg out = float32[2]
// shardproof: reference out = x.sum(dim=1)
template <int THREADS>
__global__ void block_sum(const float *x, float *out) {
  __shared__ float partial[THREADS];
  int tid = threadIdx.x;
  partial[tid] = x[blockIdx.x * THREADS + tid];
  __syncthreads();
  for (int stride = THREADS / 2; stride > 0; stride >>= 1) {
    if (tid < stride)
      partial[tid] += partial[tid + stride];
  }
  if (tid == 0)
    out[blockIdx.x] = partial[0];
}
