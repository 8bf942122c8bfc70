// relu_undeclared_branches.cu without the else: v is undefined for
// negative inputs, which is never proved.
#include <cuda_runtime.h>

// shardproof: launch relu grid=(1) block=(8)
// shardproof: arg x = float32[8]
// shardproof: arg out = float32[8]
// shardproof: reference out = torch.clamp(x, min=0.0)
__global__ void relu(const float *x, float *out) {
  float v;
  if (x[threadIdx.x] > 0.0f)
    v = x[threadIdx.x];
  out[threadIdx.x] = v;
}
