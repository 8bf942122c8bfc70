// A scaled, causally masked softmax in the style of apex's
// scaled_upper_triang_masked_softmax_warp_forward (written for these
// tests): block x is the query, which attends to the keys up to itself; the
// keys after it are written as zeros.
#include "softmax_helpers.cuh"

template <typename input_t, typename output_t, typename acc_t, int log2_elements>
__global__ void scaled_upper_triang_masked_softmax_warp_forward(output_t *dst,
                                                                const input_t *src,
                                                                const acc_t scale,
                                                                int micro_batch_size,
                                                                int stride,
                                                                int element_count) {
  constexpr int row_capacity = 1 << log2_elements;
  constexpr int WARP_SIZE = row_capacity < C10_WARP_SIZE ? row_capacity : C10_WARP_SIZE;
  constexpr int WARP_ITERATIONS = row_capacity / WARP_SIZE;
  constexpr int WARP_BATCH = row_capacity <= 128 ? 2 : 1;
  constexpr int VEC = WARP_ITERATIONS < 4 ? 1 : 4;

  long int first_row =
      (blockDim.y * blockIdx.y + threadIdx.y) * gridDim.x * WARP_BATCH + blockIdx.x;
  int visible = blockIdx.x + 1;
  int rows_here = micro_batch_size - first_row;
  if (rows_here > WARP_BATCH)
    rows_here = WARP_BATCH;
  int lane = threadIdx.x;
  src += first_row * stride + VEC * lane;
  dst += first_row * stride + VEC * lane;

  acc_t values[WARP_BATCH][WARP_ITERATIONS];
  input_t loaded[VEC];
#pragma unroll
  for (int i = 0; i < WARP_BATCH; ++i) {
    int valid = i < rows_here ? visible : 0;
#pragma unroll
    for (int it = 0; it < WARP_ITERATIONS; it += VEC) {
      int column = VEC * lane + it * WARP_SIZE;
      if (column < valid) {
        copy_vector<input_t, VEC>(loaded, src + i * element_count * stride + it * WARP_SIZE);
#pragma unroll
        for (int k = 0; k < VEC; ++k)
          values[i][it + k] = column + k < valid ? (acc_t)loaded[k] * scale
                                                 : -std::numeric_limits<acc_t>::infinity();
      } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k)
          values[i][it + k] = -std::numeric_limits<acc_t>::infinity();
      }
    }
  }

  acc_t row_max[WARP_BATCH];
#pragma unroll
  for (int i = 0; i < WARP_BATCH; ++i) {
    row_max[i] = values[i][0];
#pragma unroll
    for (int it = 1; it < WARP_ITERATIONS; ++it)
      row_max[i] = row_max[i] > values[i][it] ? row_max[i] : values[i][it];
  }
  warp_reduce<acc_t, WARP_BATCH, WARP_SIZE, Max>(row_max);

  acc_t row_sum[WARP_BATCH]{0.0f};
#pragma unroll
  for (int i = 0; i < WARP_BATCH; ++i)
#pragma unroll
    for (int it = 0; it < WARP_ITERATIONS; ++it) {
      values[i][it] = std::exp(values[i][it] - row_max[i]);
      row_sum[i] += values[i][it];
    }
  warp_reduce<acc_t, WARP_BATCH, WARP_SIZE, Add>(row_sum);

  output_t stored[VEC];
#pragma unroll
  for (int i = 0; i < WARP_BATCH; ++i) {
    if (i >= rows_here)
      break;
#pragma unroll
    for (int it = 0; it < WARP_ITERATIONS; it += VEC) {
      int column = VEC * lane + it * WARP_SIZE;
      if (column >= element_count)
        break;
#pragma unroll
      for (int k = 0; k < VEC; ++k)
        stored[k] = column + k < visible ? values[i][it + k] / row_sum[i] : 0.0f;
      copy_vector<output_t, VEC>(dst + i * element_count * stride + it * WARP_SIZE, stored);
    }
  }
}
