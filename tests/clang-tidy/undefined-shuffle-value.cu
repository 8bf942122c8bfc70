// RUN: shardproof-undefined-shuffle-value
// A row of 16 floats summed by a 32-lane butterfly in a block of 16 threads:
// the offset-16 exchange reads lanes the launch does not have.
#include <cuda_runtime.h>

// shardproof: launch row_sum grid=(1) block=(16)
// shardproof: arg x = float32[1,16]
// shardproof: arg out = float32[1]
// shardproof: reference out = x.sum(-1)
__global__ void row_sum(const float *x, float *out) {
  float v = x[threadIdx.x];
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
// CHECK-MESSAGES: :[[@LINE-1]]:10: warning: out[0] depends on an undefined value: the __shfl_xor_sync of thread (0,0,0) of block (0,0,0) reads lane 16, which is not in the launch (a lane that does not take part in a shuffle gives no defined value) [shardproof-undefined-shuffle-value]
  if (threadIdx.x == 0)
    out[0] = v;
}
