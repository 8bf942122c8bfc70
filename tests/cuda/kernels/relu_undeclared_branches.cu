// A register declared without a value and assigned on both sides of a
// data-dependent branch: the two sides merge into one choice.
#include <cuda_runtime.h>

// shardproof: launch relu grid=(1) block=(8)
// shardproof: arg x = float32[8]
// shardproof: arg out = float32[8]
// shardproof: reference out = torch.clamp(x, min=0.0)
__global__ void relu(const float *x, float *out) {
  float v;
  if (x[threadIdx.x] > 0.0f)
    v = x[threadIdx.x];
  else
    v = 0.0f;
  out[threadIdx.x] = v;
}
