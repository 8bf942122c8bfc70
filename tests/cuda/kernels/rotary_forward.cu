// Rotary embedding, forward: the first 8 of 12 channels of each head are
// rotated in halves (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin); the
// last 4 channels pass through. One thread per element.
#include <cuda_runtime.h>

constexpr int kHeadDim = 12, kRotary = 8, kHalf = kRotary / 2;

// shardproof: launch rotary_forward grid=(3) block=(32)
// shardproof: arg x = float32[4,2,12]
// shardproof: arg cos = float32[4,4]
// shardproof: arg sin = float32[4,4]
// shardproof: arg out = float32[4,2,12]
// shardproof: arg heads = 2
// shardproof: reference out = torch.cat([x[..., :4] * cos.unsqueeze(1) - x[..., 4:8] * sin.unsqueeze(1), x[..., 4:8] * cos.unsqueeze(1) + x[..., :4] * sin.unsqueeze(1), x[..., 8:]], dim=-1)
__global__ void rotary_forward(const float *x, const float *cos, const float *sin,
                               float *out, int heads) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int channel = i % kHeadDim;
  int token = i / (kHeadDim * heads);
  const float *head = x + (i - channel);
  if (channel >= kRotary) {
    out[i] = x[i];
    return;
  }
  int j = channel % kHalf;
  float c = cos[token * kHalf + j], s = sin[token * kHalf + j];
  out[i] = channel < kHalf ? head[j] * c - head[j + kHalf] * s
                           : head[j + kHalf] * c + head[j] * s;
}
