// A kernel clang cannot parse (a missing semicolon).
#include <cuda_runtime.h>

// shardproof: launch broken grid=(1) block=(8)
// shardproof: arg x = float32[8]
// shardproof: reference x = x
__global__ void broken(float *x) {
  x[threadIdx.x] = 1.0f
}
