// RUN: shardproof-kernel-mismatch
// A bias-add whose broadcast operand is read at the row instead of the
// column: every row gets one bias value.
#include <cuda_runtime.h>

// shardproof: launch add_bias grid=(2) block=(4)
// shardproof: arg x = float32[2,4]
// shardproof: arg bias = float32[4]
// shardproof: arg out = float32[2,4]
// shardproof: reference out = x + bias
__global__ void add_bias(const float *x, const float *bias, float *out) {
  int row = blockIdx.x, col = threadIdx.x;
  out[row * 4 + col] = x[row * 4 + col] + bias[row];
// CHECK-MESSAGES: :[[@LINE-1]]:3: warning: the value kernel 'add_bias' writes here into out[0,1] differs from the reference 'x + bias' [shardproof-kernel-mismatch]
// CHECK-MESSAGES: :10:1: note: the reference is given here
// CHECK-MESSAGES: :[[@LINE-3]]:3: note: Example:
// CHECK-MESSAGES-NEXT: bias[1] = 1
// CHECK-MESSAGES-NEXT: every other input = 0
// CHECK-MESSAGES-NEXT: Reference (world 1): out[0,1] = 1
// CHECK-MESSAGES-NEXT: Rank 0: out[0,1] = 0  (should be 1)
// CHECK-MESSAGES-NEXT: Ranks that disagree with the reference: 0
// CHECK-MESSAGES-NEXT: Rank 0 is the kernel's launch: out[0,1] was written by thread (1,0,0) of block (0,0,0)
}
