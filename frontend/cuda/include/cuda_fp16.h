// shardproof's stand-in for the toolkit's cuda_fp16.h (parsing only): the
// lifter models __half values as reals and intercepts these by name.
#pragma once
#include "shardproof_cuda_device.h"

struct __half {
  unsigned short __x;
};
struct __half2 {
  __half x, y;
};
typedef __half half;
typedef __half2 half2;
static __device__ __inline__ float __half2float(__half h) { return 0.0f; }
static __device__ __inline__ __half __float2half(float f) { return __half{0}; }
static __device__ __inline__ __half __float2half_rn(float f) { return __half{0}; }
