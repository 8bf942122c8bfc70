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

// One step of a rank: posting call `call` (a blocking one returns once
// matched), or the wait() on a posted one.
struct Event {
  std::size_t call = 0;
  bool wait = false;
};

// A rank's events in program order: each call, and each wait() before the
// call recorded after it.
std::vector<Event> events_of(const std::vector<Collective> &calls,
                             std::vector<std::size_t> &post_at) {
  std::vector<std::vector<std::size_t>> waits_before(calls.size() + 1);
  for (std::size_t i = 0; i < calls.size(); ++i)
    if (calls[i].waited >= 0 && static_cast<std::size_t>(calls[i].waited) <= calls.size())
      waits_before[static_cast<std::size_t>(calls[i].waited)].push_back(i);
  std::vector<Event> events;
  post_at.assign(calls.size(), 0);
  for (std::size_t k = 0; k <= calls.size(); ++k) {
    for (std::size_t i : waits_before[k])
      events.push_back({i, true});
    if (k < calls.size()) {
      post_at[k] = events.size();
      events.push_back({k, false});
    }
  }
  return events;
}

// Every rank's events with, for each message, its index on its channel and
// the index of the matching call in the peer's list; and how far (in
// events) each rank has run.
struct Schedule {
  const std::vector<Trace> &ranks;
  std::vector<std::vector<int>> message;
  std::vector<std::vector<std::size_t>> partner;
  std::vector<std::vector<Event>> events;
  std::vector<std::vector<std::size_t>> post_at; // call -> index of its post event
  std::vector<std::size_t> pc;

  explicit Schedule(const std::vector<Trace> &traces)
      : ranks(traces), message(traces.size()), partner(traces.size()),
        events(traces.size()), post_at(traces.size()), pc(traces.size(), 0) {
    for (std::size_t r = 0; r < traces.size(); ++r)
      events[r] = events_of(traces[r].collectives, post_at[r]);
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

  bool done(std::size_t r) const { return pc[r] >= events[r].size(); }

  // Whether rank r's next event returns: a blocking message, or the wait()
  // on a posted one, once the peer has reached (posted or is blocked in)
  // the matching call.
  bool can_go(std::size_t r) const {
    const Event &e = events[r][pc[r]];
    const Collective &c = ranks[r].collectives[e.call];
    const std::size_t match = partner[r][e.call];
    if (!(c.blocking || e.wait) || !is_message(c) || match == kNone)
      return true;
    const auto peer = static_cast<std::size_t>(peer_of(c, static_cast<int>(r)));
    return pc[peer] >= post_at[peer][match];
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
    const Event &e = events[r][pc[r]];
    const Collective &c = ranks[r].collectives[e.call];
    const int peer = peer_of(c, static_cast<int>(r));
    const auto p = static_cast<std::size_t>(peer);
    return {static_cast<int>(r),
            &c,
            e.wait,
            message[r][e.call],
            peer,
            &ranks[p].collectives[partner[r][e.call]],
            done(p) ? nullptr : &ranks[p].collectives[events[p][pc[p]].call]};
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
