// A data-dependent choice whose arms assign: each arm's write happens only
// on its side of the condition.
#include <cuda_runtime.h>

// shardproof: launch pick grid=(1) block=(8)
// shardproof: arg x = float32[8]
// shardproof: arg out = float32[8]
// Taken: up = 2x, down = x, v = 2x; not taken: up = x, down = x - 1, v = x - 1.
// shardproof: reference out = torch.where(x > 0, 3 * x, x - 2)
__global__ void pick(const float *x, float *out) {
  float up = x[threadIdx.x], down = x[threadIdx.x];
  float v = x[threadIdx.x] > 0.0f ? (up *= 2.0f) : (down -= 1.0f);
  out[threadIdx.x] = v + (up - x[threadIdx.x]) - (x[threadIdx.x] - down);
}
