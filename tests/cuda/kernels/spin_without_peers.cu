// One launch spinning on a flag nothing sets: an iteration that changes
// nothing never ends, and is stopped at once with its line.
#include <cuda_runtime.h>

// shardproof: launch wait_for_host grid=(1) block=(4)
// shardproof: arg ready = int32[1] zeros
// shardproof: arg out = float32[4]
// shardproof: reference out = out
__global__ void wait_for_host(const int *ready, float *out) {
  while (*(volatile const int *)ready == 0) {
  }
  out[threadIdx.x] = 1.f;
}
