// rope_half_c10.cu with the rotated channel not negated: the first half
// of each row takes +x[d + 2] where the rotation is -x[d + 2] (the
// c10::Half operators are those of the correct kernel).
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
    c10::Half rotated = d + 2 < 4 ? x[d + 2] : x[d - 2];
    c10::Half out = x[d] * (c10::Half)v_cos;
    out += rotated * (c10::Half)v_sin;
    dst[row * 4 + d] = out;
  }
}
