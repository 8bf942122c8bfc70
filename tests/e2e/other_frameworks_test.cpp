// Frameworks beyond Megatron and DeepSpeed (docs/other-frameworks.md):
// tests/e2e/other_frameworks/minitron is a small framework in the style of
// picotron and nanotron (our code), whose parameters carry no
// `partition_dim`. Each entry states what it must give: a parameter bound to
// its reference shard by the framework's slice metadata, by the part of a
// whole master weight it keeps, or by the trace (the one shard its shape
// fits that makes the step right, SP011) is proved; one nothing binds is
// "could not prove" naming it (SP004); torch names the framework only touches while
// it is imported are no obstacle until the trace uses them, and then stop
// it naming the line that took them; an exception raised inside the
// framework comes with the analysed code's frames.
//
// The real trees run when PICOTRON_ROOT / NANOTRON_ROOT name checkouts
// (tests/frameworks/other/*_entries.py; skipped otherwise).
#include "tests/e2e/run_cli.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

using shardproof::testing::run_cli;

namespace {
struct Case {
  std::string entry;
  int exit_code;
  std::string pattern; // regex over stdout + stderr
};

const char *kFixture = "tests/e2e/other_frameworks/entries.py::";
const char *kLayers = "tests/e2e/other_frameworks/minitron/layers\\.py";

std::ostream &operator<<(std::ostream &os, const Case &c) { return os << c.entry; }
} // namespace

class OtherFrameworks : public ::testing::TestWithParam<Case> {};

TEST_P(OtherFrameworks, VerdictAndReason) {
  const Case &c = GetParam();
  auto r = run_cli({"check", kFixture + c.entry, "--world", "2", "--python-path",
                    "tests/e2e/other_frameworks"});
  EXPECT_EQ(r.exit_code, c.exit_code) << r.out << r.err;
  EXPECT_TRUE(std::regex_search(r.out + r.err, std::regex(c.pattern))) << r.out << r.err;
  if (c.exit_code != 0)
    EXPECT_EQ(r.out.find(": proved ("), std::string::npos) << r.out;
}

INSTANTIATE_TEST_SUITE_P(
    Minitron, OtherFrameworks,
    ::testing::Values(
        // picotron's `weight.data = torch.split(master, n)[rank]`: rank r
        // holds rows r of the reference's weight; an unused annotation and
        // decorator of unmodelled torch names are no obstacle.
        Case{"master_slice", 0, "gradient: 'weight' is sharded along dim 0"},
        // Every rank keeping part 0: rank 1 holds no shard of its own.
        Case{
            "master_slice_wrong_part", 3,
            std::string(kLayers) +
                ":[0-9]+: warning: rank 1: parameter 'weight' has shape \\[2, 4\\] but "
                "\\[4, 4\\] in the reference, and the part of a whole tensor it was made "
                "from \\(its initialisation\\) is not this rank's shard of it"},
        // nanotron's slice metadata of a fused [gate; up] weight: stride 2.
        Case{"slice_metadata", 0,
             "gradient: 'weight' is sharded along dim 0 with stride 2"},
        // A bias zeroed at its shard's shape (picotron's): nothing on it says
        // which shard; of the two its shape fits, one makes the step right.
        Case{"zero_bias", 0,
             "warning: parameter 'bias' carries nothing that says which shard of the "
             "reference's it holds; of the 2 shards its shape fits, only dim 0 with "
             "partition_stride 1 makes the step compute the reference: it is bound so "
             "\\[SP011\\]"},
        // Summed, the bias is right at either shard: which one is not known.
        Case{"summed_bias", 3,
             "parameter 'bias' has shape \\[2\\] but \\[4\\] in the reference, and "
             "nothing says which shard.*its shape fits 2 shards of 2 \\(dim 0 stride 1, "
             "dim 0 stride 2\\)"},
        // A function decorated at import with an unmodelled torch name,
        // called in the forward: could not prove, naming the decorator's line.
        Case{"decorated_at_import_called", 3,
             "could not prove .*torch\\.jit\\.script_if_tracing \\(decorating scale, "
             "which was called; the name was taken at " +
                 std::string(kLayers) + ":116 while its module was imported\\)"},
        // nanotron's P2P: a header of the storage's size, offset and
        // strides, the data received into a byte buffer viewed as float32
        // and laid out at the sent shape with as_strided.
        Case{"raw_storage_messages", 0, "forward: 'out' is replicated"},
        // Twelve messages, each sized by the one before: more tracing passes
        // than the default 8, which go on while each learns something new.
        Case{"header_chain", 0, "forward: 'out' is replicated"},
        // The framework's own error, with the frames that led to it.
        Case{"raises_in_framework", 2,
             std::string(kLayers) +
                 ":[0-9]+: error: raises_in_framework\\(\\) raised ValueError: minitron "
                 "needs out_features divisible by 3, not 4\n"
                 "tests/e2e/other_frameworks/entries\\.py:[0-9]+: note: in "
                 "raises_in_framework\\(\\)\n" +
                 kLayers + ":[0-9]+: note: in __init__\\(\\), raised here"}),
    [](const ::testing::TestParamInfo<Case> &info) { return info.param.entry; });

