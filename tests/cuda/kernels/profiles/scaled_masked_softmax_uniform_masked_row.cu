// The masked softmax without its fully-masked-row rule (a twin, written for
// these tests): a row with every key masked is uniform (1/n), not zeros.
#include "softmax_helpers.cuh"

template <typename input_t, typename output_t, typename acc_t, int log2_elements>
__global__ void scaled_masked_softmax_warp_forward(output_t *dst, const input_t *src,
                                                   const uint8_t *mask, const acc_t scale,
                                                   int micro_batch_size, int element_count,
                                                   int pad_batches) {
  constexpr int row_capacity = 1 << log2_elements;
  constexpr int WARP_SIZE = row_capacity < C10_WARP_SIZE ? row_capacity : C10_WARP_SIZE;
  constexpr int WARP_ITERATIONS = row_capacity / WARP_SIZE;
  constexpr int WARP_BATCH = row_capacity <= 128 ? 2 : 1;
  constexpr int VEC = WARP_ITERATIONS < 4 ? 1 : 4;

  long int first_row =
      (blockDim.y * (blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)) +
       threadIdx.y) *
      WARP_BATCH;
  // The mask has one row per query, shared by the heads (and by the batches
  // when there is one mask for all).
  long int first_mask_row =
      pad_batches != 1
          ? (blockDim.y * (blockIdx.x + gridDim.x * blockIdx.z) + threadIdx.y) * WARP_BATCH
          : (blockDim.y * blockIdx.x + threadIdx.y) * WARP_BATCH;
  int rows_here = micro_batch_size - first_row;
  if (rows_here > WARP_BATCH)
    rows_here = WARP_BATCH;
  int lane = threadIdx.x;
  src += first_row * element_count + VEC * lane;
  dst += first_row * element_count + VEC * lane;
  mask += first_mask_row * element_count + VEC * lane;

  acc_t values[WARP_BATCH][WARP_ITERATIONS];
  input_t loaded[VEC];
  uint8_t masked[VEC];
#pragma unroll
  for (int i = 0; i < WARP_BATCH; ++i) {
    int valid = i < rows_here ? element_count : 0;
#pragma unroll
    for (int it = 0; it < WARP_ITERATIONS; it += VEC) {
      int column = VEC * lane + it * WARP_SIZE;
      if (column < valid) {
        int at = i * element_count + it * WARP_SIZE;
        copy_vector<input_t, VEC>(loaded, src + at);
        copy_vector<uint8_t, VEC>(masked, mask + at);
#pragma unroll
        for (int k = 0; k < VEC; ++k)
          values[i][it + k] = masked[k] != 1 ? (acc_t)loaded[k] * scale : -10000.0;
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

  // Every key masked: the row's maximum is the mask value, the row is 0.
  acc_t keep[WARP_BATCH];
#pragma unroll
  for (int i = 0; i < WARP_BATCH; ++i)
    keep[i] = row_max[i] == -10000.0 ? 0.0 : 1.0;

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
        stored[k] = values[i][it + k] / row_sum[i];
      copy_vector<output_t, VEC>(dst + i * element_count + it * WARP_SIZE, stored);
    }
  }
}
