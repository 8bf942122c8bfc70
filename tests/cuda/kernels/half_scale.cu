// Scales a float16 buffer through float: proved over the reals, and the
// report says the float16 rounding is not modelled.
#include <cuda_fp16.h>

// shardproof: launch half_scale grid=(1) block=(8)
// shardproof: arg x = float16[8]
// shardproof: arg out = float16[8]
// shardproof: reference out = x * 3
__global__ void half_scale(const __half *x, __half *out) {
  out[threadIdx.x] = __float2half(__half2float(x[threadIdx.x]) * 3.0f);
}
