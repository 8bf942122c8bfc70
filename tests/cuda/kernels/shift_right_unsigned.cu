// Shifts a vector right by one with a 64-bit unsigned index: thread 0's
// index wraps to 2^64 - 1, which the bounds test rejects.
#include <cuda_runtime.h>

// shardproof: launch shift_right grid=(1) block=(8)
// shardproof: arg x = float32[8]
// shardproof: arg out = float32[8]
// shardproof: reference out = torch.cat([torch.zeros(1), x[:-1]])
__global__ void shift_right(const float *x, float *out) {
  size_t i = (size_t)threadIdx.x - 1;
  out[threadIdx.x] = i < 8 ? x[i] : 0.0f;
}
