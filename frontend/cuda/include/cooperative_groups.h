// shardproof's stand-in for the toolkit's cooperative_groups.h: the groups
// and members kernels use, declared only. The lifter intercepts them by
// qualified name (frontend/cuda/groups.h), as it does the toolkit's inline
// bodies; what it does not model (coalesced groups, clusters) is declared
// so that a kernel using it parses and is reported as not modelled.
#pragma once
#include "shardproof_cuda_device.h"

namespace cooperative_groups {

class thread_group {
public:
  __device__ void sync() const;
  __device__ unsigned long long thread_rank() const;
  __device__ unsigned long long size() const;
  __device__ unsigned long long num_threads() const;
  __device__ unsigned int meta_group_rank() const;
  __device__ unsigned int meta_group_size() const;
};

class thread_block : public thread_group {
public:
  static __device__ void sync();
  static __device__ unsigned int thread_rank();
  static __device__ unsigned int size();
  static __device__ unsigned int num_threads();
  static __device__ dim3 group_index();
  static __device__ dim3 thread_index();
  static __device__ dim3 group_dim();
  static __device__ dim3 dim_threads();
};

class grid_group {
public:
  __device__ bool is_valid() const;
  __device__ void sync() const;
  static __device__ unsigned long long size();
  static __device__ unsigned long long num_threads();
  static __device__ unsigned long long thread_rank();
  static __device__ unsigned long long block_rank();
  static __device__ unsigned long long num_blocks();
  static __device__ dim3 group_dim();
  static __device__ dim3 dim_threads();
  static __device__ dim3 thread_index();
  static __device__ dim3 dim_blocks();
  static __device__ dim3 block_index();
};

class coalesced_group : public thread_group {};

template <unsigned int Size, typename ParentT = void> class thread_block_tile;

template <unsigned int Size> class thread_block_tile<Size, void> : public thread_group {
public:
  static __device__ void sync();
  static __device__ unsigned int thread_rank();
  static constexpr __device__ unsigned int size() { return Size; }
  static constexpr __device__ unsigned int num_threads() { return Size; }
  __device__ unsigned int meta_group_rank() const;
  __device__ unsigned int meta_group_size() const;
  template <typename T> __device__ T shfl(T var, int src_rank) const;
  template <typename T> __device__ T shfl_xor(T var, unsigned int lane_mask) const;
  template <typename T> __device__ T shfl_down(T var, unsigned int delta) const;
  template <typename T> __device__ T shfl_up(T var, unsigned int delta) const;
  __device__ int any(int predicate) const;
  __device__ int all(int predicate) const;
  __device__ unsigned int ballot(int predicate) const;
};

// A tile that knows its parent's type converts to the one that does not.
template <unsigned int Size, typename ParentT>
class thread_block_tile : public thread_block_tile<Size, void> {};

__device__ thread_block this_thread_block();
__device__ grid_group this_grid();
__device__ coalesced_group coalesced_threads();

template <unsigned int Size, typename ParentT>
__device__ thread_block_tile<Size, ParentT> tiled_partition(const ParentT &parent);
__device__ thread_group tiled_partition(const thread_group &parent, unsigned int tilesz);
__device__ thread_group tiled_partition(const thread_block &parent, unsigned int tilesz);

template <typename T> struct plus {
  __device__ T operator()(T a, T b) const { return a + b; }
};
template <typename T> struct less {
  __device__ T operator()(T a, T b) const { return a < b ? a : b; }
};
template <typename T> struct greater {
  __device__ T operator()(T a, T b) const { return a < b ? b : a; }
};

template <typename Group, typename T, typename Op>
__device__ T reduce(const Group &group, T value, Op op);

} // namespace cooperative_groups
