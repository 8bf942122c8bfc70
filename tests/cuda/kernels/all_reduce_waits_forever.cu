// A flag barrier whose wait expects 2 where every peer sets 1: each rank's
// launch spins forever. Stopped at the wait's line, never proved.
#include <cuda_runtime.h>

// shardproof: launch wait_forever grid=(1) block=(2)
// shardproof: ranks 2
// shardproof: arg flags = int32[2] per-rank zeros
// shardproof: arg signals = ptrs(flags)
// shardproof: arg out = float32[2] per-rank
// shardproof: arg rank = rank
// shardproof: reference out = out
__global__ void wait_forever(unsigned *const *signals, float *out, int rank) {
  __threadfence_system();
  volatile unsigned *peer_flags = signals[threadIdx.x];
  peer_flags[rank] = 1;
  volatile unsigned *own_flags = signals[rank];
  while (own_flags[threadIdx.x] != 2) {
  }
  out[threadIdx.x] = 0.f;
}
