// all_reduce_two_shot.cu whose barrier sets its flags without
// __threadfence_system() before: a peer may see the flag before the
// reduced slice it announces, so nothing orders the gather after it.
#include "all_reduce_barrier.cuh"

// shardproof: launch two_shot_no_fence<2> grid=(1) block=(4)
// shardproof: ranks 2
// shardproof: arg data = float32[8] per-rank
// shardproof: arg partial = float32[8] per-rank
// shardproof: arg flags = int32[2,1,2] per-rank zeros
// shardproof: arg inputs = ptrs(data)
// shardproof: arg scratch = ptrs(partial)
// shardproof: arg signals = ptrs(flags)
// shardproof: arg out = float32[8] per-rank
// shardproof: arg rank = rank
// shardproof: arg size = 8
// shardproof: reference out = data.sum(0)
template <int NRANKS>
__global__ void two_shot_no_fence(const float *const *inputs, float *const *scratch,
                                  unsigned *const *signals, float *out, int rank,
                                  int size) {
  two_shot<float, NRANKS, false>(inputs, scratch, signals, out, rank, size);
}
