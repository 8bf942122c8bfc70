// The partial-warp RMS norm with its last block reading the first row
// instead of its own: rows 0 and 1 are right and alike up to a renaming of
// their inputs (one obligation for both), row 2 is wrong (rows share an
// obligation only when the kernel's and the reference's terms are renamed
// together, never the kernel's alone).
#include <cuda_runtime.h>

constexpr int kWarp = 32;

__device__ float warp_sum(float v, int lanes) {
  unsigned lane = threadIdx.x % kWarp;
  unsigned mask = lanes == kWarp ? 0xffffffffu : (1u << lanes) - 1;
  for (int offset = 16; offset > 0; offset >>= 1) {
    float other = __shfl_down_sync(mask, v, offset);
    if (lane + offset < lanes)
      v += other;
  }
  return v;
}

// shardproof: launch rms_norm grid=(3) block=(48)
// shardproof: arg x = float32[3,96]
// shardproof: arg weight = float32[96]
// shardproof: arg out = float32[3,96]
// shardproof: arg cols = 96
// shardproof: arg eps = 1e-5
// shardproof: reference out = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight
__global__ void rms_norm(const float *x, const float *weight, float *out, int cols,
                         float eps) {
  __shared__ float warp_sums[kWarp];
  __shared__ float inv_rms;
  const float *row = x + (blockIdx.x == gridDim.x - 1 ? 0 : blockIdx.x) * cols;
  float squares = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    squares += row[c] * row[c];
  int warp = threadIdx.x / kWarp;
  int lanes = min(kWarp, (int)blockDim.x - warp * kWarp);
  squares = warp_sum(squares, lanes);
  if (threadIdx.x % kWarp == 0)
    warp_sums[warp] = squares;
  __syncthreads();
  if (threadIdx.x == 0) {
    int warps = (blockDim.x + kWarp - 1) / kWarp;
    float total = 0.0f;
    for (int w = 0; w < warps; ++w)
      total += warp_sums[w];
    inv_rms = rsqrtf(total / cols + eps);
  }
  __syncthreads();
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    out[blockIdx.x * cols + c] = row[c] * inv_rms * weight[c];
}
