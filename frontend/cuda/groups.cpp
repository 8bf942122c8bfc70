#include "frontend/cuda/groups.h"

#include "frontend/cuda/warp.h"

#include <algorithm>
#include <map>

namespace shardproof::frontend::cuda {

std::optional<Group> Group::tile_of(const Group &parent, std::int64_t width) {
  bool power_of_two = width >= 1 && width <= kWarpSize && (width & (width - 1)) == 0;
  if (!power_of_two || parent.scope == Scope::Grid ||
      (parent.scope == Scope::Tile && width > parent.size))
    return std::nullopt;
  return Group{Scope::Tile, static_cast<int>(width),
               parent.scope == Scope::Tile ? parent.size : 0};
}

int Group::thread_rank(int t) const { return scope == Scope::Tile ? t % size : t; }

int Group::meta_group_rank(int t, int block_threads) const {
  (void)block_threads;
  return (parent_size == 0 ? t : t % parent_size) / size;
}

int Group::meta_group_size(int block_threads) const {
  int parent = parent_size == 0 ? block_threads : parent_size;
  return (parent + size - 1) / size;
}

std::pair<int, int> Group::threads_of(int t, int block_threads) const {
  if (scope != Scope::Tile)
    return {0, block_threads};
  int first = t - t % size;
  return {first, std::min(first + size, block_threads)};
}

std::uint32_t Group::lane_mask(int t) const {
  if (size >= kWarpSize)
    return 0xffffffffu;
  std::uint32_t lanes = (std::uint32_t{1} << size) - 1;
  return lanes << ((t % kWarpSize) & ~(size - 1));
}

Value group_value(const Group &g) {
  Value v;
  v.kind = Value::Kind::Group;
  v.i = g.size;
  v.offset = g.parent_size;
  v.buffer = static_cast<int>(g.scope);
  return v;
}

Group group_of(const Value &v) {
  return Group{static_cast<Group::Scope>(v.buffer), static_cast<int>(v.i),
               static_cast<int>(v.offset)};
}

std::optional<GroupCall> group_call(std::string_view name) {
  static const std::map<std::string_view, GroupCall> calls{
      {"this_thread_block", GroupCall::ThisThreadBlock},
      {"this_grid", GroupCall::ThisGrid},
      {"tiled_partition", GroupCall::TiledPartition},
      {"reduce", GroupCall::Reduce},
      {"sync", GroupCall::Sync},
      {"thread_rank", GroupCall::ThreadRank},
      {"size", GroupCall::Size},
      {"num_threads", GroupCall::Size},
      {"meta_group_rank", GroupCall::MetaGroupRank},
      {"meta_group_size", GroupCall::MetaGroupSize},
      {"group_index", GroupCall::GroupIndex},
      {"block_index", GroupCall::GroupIndex},
      {"thread_index", GroupCall::ThreadIndex},
      {"group_dim", GroupCall::GroupDim},
      {"dim_threads", GroupCall::DimThreads},
      {"block_rank", GroupCall::BlockRank},
      {"num_blocks", GroupCall::NumBlocks},
      {"dim_blocks", GroupCall::DimBlocks},
      {"is_valid", GroupCall::IsValid},
      {"shfl", GroupCall::Shfl},
      {"shfl_xor", GroupCall::ShflXor},
      {"shfl_down", GroupCall::ShflDown},
      {"shfl_up", GroupCall::ShflUp},
      {"any", GroupCall::Any},
      {"all", GroupCall::All},
      {"ballot", GroupCall::Ballot},
  };
  auto it = calls.find(name);
  return it == calls.end() ? std::nullopt : std::optional(it->second);
}

std::int64_t tile_vote(GroupCall vote, const std::vector<std::int64_t> &predicates) {
  auto set = [](std::int64_t p) { return p != 0; };
  if (vote == GroupCall::Any)
    return std::any_of(predicates.begin(), predicates.end(), set);
  if (vote == GroupCall::All)
    return std::all_of(predicates.begin(), predicates.end(), set);
  std::int64_t bits = 0;
  for (std::size_t k = 0; k < predicates.size(); ++k)
    if (set(predicates[k]))
      bits |= std::int64_t{1} << k;
  return bits;
}

void SyncUnits::reset(int threads) {
  int warps = (threads + kWarpSize - 1) / kWarpSize;
  width_.assign(warps, kWarpSize);
  phases_.assign(warps, std::vector<int>(2 * kWarpSize, 0));
}

// Units of width w hold lanes [k w, (k + 1) w); numbered as a binary heap
// (32 lanes: 1; 16: 2-3; ...; 1: 32-63), so no two widths share a number.
int SyncUnits::heap_index(int width, int lane) {
  return kWarpSize / width + lane / width;
}

std::pair<int, int> SyncUnits::unit(int t) const {
  int warp = t / kWarpSize, index = heap_index(width_[warp], t % kWarpSize);
  return {warp * 2 * kWarpSize + index, phases_[warp][index]};
}

void SyncUnits::sync(int first, int width) {
  int warp = first / kWarpSize, lane = first % kWarpSize;
  int &unit_width = width_[warp];
  unit_width = std::min(unit_width, width);
  for (int l = lane - lane % width; l < lane - lane % width + width; l += unit_width)
    ++phases_[warp][heap_index(unit_width, l)];
}

void SyncUnits::split(int width) {
  for (int &unit_width : width_)
    unit_width = std::min(unit_width, width);
}

} // namespace shardproof::frontend::cuda
