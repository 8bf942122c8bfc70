// RUN: shardproof-out-of-bounds
// Scales 40 elements with 64 threads and no bounds guard: the second block
// runs past the end of the buffers.
#include <cuda_runtime.h>

// shardproof: launch scale grid=(2) block=(32)
// shardproof: arg x = float32[40]
// shardproof: arg out = float32[40]
// shardproof: reference out = x * 3
__global__ void scale(const float *x, float *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = 3.0f * x[i];
// CHECK-MESSAGES: :[[@LINE-1]]:19: warning: out-of-bounds read of x[40] ('x[i]') by thread (8,0,0) of block (1,0,0): the global buffer has 40 elements [shardproof-out-of-bounds]
}
