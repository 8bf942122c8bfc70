// all_reduce_two_shot.cu whose all-gather reads the k-th rank's scratch
// buffer where it means the peer it visits k-th ((rank + k) % NRANKS): right
// on rank 0, which visits the ranks in order, wrong on every other.
#include "all_reduce_barrier.cuh"

// shardproof: launch two_shot_all_reduce<2> grid=(2) block=(4)
// shardproof: ranks 2
// shardproof: arg data = float32[13] per-rank
// shardproof: arg partial = float32[13] per-rank
// shardproof: arg flags = int32[2,2,2] per-rank zeros
// shardproof: arg inputs = ptrs(data)
// shardproof: arg scratch = ptrs(partial)
// shardproof: arg signals = ptrs(flags)
// shardproof: arg out = float32[13] per-rank
// shardproof: arg rank = rank
// shardproof: arg size = 13
// shardproof: reference out = data.sum(0)

template <int NRANKS>
__global__ void two_shot_all_reduce(const float *const *inputs, float *const *scratch,
                                    unsigned *const *signals, float *out, int rank,
                                    int size) {
  int part = size / NRANKS;
  int first = blockIdx.x * blockDim.x + threadIdx.x;
  int stride = gridDim.x * blockDim.x;
  barrier_across_ranks<NRANKS>(signals, rank, 0);
  // Stage 1: this rank's slice, summed over the ranks' inputs.
  int begin = rank * part;
  int end = rank == NRANKS - 1 ? size : begin + part;
  for (int i = begin + first; i < end; i += stride) {
    float sum = 0.f;
    for (int p = 0; p < NRANKS; ++p)
      sum += inputs[p][i];
    scratch[rank][i] = sum;
  }
  barrier_across_ranks<NRANKS>(signals, rank, 1);
  // Stage 2: each rank's reduced slice, own first, as vLLM orders them.
  for (int k = 0; k < NRANKS; ++k) {
    int peer = (rank + k) % NRANKS;
    int peer_begin = peer * part;
    int peer_end = peer == NRANKS - 1 ? size : peer_begin + part;
    for (int i = peer_begin + first; i < peer_end; i += stride)
      out[i] = scratch[k][i];
  }
}
