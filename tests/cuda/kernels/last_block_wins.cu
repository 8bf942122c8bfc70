// Every block writes the same output element: which block's value remains
// depends on the scheduling.
#include <cuda_runtime.h>

// shardproof: launch last_block_wins grid=(2) block=(4)
// shardproof: arg x = float32[2]
// shardproof: arg out = float32[1]
// shardproof: reference out = x[1:2]
__global__ void last_block_wins(const float *x, float *out) {
  if (threadIdx.x == 0)
    out[0] = x[blockIdx.x];
}
