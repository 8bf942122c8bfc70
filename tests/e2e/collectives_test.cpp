// torch.distributed as PyTorch runs it, harness by harness
// (tests/e2e/collectives/*.py): what must be proved, what must be refuted,
// what PyTorch leaves unspecified (never proved: "could not prove" naming
// it), and what PyTorch rejects (an error). Each runs at world 2 and 4.
#include "tests/e2e/run_cli.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using shardproof::testing::run_cli;

namespace {
struct CollectiveCase {
  std::string target; // tests/e2e/collectives/FILE.py::FUNC, without the folder
  int world;
  int exit_code;      // 0 proved, 1 refuted, 2 PyTorch's error, 3 could not prove
  std::string reason; // in the output: the rule of a refutation, what is unmodelled
};

void PrintTo(const CollectiveCase &c, std::ostream *os) {
  *os << c.target << " --world " << c.world;
}

struct Expectation {
  std::string target;
  int exit_w2, exit_w4;
  std::string reason;
};

const std::vector<Expectation> kExpectations = {
    // dist.reduce: dst holds the reduction, the other ranks' buffers nothing.
    {"reduce.py::to_dst_then_broadcast", 0, 0, ""},
    {"reduce.py::group_dst_then_broadcast", 0, 0, ""},
    {"reduce.py::non_dst_read", 3, 3,
     "dist.reduce's buffer on rank 1, not dst 0 (unspecified)"},
    {"reduce.py::max_instead_of_sum", 1, 1, "[SP001]"},
    {"reduce.py::dst_outside_group", 2, 2, "is not part of ProcessGroup"},
    {"reduce.py::each_rank_its_own_dst", 1, 1, "has root 0 on rank 0 but 1 on rank 1"},
    // async_op=True and coalescing: results exist once waited on.
    {"async_work.py::wait_then_read", 0, 0, ""},
    {"async_work.py::read_before_wait", 3, 3,
     "the output of an async all_reduce read before its wait()"},
    {"async_work.py::coalesced", 0, 0, ""},
    {"async_work.py::coalesced_async", 0, 0, ""},
    {"async_work.py::coalesced_read_inside", 3, 3,
     "the output of all_reduce read inside its _coalescing_manager block"},
    // Reduction ops.
    {"reduce_ops.py::max_of_maxima", 0, 0, ""},
    {"reduce_ops.py::min_of_minima", 0, 0, ""},
    {"reduce_ops.py::product_of_products", 0, 0, ""},
    {"reduce_ops.py::avg_of_means", 0, 0, ""},
    {"reduce_ops.py::premul_sum_of_sums", 0, 0, ""},
    {"reduce_ops.py::reduce_scatter_max", 0, 0, ""},
    {"reduce_ops.py::sum_where_max_is_needed", 1, 1, "[SP001]"},
    {"reduce_ops.py::bitwise_and", 3, 3,
     "all_reduce() with op=<RedOpType.BAND> is not modelled"},
    {"reduce_ops.py::op_given_as_a_string", 3, 3,
     "all_reduce() with op='sum' is not modelled"},
    {"reduce_ops.py::avg_on_gloo", 2, 2, "Cannot use ReduceOp.AVG with Gloo"},
    // Buffers are counted in elements: a 0-dim tensor and a [1] one match.
    {"reduce_ops.py::scalar_and_one_element", 0, 0, ""},
    {"reduce_ops.py::scalar_and_two_elements", 1, 1,
     "carries float32 [] on rank 0 but float32 [2] on rank 1"},
    // Tensor lists: where each tensor goes, and PyTorch's checks.
    {"tensor_lists.py::all_gather_list", 0, 0, ""},
    {"tensor_lists.py::all_gather_list_too_short", 2, 2,
     "tensor_list has 1 tensors for a group of"},
    {"tensor_lists.py::all_to_all_list", 0, 0, ""},
    {"tensor_lists.py::all_to_all_list_wrong_destinations", 1, 1, "[SP001]"},
    {"tensor_lists.py::all_to_all_uneven_round_trip", 0, 0, ""},
    {"tensor_lists.py::scatter_then_gather", 0, 0, ""},
    {"tensor_lists.py::gather_to_the_wrong_rank", 1, 1, "[SP001]"},
    {"tensor_lists.py::all_gather_into_tensor_wrong_size", 2, 2,
     "output tensor size must be equal to world_size times input tensor size"},
    {"tensor_lists.py::non_contiguous_all_reduce", 3, 3,
     "all_reduce() of a non-contiguous tensor is not modelled"},
    {"tensor_lists.py::all_to_all_on_gloo", 2, 2,
     "ProcessGroup gloo does not support alltoall"},
    // Uneven lists (per-rank token counts): exchanges whose sizes must agree.
    {"tensor_lists.py::uneven_reduce_scatter_then_all_gather", 0, 0, ""},
    {"tensor_lists.py::uneven_all_gather_wrong_sizes", 1, 1, "[SP003]"},
    {"tensor_lists.py::uneven_with_empty_ranks", 0, 0, ""},
    // Python objects.
    {"objects.py::all_gather_object_counts", 0, 0, ""},
    {"objects.py::broadcast_object_list_config", 0, 0, ""},
    {"objects.py::broadcast_object_list_wrong_src", 1, 1, "[SP005]"},
    {"objects.py::all_gather_object_of_a_tensor", 3, 3,
     "holding tensors or symbolic values"},
    // Groups: non-members, group and global ranks, subgroups.
    {"groups.py::pair_sums", 0, 0, ""},
    {"groups.py::new_subgroups_of_two", 0, 0, ""},
    {"groups.py::new_subgroups_of_the_world", 0, 1, "[SP005]"},
    {"groups.py::destroyed_group", 2, 2, "has been destroyed"},
    // torch.distributed.nn.functional: PyTorch's backward, exactly.
    {"differentiable.py::row_parallel_all_reduce", 1, 1,
     "differentiable.py:23:16: error: the value computed here (all_reduce) is the "
     "reference times"},
    {"differentiable.py::broadcast_backward", 1, 1, "[SP007]"},
    {"differentiable.py::all_gather_backward", 0, 0, ""},
    {"differentiable.py::scatter_gather_forward", 0, 0, ""},
    {"differentiable.py::all_to_all_round_trip", 0, 0, ""},
    {"differentiable.py::all_to_all_round_trip_on_gloo", 0, 0, ""},
    // Point-to-point messages between pipeline stages: matched in order, per
    // pair of ranks.
    {"point_to_point.py::blocking", 0, 0, ""},
    {"point_to_point.py::nonblocking", 0, 0, ""},
    {"point_to_point.py::batched", 0, 0, ""},
    {"point_to_point.py::receive_missing", 1, 1,
     "which never receives it (the job would hang or mix unrelated tensors) [SP003]"},
    {"point_to_point.py::receive_buffer_of_another_shape", 1, 1,
     "message #0 from rank 0 to rank 1 is float32 [3] as sent but float32 [4] in the "
     "receive buffer"},
    // A header of sizes, received and turned into Python numbers, sizes the
    // buffer of the next message (DeepSpeed's pipeline engine).
    {"point_to_point.py::shape_sent_first", 0, 0, ""},
    {"point_to_point.py::shape_sent_first_misread", 1, 1,
     "message #1 from rank 0 to rank 1 is float32 [3] as sent but float32 [1] in the "
     "receive buffer"},
    {"point_to_point.py::read_before_wait", 3, 3,
     "the buffer of an irecv read before its wait()"},
    {"point_to_point.py::send_to_self", 2, 2,
     "destination rank should not be the same as the rank of the current process"},
    // Blocking dist.send/dist.recv return only once the peer has posted the
    // matching call: matched messages may still wait on each other.
    {"point_to_point.py::exchange_send_first", 1, 1,
     "rank 0 blocks in its send of message #0 to rank 1 until rank 1 posts the matching "
     "receive, but rank 1 is itself blocked in its send of message #0 to rank 0"},
    {"point_to_point.py::exchange_recv_first", 1, 1,
     "rank 0 blocks in its recv of message #0 from rank 1 until rank 1 posts the "
     "message, but rank 1 is itself blocked in its recv of message #0 from rank 0"},
    {"point_to_point.py::exchange_isend_waited_first", 1, 1,
     "rank 0 blocks in its wait() on its isend of message #0 to rank 1 until rank 1 "
     "posts the matching receive"},
    {"point_to_point.py::exchange_odd_even", 0, 0, ""},
    {"point_to_point.py::exchange_posted", 0, 0, ""},
    {"point_to_point.py::exchange_batched", 0, 0, ""},
    {"point_to_point.py::ring_send_first", 1, 1,
     "rank 0 blocks in its send of message #0 to rank 1 until rank 1 posts the matching "
     "receive, but rank 1 is itself blocked in its send of message #0 to rank"},
    {"point_to_point.py::ring_one_receives_first", 0, 0, ""},
};

std::vector<CollectiveCase> cases() {
  std::vector<CollectiveCase> out;
  for (const auto &e : kExpectations) {
    out.push_back({e.target, 2, e.exit_w2, e.exit_w2 ? e.reason : ""});
    out.push_back({e.target, 4, e.exit_w4, e.exit_w4 ? e.reason : ""});
  }
  return out;
}
} // namespace

