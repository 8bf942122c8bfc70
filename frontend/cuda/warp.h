// Which lane a warp shuffle reads, as the CUDA programming guide defines it:
// the lifter's rule, apart from the AST so that it can be tested alone.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace shardproof::frontend::cuda {

constexpr int kWarpSize = 32;

enum class Shuffle { Idx, Xor, Down, Up }; // __shfl_sync, _xor_, _down_, _up_

// The shuffle an intrinsic's name (__shfl_xor_sync, ...) performs, if any.
std::optional<Shuffle> shuffle_kind(std::string_view name);

// Whether `width` is one CUDA accepts (a power of two up to the warp size)
// and `arg` one this rule covers (a lane mask within the warp for xor).
bool shuffle_modelled(Shuffle kind, std::int64_t arg, std::int64_t width);

// The lane (0-31) whose value lane `lane` receives, in segments of `width`
// lanes: a source past the caller's segment (for up: before it) gives the
// caller its own value. Only for shuffle_modelled arguments.
int shuffle_source(Shuffle kind, int lane, std::int64_t arg, int width);

} // namespace shardproof::frontend::cuda
