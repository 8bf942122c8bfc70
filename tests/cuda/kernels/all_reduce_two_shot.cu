// A two-shot all-reduce over the GPUs of one node, in the style of vLLM's
// and TensorRT-LLM's custom all-reduce: every rank runs this launch, reads
// its peers' inputs through an array of pointers (buffers opened by IPC),
// reduces its own slice of the elements over all ranks into its scratch
// buffer (reduce-scatter), waits at a flag barrier until every peer has
// done the same, then copies each rank's reduced slice from that rank's
// scratch buffer into its output (all-gather). The last rank's slice takes
// the remainder of a size that is not a multiple of the ranks. Half
// elements are summed in float, as vLLM's packed sums are.
#include "all_reduce_barrier.cuh"

// shardproof: launch two_shot_all_reduce<float, 2> grid=(2) block=(4)
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

// shardproof: launch two_shot_all_reduce<float, 4> grid=(2) block=(4)
// shardproof: ranks 4
// shardproof: arg data = float32[18] per-rank
// shardproof: arg partial = float32[18] per-rank
// shardproof: arg flags = int32[2,2,4] per-rank zeros
// shardproof: arg inputs = ptrs(data)
// shardproof: arg scratch = ptrs(partial)
// shardproof: arg signals = ptrs(flags)
// shardproof: arg out = float32[18] per-rank
// shardproof: arg rank = rank
// shardproof: arg size = 18
// shardproof: reference out = data.sum(0)

// shardproof: launch two_shot_all_reduce<__half, 4> grid=(1) block=(8)
// shardproof: ranks 4
// shardproof: arg data = float16[10] per-rank
// shardproof: arg partial = float16[10] per-rank
// shardproof: arg flags = int32[2,1,4] per-rank zeros
// shardproof: arg inputs = ptrs(data)
// shardproof: arg scratch = ptrs(partial)
// shardproof: arg signals = ptrs(flags)
// shardproof: arg out = float16[10] per-rank
// shardproof: arg rank = rank
// shardproof: arg size = 10
// shardproof: reference out = data.sum(0)

template <typename T, int NRANKS>
__global__ void two_shot_all_reduce(const T *const *inputs, T *const *scratch,
                                    unsigned *const *signals, T *out, int rank, int size) {
  two_shot<T, NRANKS>(inputs, scratch, signals, out, rank, size);
}
