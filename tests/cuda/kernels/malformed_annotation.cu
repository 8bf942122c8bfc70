// A launch annotation whose block is not (X[,Y[,Z]]).
#include <cuda_runtime.h>

// shardproof: launch scale grid=(1) block=(32 threads)
// shardproof: arg x = float32[32]
// shardproof: reference x = x * 2
__global__ void scale(float *x) { x[threadIdx.x] *= 2.0f; }
