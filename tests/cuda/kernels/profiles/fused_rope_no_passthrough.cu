// The rotary embedding without the pass-through copy (a twin, written for
// these tests): channels d2..d of dst are never written.
#include <cuda_runtime.h>

template <typename scalar_t>
__device__ void rope_block_forward(const scalar_t *src, const float *freqs, scalar_t *dst,
                                   const int offset_block, const int offset_block_dst,
                                   const int h, const int d, const int d2, const int stride_h,
                                   const int stride_d, const int o_stride_h,
                                   const int o_stride_d) {
  int s_id = blockIdx.x;
#pragma unroll
  for (int d_id = threadIdx.x; d_id < d2; d_id += blockDim.x) {
    float v_cos, v_sin;
    sincosf(freqs[s_id * d2 + d_id], &v_sin, &v_cos);
#pragma unroll
    for (int h_id = threadIdx.y; h_id < h; h_id += blockDim.y) {
      int at = offset_block + h_id * stride_h + d_id * stride_d;
      int at_dst = offset_block_dst + h_id * o_stride_h + d_id * o_stride_d;
      scalar_t v = src[at];
      scalar_t partner = d_id + d2 / 2 < d2 ? -src[at + (d2 / 2) * stride_d]
                                            : src[at + (d2 / 2 - d2) * stride_d];
      dst[at_dst] = v * (scalar_t)v_cos + partner * (scalar_t)v_sin;
    }
  }
}

template <typename scalar_t>
__global__ void fused_rope_forward(const int h, const int d, const int d2, const int stride_s,
                                   const int stride_b, const int stride_h, const int stride_d,
                                   const int o_stride_s, const int o_stride_b,
                                   const int o_stride_h, const int o_stride_d,
                                   const scalar_t *src, const float *freqs, scalar_t *dst) {
  int s_id = blockIdx.x, b_id = blockIdx.y;
  int offset_block = s_id * stride_s + b_id * stride_b;
  int offset_block_dst = s_id * o_stride_s + b_id * o_stride_b;
  rope_block_forward(src, freqs, dst, offset_block, offset_block_dst, h, d, d2, stride_h,
                     stride_d, o_stride_h, o_stride_d);
}
