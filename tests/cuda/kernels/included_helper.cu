// A kernel calling a helper of a header beside it, with a default argument
// and a macro constant that is a float literal.
#include "kernel_helpers.cuh"

// shardproof: launch shift_double grid=(1) block=(16)
// shardproof: arg x = float32[16]
// shardproof: arg out = float32[16]
// shardproof: reference out = (x + 1e-5) * 2
__global__ void shift_double(const float *x, float *out) {
  out[threadIdx.x] = shifted_double(x[threadIdx.x]);
}
