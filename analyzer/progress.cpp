#include "analyzer/progress.h"

#include <fmt/format.h>

#include <cstdio>
#include <unistd.h>

namespace shardproof::analyzer {

bool Progress::stderr_is_terminal() { return isatty(STDERR_FILENO) == 1; }

void Progress::start_target(std::size_t index, std::size_t count, std::string name) {
  target_ = fmt::format("[{}/{}] {}", index + 1, count, name);
  done_ = 0;
  draw("tracing");
}

void Progress::obligation_done() {
  ++done_;
  // Proof attempts, not obligations: a path's coverage and the search for
  // an uncovered input are proofs too; the total is known at the end.
  draw(fmt::format("{} proof{} tried", done_, done_ == 1 ? "" : "s"));
}

void Progress::finish_target(std::size_t total) {
  draw(fmt::format("{} obligation{} checked", total, total == 1 ? "" : "s"));
}

void Progress::draw(const std::string &obligations) {
  if (!enabled_)
    return;
  double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // \r and erase-line: one line, redrawn in place.
  std::fputs(
      fmt::format("\r\033[K{}: {}, {:.1f} s", target_, obligations, elapsed).c_str(),
      stderr);
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::clear() {
  if (drawn_)
    std::fputs("\r\033[K", stderr);
  drawn_ = false;
}

} // namespace shardproof::analyzer
