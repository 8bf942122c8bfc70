// SP003 collective-mismatch, for blocking point-to-point messages: matched
// sequences that still hang because ranks wait on each other (two pipeline
// stages that each make a blocking dist.send before their dist.recv).
// PyTorch documents send and recv as synchronous, and NCCL's send does not
// complete before the peer has posted the matching receive, so a schedule
// that only gloo's buffering would let through is a hang too.
#include "checkers/check.h"
#include "checkers/check_factories.h"
#include "models/ir/deadlock.h"

#include <fmt/format.h>

#include <map>

namespace shardproof::checkers {

namespace {
// "send of message #1 to rank 1", "recv of message #0 from rank 0".
std::string call_str(const ir::BlockedRank &b) {
  const bool sends = b.call->group[0] == b.rank;
  return fmt::format("{}{} of message #{} {} rank {}", b.in_wait ? "wait() on its " : "",
                     b.in_wait ? (sends ? "isend" : "irecv") : (sends ? "send" : "recv"),
                     b.message, sends ? "to" : "from", b.peer);
}

std::string waits_for(const ir::BlockedRank &b) {
  return b.call->group[0] == b.rank ? "posts the matching receive" : "posts the message";
}

Finding deadlock_finding(const ir::BlockedRank &b,
                         const std::map<int, ir::BlockedRank> &blocked) {
  auto peer = blocked.find(b.peer);
  std::string peer_state = peer == blocked.end()
                               ? "never does"
                               : "is itself blocked in its " + call_str(peer->second);
  Finding f = Finding::of(
      RuleCode::CollectiveMismatch, b.call->loc,
      fmt::format("rank {} blocks in its {} until rank {} {}, "
                  "but rank {} {}: blocking point-to-point calls wait on each other and "
                  "the ranks never go on (the job would hang)",
                  b.rank, call_str(b), b.peer, waits_for(b), b.peer, peer_state));
  if (peer != blocked.end())
    f.notes.push_back(
        {peer->second.call->loc, fmt::format("rank {} is blocked here, in its {}", b.peer,
                                             call_str(peer->second))});
  f.notes.push_back(
      {b.peer_call->loc,
       fmt::format("the call of rank {} that rank {} waits for, never reached", b.peer,
                   b.rank)});
  return f;
}

class MessageDeadlockCheck final : public Check {
public:
  std::string_view name() const override { return "message-deadlock"; }
  std::span<const RuleCode> rules() const override {
    static constexpr RuleCode kEmits[] = {RuleCode::CollectiveMismatch};
    return kEmits;
  }
  void run(CheckContext &context) override {
    if (!context.program.mismatches().empty())
      return; // sequences that do not match are already a hang
    std::map<int, ir::BlockedRank> blocked;
    for (const ir::BlockedRank &b : ir::blocked_ranks(context.program.ranks()))
      blocked.emplace(b.rank, b);
    for (const auto &[rank, b] : blocked)
      context.findings.push_back(deadlock_finding(b, blocked));
  }
};
} // namespace

std::unique_ptr<Check> make_message_deadlock_check() {
  return std::make_unique<MessageDeadlockCheck>();
}

} // namespace shardproof::checkers
