// A kernel with no shardproof annotations: nothing to check.
#include <cuda_runtime.h>

__global__ void copy(const float *x, float *out) { out[threadIdx.x] = x[threadIdx.x]; }
