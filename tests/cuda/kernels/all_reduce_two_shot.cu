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
      sum += to_float(inputs[p][i]);
    scratch[rank][i] = from_float<T>(sum);
  }
  barrier_across_ranks<NRANKS>(signals, rank, 1);
  // Stage 2: each rank's reduced slice, own first, as vLLM orders them.
  for (int k = 0; k < NRANKS; ++k) {
    int peer = (rank + k) % NRANKS;
    int peer_begin = peer * part;
    int peer_end = peer == NRANKS - 1 ? size : peer_begin + part;
    for (int i = peer_begin + first; i < peer_end; i += stride)
      out[i] = scratch[peer][i];
  }
}
