#include "frontend/cuda/warp.h"

namespace shardproof::frontend::cuda {

std::optional<Shuffle> shuffle_kind(std::string_view name) {
  if (name == "__shfl_sync")
    return Shuffle::Idx;
  if (name == "__shfl_xor_sync")
    return Shuffle::Xor;
  if (name == "__shfl_down_sync")
    return Shuffle::Down;
  if (name == "__shfl_up_sync")
    return Shuffle::Up;
  return std::nullopt;
}

bool shuffle_modelled(Shuffle kind, std::int64_t arg, std::int64_t width) {
  bool power_of_two = width >= 1 && width <= kWarpSize && (width & (width - 1)) == 0;
  return power_of_two && (kind != Shuffle::Xor || (arg >= 0 && arg < kWarpSize)) &&
         (kind == Shuffle::Idx || kind == Shuffle::Xor || arg >= 0);
}

int shuffle_source(Shuffle kind, int lane, std::int64_t arg, int width) {
  std::int64_t segment = lane - lane % width, source = lane;
  switch (kind) {
  case Shuffle::Idx:
    return static_cast<int>(segment + ((arg % width) + width) % width);
  case Shuffle::Xor:
    source = lane ^ arg;
    break;
  case Shuffle::Down:
    source = lane + arg;
    break;
  case Shuffle::Up:
    source = lane - arg;
    break;
  }
  if (source >= segment + width || (kind == Shuffle::Up && source < segment))
    return lane;
  return static_cast<int>(source);
}

} // namespace shardproof::frontend::cuda
