// rms_norm_by_pointer.cu with the address taken one call down, as DeepSpeed's
// reduce::partitioned_block does: row_reduce(float &value) passes &value on,
// so the kernel's register `sum` is reduced through a reference and a pointer.
#include <cuda_runtime.h>

constexpr unsigned kFullMask = 0xffffffffu;

template <int total>
__device__ void warp_reduce(float *data) {
  for (int offset = 16; offset > 0; offset /= 2)
    for (int i = 0; i < total; ++i)
      data[i] += __shfl_xor_sync(kFullMask, data[i], offset, 32);
}

__device__ void row_reduce(float &value) { warp_reduce<1>(&value); }

// shardproof: launch rms_norm grid=(2) block=(32)
// shardproof: arg x = float32[2,32]
// shardproof: arg gamma = float32[32]
// shardproof: arg out = float32[2,32]
// shardproof: reference out = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-5) * gamma
__global__ void rms_norm(const float *x, const float *gamma, float *out) {
  const float *row = x + blockIdx.x * 32;
  float v = row[threadIdx.x];
  float sum = v * v;
  row_reduce(sum);
  float scale = rsqrtf(sum / 32 + 1e-5f);
  out[blockIdx.x * 32 + threadIdx.x] = v * scale * gamma[threadIdx.x];
}
