// Every thread adds its element into one accumulator with atomicAdd.
#include <cuda_runtime.h>

// shardproof: launch atomic_sum grid=(2) block=(16)
// shardproof: arg x = float32[32]
// shardproof: arg out = float32[1]
// shardproof: reference out = out + x.sum().reshape(1)
__global__ void atomic_sum(const float *x, float *out) {
  atomicAdd(out, x[blockIdx.x * blockDim.x + threadIdx.x]);
}
