// A memory write under a data-dependent condition, which the lifter does not
// model: never proved.
#include <cuda_runtime.h>

// shardproof: launch clamp_store grid=(1) block=(8)
// shardproof: arg x = float32[8]
// shardproof: arg out = float32[8]
// shardproof: reference out = torch.relu(x)
__global__ void clamp_store(const float *x, float *out) {
  out[threadIdx.x] = 0.0f;
  if (x[threadIdx.x] > 0.0f)
    out[threadIdx.x] = x[threadIdx.x];
}
