// Which lane each shuffle reads, with a width of 8: out[k][lane] is the
// value of x that lane receives from shuffle k (xor 2, down 3, up 3, idx 5).
#include <cuda_runtime.h>

// shardproof: launch shuffle_lanes grid=(1) block=(32)
// shardproof: arg x = float32[32]
// shardproof: arg out = float32[4,32]
// The lanes CUDA defines, segments of 8: xor stays in the segment; down and
// up past its edge, and idx, as the programming guide says.
// shardproof: reference out = torch.stack([x[[l ^ 2 for l in range(32)]], x[[l + 3 if l % 8 < 5 else l for l in range(32)]], x[[l - 3 if l % 8 >= 3 else l for l in range(32)]], x[[l - l % 8 + 5 for l in range(32)]]])
__global__ void shuffle_lanes(const float *x, float *out) {
  unsigned lane = threadIdx.x;
  float v = x[lane];
  out[lane] = __shfl_xor_sync(0xffffffffu, v, 2, 8);
  out[32 + lane] = __shfl_down_sync(0xffffffffu, v, 3, 8);
  out[64 + lane] = __shfl_up_sync(0xffffffffu, v, 3, 8);
  out[96 + lane] = __shfl_sync(0xffffffffu, v, 5, 8);
}
