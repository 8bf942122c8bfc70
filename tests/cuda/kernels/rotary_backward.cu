// Rotary embedding, backward: the transposed rotation of the gradient on
// the first 8 of 12 channels; the last 4 channels' gradient passes through.
#include <cuda_runtime.h>

constexpr int kHeadDim = 12, kRotary = 8, kHalf = kRotary / 2;

// shardproof: launch rotary_backward grid=(3) block=(32)
// shardproof: arg grad = float32[4,2,12]
// shardproof: arg cos = float32[4,4]
// shardproof: arg sin = float32[4,4]
// shardproof: arg grad_x = float32[4,2,12]
// shardproof: arg heads = 2
// shardproof: reference grad_x = torch.cat([grad[..., :4] * cos.unsqueeze(1) + grad[..., 4:8] * sin.unsqueeze(1), grad[..., 4:8] * cos.unsqueeze(1) - grad[..., :4] * sin.unsqueeze(1), grad[..., 8:]], dim=-1)
__global__ void rotary_backward(const float *grad, const float *cos, const float *sin,
                                float *grad_x, int heads) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int channel = i % kHeadDim;
  int token = i / (kHeadDim * heads);
  const float *head = grad + (i - channel);
  if (channel >= kRotary) {
    grad_x[i] = grad[i];
    return;
  }
  int j = channel % kHalf;
  float c = cos[token * kHalf + j], s = sin[token * kHalf + j];
  grad_x[i] = channel < kHalf ? head[j] * c + head[j + kHalf] * s
                              : head[j + kHalf] * c - head[j] * s;
}
