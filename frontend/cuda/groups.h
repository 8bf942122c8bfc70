// Cooperative groups as the lifter models them: a thread block, its tiles
// of 1 to 32 threads (thread_block_tile<N>, tiled_partition(block, n)) and
// the grid of a one-block launch; which threads a tile holds, its ranks,
// its votes, and the barriers among a warp's lanes (__syncwarp, a tile's
// sync) that order their memory accesses. No clang here: the lifter
// recognises the calls (cooperative_groups::...) and asks this model.
#pragma once

#include "frontend/cuda/memory.h"

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace shardproof::frontend::cuda {

// A group a thread holds: its threads are consecutive in the block's
// linear thread rank (x fastest), a tile aligned to its size.
struct Group {
  enum class Scope : std::uint8_t { Block, Tile, Grid };
  Scope scope = Scope::Block;
  int size = 0;        // threads in the group (a block's, a tile's width)
  int parent_size = 0; // a tile's parent: a tile's width, 0 for the block

  // A tile of `width` threads (a power of two up to the warp) of `parent`.
  static std::optional<Group> tile_of(const Group &parent, std::int64_t width);

  // The rank within the group of the thread of block rank `t`.
  int thread_rank(int t) const;
  // For a tile: its index among its parent's tiles, and how many there are.
  int meta_group_rank(int t, int block_threads) const;
  int meta_group_size(int block_threads) const;
  // The block ranks of the tile of thread `t` (a block: all of them).
  std::pair<int, int> threads_of(int t, int block_threads) const;
  // A tile's lanes as a warp mask, as the toolkit's build_mask() gives it.
  std::uint32_t lane_mask(int t) const;
};

// Groups are held in registers as values of kind Group.
Value group_value(const Group &g);
Group group_of(const Value &v);

// The methods and functions of cooperative_groups the lifter models.
enum class GroupCall : std::uint8_t {
  ThisThreadBlock, // this_thread_block()
  ThisGrid,        // this_grid()
  TiledPartition,  // tiled_partition<N>(g), tiled_partition(g, n)
  Reduce,          // reduce(tile, v, op)
  Sync,            // g.sync()
  ThreadRank,      // g.thread_rank()
  Size,            // g.size(), g.num_threads()
  MetaGroupRank,
  MetaGroupSize,
  GroupIndex,  // g.group_index(), grid's block_index(): a dim3
  ThreadIndex, // g.thread_index(): a dim3
  GroupDim,    // g.group_dim(): a dim3 (a grid's: its blocks)
  DimThreads,  // g.dim_threads(): a dim3
  BlockRank,   // grid.block_rank()
  NumBlocks,   // grid.num_blocks()
  DimBlocks,   // grid.dim_blocks(): a dim3
  IsValid,
  Shfl,
  ShflXor,
  ShflDown,
  ShflUp,
  Any,
  All,
  Ballot,
};
std::optional<GroupCall> group_call(std::string_view name);

// A vote of a tile over its lanes' concrete predicates (0 or not), in
// lane order: any, all, or the ballot (bit k: the tile's rank k).
std::int64_t tile_vote(GroupCall vote, const std::vector<std::int64_t> &predicates);

// The __syncwarp / tile-sync phases of a block's warps. A warp starts as
// one unit of 32 lanes; making tiles of fewer lanes, or a sync of them,
// splits the warps into units of that width (for good: accesses made before
// the split count as in no unit, never ordered by a later sync). Two
// accesses of one unit at different phases have a sync of the whole unit
// between them.
class SyncUnits {
public:
  void reset(int threads);
  // The unit thread `t` is in, and its phase (Access::warp, warp_phase).
  std::pair<int, int> unit(int t) const;
  // A sync of the aligned tile of `width` lanes holding thread `first`.
  void sync(int first, int width);
  // Tiles of `width` lanes were made (tiled_partition): every warp's units
  // are that narrow from now on, so that the tiles' syncs order the
  // accesses made since.
  void split(int width);

private:
  std::vector<int> width_;               // per warp: its units' width
  std::vector<std::vector<int>> phases_; // per warp: by heap index
  static int heap_index(int width, int lane);
};

} // namespace shardproof::frontend::cuda
