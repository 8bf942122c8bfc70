// A scaled, causally masked softmax over a [32, 32] score matrix: one warp
// per query row, one key per lane; keys after the query are -inf.
#include <cuda_runtime.h>
#include <math.h>

__device__ float row_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

__device__ float row_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// shardproof: launch causal_softmax grid=(8) block=(32,4)
// shardproof: arg scores = float32[32,32]
// shardproof: arg probs = float32[32,32]
// shardproof: arg scale = 0.5
// shardproof: reference probs = torch.softmax((scores * scale).masked_fill(torch.ones(32, 32).triu(1).bool(), float('-inf')), dim=-1)
__global__ void causal_softmax(const float *scores, float *probs, float scale) {
  int query = blockIdx.x * blockDim.y + threadIdx.y;
  int key = threadIdx.x;
  float v = key > query ? -INFINITY : scores[query * 32 + key] * scale;
  float e = expf(v - row_max(v));
  probs[query * 32 + key] = e / row_sum(e);
}
