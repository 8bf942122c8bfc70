#include "frontend/cuda/memory.h"

#include <fmt/format.h>

#include <algorithm>

namespace shardproof::frontend::cuda {

Value Value::packed(Bits bits) {
  Value v{Kind::Bits};
  v.bits = std::make_shared<const Bits>(std::move(bits));
  return v;
}

std::string describe(const Bits &bits) {
  return fmt::format("the bits of {} {} element{} read as '{}' at {}",
                     bits.elements.size(), bits.format,
                     bits.elements.size() == 1 ? "" : "s", bits.view, bits.loc.str());
}

std::optional<std::int64_t> cells_covered(const Buffer &buffer, std::int64_t bytes) {
  if (buffer.element_bytes <= 0 || bytes <= 0 || bytes % buffer.element_bytes != 0)
    return std::nullopt;
  return bytes / buffer.element_bytes;
}

bool misaligned(const Buffer &buffer, std::int64_t offset, std::int64_t alignment) {
  return alignment > 1 && (offset * buffer.element_bytes) % alignment != 0;
}

void retype(Buffer &buffer, const std::string &format, int element_bytes,
            std::int64_t cells) {
  auto n = static_cast<std::size_t>(cells);
  buffer.format = format;
  buffer.element_bytes = element_bytes;
  buffer.cells.assign(n, Value{});
  buffer.last_write.assign(n, std::nullopt);
  buffer.reads.assign(n, {});
  buffer.earlier_block_read.assign(n, std::nullopt);
  buffer.writes.assign(n, std::nullopt);
}

bool ordered(const Access &a, const Access &b) {
  if (a.block != b.block)
    return false;
  if (a.thread == b.thread || a.phase != b.phase)
    return true;
  return a.warp == b.warp && a.warp_phase != b.warp_phase;
}

std::optional<Race> record_access(Buffer &buffer, std::int64_t i, const Access &now,
                                  bool write) {
  auto conflicts = [&](const Access &a, bool a_write) {
    return (a_write || write) && !(a.atomic && now.atomic) && !ordered(a, now);
  };
  if (const auto &last = buffer.last_write[i]; last && conflicts(*last, true))
    return Race{*last, true};
  auto &reads = buffer.reads[i];
  // Reads of an earlier phase are ordered before this block's accesses from
  // now on; one read of an earlier block stays, unordered with any of them.
  if (!reads.empty() &&
      (reads.front().block != now.block || reads.front().phase != now.phase)) {
    for (const Access &r : reads)
      if (r.block != now.block)
        buffer.earlier_block_read[i] = r;
    std::erase_if(reads, [&](const Access &r) {
      return r.block != now.block || r.phase != now.phase;
    });
  }
  if (!write) {
    if (reads.empty() || reads.back().thread != now.thread ||
        reads.back().warp_phase != now.warp_phase)
      reads.push_back(now);
    return std::nullopt;
  }
  if (const auto &earlier = buffer.earlier_block_read[i];
      earlier && conflicts(*earlier, false))
    return Race{*earlier, false};
  for (const Access &r : reads)
    if (conflicts(r, false))
      return Race{r, false};
  buffer.last_write[i] = now;
  return std::nullopt;
}

} // namespace shardproof::frontend::cuda
