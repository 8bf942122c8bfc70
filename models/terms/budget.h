// A bound on the work of a normal form: each step charges what it built, and
// the normal form gives no answer once the bound is passed (the prover then
// goes on to the falsifier and the solver).
#pragma once

#include <cstddef>
#include <optional>

namespace shardproof::terms {

class WorkBudget {
public:
  explicit WorkBudget(std::size_t limit) : limit_(limit) {}
  struct Exceeded {};

  void charge(std::size_t units) {
    spent_ += units;
    if (spent_ > limit_)
      throw Exceeded{};
  }

  // `work()`'s result, or nullopt where it passed the bound.
  template <typename Work>
  static auto bounded(Work work) -> std::optional<decltype(work())> {
    try {
      return work();
    } catch (const Exceeded &) {
      return std::nullopt;
    }
  }

private:
  std::size_t limit_;
  std::size_t spent_ = 0;
};

} // namespace shardproof::terms
