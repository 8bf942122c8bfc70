// Helpers a kernel file includes by a relative path; a macro constant.
#pragma once
#include <cuda_runtime.h>

#define SHIFT 1e-5f

__device__ inline float shifted_double(float v, float factor = 2.0f) {
  return (v + SHIFT) * factor;
}
