// A warp vote, which the lifter does not model: never proved.
#include <cuda_runtime.h>

// shardproof: launch count_positive grid=(1) block=(32)
// shardproof: arg x = float32[32]
// shardproof: arg out = float32[32]
// shardproof: reference out = x
__global__ void count_positive(const float *x, float *out) {
  unsigned positive = __ballot_sync(0xffffffffu, threadIdx.x % 2);
  out[threadIdx.x] = positive == 0 ? x[threadIdx.x] : x[threadIdx.x];
}