class Collectives : public ::testing::TestWithParam<CollectiveCase> {};

TEST_P(Collectives, VerdictAndReasonAreAsPyTorchRunsIt) {
  const auto &c = GetParam();
  auto r = run_cli(
      {"check", "tests/e2e/collectives/" + c.target, "--world", std::to_string(c.world)});
  EXPECT_EQ(r.exit_code, c.exit_code) << r.out << r.err;
  if (c.exit_code == 0) {
    EXPECT_EQ(r.out.find("could not prove:"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(": proved ("), std::string::npos) << r.out;
  } else {
    EXPECT_NE((r.out + r.err).find(c.reason), std::string::npos)
        << "expected \"" << c.reason << "\" in:\n"
        << r.out << r.err;
    EXPECT_EQ(r.out.find(": proved ("), std::string::npos) << r.out;
  }
}

INSTANTIATE_TEST_SUITE_P(Harnesses, Collectives, ::testing::ValuesIn(cases()));

// Every rank a stage that learns its input's shape from the rank before:
// one tracing pass per rank, past the 8 passes other code is given.
TEST(Collectives, AHeaderChainThroughTwelveRanksIsProved) {
  auto r = run_cli(
      {"check", "tests/e2e/collectives/point_to_point.py::shape_sent_first_every_rank",
       "--world", "12"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(": proved ("), std::string::npos) << r.out;
}
