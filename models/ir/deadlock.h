// Whether the ranks' blocking point-to-point messages let every rank finish:
// each rank's recorded calls run in program order, a blocking send until the
// receiver has posted the matching receive, a blocking recv until the sender
// has posted the message. Run on linked ranks whose message sequences match.
#pragma once

#include "models/ir/trace.h"

#include <cstddef>
#include <vector>

namespace shardproof::ir {

// A rank that cannot go on: blocked in `call`, its message #message with
// `peer`, which has not reached the matching call (`peer_call`) and is
// blocked itself or done.
struct BlockedRank {
  int rank = 0;
  const Collective *call = nullptr;
  bool in_wait = false; // blocked in the wait() of a posted isend or irecv
  int message = 0;      // the call's index on its channel (sender -> receiver)
  int peer = 0;
  const Collective *peer_call = nullptr;  // the peer's call that matches `call`
  const Collective *peer_stuck = nullptr; // where the peer is blocked (null: done)
};

// The ranks that can never go on when every rank runs as far as it can
// (empty: every rank finishes). isend and irecv post and return; their
// wait() (Collective::waited) blocks as send and recv do. Collectives never
// block here (a collective's wait for its group is left to the linker's
// match of sequences). A message with no match on the peer does not block
// either (the linker reports it).
std::vector<BlockedRank> blocked_ranks(const std::vector<Trace> &ranks);

} // namespace shardproof::ir
