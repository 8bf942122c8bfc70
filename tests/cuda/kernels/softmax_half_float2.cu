// A float16 softmax over rows of four keys, one thread a row, in the style
// of apex's megatron softmax: the row is loaded and stored as one float2
// (four halves moved as the bits of two floats, copy_vector<Half, 4>), the
// arithmetic is in float.
#include <cuda_fp16.h>

template <typename T, int N> __device__ __inline__ void copy_vector(T *dst, const T *src);

template <>
__device__ __inline__ void copy_vector<__half, 4>(__half *dst, const __half *src) {
  *((float2 *)dst) = *((float2 *)src);
}

// shardproof: launch softmax_rows4 grid=(2) block=(2)
// shardproof: arg x = float16[4,4]
// shardproof: arg out = float16[4,4]
// shardproof: arg scale = 0.5
// shardproof: reference out = torch.softmax(x * 0.5, dim=-1)
__global__ void softmax_rows4(const __half *x, __half *out, float scale) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  __half v[4];
  copy_vector<__half, 4>(v, x + row * 4);
  float m = __half2float(v[0]) * scale;
  for (int i = 1; i < 4; ++i)
    m = fmaxf(m, __half2float(v[i]) * scale);
  float e[4];
  float sum = 0.0f;
  for (int i = 0; i < 4; ++i) {
    e[i] = expf(__half2float(v[i]) * scale - m);
    sum += e[i];
  }
  for (int i = 0; i < 4; ++i)
    v[i] = __float2half(e[i] / sum);
  copy_vector<__half, 4>(out + row * 4, v);
}
