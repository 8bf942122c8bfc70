// `shardproof check FILE.cu` as a user runs it, on kernels written for these
// tests (tests/cuda/kernels): each correct kernel is proved, each buggy twin
// refuted or found racing at its line, bad input and unmodelled constructs
// are said as such. No GPU: shardproof's own CUDA headers.
#include "tests/e2e/run_cli.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>

using shardproof::testing::run_cli;

namespace {
std::string kernel(const std::string &name) { return "tests/cuda/kernels/" + name; }

bool has(const std::string &text, const std::string &needle) {
  return text.find(needle) != std::string::npos;
}
} // namespace

class CudaProvedKernel : public ::testing::TestWithParam<const char *> {};

TEST_P(CudaProvedKernel, IsProvedEqualToItsReference) {
  auto r = run_cli({"check", kernel(GetParam())});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, ": proved (1 obligation: 1 proved")) << r.out;
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, CudaProvedKernel,
    ::testing::Values(
        "block_sum.cu", "softmax_warp.cu", "bias_gelu.cu", "shuffle_lanes.cu",
        "relu_branch.cu", "warp_sum_syncwarp.cu", "atomic_sum.cu", "causal_softmax.cu",
        "rms_norm_partial_warp.cu", "included_helper.cu", "relu_undeclared_branches.cu",
        "ternary_assigns.cu", "shift_right_unsigned.cu", "bias_gelu_vectorised.cu",
        "rotary_forward.cu", "rotary_backward.cu", "softmax_half_float2.cu",
        "bias_gelu_half_uint4.cu", "rope_half_c10.cu", "rms_norm_by_pointer.cu",
        "rms_norm_by_reference.cu", "shared_ptx_reverse.cu"));

