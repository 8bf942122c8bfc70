// shardproof's stand-in for the toolkit's cuda_bf16.h (parsing only): the
// lifter models __nv_bfloat16 values as reals and intercepts these by name.
#pragma once
#include "shardproof_cuda_device.h"

struct __nv_bfloat16 {
  unsigned short __x;
};
struct __nv_bfloat162 {
  __nv_bfloat16 x, y;
};
static __device__ __inline__ float __bfloat162float(__nv_bfloat16 h) { return 0.0f; }
static __device__ __inline__ __nv_bfloat16 __float2bfloat16(float f) {
  return __nv_bfloat16{0};
}
