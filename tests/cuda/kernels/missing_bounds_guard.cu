// Doubles 40 elements with 64 threads and no bounds guard: the second block
// runs past the end of the buffers.
#include <cuda_runtime.h>

// shardproof: launch twice grid=(2) block=(32)
// shardproof: arg x = float32[40]
// shardproof: arg out = float32[40]
// shardproof: reference out = x * 2
__global__ void twice(const float *x, float *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = 2.0f * x[i];
}
