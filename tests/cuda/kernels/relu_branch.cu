// A data-dependent branch that only assigns a register: lifted as a choice.
#include <cuda_runtime.h>

// shardproof: launch relu grid=(1) block=(8)
// shardproof: arg x = float32[8]
// shardproof: arg out = float32[8]
// shardproof: reference out = torch.clamp(x, min=0.0)
__global__ void relu(const float *x, float *out) {
  float v = x[threadIdx.x];
  if (v < 0.0f)
    v = 0.0f;
  out[threadIdx.x] = v;
}
