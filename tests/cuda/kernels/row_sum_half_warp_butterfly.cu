// One row of 16 floats per block, summed by a fixed 32-lane butterfly as a
// full warp would: the block has 16 threads, so the offset-16 exchange reads
// lanes past the launch (their values are undefined) and the sum takes them.
#include <cuda_runtime.h>

// shardproof: launch row_sum grid=(2) block=(16)
// shardproof: arg x = float32[2,16]
// shardproof: arg out = float32[2]
// shardproof: reference out = x.sum(-1)
__global__ void row_sum(const float *x, float *out) {
  float v = x[blockIdx.x * blockDim.x + threadIdx.x];
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (threadIdx.x == 0)
    out[blockIdx.x] = v;
}
