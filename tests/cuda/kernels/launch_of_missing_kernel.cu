// A launch annotation naming a kernel the file does not define.
#include <cuda_runtime.h>

// shardproof: launch scale_rows grid=(1) block=(8)
// shardproof: arg x = float32[8]
// shardproof: reference x = x * 2
__global__ void scale(float *x) { x[threadIdx.x] *= 2.0f; }
