// The simulation of blocking point-to-point messages (models/ir/deadlock.h)
// on hand-built traces: which ranks can never go on.
#include "models/ir/deadlock.h"

#include <gtest/gtest.h>

#include <vector>

namespace {
using namespace shardproof;

enum class Call { Send, Recv, ISend, IRecv, AllReduce };

struct Step {
  Call call;
  int peer = -1;
  int line = 0;
};

// Rank traces with only collectives: each rank's steps in program order.
std::vector<ir::Trace> traces(const std::vector<std::vector<Step>> &program) {
  std::vector<ir::Trace> ranks(program.size());
  for (std::size_t r = 0; r < program.size(); ++r) {
    const int me = static_cast<int>(r);
    ranks[r].rank = me;
    ranks[r].world = static_cast<int>(program.size());
    for (const Step &step : program[r]) {
      ir::Collective c;
      c.loc = {"p.py", step.line};
      if (step.call == Call::AllReduce) {
        for (int m = 0; m < ranks[r].world; ++m)
          c.group.push_back(m);
      } else {
        const bool sends = step.call == Call::Send || step.call == Call::ISend;
        c.kind = ir::CollectiveKind::SendRecv;
        c.group =
            sends ? std::vector<int>{me, step.peer} : std::vector<int>{step.peer, me};
        c.src = c.group[0];
        c.blocking = step.call == Call::Send || step.call == Call::Recv;
      }
      ranks[r].collectives.push_back(c);
    }
  }
  return ranks;
}

std::vector<int> stuck(const std::vector<ir::BlockedRank> &blocked) {
  std::vector<int> out;
  for (const auto &b : blocked)
    out.push_back(b.rank);
  return out;
}
} // namespace

TEST(MessageDeadlock, TwoRanksThatBothSendFirstWaitOnEachOther) {
  auto ranks = traces({{{Call::Send, 1, 10}, {Call::Recv, 1, 11}},
                       {{Call::Send, 0, 20}, {Call::Recv, 0, 21}}});
  auto blocked = ir::blocked_ranks(ranks);
  ASSERT_EQ(stuck(blocked), (std::vector<int>{0, 1}));
  EXPECT_EQ(blocked[0].call->loc.line, 10);
  EXPECT_EQ(blocked[0].peer, 1);
  EXPECT_EQ(blocked[0].message, 0);
  EXPECT_EQ(blocked[0].peer_call->loc.line, 21); // the receive rank 1 never reaches
  EXPECT_EQ(blocked[0].peer_stuck->loc.line, 20);
  EXPECT_EQ(blocked[1].peer_call->loc.line, 11);
}

TEST(MessageDeadlock, TwoRanksThatBothReceiveFirstWaitOnEachOther) {
  auto ranks =
      traces({{{Call::Recv, 1}, {Call::Send, 1}}, {{Call::Recv, 0}, {Call::Send, 0}}});
  EXPECT_EQ(stuck(ir::blocked_ranks(ranks)), (std::vector<int>{0, 1}));
}

TEST(MessageDeadlock, OneSendingFirstAndTheOtherReceivingFirstFinish) {
  auto ranks =
      traces({{{Call::Send, 1}, {Call::Recv, 1}}, {{Call::Recv, 0}, {Call::Send, 0}}});
  EXPECT_TRUE(ir::blocked_ranks(ranks).empty());
}

TEST(MessageDeadlock, PostedCallsNeverBlock) {
  // isend/irecv on both sides; and a blocking send matched by an irecv the
  // receiver posted before its own blocking send.
  auto posted = traces(
      {{{Call::ISend, 1}, {Call::IRecv, 1}}, {{Call::ISend, 0}, {Call::IRecv, 0}}});
  EXPECT_TRUE(ir::blocked_ranks(posted).empty());
  auto mixed =
      traces({{{Call::Send, 1}, {Call::Recv, 1}}, {{Call::IRecv, 0}, {Call::Send, 0}}});
  EXPECT_TRUE(ir::blocked_ranks(mixed).empty());
  // The irecv posted after rank 1's blocking send comes too late.
  auto late =
      traces({{{Call::Send, 1}, {Call::Recv, 1}}, {{Call::Send, 0}, {Call::IRecv, 0}}});
  EXPECT_EQ(stuck(ir::blocked_ranks(late)), (std::vector<int>{0, 1}));
}

TEST(MessageDeadlock, ARingWhereEveryRankSendsFirstHangs) {
  std::vector<std::vector<Step>> ring(4);
  for (int r = 0; r < 4; ++r)
    ring[r] = {{Call::Send, (r + 1) % 4}, {Call::Recv, (r + 3) % 4}};
  auto blocked = ir::blocked_ranks(traces(ring));
  ASSERT_EQ(stuck(blocked), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(blocked[3].peer, 0);
  // One rank that receives first lets the sends drain round the ring.
  ring[0] = {{Call::Recv, 3}, {Call::Send, 1}};
  EXPECT_TRUE(ir::blocked_ranks(traces(ring)).empty());
}

TEST(MessageDeadlock, MessagesAreMatchedInOrderPerPairOfRanks) {
  // Rank 0 sends two messages; rank 1 receives one, sends, then receives
  // the second: message #1 waits for rank 1's second receive, which comes
  // after rank 1's send that rank 0 receives only after message #1.
  auto ranks = traces({{{Call::Send, 1}, {Call::Send, 1, 2}, {Call::Recv, 1}},
                       {{Call::Recv, 0}, {Call::Send, 0, 5}, {Call::Recv, 0}}});
  auto blocked = ir::blocked_ranks(ranks);
  ASSERT_EQ(stuck(blocked), (std::vector<int>{0, 1}));
  EXPECT_EQ(blocked[0].message, 1);
  EXPECT_EQ(blocked[0].call->loc.line, 2);
  EXPECT_EQ(blocked[1].call->loc.line, 5);
}

TEST(MessageDeadlock, CollectivesDoNotBlockAndAPairStuckAloneIsReported) {
  // Ranks 2 and 3 finish (their messages pass an all-reduce); ranks 0 and 1
  // both send first.
  auto ranks = traces({{{Call::AllReduce}, {Call::Send, 1}, {Call::Recv, 1}},
                       {{Call::AllReduce}, {Call::Send, 0}, {Call::Recv, 0}},
                       {{Call::Send, 3}, {Call::AllReduce}, {Call::Recv, 3}},
                       {{Call::AllReduce}, {Call::Recv, 2}, {Call::Send, 2}}});
  EXPECT_EQ(stuck(ir::blocked_ranks(ranks)), (std::vector<int>{0, 1}));
}

TEST(MessageDeadlock, TheWaitOnAPostedCallBlocksAsSendAndRecvDo) {
  // isend(...).wait() then irecv on both ranks: each waits on its isend.
  auto ranks = traces(
      {{{Call::ISend, 1}, {Call::IRecv, 1}}, {{Call::ISend, 0}, {Call::IRecv, 0}}});
  for (auto &rank : ranks)
    rank.collectives[0].waited = 1; // before the irecv is posted
  auto blocked = ir::blocked_ranks(ranks);
  ASSERT_EQ(stuck(blocked), (std::vector<int>{0, 1}));
  EXPECT_TRUE(blocked[0].in_wait);
  // Both posted before either waits (batch_isend_irecv, then wait()).
  for (auto &rank : ranks)
    rank.collectives[0].waited = 2;
  EXPECT_TRUE(ir::blocked_ranks(ranks).empty());
}
