// all_reduce_two_shot.cu's all-reduce with the peers' buffers passed as
// vLLM passes them: a pointer to a struct of eight pointers in device
// memory (RankData), and structs of pointers by value (RankSignals).
#include "all_reduce_barrier.cuh"

// shardproof: launch two_shot_rank_data<2> grid=(2) block=(4)
// shardproof: ranks 2
// shardproof: arg data = float32[11] per-rank
// shardproof: arg partial = float32[11] per-rank
// shardproof: arg flags = int32[2,2,2] per-rank zeros
// shardproof: arg dp = ptrs(data)
// shardproof: arg tmp = ptrs(partial)
// shardproof: arg sg = ptrs(flags)
// shardproof: arg out = float32[11] per-rank
// shardproof: arg rank = rank
// shardproof: arg size = 11
// shardproof: reference out = data.sum(0)

struct RankData {
  const float *ptrs[8];
};
struct RankScratch {
  float *ptrs[8];
};
struct RankSignals {
  unsigned *signals[8];
};

template <int NRANKS>
__global__ void two_shot_rank_data(const RankData *dp, RankScratch tmp, RankSignals sg,
                                   float *out, int rank, int size) {
  two_shot<float, NRANKS>(dp->ptrs, tmp.ptrs, sg.signals, out, rank, size);
}
