// The float16 softmax of softmax_half_float2.cu whose load indexes the
// float2 view with the row's first element (row * 4) where the view counts
// float2s (row): past the first row it reads beyond the buffer.
#include <cuda_fp16.h>

// shardproof: launch softmax_rows4 grid=(2) block=(2)
// shardproof: arg x = float16[4,4]
// shardproof: arg out = float16[4,4]
// shardproof: arg scale = 0.5
// shardproof: reference out = torch.softmax(x * 0.5, dim=-1)
__global__ void softmax_rows4(const __half *x, __half *out, float scale) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  __half v[4];
  *((float2 *)v) = reinterpret_cast<const float2 *>(x)[row * 4];
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
  *((float2 *)(out + row * 4)) = *((float2 *)v);
}
