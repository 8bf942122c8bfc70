// A rotary embedding over float16 in PyTorch's own c10::Half, in the style
// of apex's fused rope: the rotated channel is the negated second half
// (-src[...] of a c10::Half) or the first, and the sum is accumulated with
// c10::Half's operators (Half * Half, Half += Half), computed in float.
#include <torch/extension.h>

// shardproof: launch rope_half grid=(1) block=(4)
// shardproof: arg src = float16[2,4]
// shardproof: arg freqs = float32[4]
// shardproof: arg dst = float16[2,4]
// shardproof: reference dst = src * torch.cos(freqs) + torch.cat([-src[:, 2:], src[:, :2]], dim=-1) * torch.sin(freqs)
__global__ void rope_half(const c10::Half *src, const float *freqs, c10::Half *dst) {
  int d = threadIdx.x;
  float v_cos = cosf(freqs[d]);
  float v_sin = sinf(freqs[d]);
  for (int row = 0; row < 2; ++row) {
    const c10::Half *x = src + row * 4;
    c10::Half rotated = d + 2 < 4 ? -x[d + 2] : x[d - 2];
    c10::Half out = x[d] * (c10::Half)v_cos;
    out += rotated * (c10::Half)v_sin;
    dst[row * 4 + d] = out;
  }
}
