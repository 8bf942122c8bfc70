// A dispatcher choosing its kernel by an optional pointer, as DeepSpeed's
// launch_rms_norm does with its residual (written for these tests): without
// it the profiled softmax runs, with it a kernel of its own (no profile).
#include "scaled_softmax.cuh"

__global__ void add_residual(float *dst, const float *residual) {
  dst[threadIdx.x] += residual[threadIdx.x];
}

template <typename input_t, typename output_t, typename acc_t>
void dispatch_with_residual(output_t *dst, const input_t *src, const input_t *residual,
                            const acc_t scale) {
  dim3 blocks(1), threads(32, 4);
  bool pre_add = residual == nullptr ? false : true;
  if (pre_add)
    add_residual<<<1, 32>>>(dst, residual);
  else
    scaled_softmax_warp_forward<input_t, output_t, acc_t, 5>
        <<<blocks, threads>>>(dst, src, scale, 8, 32);
}