TEST(CudaCli, MissingBarrierIsASharedMemoryRaceWithBothAccesses) {
  auto r = run_cli({"check", kernel("block_sum_missing_barrier.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out,
                  "tests/cuda/kernels/block_sum_missing_barrier.cu:17:23: error: "
                  "shared-memory race on partial[2]: thread (0,0,0) of block (0,0,0) "
                  "reads it here and thread (2,0,0) of block (0,0,0) writes it at "))
      << r.out;
  EXPECT_TRUE(has(r.out, "[SP013]")) << r.out;
  EXPECT_TRUE(has(r.out, "tests/cuda/kernels/block_sum_missing_barrier.cu:17:7: note: "
                         "thread (2,0,0) of block (0,0,0) writes partial[2] here"))
      << r.out;
}

TEST(CudaCli, MissingSyncwarpIsAWarpLevelRace) {
  auto r = run_cli({"check", kernel("warp_sum_no_syncwarp.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out,
                  "tests/cuda/kernels/warp_sum_no_syncwarp.cu:15:35: error: "
                  "shared-memory race on partial[8]: thread (0,0,0) of block (0,0,0) "
                  "reads it here and thread (8,0,0) of block (0,0,0) writes it at "
                  "tests/cuda/kernels/warp_sum_no_syncwarp.cu:18:7 with no barrier "
                  "between [SP013]"))
      << r.out;
}

TEST(CudaCli, BlocksWritingOneElementRace) {
  auto r = run_cli({"check", kernel("last_block_wins.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out,
                  "error: global-memory race on out[0]: thread (0,0,0) of block "
                  "(1,0,0) writes it here and thread (0,0,0) of block (0,0,0) writes "
                  "it at tests/cuda/kernels/last_block_wins.cu:11:5 (the blocks of a "
                  "launch are not ordered) [SP013]"))
      << r.out;
}

TEST(CudaCli, WrongShuffleWidthIsRefutedAtTheKernelLineWithAnInput) {
  auto r = run_cli({"check", kernel("softmax_warp_wrong_width.cu"), "--format", "json"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto report = nlohmann::json::parse(r.out);
  ASSERT_EQ(report["findings"].size(), 1u) << r.out;
  const auto &f = report["findings"][0];
  EXPECT_EQ(f["rule_id"], "SP012");
  EXPECT_EQ(f["line"], 33); // out[...] = ea / total
  EXPECT_EQ(f["message"],
            "the value kernel 'scaled_softmax' writes here into out[0,0] "
            "differs from the reference 'torch.softmax(x * scale, dim=-1)'");
  const auto &example = f["example"];
  EXPECT_EQ(example["element"], "out[0,0]");
  ASSERT_EQ(example["inputs"].size(), 1u);
  // An element of the half of the row lanes 0-15 never see.
  EXPECT_EQ(example["inputs"][0]["name"], "x[0,63]");
  EXPECT_EQ(example["inputs"][0]["value"], 1.0);
  EXPECT_NEAR(example["reference"].get<double>(), 1.0 / (63 + std::exp(0.125)), 1e-9);
  EXPECT_NEAR(example["ranks"][0]["value"].get<double>(), 1.0 / 64, 1e-9);
}

TEST(CudaCli, WrongIndexIntoTheBroadcastBiasIsRefuted) {
  auto r = run_cli({"check", kernel("bias_gelu_wrong_broadcast.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out,
                  "tests/cuda/kernels/bias_gelu_wrong_broadcast.cu:21:3: error: the "
                  "value kernel 'bias_gelu' writes here into out[0,1] differs from "
                  "the reference"))
      << r.out;
  EXPECT_TRUE(has(r.out, "    bias[1] = 1\n    every other input = 0\n")) << r.out;
  EXPECT_TRUE(has(r.out, "  Rank 0: out[0,1] = 0  (should be 0.841192)")) << r.out;
  EXPECT_TRUE(has(r.out, "out[0,1] was written by thread (1,0,0) of block (0,0,0)"))
      << r.out;
}

TEST(CudaCli, OutOfBoundsIsAnError) {
  auto r = run_cli({"check", kernel("missing_bounds_guard.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out,
                  "tests/cuda/kernels/missing_bounds_guard.cu:11:19: error: "
                  "out-of-bounds read of x[40] ('x[i]') by thread (8,0,0) of block "
                  "(1,0,0): the global buffer has 40 elements [SP014]"))
      << r.out;
}

TEST(CudaCli, APointerToARegisterIsBoundsCheckedAsTheOneElementItPointsTo) {
  auto r = run_cli({"check", kernel("rms_norm_by_pointer_past_the_register.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out,
                  "tests/cuda/kernels/rms_norm_by_pointer_past_the_register.cu:11:45: "
                  "error: out-of-bounds read of sum[1] ('data[i]') by thread (0,0,0) "
                  "of block (0,0,0): the local buffer has 1 element [SP014]"))
      << r.out;
}

TEST(CudaCli, AGlobalPointerInTheSharedWindowIsNotModelled) {
  auto r = run_cli({"check", kernel("shared_ptx_of_a_global_pointer.cu")});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "'__cvta_generic_to_shared(src)' of a pointer that is not into "
                         "shared memory"))
      << r.out;
}

TEST(CudaCli, MalformedAnnotationIsBadInputWithFileAndLine) {
  auto r = run_cli({"check", kernel("malformed_annotation.cu")});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(has(r.err, "tests/cuda/kernels/malformed_annotation.cu:4: error: malformed "
                         "shardproof annotation: block=(32 threads) is not (X[,Y[,Z]])"))
      << r.err;
}

TEST(CudaCli, UnmodelledConstructCannotBeProvedAndSaysWhy) {
  auto r = run_cli({"check", kernel("unsupported_vote.cu")});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "the toolkit function '__ballot_sync' at "
                         "tests/cuda/kernels/unsupported_vote.cu:9:23 is not modelled"))
      << r.out;
  EXPECT_FALSE(has(r.out, ": proved")) << r.out;
}

TEST(CudaCli, ParseErrorCannotBeProvedAndNamesTheLine) {
  auto r = run_cli({"check", kernel("syntax_error.cu")});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_TRUE(has(r.out,
                  "tests/cuda/kernels/syntax_error.cu:8:24: note: could not prove "
                  "kernel broken: the parser (clang 19) rejects this file: expected "
                  "';' after expression"))
      << r.out;
}

TEST(CudaCli, AFileWithoutLaunchAnnotationsIsBadInput) {
  auto r = run_cli({"check", kernel("no_annotations.cu")});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(has(r.err,
                  "tests/cuda/kernels/no_annotations.cu: error: no '// shardproof: "
                  "launch' annotation and no kernel a profile recognises: nothing to "
                  "check"))
      << r.err;
  auto missing = run_cli({"check", kernel("not_there.cu")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_TRUE(has(missing.err, "cannot read tests/cuda/kernels/not_there.cu"))
      << missing.err;
}

TEST(CudaCli, ALaunchOfAKernelTheFileLacksIsBadInputAtTheAnnotation) {
  auto r = run_cli({"check", kernel("launch_of_missing_kernel.cu")});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(has(r.err, "tests/cuda/kernels/launch_of_missing_kernel.cu:4: error: the "
                         "launch of 'scale_rows' names no kernel of this file: use of "
                         "undeclared identifier 'scale_rows'"))
      << r.err;
}

TEST(CudaCli, SixteenBitBuffersAreProvedOverTheRealsAndSaySo) {
  auto r = run_cli({"check", kernel("half_scale.cu")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "proved: kernel half_scale: 'out' equals the reference 'x * 3' "
                         "(normal form; over the reals: the rounding of x (float16), out "
                         "(float16) is not modelled)"))
      << r.out;
}

// The same verdicts with the toolkit's own headers, where one is installed.
TEST(CudaCli, TheRealToolkitHeadersGiveTheSameVerdicts) {
  const std::string toolkit = "/usr/local/cuda";
  if (!std::ifstream(toolkit + "/include/cuda_runtime.h"))
    GTEST_SKIP() << "no CUDA toolkit at " << toolkit;
  for (const char *name :
       {"block_sum.cu", "softmax_warp.cu", "half_scale.cu", "softmax_half_float2.cu",
        "bias_gelu_half_uint4.cu", "rope_half_c10.cu", "shared_ptx_reverse.cu"}) {
    auto r = run_cli({"check", "--cuda-path", toolkit, kernel(name)});
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.out << r.err;
  }
  auto race =
      run_cli({"check", "--cuda-path", toolkit, kernel("block_sum_missing_barrier.cu")});
  EXPECT_EQ(race.exit_code, 1) << race.out << race.err;
  EXPECT_TRUE(has(race.out, "[SP013]")) << race.out;
}

TEST(CudaCli, CausalMaskOffByOneLeaksAKeyAndIsRefuted) {
  auto r = run_cli({"check", kernel("causal_softmax_off_by_one.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out,
                  "tests/cuda/kernels/causal_softmax_off_by_one.cu:28:3: error: the "
                  "value kernel 'causal_softmax' writes here into probs[0,0] differs "
                  "from the reference"))
      << r.out;
  // All scores 0: query 0 also weighs key 1, so it gives its own key half.
  EXPECT_TRUE(has(r.out, "  Reference (world 1): probs[0,0] = 1\n"
                         "  Rank 0: probs[0,0] = 0.5  (should be 1)\n"))
      << r.out;
}

TEST(CudaCli, ReductionDroppingThePartialWarpIsRefutedWithAnElementOfIt) {
  auto r =
      run_cli({"check", kernel("rms_norm_drops_partial_warp.cu"), "--format", "json"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto report = nlohmann::json::parse(r.out);
  ASSERT_EQ(report["findings"].size(), 1u) << r.out;
  const auto &f = report["findings"][0];
  EXPECT_EQ(f["rule_id"], "SP012");
  EXPECT_EQ(f["line"], 48);
  std::vector<std::string> inputs;
  for (const auto &input : f["example"]["inputs"])
    inputs.push_back(input["name"]);
  // Column 95 is summed by thread 47, a lane of the partial warp.
  EXPECT_EQ(inputs, (std::vector<std::string>{"x[0,0]", "x[0,95]", "weight[0]"}));
}

TEST(CudaCli, AnOutputThatTakesAShuffleOfAnAbsentLaneIsAFindingAtTheShuffle) {
  auto r = run_cli({"check", kernel("rms_norm_reads_absent_lanes.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out,
                  "tests/cuda/kernels/rms_norm_reads_absent_lanes.cu:11:19: error: "
                  "out[0,0] depends on an undefined value: the __shfl_down_sync of "
                  "thread (32,0,0) of block (0,0,0) reads lane 16, which its mask leaves "
                  "out (a lane that does not take part in a shuffle gives no defined "
                  "value) [SP020]\n"))
      << r.out;
}

TEST(CudaCli, AFullWarpButterflyOnAHalfWarpBlockReadsLanesPastTheLaunch) {
  auto r = run_cli({"check", kernel("row_sum_half_warp_butterfly.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out,
                  "tests/cuda/kernels/row_sum_half_warp_butterfly.cu:13:10: error: "
                  "out[0] depends on an undefined value: the __shfl_xor_sync of thread "
                  "(0,0,0) of block (0,0,0) reads lane 16, which is not in the launch (a "
                  "lane that does not take part in a shuffle gives no defined value) "
                  "[SP020]\n"))
      << r.out;
}

TEST(CudaCli, AShuffleOfAnAbsentLaneThatTheKernelWeighsByZeroIsProved) {
  // Any value the absent lane gives is multiplied by 0: the output does not
  // depend on it.
  auto r = run_cli({"check", kernel("row_sum_half_warp_masked.cu")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, ": proved (1 obligation: 1 proved")) << r.out;
}

TEST(CudaCli, AnEndlessLoopIsStoppedAndNeverProved) {
  auto r = run_cli({"check", kernel("endless_loop.cu")});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  // Where in the loop the budget runs out does not matter.
  EXPECT_TRUE(has(r.out, "the launch did not finish within 100000000 thread-steps (at "
                         "tests/cuda/kernels/endless_loop.cu:"))
      << r.out;
  EXPECT_TRUE(has(r.out, "): an endless loop?")) << r.out;
}

TEST(CudaCli, ARegisterOneBranchSideLeavesUndefinedIsNeverProved) {
  auto r = run_cli({"check", kernel("relu_one_sided_branch.cu")});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "depends on the unmodelled value 'undefined v' from "
                         "tests/cuda/kernels/relu_one_sided_branch.cu:12:5"))
      << r.out;
}

TEST(CudaCli, VectorisedLanesPairedWronglyAreRefutedAtTheVectorStore) {
  auto r = run_cli({"check", kernel("bias_gelu_vectorised_swapped_lanes.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out,
                  "tests/cuda/kernels/bias_gelu_vectorised_swapped_lanes.cu:24:44: "
                  "error: the value kernel 'bias_gelu4' writes here into out[0,1] "
                  "differs from the reference"))
      << r.out;
  EXPECT_TRUE(has(r.out, "    bias[1] = 1\n")) << r.out;
}

TEST(CudaCli, IgnoringAKernelRuleAcceptsTheKernelButNeverProvesIt) {
  auto r =
      run_cli({"check", kernel("bias_gelu_wrong_broadcast.cu"), "--ignore", "SP012"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "bias_gelu_wrong_broadcast.cu::bias_gelu --world 1: accepted"))
      << r.out;
  auto race =
      run_cli({"check", kernel("block_sum_missing_barrier.cu"), "--select", "SP014"});
  EXPECT_EQ(race.exit_code, 3) << race.out << race.err;
  EXPECT_FALSE(has(race.out, "[SP013]")) << race.out;
}

TEST(CudaCli, RotaryBackwardWritingAConstantIntoPassThroughChannelsIsRefuted) {
  auto r = run_cli({"check", kernel("rotary_backward_constant_passthrough.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out,
                  "tests/cuda/kernels/rotary_backward_constant_passthrough.cu:21:5: "
                  "error: the value kernel 'rotary_backward' writes here into "
                  "grad_x[0,0,8] differs from the reference"))
      << r.out;
  EXPECT_TRUE(has(r.out, "    grad[0,0,8] = 1\n")) << r.out;
  EXPECT_TRUE(has(r.out, "  Rank 0: grad_x[0,0,8] = 0  (should be 1)")) << r.out;
}

// --- kernels without annotations: profiles and dispatchers (issue 13) --------

namespace {
std::string profiled(const std::string &name) { return kernel("profiles/" + name); }

std::size_t count(const std::string &text, const std::string &needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + 1))
    ++n;
  return n;
}
} // namespace

struct ProfiledCase {
  const char *file;
  std::size_t launches; // each proved
};

class CudaProfiledKernel : public ::testing::TestWithParam<ProfiledCase> {};

TEST_P(CudaProfiledKernel, IsProvedAtEachReducedLaunchWithoutAnnotations) {
  auto r = run_cli({"check", profiled(GetParam().file)});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // A case is run at its smallest size and at aligned ones (one obligation
  // each): every launch is proved whole.
  EXPECT_EQ(count(r.out, ": proved ("), GetParam().launches) << r.out;
  EXPECT_EQ(count(r.out, " 0 refuted, 0 could not prove"), GetParam().launches) << r.out;
}

INSTANTIATE_TEST_SUITE_P(
    Profiles, CudaProfiledKernel,
    ::testing::Values(ProfiledCase{"scaled_softmax.cu", 3},
                      ProfiledCase{"scaled_masked_softmax.cu", 3},
                      ProfiledCase{"upper_triang_softmax.cu", 2},
                      ProfiledCase{"fused_rope.cu", 1}, ProfiledCase{"bias_gelu.cu", 1},
                      // cuApplyLayerNorm and cuApplyRMSNorm, Welford's online variance
                      ProfiledCase{"layer_norm.cu", 2},
                      // one launch per case of its switch, log2_elements 0 to 6
                      ProfiledCase{"dispatch_scaled_softmax.cu", 7}),
    [](const auto &info) {
      std::string name = info.param.file;
      return name.substr(0, name.find('.'));
    });

TEST(CudaProfiles, TheProfileNamesItselfAndTheLaunch) {
  auto r = run_cli({"check", profiled("upper_triang_softmax.cu")});
  EXPECT_TRUE(has(r.out,
                  "upper_triang_softmax.cu::scaled_upper_triang_masked_softmax_warp_"
                  "forward<float, float, float, 2> (profile: apex/Megatron scaled "
                  "upper-triangular (causal) masked softmax (forward)) --world 1: "
                  "proved"))
      << r.out;
  EXPECT_TRUE(has(r.out, "'dst' equals the reference 'torch.softmax((src * scale)."
                         "masked_fill(torch.ones(3, 3).triu(1).bool(), float('-inf')), "
                         "dim=-1)'"))
      << r.out;
}

TEST(CudaProfiles, AFullyMaskedRowThatIsNotZeroIsRefutedAtThatRow) {
  auto r = run_cli({"check", profiled("scaled_masked_softmax_uniform_masked_row.cu"),
                    "--format", "json"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto report = nlohmann::json::parse(r.out);
  ASSERT_EQ(report["findings"].size(), 3u) << r.out; // one per reduced launch
  for (const auto &f : report["findings"]) {
    EXPECT_EQ(f["rule_id"], "SP012");
    // Row 1 of the mask is masked whole: the kernel writes 1/n, not 0.
    EXPECT_EQ(f["example"]["element"], "dst[0,0,1,0]") << f;
    EXPECT_EQ(f["example"]["reference"], 0.0) << f;
    EXPECT_GT(f["example"]["ranks"][0]["value"].get<double>(), 0.0) << f;
  }
}

TEST(CudaProfiles, ACausalMaskOffByOneIsRefuted) {
  auto r = run_cli({"check", profiled("upper_triang_softmax_off_by_one.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(count(r.out, "[SP012]"), 2u) << r.out;
  EXPECT_TRUE(has(r.out, "writes here into dst[0,0,0] differs from the reference "
                         "'torch.softmax((src * scale).masked_fill(torch.ones(3, 3)"))
      << r.out;
}

TEST(CudaProfiles, ARotaryEmbeddingThatDropsThePassThroughIsRefuted) {
  auto r = run_cli({"check", profiled("fused_rope_no_passthrough.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "error: kernel 'fused_rope_forward<float>' never writes "
                         "dst[0,0,0,8], which the reference"))
      << r.out;
}

TEST(CudaProfiles, ABiasIndexedByElementReadsPastTheBias) {
  auto r = run_cli({"check", profiled("bias_gelu_unbroadcast_bias.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out,
                  "bias_gelu_unbroadcast_bias.cu:23:9: error: out-of-bounds read of "
                  "bias[16]"))
      << r.out;
  EXPECT_TRUE(has(r.out, "[SP014]")) << r.out;
}

TEST(CudaDispatch, ASizeNoCaseLaunchesIsKernelNotLaunched) {
  auto r = run_cli({"check", profiled("dispatch_scaled_softmax_missing_case.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(
      r.out, "dispatch_scaled_softmax_missing_case.cu:34:3: error: kernel not launched: "
             "'dispatch_scaled_softmax_forward' accepts query_seq_len = 8, "
             "key_seq_len = 17, batches = 1, attn_heads = 1 but no case of 'switch "
             "(log2_elements)' launches a kernel for its value 5: the output is left "
             "as it was [SP015]"))
      << r.out;
  EXPECT_EQ(count(r.out, "[SP015]"), 1u) << r.out;
  // The cases it has are each checked, and proved (at their smallest size and
  // the smallest multiples of 2, 4 and 8 of key_seq_len that launch them).
  EXPECT_EQ(count(r.out, ": proved ("), 6u) << r.out;
  EXPECT_TRUE(has(r.out, "scaled_softmax_warp_forward<float, float, float, 3> (launched "
                         "by dispatch_scaled_softmax_forward at query_seq_len = 32, "
                         "key_seq_len = 5, batches = 1, attn_heads = 1; also at "
                         "key_seq_len = 6; key_seq_len = 8) --world 1: proved (3 "
                         "obligations: 3 proved"))
      << r.out;
}

TEST(CudaDispatch, KernelNotLaunchedIsARuleWithItsDocs) {
  auto r = run_cli({"rules"});
  EXPECT_TRUE(has(r.out, "SP015")) << r.out;
  EXPECT_TRUE(has(r.out, "kernel-not-launched")) << r.out;
}

TEST(CudaProfiles, TheUnbiasedVarianceIsRefutedForLayerAndRmsNorm) {
  auto r = run_cli({"check", profiled("layer_norm_unbiased_variance.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out,
                  "error: the value kernel 'cuApplyLayerNorm<float, float, float>' "
                  "writes here into output_vals[0,0] differs from the reference "
                  "'torch.nn.functional.layer_norm(vals, (12,), gamma, beta, "
                  "epsilon)' [SP012]"))
      << r.out;
  EXPECT_TRUE(has(r.out, "error: the value kernel 'cuApplyRMSNorm<float, float, float>' "
                         "writes here into output_vals[0,0]"))
      << r.out;
}

TEST(CudaBuildFlags, ATorchExtensionParsesWithItsCompileCommandsAndStandInHeaders) {
  // include/ only through compile_commands.json's -I; ATen and c10 from
  // shardproof's stand-ins; the dispatcher instantiated at at::Half.
  auto r = run_cli({"check", kernel("extension/csrc/softmax_extension_cuda.cu")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(count(r.out, ": proved ("), 3u) << r.out; // case 2 at key_seq_len 3 and 4
  EXPECT_TRUE(has(r.out,
                  "scaled_softmax_warp_forward<c10::Half, c10::Half, float, 2> "
                  "(launched by dispatch_scaled_softmax_forward at query_seq_len = "
                  "64, key_seq_len = 3, batches = 1, attn_heads = 1; also at "
                  "key_seq_len = 4)"))
      << r.out;
  EXPECT_TRUE(has(r.out,
                  "over the reals: the rounding of src (float16), dst (float16) is "
                  "not modelled"))
      << r.out;
}

TEST(CudaDispatch, AnArgumentTheHostComputesFromARealIsSaidNotCrashed) {
  auto r = run_cli({"check", profiled("dispatch_opaque_size.cu")});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_TRUE(has(r.out,
                  "dispatch_opaque_size.cu:10:3: note: could not prove kernel "
                  "scaled_softmax_warp_forward<float, float, float, 5> (launched by "
                  "dispatch_scaled_softmax_forward at rows = 1): the launch of "
                  "'scaled_softmax_warp_forward<float, float, float, 5>' is not one its "
                  "profile covers: the launch lacks an integer argument"))
      << r.out;
  EXPECT_FALSE(has(r.out, ": proved")) << r.out;
}

TEST(CudaCli, AReadOfSharedMemoryNoThreadWroteIsAFinding) {
  auto r = run_cli({"check", kernel("block_sum_reads_unwritten.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out,
                  "tests/cuda/kernels/block_sum_reads_unwritten.cu:17:16: error: read "
                  "of uninitialised shared memory partial[32] ('partial[i]') by "
                  "thread (0,0,0) of block (0,0,0): no thread of the block wrote it "
                  "before [SP016]"))
      << r.out;
  EXPECT_FALSE(has(r.out, ": proved")) << r.out;
}

TEST(CudaCli, ABarrierOnlyPartOfTheBlockReachesIsAFinding) {
  auto r = run_cli({"check", kernel("barrier_in_branch.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out,
                  "tests/cuda/kernels/barrier_in_branch.cu:15:5: error: "
                  "__syncthreads() is reached by thread (0,0,0) of block (0,0,0) but "
                  "not by thread (16,0,0) of block (0,0,0), which has not exited: a "
                  "barrier in divergent code [SP017]"))
      << r.out;
}

TEST(CudaDispatch, AKernelChosenByAnOptionalPointerIsCheckedToo) {
  // The residual given, the dispatcher launches a kernel with no profile;
  // left out (nullptr), the profiled softmax, which is proved.
  auto r = run_cli({"check", profiled("dispatch_optional_pointer.cu")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(count(r.out, ": proved (1 obligation: 1 proved"), 1u) << r.out;
  EXPECT_FALSE(has(r.out, "[SP015]")) << r.out;
}

// --- multi-rank launches: a two-shot all-reduce and its twins ----------------

TEST(CudaCli, TwoShotAllReduceIsProvedOverTwoAndFourRanks) {
  auto r = run_cli({"check", kernel("all_reduce_two_shot.cu")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char *launch :
       {"float, 2> --world 2", "float, 4> --world 4", "__half, 4> --world 4"})
    EXPECT_TRUE(has(r.out, std::string("all_reduce_two_shot.cu::two_shot_all_reduce<") +
                               launch + ": proved (1 obligation: 1 proved"))
        << r.out;
  EXPECT_TRUE(has(r.out, "over the reals: the rounding of data (float16), partial "
                         "(float16), out (float16) is not modelled"))
      << r.out;
}

TEST(CudaCli, TwoShotAllReduceThroughVllmsRankDataStructsIsProved) {
  auto r = run_cli({"check", kernel("all_reduce_rank_data.cu")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(
      has(r.out, "two_shot_rank_data<2> --world 2: proved (1 obligation: 1 proved"))
      << r.out;
}

TEST(CudaCli, AllReduceWithTheToolkitsHeadersGivesTheSameVerdicts) {
  const std::string toolkit = "/usr/local/cuda";
  if (!std::ifstream(toolkit + "/include/cuda_runtime.h"))
    GTEST_SKIP() << "no CUDA toolkit at " << toolkit;
  auto proved =
      run_cli({"check", "--cuda-path", toolkit, kernel("all_reduce_two_shot.cu")});
  EXPECT_EQ(proved.exit_code, 0) << proved.out << proved.err;
  auto race =
      run_cli({"check", "--cuda-path", toolkit, kernel("all_reduce_missing_barrier.cu")});
  EXPECT_EQ(race.exit_code, 1) << race.out << race.err;
  EXPECT_TRUE(has(race.out, "cross-rank race on partial[0][0]")) << race.out;
}

TEST(CudaCli, AllReduceWithoutTheBarrierBetweenItsStagesIsACrossRankRace) {
  auto r = run_cli({"check", kernel("all_reduce_missing_barrier.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(
      r.out, "tests/cuda/kernels/all_reduce_missing_barrier.cu:34:5: error: "
             "cross-rank race on partial[0][0]: thread (0,0,0) of block (0,0,0) of "
             "rank 0 writes it here and thread (0,0,0) of block (0,0,0) of rank 1 "
             "reads it at tests/cuda/kernels/all_reduce_missing_barrier.cu:42:16, and "
             "no flag orders the two (a flag set after __threadfence_system() and "
             "awaited, with __syncthreads() before the set and after the wait) "
             "[SP018]\n"
             "tests/cuda/kernels/all_reduce_missing_barrier.cu:42:16: note: thread "
             "(0,0,0) of block (0,0,0) of rank 1 reads partial[0][0] here\n"))
      << r.out;
}

TEST(CudaCli, AllReduceReusingItsFirstBarriersFlagsIsACrossRankRace) {
  auto r = run_cli({"check", kernel("all_reduce_reused_flag.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "tests/cuda/kernels/all_reduce_reused_flag.cu:34:5: error: "
                         "cross-rank race on partial[0][0]: thread (0,0,0) of block "
                         "(0,0,0) of rank 0 writes it here and thread (0,0,0) of block "
                         "(0,0,0) of rank 1 reads it at "
                         "tests/cuda/kernels/all_reduce_reused_flag.cu:43:16"))
      << r.out;
}

TEST(CudaCli, AllReduceSettingItsFlagsWithoutAFenceIsACrossRankRace) {
  auto r = run_cli({"check", kernel("all_reduce_no_fence.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "tests/cuda/kernels/all_reduce_barrier.cuh:59:16: error: "
                         "cross-rank race on partial[1][4]: thread (0,0,0) of block "
                         "(0,0,0) of rank 0 reads it here and thread (0,0,0) of block "
                         "(0,0,0) of rank 1 writes it at "
                         "tests/cuda/kernels/all_reduce_barrier.cuh:50:5"))
      << r.out;
}

TEST(CudaCli, AllReduceGatheringTheWrongPeersSliceIsRefutedOnRankOne) {
  auto r = run_cli({"check", kernel("all_reduce_wrong_peer_slice.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "tests/cuda/kernels/all_reduce_wrong_peer_slice.cu:43:7: error: "
                         "the value kernel 'two_shot_all_reduce<2>' writes here into "
                         "out[1,0] differs from the reference 'data.sum(0)' [SP012]\n"
                         "  Example:\n    data[1,0] = 1\n    every other input = 0\n"
                         "  Reference (world 1): out[1,0] = 1\n"
                         "  Rank 1: out[1,0] = 0  (should be 1)\n"))
      << r.out;
  EXPECT_TRUE(has(r.out, "Rank 1 is the kernel's launch on rank 1: out[1,0] was written "
                         "by thread (0,0,0) of block (0,0,0) of rank 1"))
      << r.out;
}

TEST(CudaCli, AllReduceDroppingTheRemainderNeverWritesTheLastElements) {
  auto r = run_cli({"check", kernel("all_reduce_drops_remainder.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "tests/cuda/kernels/all_reduce_drops_remainder.cu:6: error: "
                         "kernel 'two_shot_all_reduce<4>' never writes out[0,16], which "
                         "the reference 'data.sum(0)' defines [SP012]\n"
                         "  Example:\n    data[3,16] = 1\n    every other input = 0\n"))
      << r.out;
}

TEST(CudaCli, ASpinOfOneLaunchIsStoppedAtOnceWithItsLine) {
  auto r = run_cli({"check", kernel("spin_without_peers.cu")});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_TRUE(has(r.out,
                  "the loop at tests/cuda/kernels/spin_without_peers.cu:10:10 never "
                  "ends: thread (0,0,0) of block (0,0,0) spins on '*(volatile const "
                  "int *)ready == 0' and an iteration changes nothing (a wait for "
                  "memory no thread wrote before it; a wait on another block of "
                  "one launch is not modelled)"))
      << r.out;
}

TEST(CudaCli, AFlagNoRankEverSetsIsAWaitThatNeverEnds) {
  auto r = run_cli({"check", kernel("all_reduce_waits_forever.cu")});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_TRUE(has(r.out,
                  "tests/cuda/kernels/all_reduce_waits_forever.cu:17:10: note: "
                  "could not prove kernel wait_forever: 'out' equals the reference "
                  "'out': the loop at "
                  "tests/cuda/kernels/all_reduce_waits_forever.cu:17:10 never ends"))
      << r.out;
}

// --- views of another scalar type, c10::Half operators (issue 13) -------------

TEST(CudaCli, ABiasViewAVectorOffIsRefutedWithTheBiasElementThatLeaks) {
  auto r = run_cli({"check", kernel("bias_gelu_half_uint4_wrong_offset.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "tests/cuda/kernels/mem_access.cuh:36:17: error: the value "
                         "kernel 'bias_gelu_half' writes here into out[0,0] differs from "
                         "the reference"))
      << r.out;
  EXPECT_TRUE(has(r.out, "  Example:\n    bias[0] = 1\n    every other input = 0\n"))
      << r.out;
  EXPECT_TRUE(has(r.out, "  Rank 0: out[0,0] = 0  (should be 0.841192)")) << r.out;
}

TEST(CudaCli, AFloat2ViewIndexedInElementsReadsPastTheBuffer) {
  auto r = run_cli({"check", kernel("softmax_half_float2_vector_index.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out,
                  "tests/cuda/kernels/softmax_half_float2_vector_index.cu:14:20: "
                  "error: out-of-bounds read of x[16] ('reinterpret_cast<const "
                  "float2 *>(x)[row * 4]') by thread (1,0,0) of block (0,0,0): the "
                  "global buffer has 16 elements [SP014]"))
      << r.out;
}

TEST(CudaCli, AnUnnegatedC10HalfRotationIsRefutedAtTheKernelLine) {
  auto r = run_cli({"check", kernel("rope_half_c10_unnegated.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out,
                  "tests/cuda/kernels/rope_half_c10_unnegated.cu:20:5: error: the "
                  "value kernel 'rope_half' writes here into dst[0,0] differs from "
                  "the reference"))
      << r.out;
  EXPECT_TRUE(has(r.out, "    src[0,2] = 1\n    freqs[0] = 1\n")) << r.out;
  EXPECT_TRUE(has(r.out, "  Rank 0: dst[0,0] = 0.841471  (should be -0.841471)"))
      << r.out;
}

// --- cooperative groups --------------------------------------------------

TEST(CudaCli, TheCooperativeGroupsRmsNormIsProved) {
  auto r = run_cli({"check", kernel("cg_rms_norm.cu")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "proved: kernel rms_norm_tiles: 'out' equals the reference 'x * "
                         "torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight' "
                         "(normal form)"))
      << r.out;
}

TEST(CudaCli, ATileWhoseReductionTakesAnotherWidthsOffsetsIsRefuted) {
  auto r = run_cli({"check", kernel("cg_rms_norm_wrong_tile_width.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out,
                  "tests/cuda/kernels/cg_rms_norm_wrong_tile_width.cu:52:5: error: "
                  "the value kernel 'rms_norm_tiles' writes here into out[0,0] "
                  "differs from the reference 'x * torch.rsqrt(x.pow(2).mean(-1, "
                  "keepdim=True) + eps) * weight' [SP012]\n"
                  "  Example:\n    x[0,0] = 1\n    x[0,95] = 1\n    weight[0] = 1\n"
                  "    every other input = 0\n"))
      << r.out;
  // x[0,95] is summed by thread 31, lane 15 of the second tile: left out.
  EXPECT_TRUE(has(r.out, "  Rank 0: out[0,0] = 9.79326  (should be 6.92654)")) << r.out;
}

TEST(CudaCli, AMissingBlockSyncBetweenTheTilesPartialsIsARace) {
  auto r = run_cli({"check", kernel("cg_rms_norm_missing_sync.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out,
                  "tests/cuda/kernels/cg_rms_norm_missing_sync.cu:42:15: error: "
                  "shared-memory race on partials[1]: thread (1,0,0) of block "
                  "(0,0,0) reads it here and thread (16,0,0) of block (0,0,0) "
                  "writes it at tests/cuda/kernels/cg_rms_norm_missing_sync.cu:38:5 "
                  "with no barrier between [SP013]\n"
                  "tests/cuda/kernels/cg_rms_norm_missing_sync.cu:38:5: note: "
                  "thread (16,0,0) of block (0,0,0) writes partials[1] here\n"))
      << r.out;
}

TEST(CudaCli, CooperativeGroupsWithTheToolkitsHeadersGiveTheSameVerdicts) {
  const std::string toolkit = "/usr/local/cuda";
  if (!std::ifstream(toolkit + "/include/cooperative_groups.h"))
    GTEST_SKIP() << "no CUDA toolkit at " << toolkit;
  auto proved = run_cli({"check", "--cuda-path", toolkit, kernel("cg_rms_norm.cu")});
  EXPECT_EQ(proved.exit_code, 0) << proved.out << proved.err;
  auto refuted = run_cli(
      {"check", "--cuda-path", toolkit, kernel("cg_rms_norm_wrong_tile_width.cu")});
  EXPECT_EQ(refuted.exit_code, 1) << refuted.out << refuted.err;
  EXPECT_TRUE(has(refuted.out, "  Rank 0: out[0,0] = 9.79326  (should be 6.92654)"))
      << refuted.out;
  auto race =
      run_cli({"check", "--cuda-path", toolkit, kernel("cg_rms_norm_missing_sync.cu")});
  EXPECT_EQ(race.exit_code, 1) << race.out << race.err;
  EXPECT_TRUE(has(race.out, "shared-memory race on partials[1]")) << race.out;
}

TEST(CudaCli, AGridGroupOfSeveralBlocksIsNotProvedAndSaysWhere) {
  std::string path = ::testing::TempDir() + "cg_grid_sync.cu";
  std::ofstream(path) << "#include <cooperative_groups.h>\n"
                         "// shardproof: launch copy grid=(2) block=(32)\n"
                         "// shardproof: arg x = float32[64]\n"
                         "// shardproof: arg out = float32[64]\n"
                         "// shardproof: reference out = x\n"
                         "__global__ void copy(const float *x, float *out) {\n"
                         "  cooperative_groups::grid_group grid = "
                         "cooperative_groups::this_grid();\n"
                         "  out[grid.thread_rank()] = x[grid.thread_rank()];\n"
                         "  grid.sync();\n"
                         "}\n";
  auto r = run_cli({"check", path});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "'cooperative_groups::this_grid()' on a launch of 2 blocks (a "
                         "grid-wide group) at " +
                             path + ":7:41 is not modelled"))
      << r.out;
}

// A dispatcher whose float4 kernel needs rows of a multiple of 4 it does not
// check: run at its smallest size and the smallest multiples of 2, 4 and 8.
TEST(CudaDispatch, AFaultOnlyAtUnalignedSizesIsAnUncheckedPrecondition) {
  auto r = run_cli({"check", profiled("dispatch_bias_gelu_float4.cu")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(has(
      r.out,
      "dispatch_bias_gelu_float4.cuh:21:41: warning: 'launch_bias_gelu' accepts "
      "intermediate_size = 1, batch_size = 1 but there its kernel faults (SP014): "
      "out-of-bounds read of input[1] ('*reinterpret_cast<const float4 *>(input + "
      "offset)') by thread (0,0,0) of block (0,0,0): the global buffer has 1 element; "
      "every size tried where intermediate_size is a multiple of 4 is proved "
      "(intermediate_size = 4; intermediate_size = 8): the C++ entry does not check what "
      "its callers must ensure [SP019]\n"))
      << r.out;
  // The case counts as proved at the aligned sizes, and says which were run.
  EXPECT_TRUE(has(r.out, "::fused_bias_gelu<float> (launched by launch_bias_gelu at "
                         "intermediate_size = 1, batch_size = 1; also at "
                         "intermediate_size = 2; intermediate_size = 4; "
                         "intermediate_size = 8; proved where intermediate_size is a "
                         "multiple of 4) --world 1: proved (2 obligations: 2 proved"))
      << r.out;
  EXPECT_FALSE(has(r.out, "error:")) << r.out;
}

TEST(CudaDispatch, AFaultAtAlignedSizesTooStaysAnError) {
  auto r = run_cli({"check", profiled("dispatch_bias_gelu_float4_half_step.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out,
                  "dispatch_bias_gelu_float4.cuh:21:41: error: out-of-bounds read of "
                  "input[1] ('*reinterpret_cast<const float4 *>(input + offset)') by "
                  "thread (0,0,0) of block (0,0,0): the global buffer has 1 element "
                  "[SP014]\n"))
      << r.out;
  EXPECT_TRUE(has(r.out,
                  "  at intermediate_size = 4, batch_size = 1 too (a multiple of 4): "
                  "misaligned access of input[2] ('*reinterpret_cast<const float4 *>"
                  "(input + offset)') by thread (1,0,0) of block (0,0,0): a 'float4' "
                  "needs 16-byte alignment and element 2 of the global float32 buffer "
                  "starts at byte 8\n"))
      << r.out;
  EXPECT_FALSE(has(r.out, "[SP019]")) << r.out;
}

TEST(CudaDispatch, UncheckedSizePreconditionIsARuleWithItsDocs) {
  auto r = run_cli({"rules"});
  EXPECT_TRUE(has(r.out, "SP019")) << r.out;
  EXPECT_TRUE(has(r.out, "unchecked-size-precondition")) << r.out;
}

// Rows alike up to a renaming of their inputs are proved once; a row that is
// wrong is its own obligation and is refuted at its own element.
TEST(CudaCli, OnlyTheRowThatReadsAnotherRowsInputsIsRefuted) {
  auto r = run_cli({"check", kernel("rms_norm_last_block_reads_first_row.cu")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out,
                  "tests/cuda/kernels/rms_norm_last_block_reads_first_row.cu:51:5: "
                  "error: the value kernel 'rms_norm' writes here into out[2,0] "
                  "differs from the reference"))
      << r.out;
  EXPECT_TRUE(has(r.out, "  Rank 0: out[2,0] = 0  (should be 9.79326)\n")) << r.out;
  EXPECT_TRUE(has(r.out, "out[2,0] was written by thread (0,0,0) of block (2,0,0)"))
      << r.out;
}

// `shardproof bindings`: an extension's Python functions and their kernels.
namespace {
std::string bound(const std::string &name) { return kernel("bound_extension/" + name); }
} // namespace

TEST(CudaBindingsCli, ListsEachPythonFunctionWithTheKernelsBehindIt) {
  auto r = run_cli({"bindings", bound("fused_bias_relu.cpp"),
                    bound("fused_bias_relu_kernel.cu"), bound("ops.cpp")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string dir = "tests/cuda/kernels/bound_extension/";
  EXPECT_EQ(r.out,
            "TORCH_EXTENSION_NAME.forward (" + dir +
                "fused_bias_relu.cpp:28:5): forward\n"
                "  kernel bias_relu_forward (launched at " +
                dir +
                "fused_bias_relu_kernel.cu:26:3 via forward -> launch_bias_relu)\n"
                "TORCH_EXTENSION_NAME.backward (" +
                dir + "fused_bias_relu.cpp:29:5): (lambda at " + dir +
                "fused_bias_relu.cpp:31:7)\n"
                "  kernel bias_relu_backward (launched at " +
                dir + "fused_bias_relu_kernel.cu:31:3 via (lambda at " + dir +
                "fused_bias_relu.cpp:31:7) -> backward -> launch_bias_relu_backward)\n"
                "TORCH_EXTENSION_NAME.rows_per_block (" +
                dir +
                "fused_bias_relu.cpp:33:5): rows_per_block, which launches no kernel "
                "in these files\n"
                "torch.ops.shardproof_test.bias_relu (" +
                dir +
                "ops.cpp:9:50) bias_relu(Tensor x, Tensor bias) -> Tensor: forward\n"
                "  kernel bias_relu_forward (launched at " +
                dir +
                "fused_bias_relu_kernel.cu:26:3 via forward -> launch_bias_relu)\n");
}

TEST(CudaBindingsCli, AFolderIsSearchedAndJsonGivesTheSameFunctions) {
  auto r = run_cli({"bindings", kernel("bound_extension"), "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  auto report = nlohmann::json::parse(r.out);
  ASSERT_EQ(report["functions"].size(), 4u) << r.out;
  const auto &forward = report["functions"][0];
  EXPECT_EQ(forward["python"], "TORCH_EXTENSION_NAME.forward");
  EXPECT_EQ(forward["kernels"][0]["kernel"], "bias_relu_forward");
  EXPECT_EQ(forward["kernels"][0]["via"],
            nlohmann::json::array({"forward", "launch_bias_relu"}));
  EXPECT_TRUE(report["errors"].empty());
}

TEST(CudaBindingsCli, ALauncherOfAFileNotGivenIsSaidUnknown) {
  auto r = run_cli({"bindings", bound("fused_bias_relu.cpp")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "TORCH_EXTENSION_NAME.forward (tests/cuda/kernels/"
                         "bound_extension/fused_bias_relu.cpp:28:5): forward, which "
                         "launches no kernel in these files\n  calls launch_bias_relu, "
                         "defined in none of these files: the kernels behind it are "
                         "unknown\n"))
      << r.out;
}

TEST(CudaBindingsCli, AFileClangRejectsIsAnErrorAtItsLine) {
  auto r = run_cli({"bindings", kernel("syntax_error.cu")});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "tests/cuda/kernels/syntax_error.cu:8:24: error: the parser "
                         "(clang 19) rejects this file: expected ';' after expression\n"))
      << r.out;
}

TEST(CudaBindingsCli, APythonCallOfAnExtensionFunctionRunsItsKernel) {
  // fused.forward's host code runs at the call's sizes and its kernel is
  // lifted into the trace: the module is proved on what the kernel computes.
  auto r = run_cli({"check", bound("model.py::calls_the_kernel")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, ": proved (2 obligations: 2 proved")) << r.out;
  // load() also makes the module importable by its name, as pybind11's is.
  auto imported = run_cli({"check", bound("model.py::imported_by_name")});
  EXPECT_EQ(imported.exit_code, 0) << imported.out << imported.err;
  EXPECT_TRUE(has(imported.out, ": proved (2 obligations: 2 proved")) << imported.out;
}

TEST(CudaBindingsCli, AKernelLaunchThatDropsAPartialBlockOnARanksRowsIsRefuted) {
  // Rows split over two ranks, each running the extension forward and
  // backward: proved; with launchers that round the grid down, at 3 rows a
  // rank no block runs and the output is what torch::empty_like left.
  auto correct = run_cli({"check", bound("sequence_parallel.py::correct")});
  EXPECT_EQ(correct.exit_code, 0) << correct.out << correct.err;
  EXPECT_TRUE(has(correct.out, ": proved (3 obligations: 3 proved")) << correct.out;
  auto buggy = run_cli({"check", bound("sequence_parallel.py::partial_block_dropped")});
  EXPECT_EQ(buggy.exit_code, 1) << buggy.out << buggy.err;
  const std::string file = "tests/cuda/kernels/bound_extension/sequence_parallel.py";
  EXPECT_TRUE(has(buggy.out, file + ":25:15: error: the value computed here "
                                    "(fused_bias_relu.forward) is unrelated to the "
                                    "reference; output 'out' differs from the "
                                    "single-device reference [SP001]\n"
                                    "  Example:\n"
                                    "    bias[0] = 1\n"
                                    "    every other input = 0\n"
                                    "  Reference (world 1): out[0,0] = 1\n"
                                    "  Rank 0: out[0,0] = 0  (should be 1)\n"
                                    "  Rank 1: out[0,0] = 0  (should be 1)\n"))
      << buggy.out;
  EXPECT_TRUE(has(buggy.out, "    at::empty_like at fused_bias_relu.cpp:19[3] = 1\n"))
      << buggy.out;
}

TEST(CudaBindingsCli, MegatronsFusedSoftmaxesAreLiftedFromAPythonCall) {
  // The real extensions' host code (their batches-per-block checks, the
  // dispatch over sizes, a scale converted to c10::Half and back, a boolean
  // mask read as its values) and their warp-shuffle kernels, from the
  // tree's own sources.
  const char *sources = std::getenv("MEGATRON_FUSED_KERNELS");
  if (!sources)
    GTEST_SKIP() << "set MEGATRON_FUSED_KERNELS to a Megatron-LM tree's "
                    "megatron/fused_kernels to run this";
  const std::string model = std::string(SHARDPROOF_SOURCE_DIR) +
                            "/tests/cuda/upstream/megatron_fused_softmax.py";
  for (const char *entry : {"::heads", "::masked_heads"}) {
    auto proved = run_cli({"check", model + entry});
    EXPECT_EQ(proved.exit_code, 0) << entry << proved.out << proved.err;
    EXPECT_TRUE(has(proved.out, ": proved (2 obligations: 2 proved")) << proved.out;
  }
  auto wrong = run_cli({"check", model + "::heads_with_wrong_scale"});
  EXPECT_EQ(wrong.exit_code, 1) << wrong.out << wrong.err;
  // softmax([0, 0.5]) at world 1, softmax([0, 0.25]) on the ranks.
  EXPECT_TRUE(has(wrong.out, "  Reference (world 1): out[0,1,0] = 0.377541\n"
                             "  Rank 0: out[0,1,0] = 0.437823  (should be 0.377541)\n"))
      << wrong.out;
  // Row 0 of a causal mask keeps one score: 1 at world 1, 1/32 unmasked.
  auto unmasked = run_cli({"check", model + "::masked_heads_without_mask"});
  EXPECT_EQ(unmasked.exit_code, 1) << unmasked.out << unmasked.err;
  EXPECT_TRUE(has(unmasked.out, "  Reference (world 1): out[0,0,0,0] = 1\n"
                                "  Rank 0: out[0,0,0,0] = 0.03125  (should be 1)\n"))
      << unmasked.out;
}

TEST(CudaBindingsCli, ApexFusedLayerNormIsLiftedFromAPythonCall) {
  // apex's host code (int& sizes, the statistics' dtype, std::optional
  // tensors, its DISPATCH macros, a grid bounded by the device's) and its
  // kernel, from the tree's own sources with the toolkit's headers.
  const char *sources = std::getenv("APEX_CSRC");
  if (!sources || !std::filesystem::exists("/usr/local/cuda/include/cuda.h"))
    GTEST_SKIP() << "set APEX_CSRC to an apex tree's csrc (and install the CUDA "
                    "toolkit) to run this";
  const std::string model =
      std::string(SHARDPROOF_SOURCE_DIR) + "/tests/cuda/upstream/apex_layer_norm.py";
  auto rows = run_cli({"check", model + "::rows", "--cuda-path", "/usr/local/cuda"});
  EXPECT_EQ(rows.exit_code, 0) << rows.out << rows.err;
  EXPECT_TRUE(has(rows.out, ": proved (2 obligations: 2 proved")) << rows.out;
  auto wrong = run_cli(
      {"check", model + "::rows_with_wrong_eps", "--cuda-path", "/usr/local/cuda"});
  EXPECT_EQ(wrong.exit_code, 1) << wrong.out << wrong.err;
  // Row [0, 1, 1, 0]: -0.5 / sqrt(0.25 + 1e-5) at world 1, / sqrt(1.25) on the ranks.
  EXPECT_TRUE(has(wrong.out, "  Reference (world 1): out[0,0] = -0.99998\n"
                             "  Rank 0: out[0,0] = -0.447214  (should be -0.99998)\n"))
      << wrong.out;
}

TEST(CudaBindingsCli, ALoadedExtensionHasExactlyItsRegisteredFunctions) {
  // hasattr is True for forward and False for forward_fp8, as on a machine
  // that built it; the PyTorch path is then proved.
  auto r = run_cli({"check", bound("model.py::unfused")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, ": proved (3 obligations: 3 proved")) << r.out;
}

TEST(CudaBindingsCli, AnExtensionWithASourceMissingIsNotModelledAndSaysWhich) {
  auto r = run_cli({"check", bound("model.py::missing_source")});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "the extension 'fused_bias_relu' could not be read: ")) << r.out;
  EXPECT_TRUE(has(r.out, "fused_bias_relu_kernel_v2.cu: no such source file")) << r.out;
}

TEST(CudaBindingsCli, WhatALoadedExtensionDoesNotModelStopsTheTrace) {
  // A built module's own attributes, and load() options PyTorch does not
  // have, are not modelled: never carried on.
  auto file = run_cli({"check", bound("model.py::reads_the_module_file")});
  EXPECT_EQ(file.exit_code, 3) << file.out << file.err;
  EXPECT_TRUE(has(file.out, "the extension module's __file__ is not modelled"))
      << file.out;
  auto option = run_cli({"check", bound("model.py::unknown_build_option")});
  EXPECT_EQ(option.exit_code, 3) << option.out << option.err;
  EXPECT_TRUE(
      has(option.out, "load(..., with_pytorch_error_handling=...) is not modelled"))
      << option.out;
}
