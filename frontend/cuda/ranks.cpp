#include "frontend/cuda/ranks.h"

#include <algorithm>
#include <thread>

namespace shardproof::frontend::cuda {

// --- UnitScheduler -----------------------------------------------------------

void UnitScheduler::run(int units, const std::function<void(int)> &body,
                        std::function<std::uint64_t()> progress) {
  {
    std::lock_guard lock(mutex_);
    states_.assign(units, State::Ready);
    turn_ = units > 0 ? 0 : -1;
    cancel_ = false;
    error_ = nullptr;
    progress_ = std::move(progress);
    seen_ = progress_();
    idle_ = 0;
  }
  std::vector<std::thread> threads;
  for (int u = 0; u < units; ++u)
    threads.emplace_back([this, u, &body] { unit_main(u, body); });
  for (std::thread &t : threads)
    t.join();
  if (error_)
    std::rethrow_exception(error_);
}

void UnitScheduler::unit_main(int unit, const std::function<void(int)> &body) {
  bool start = false;
  {
    std::unique_lock lock(mutex_);
    turn_changed_.wait(lock, [&] { return turn_ == unit || cancel_; });
    start = !cancel_;
  }
  if (start) {
    try {
      body(unit);
    } catch (const Cancelled &) {
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_)
        error_ = std::current_exception();
      cancel_ = true;
    }
  }
  std::lock_guard lock(mutex_);
  states_[unit] = State::Done;
  idle_ = 0;
  if (turn_ == unit)
    turn_ = cancel_ ? -1 : next_after(unit);
  turn_changed_.notify_all();
}

int UnitScheduler::next_after(int unit) const {
  int n = static_cast<int>(states_.size());
  for (int k = 1; k <= n; ++k) {
    int v = (unit + k) % n;
    if (states_[v] != State::Done)
      return v;
  }
  return -1;
}

bool UnitScheduler::wait() {
  std::unique_lock lock(mutex_);
  int unit = turn_;
  if (std::uint64_t now = progress_(); now != seen_) {
    seen_ = now;
    idle_ = 0;
  }
  // Each unfinished unit, in turn, looked at memory as it is now.
  int unfinished = static_cast<int>(std::count_if(
      states_.begin(), states_.end(), [](State s) { return s != State::Done; }));
  if (++idle_ >= unfinished)
    return false;
  states_[unit] = State::Waiting;
  turn_ = next_after(unit);
  turn_changed_.notify_all();
  turn_changed_.wait(lock, [&] { return turn_ == unit || cancel_; });
  if (cancel_)
    throw Cancelled{};
  return true;
}

// --- RankOrder -----------------------------------------------------------------

RankOrder::RankOrder(int ranks, int blocks)
    : units_(ranks * blocks), blocks_(blocks),
      known_(units_, std::vector<int>(units_, 0)), pending_(known_),
      pending_phase_(units_, -1), fences_(units_) {}

void RankOrder::enter(int unit) { current_ = unit; }

void RankOrder::fence(int thread, int phase, bool system) {
  Fence &f = fences_[current_][thread];
  // Two fences of one phase: the stronger one counts.
  f.system = (f.phase == phase && f.system) || system;
  f.phase = phase;
}

void RankOrder::settle(int phase) {
  int &at = pending_phase_[current_];
  if (at < 0 || at >= phase)
    return;
  std::vector<int> &known = known_[current_];
  for (int p = 0; p < units_; ++p)
    known[p] = std::max(known[p], pending_[current_][p]);
  at = -1;
}

void RankOrder::release(const Cell &cell, const Access &now) {
  Release r{std::vector<int>(units_, 0), rank_of(current_), false};
  auto fenced = fences_[current_].find(now.thread);
  // Without a fence since the block's last barrier the flag orders nothing.
  if (fenced != fences_[current_].end() && fenced->second.phase == now.phase) {
    r.clock = known_[current_];
    r.clock[current_] = now.phase;
    r.system = fenced->second.system;
  }
  released_[cell] = std::move(r);
}

void RankOrder::acquire(const Cell &cell, const Access &now) {
  auto it = released_.find(cell);
  if (it == released_.end() ||
      (it->second.rank != rank_of(current_) && !it->second.system))
    return;
  std::vector<int> &pending = pending_[current_];
  for (int p = 0; p < units_; ++p)
    pending[p] = std::max(pending[p], it->second.clock[p]);
  pending_phase_[current_] = now.phase;
}

std::optional<Race> RankOrder::unordered(const Cell &cell, const Access &now, bool write,
                                         bool flag) {
  std::vector<Last> &last = last_[cell];
  last.resize(units_);
  const std::vector<int> &known = known_[current_];
  for (int p = 0; p < units_; ++p) {
    if (p == current_)
      continue;
    auto racing = [&](const std::optional<Access> &a, bool flag_writes) {
      return a && a->phase >= known[p] && (!(a->atomic && now.atomic) || flag_writes);
    };
    if (racing(last[p].write, last[p].flag_write && flag && write))
      return Race{*last[p].write, true};
    if (write && racing(last[p].read, false))
      return Race{*last[p].read, false};
  }
  (write ? last[current_].write : last[current_].read) = now;
  if (write)
    last[current_].flag_write = flag;
  return std::nullopt;
}

std::optional<Race> RankOrder::access(int buffer, std::int64_t size, std::int64_t i,
                                      Access now, bool write, bool flag) {
  now.atomic = now.atomic || flag;
  settle(now.phase);
  Cell cell{buffer, i};
  if (flag && write)
    release(cell, now);
  else if (flag)
    acquire(cell, now);
  Buffer &own = own_[{current_, buffer}];
  if (own.last_write.empty()) {
    own.last_write.resize(size);
    own.reads.resize(size);
    own.earlier_block_read.resize(size);
  }
  if (auto race = record_access(own, i, now, write))
    return race;
  return unordered(cell, now, write, flag);
}

} // namespace shardproof::frontend::cuda
