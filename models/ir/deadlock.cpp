#include "models/ir/deadlock.h"

#include <map>
#include <tuple>

namespace shardproof::ir {

namespace {
constexpr std::size_t kNone = static_cast<std::size_t>(-1);

bool is_message(const Collective &c) {
  return c.kind == CollectiveKind::SendRecv && c.group.size() == 2;
}

int peer_of(const Collective &c, int rank) {
  return c.group[0] == rank ? c.group[1] : c.group[0];
}

// Every rank's calls with, for each message, its index on its channel and
// the index of the matching call in the peer's list; and how far each rank
// has run.
struct Schedule {
  const std::vector<Trace> &ranks;
  std::vector<std::vector<int>> message;
  std::vector<std::vector<std::size_t>> partner;
  std::vector<std::size_t> pc;

  explicit Schedule(const std::vector<Trace> &traces)
      : ranks(traces), message(traces.size()), partner(traces.size()),
        pc(traces.size(), 0) {
    using Key = std::tuple<int, int, int>; // sender, receiver, index
    std::vector<std::map<Key, std::size_t>> at(traces.size());
    for (std::size_t r = 0; r < traces.size(); ++r) {
      std::map<std::pair<int, int>, int> count;
      const auto &calls = traces[r].collectives;
      message[r].assign(calls.size(), 0);
      for (std::size_t i = 0; i < calls.size(); ++i)
        if (is_message(calls[i])) {
          int k = count[{calls[i].group[0], calls[i].group[1]}]++;
          message[r][i] = k;
          at[r][{calls[i].group[0], calls[i].group[1], k}] = i;
        }
    }
    for (std::size_t r = 0; r < traces.size(); ++r) {
      const auto &calls = traces[r].collectives;
      partner[r].assign(calls.size(), kNone);
      for (std::size_t i = 0; i < calls.size(); ++i) {
        if (!is_message(calls[i]))
          continue;
        int peer = peer_of(calls[i], static_cast<int>(r));
        if (peer < 0 || peer >= static_cast<int>(traces.size()))
          continue;
        auto it = at[peer].find({calls[i].group[0], calls[i].group[1], message[r][i]});
        if (it != at[peer].end())
          partner[r][i] = it->second;
      }
    }
  }

  bool done(std::size_t r) const { return pc[r] >= ranks[r].collectives.size(); }

  // Whether rank r's next call returns: a blocking message once the peer
  // has reached (posted or is blocked in) the matching call.
  bool can_go(std::size_t r) const {
    const Collective &c = ranks[r].collectives[pc[r]];
    const std::size_t match = partner[r][pc[r]];
    if (!c.blocking || !is_message(c) || match == kNone)
      return true;
    return pc[static_cast<std::size_t>(peer_of(c, static_cast<int>(r)))] >= match;
  }

  // Runs every rank as far as it goes. Calls only ever unblock as the
  // others advance, so the order ranks are run in does not matter.
  void run() {
    for (bool progress = true; progress;) {
      progress = false;
      for (std::size_t r = 0; r < ranks.size(); ++r)
        while (!done(r) && can_go(r)) {
          ++pc[r];
          progress = true;
        }
    }
  }

  BlockedRank blocked(std::size_t r) const {
    const Collective &c = ranks[r].collectives[pc[r]];
    const int peer = peer_of(c, static_cast<int>(r));
    const auto p = static_cast<std::size_t>(peer);
    return {static_cast<int>(r),
            &c,
            message[r][pc[r]],
            peer,
            &ranks[p].collectives[partner[r][pc[r]]],
            done(p) ? nullptr : &ranks[p].collectives[pc[p]]};
  }
};
} // namespace

std::vector<BlockedRank> blocked_ranks(const std::vector<Trace> &ranks) {
  Schedule schedule(ranks);
  schedule.run();
  std::vector<BlockedRank> out;
  for (std::size_t r = 0; r < ranks.size(); ++r)
    if (!schedule.done(r))
      out.push_back(schedule.blocked(r));
  return out;
}

} // namespace shardproof::ir