// The real trees: entries of tests/frameworks/other/*_entries.py with the
// verdict docs/other-frameworks.md reports for them.
struct RealEntry {
  const char *root_variable, *python_subdir, *file, *entry;
  int world;
  int exit_code = 0; // 1: refuted (a bug of the entry's, in the framework's step)
};

class RealTrees : public ::testing::TestWithParam<RealEntry> {};

TEST_P(RealTrees, VerdictAsDocumented) {
  const RealEntry &e = GetParam();
  const char *root = std::getenv(e.root_variable);
  if (!root || !*root)
    GTEST_SKIP() << e.root_variable << " is not set: it names a checkout of the tree "
                 << "(docs/other-frameworks.md)";
  auto r = run_cli({"check", std::string(e.file) + "::" + e.entry, "--world",
                    std::to_string(e.world), "--python-path",
                    std::string(root) + e.python_subdir});
  EXPECT_EQ(r.exit_code, e.exit_code) << r.out << r.err;
  EXPECT_NE(r.out.find(e.exit_code == 0 ? ": proved (" : ": refuted ("),
            std::string::npos)
      << r.out << r.err;
}

namespace {
const char *kPicotron = "tests/frameworks/other/picotron_entries.py";
const char *kNanotron = "tests/frameworks/other/nanotron_entries.py";
} // namespace

INSTANTIATE_TEST_SUITE_P(
    Checkouts, RealTrees,
    ::testing::Values(
        RealEntry{"PICOTRON_ROOT", "", kPicotron, "column_parallel_linear", 2},
        RealEntry{"PICOTRON_ROOT", "", kPicotron, "column_parallel_linear_async", 2},
        RealEntry{"PICOTRON_ROOT", "", kPicotron, "column_parallel_linear_bias", 4},
        RealEntry{"PICOTRON_ROOT", "", kPicotron, "row_parallel_linear", 2},
        RealEntry{"PICOTRON_ROOT", "", kPicotron, "column_row_mlp", 4},
        RealEntry{"PICOTRON_ROOT", "", kPicotron, "vocab_parallel_embedding", 2},
        RealEntry{"PICOTRON_ROOT", "", kPicotron, "llama_tensor_parallel", 2},
        RealEntry{"PICOTRON_ROOT", "", kPicotron, "pipeline_1f1b", 2},
        RealEntry{"PICOTRON_ROOT", "", kPicotron, "pipeline_afab", 2},
        RealEntry{"PICOTRON_ROOT", "", kPicotron, "data_parallel_bucket", 2},
        RealEntry{"PICOTRON_ROOT", "", kPicotron, "data_parallel_bucket_tp", 4},
        RealEntry{"NANOTRON_ROOT", "/src", kNanotron, "column_linear", 2},
        RealEntry{"NANOTRON_ROOT", "/src", kNanotron, "row_linear", 2},
        RealEntry{"NANOTRON_ROOT", "/src", kNanotron, "column_row_mlp", 4},
        RealEntry{"NANOTRON_ROOT", "/src", kNanotron, "column_row_mlp_sequence_parallel",
                  2},
        RealEntry{"NANOTRON_ROOT", "/src", kNanotron, "embedding", 2},
        RealEntry{"NANOTRON_ROOT", "/src", kNanotron, "pipeline_afab", 2},
        RealEntry{"NANOTRON_ROOT", "/src", kNanotron, "pipeline_1f1b", 2},
        RealEntry{"NANOTRON_ROOT", "/src", kNanotron, "pipeline_afab_count_is_world", 2,
                  1}),
    [](const ::testing::TestParamInfo<RealEntry> &info) {
      return std::string(info.param.root_variable[0] == 'P' ? "picotron_" : "nanotron_") +
             info.param.entry + "_w" + std::to_string(info.param.world);
    });
