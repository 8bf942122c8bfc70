// A loop that never ends on the reduced launch: stopped, never proved.
#include <cuda_runtime.h>

// shardproof: launch spin grid=(1) block=(32)
// shardproof: arg x = float32[32]
// shardproof: reference x = x
__global__ void spin(float *x) {
  for (int i = 0; i < 10; i += 0)
    x[threadIdx.x] = x[threadIdx.x];
}
