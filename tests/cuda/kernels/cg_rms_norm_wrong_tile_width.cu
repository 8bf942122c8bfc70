// The cooperative-groups RMS norm with tiles of 16 threads whose reduction
// still takes the offsets of an 8-thread tile (4, 2, 1): each lane sums only
// its half of the tile, and the leader's partial leaves out lanes 8-15.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

namespace cg = cooperative_groups;

constexpr unsigned kTile = 16;
constexpr int kMaxTiles = 32;
constexpr int kReduceLanes = 8;

template <unsigned kWidth>
__device__ float tile_sum(const cg::thread_block_tile<kWidth> &tile, float v) {
#pragma unroll
  for (int offset = kReduceLanes / 2; offset > 0; offset /= 2)
    v += tile.shfl_xor(v, offset);
  return v;
}

// shardproof: launch rms_norm_tiles grid=(2) block=(64)
// shardproof: arg x = float32[2,96]
// shardproof: arg weight = float32[96]
// shardproof: arg out = float32[2,96]
// shardproof: arg cols = 96
// shardproof: arg eps = 1e-5
// shardproof: reference out = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight
__global__ void rms_norm_tiles(const float *x, const float *weight, float *out, int cols,
                               float eps) {
  __shared__ float partials[kMaxTiles];
  __shared__ float inv_rms;
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<kTile> tile = cg::tiled_partition<kTile>(block);
  const float *row = x + block.group_index().x * cols;
  float squares = 0.0f;
  for (int c = block.thread_rank(); c < cols; c += block.size())
    squares += row[c] * row[c];
  squares = tile_sum(tile, squares);
  if (tile.thread_rank() == 0)
    partials[tile.meta_group_rank()] = squares;
  block.sync();
  if (tile.meta_group_rank() == 0) {
    float total = 0.0f;
    if (tile.thread_rank() < tile.meta_group_size())
      total = partials[tile.thread_rank()];
    total = tile_sum(tile, total);
    if (tile.thread_rank() == 0)
      inv_rms = rsqrtf(total / cols + eps);
  }
  block.sync();
  for (int c = block.thread_rank(); c < cols; c += block.size())
    out[block.group_index().x * cols + c] = row[c] * inv_rms * weight[c];
}
