// Progress on standard error while targets are checked (which target, how
// many obligations are done, time spent), drawn only when standard error is
// a terminal: logs and pipes get nothing.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace shardproof::analyzer {

class Progress {
public:
  // Draws nothing unless `enabled` (see stderr_is_terminal).
  explicit Progress(bool enabled) : enabled_(enabled) {}
  ~Progress() { clear(); }
  static bool stderr_is_terminal();

  // Target `index` (0-based) of `count`, shown as `name`, starts.
  void start_target(std::size_t index, std::size_t count, std::string name);
  // A proof attempt finished (of an obligation, or of a path's coverage).
  void obligation_done();
  // The target finished with `total` obligations.
  void finish_target(std::size_t total);
  // Erases the progress line (before the report is printed).
  void clear();

private:
  void draw(const std::string &obligations);
  bool enabled_;
  bool drawn_ = false;
  std::string target_;
  std::size_t done_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

} // namespace shardproof::analyzer
