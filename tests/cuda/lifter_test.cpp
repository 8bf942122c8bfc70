// The CUDA frontend without Python: kernels of tests/cuda/kernels parsed
// with shardproof's own headers (no toolkit, no GPU), lifted over their
// annotated launch into terms, and compared with terms built here.
#include "checkers/prover/prover.h"
#include "frontend/cuda/cuda_frontend.h"
#include "frontend/cuda/warp.h"
#include "models/terms/evaluate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

using namespace shardproof;
namespace cuda = frontend::cuda;
using terms::TermId;

namespace {

std::string kernel_path(const std::string &name) {
  return std::string(SHARDPROOF_SOURCE_DIR) + "/tests/cuda/kernels/" + name;
}

// A kernel file's first launch, parsed, lifted over fresh input variables
// named after the buffers ("x[3]"); the time each step took is printed.
struct Lifted {
  terms::TermStore store;
  cuda::KernelLaunch launch;
  std::map<std::string, std::vector<TermId>> inputs;
  cuda::LiftedLaunch result;
  std::optional<cuda::Diagnostic> parse_error;
};

std::unique_ptr<Lifted> lift_file(const std::string &path, const std::string &name,
                                  cuda::ParseOptions options = {},
                                  std::size_t which = 0) {
  auto out = std::make_unique<Lifted>();
  auto annotations = cuda::read_annotations(path);
  EXPECT_FALSE(annotations.error);
  out->launch = annotations.launches.at(which);
  auto start = std::chrono::steady_clock::now();
  auto parsed = cuda::parse_file(path, annotations.launches, options);
  auto parsed_at = std::chrono::steady_clock::now();
  if (!parsed.file) {
    out->parse_error = parsed.error;
    return out;
  }
  for (const auto &arg : out->launch.args)
    if (arg.is_buffer())
      for (std::int64_t i = 0; i < ir::element_count(out->launch.reference_shape(arg));
           ++i)
        out->inputs[arg.name].push_back(out->store.var(
            arg.name + "[" + std::to_string(i) + "]", terms::VarKind::Reference));
  out->result = parsed.file->lift(out->store, out->launch, out->inputs);
  auto lifted_at = std::chrono::steady_clock::now();
  auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  std::printf("%s: parse %.0f ms, lift %.0f ms, %zu terms\n", name.c_str(),
              ms(parsed_at - start), ms(lifted_at - parsed_at), out->store.size());
  return out;
}

std::unique_ptr<Lifted> lift(const std::string &name, cuda::ParseOptions options = {},
                             std::size_t which = 0) {
  return lift_file(kernel_path(name), name, std::move(options), which);
}

prover::Verdict prove(Lifted &l, std::span<const TermId> lhs,
                      std::span<const TermId> rhs) {
  return prover::prove_in_process(l.store, lhs, rhs, {}, 5000);
}

} // namespace

TEST(CudaLifter, BlockReductionIsTheRowSums) {
  auto l = lift("block_sum.cu");
  ASSERT_FALSE(l->parse_error) << l->parse_error->message;
  ASSERT_FALSE(l->result.unsupported) << l->result.unsupported->message;
  ASSERT_TRUE(l->result.findings.empty()) << l->result.findings[0].message;
  const auto &x = l->inputs["x"];
  std::vector<TermId> sums;
  for (int row = 0; row < 2; ++row)
    sums.push_back(l->store.add(std::span<const TermId>(x.data() + 8 * row, 8)));
  auto verdict = prove(*l, l->result.buffers["out"], sums);
  EXPECT_EQ(verdict.kind, prover::Verdict::Kind::Proved) << verdict.why;
  // Row 1's sum is written by thread 0 of block 1, at the kernel's last line.
  const auto &write = l->result.writes["out"][1];
  ASSERT_TRUE(write);
  EXPECT_EQ(write->loc.line, 21);
  EXPECT_EQ(write->thread.str(), "thread (0,0,0) of block (1,0,0)");
}

TEST(CudaLifter, BlockReductionWithTheRealToolkitHeaders) {
  if (!std::ifstream("/usr/local/cuda/include/cuda_runtime.h"))
    GTEST_SKIP() << "no CUDA toolkit at /usr/local/cuda";
  auto l = lift("block_sum.cu", {.cuda_path = "/usr/local/cuda"});
  ASSERT_FALSE(l->parse_error) << l->parse_error->message;
  ASSERT_FALSE(l->result.unsupported) << l->result.unsupported->message;
  EXPECT_TRUE(l->result.findings.empty());
}

TEST(CudaLifter, MissingBarrierIsARaceNamingBothThreadsAndTheElement) {
  auto l = lift("block_sum_missing_barrier.cu");
  ASSERT_FALSE(l->result.unsupported) << l->result.unsupported->message;
  ASSERT_EQ(l->result.findings.size(), 1u);
  const auto &f = l->result.findings[0];
  EXPECT_EQ(f.kind, cuda::KernelFinding::Kind::SharedMemoryRace);
  EXPECT_EQ(f.loc.line, 17);
  EXPECT_EQ(f.message,
            "shared-memory race on partial[2]: thread (0,0,0) of block (0,0,0) reads it "
            "here and thread (2,0,0) of block (0,0,0) writes it at " +
                kernel_path("block_sum_missing_barrier.cu") +
                ":17:7 with no barrier between");
  ASSERT_TRUE(f.other_loc);
  EXPECT_EQ(f.other_loc->line, 17);
  EXPECT_EQ(f.other_loc->column, 7);
}

TEST(CudaLifter, ShufflesReadTheLanesCudaDefinesForAWidth) {
  auto l = lift("shuffle_lanes.cu");
  ASSERT_FALSE(l->result.unsupported) << l->result.unsupported->message;
  const auto &x = l->inputs["x"];
  const auto &out = l->result.buffers["out"];
  for (int lane = 0; lane < 32; ++lane) {
    int segment = lane - lane % 8;
    EXPECT_EQ(out[lane], x[lane ^ 2]) << "xor, lane " << lane;
    EXPECT_EQ(out[32 + lane], x[lane % 8 < 5 ? lane + 3 : lane]) << "down, lane " << lane;
    EXPECT_EQ(out[64 + lane], x[lane % 8 >= 3 ? lane - 3 : lane]) << "up, lane " << lane;
    EXPECT_EQ(out[96 + lane], x[segment + 5]) << "idx, lane " << lane;
  }
}

TEST(CudaLifter, DataDependentBranchOnlyAssigningIsAChoice) {
  auto l = lift("relu_branch.cu");
  ASSERT_FALSE(l->result.unsupported) << l->result.unsupported->message;
  const auto &x = l->inputs["x"];
  std::vector<TermId> relu;
  for (TermId v : x)
    relu.push_back(l->store.max(v, l->store.zero()));
  auto verdict = prove(*l, l->result.buffers["out"], relu);
  EXPECT_EQ(verdict.kind, prover::Verdict::Kind::Proved) << verdict.why;
}

TEST(CudaLifter, OutOfBoundsNamesTheAccessTheThreadAndTheIndex) {
  auto l = lift("missing_bounds_guard.cu");
  ASSERT_EQ(l->result.findings.size(), 1u);
  const auto &f = l->result.findings[0];
  EXPECT_EQ(f.kind, cuda::KernelFinding::Kind::OutOfBounds);
  EXPECT_EQ(f.loc.line, 11);
  EXPECT_EQ(f.message, "out-of-bounds read of x[40] ('x[i]') by thread (8,0,0) of block "
                       "(1,0,0): the global buffer has 40 elements");
}

TEST(CudaLifter, UnmodelledConstructsStopWithTheirLine) {
  auto vote = lift("unsupported_vote.cu");
  ASSERT_TRUE(vote->result.unsupported);
  EXPECT_EQ(vote->result.unsupported->loc.line, 9);
  EXPECT_EQ(vote->result.unsupported->message,
            "the toolkit function '__ballot_sync' at " +
                kernel_path("unsupported_vote.cu") + ":9:23 is not modelled");
  auto store = lift("store_under_data_branch.cu");
  ASSERT_TRUE(store->result.unsupported);
  EXPECT_EQ(store->result.unsupported->message,
            "a memory write under a data-dependent condition at " +
                kernel_path("store_under_data_branch.cu") + ":12:5 is not modelled");
}

TEST(CudaLifter, AParseErrorIsADiagnosticWithItsLine) {
  auto l = lift("syntax_error.cu");
  ASSERT_TRUE(l->parse_error);
  EXPECT_EQ(l->parse_error->loc.line, 8);
  EXPECT_EQ(l->parse_error->message,
            "the parser (clang 19) rejects this file: expected ';' after expression");
}

// Constructs the lifter does not model stop it with their line, whatever
// the kernel around them: never a value, never a crash.
struct Unmodelled {
  const char *name;
  const char *body; // of k(const float *x, float *out), t = threadIdx.x
  const char *message;
};

class CudaUnmodelled : public ::testing::TestWithParam<Unmodelled> {};

TEST_P(CudaUnmodelled, StopsTheLiftAtItsLine) {
  std::string dir = ::testing::TempDir();
  std::string path = dir + "unmodelled_" + GetParam().name + ".cu";
  std::ofstream(path) << "#include <cuda_runtime.h>\n"
                         "#include <cooperative_groups.h>\n"
                         "struct Mixed { float a; int b; };\n"
                         "__device__ float first(const float4 &v) { return v.x; }\n"
                         "// shardproof: launch k grid=(1) block=(32)\n"
                         "// shardproof: arg x = float32[32]\n"
                         "// shardproof: arg out = float32[32]\n"
                         "// shardproof: reference out = x\n"
                         "__global__ void k(const float *x, float *out) {\n"
                         "  int t = threadIdx.x;\n  "
                      << GetParam().body << "\n}\n";
  auto l = lift_file(path, GetParam().name);
  ASSERT_FALSE(l->parse_error) << l->parse_error->message;
  ASSERT_TRUE(l->result.unsupported) << "lifted";
  EXPECT_EQ(l->result.unsupported->loc.line, 11);
  EXPECT_NE(l->result.unsupported->message.find(GetParam().message), std::string::npos)
      << l->result.unsupported->message;
  EXPECT_NE(l->result.unsupported->message.find(path + ":11:"), std::string::npos)
      << l->result.unsupported->message;
}

INSTANTIATE_TEST_SUITE_P(
    Constructs, CudaUnmodelled,
    ::testing::Values(
        Unmodelled{"switch", "switch (t) { default: out[t] = x[t]; }", "(SwitchStmt)"},
        Unmodelled{
            "reinterpreted_bits", "out[t] = reinterpret_cast<const int *>(x)[t];",
            "'reinterpret_cast<const int *>(x)[t]' on the bits of 1 float32 element "
            "read as 'int' at "},
        Unmodelled{"atomic_through_a_view",
                   "atomicAdd(reinterpret_cast<int *>(out) + t, 1); out[t] = x[t];",
                   "'atomicAdd(reinterpret_cast<int *>(out) + t, 1)' through a view of "
                   "the float32 elements of out"},
        Unmodelled{"view_narrower_than_an_element",
                   "out[t] = reinterpret_cast<const unsigned short *>(x)[t];",
                   "(a view of 2 bytes of the 4-byte float32 elements of x, part of an "
                   "element)"},
        Unmodelled{"lambda", "auto f = [&](int i) { return x[i]; }; out[t] = f(t);",
                   "(LambdaExpr)"},
        Unmodelled{
            "coalesced_group",
            "cooperative_groups::coalesced_threads().sync(); out[t] = x[t];",
            "the cooperative-groups call 'cooperative_groups::coalesced_threads()' "
            "(modelled: this_thread_block, tiled_partition of 1 to 32 threads, "
            "this_grid of a one-block launch, their members)"},
        Unmodelled{"multi_warp_tile",
                   "auto b = cooperative_groups::this_thread_block(); auto g = "
                   "cooperative_groups::tiled_partition(b, 64); out[t] = x[t];",
                   "'cooperative_groups::tiled_partition(b, 64)': a tile of 64 threads"},
        Unmodelled{"divergent_tile_sync",
                   "auto w = cooperative_groups::tiled_partition<8>("
                   "cooperative_groups::this_thread_block()); if (t < 4) w.sync(); "
                   "out[t] = x[t];",
                   "'w.sync()' reached by some lanes of a tile of 8 but not by thread "
                   "(4,0,0) of block (0,0,0)"},
        Unmodelled{"vote_on_data",
                   "auto w = cooperative_groups::tiled_partition<8>("
                   "cooperative_groups::this_thread_block()); "
                   "out[t] = w.any(x[t] > 0.0f) ? x[t] : x[t];",
                   "'w.any(x[t] > 0.0f)' on a value that is not a concrete integer"},
        Unmodelled{"struct_reference_parameter",
                   "out[t] = first(reinterpret_cast<const float4 *>(x)[0]);",
                   "the reference parameter 'v' of 'first'"},
        Unmodelled{"mixed_struct", "Mixed m; m.a = x[t]; out[t] = m.a;",
                   "(CXXConstructExpr)"},
        Unmodelled{"real_to_integer", "out[t] = (float)(int)x[t];",
                   "a data-dependent floating-point value converted to an integer"},
        Unmodelled{
            "data_dependent_and",
            "float v = x[t]; if (v > 0.0f && v < 1.0f) v = 0.5f; out[t] = v;",
            "the data-dependent condition 'v > 0.0f' where a concrete truth value is "
            "needed"},
        Unmodelled{"data_dependent_loop", "for (float v = x[t]; v > 0.0f; v -= 1.0f) {}",
                   "the data-dependent condition 'v > 0.0f'"},
        Unmodelled{"inline_assembly",
                   "float v; asm(\"mov.f32 %0, %1;\" : \"=f\"(v) : "
                   "\"f\"(x[t])); out[t] = v;",
                   "the inline assembly the PTX instruction 'mov.f32 %0, %1'"},
        Unmodelled{"barrier_under_data_branch",
                   "if (x[t] > 0.0f) __syncthreads(); out[t] = x[t];",
                   "__syncthreads() under a data-dependent condition (by thread (0,0,0) "
                   "of block (0,0,0))"},
        Unmodelled{"exit_under_data_branch", "if (x[t] > 0.0f) return; out[t] = x[t];",
                   "leaving a branch on a data-dependent condition"},
        Unmodelled{
            "shuffle_under_data_branch",
            "float v = x[t]; if (v > 0.0f) v = __shfl_xor_sync(0xffffffffu, v, 1); "
            "out[t] = v;",
            "a shuffle under a data-dependent condition"}),
    [](const auto &info) { return std::string(info.param.name); });

namespace {
// A kernel file of the test's own, in the test's scratch folder.
std::string scratch_kernel(const std::string &name, const std::string &text) {
  std::string path = ::testing::TempDir() + name + ".cu";
  std::ofstream(path) << text;
  return path;
}
} // namespace

TEST(CudaLifter, ABufferOfAnotherElementTypeThanAnnotatedIsRefused) {
  std::string path = scratch_kernel("as_double", R"(#include <cuda_runtime.h>
// shardproof: launch k grid=(1) block=(4)
// shardproof: arg x = float32[4]
// shardproof: reference x = x
__global__ void k(double *x) { x[threadIdx.x] = x[threadIdx.x]; }
)");
  auto l = lift_file(path, "as_double");
  ASSERT_TRUE(l->result.unsupported);
  EXPECT_EQ(l->result.unsupported->loc.line, 3);
  EXPECT_EQ(l->result.unsupported->message,
            "arg 'x' is annotated float32 but the kernel's parameter is 'double *'");
}

TEST(CudaLifter, AFractionForAnIntegerParameterIsRefused) {
  std::string path = scratch_kernel("fraction", R"(#include <cuda_runtime.h>
// shardproof: launch k grid=(1) block=(4)
// shardproof: arg x = float32[4]
// shardproof: arg n = 2.5
// shardproof: reference x = x
__global__ void k(float *x, int n) { x[threadIdx.x] = x[threadIdx.x % n]; }
)");
  auto l = lift_file(path, "fraction");
  ASSERT_TRUE(l->result.unsupported);
  EXPECT_EQ(l->result.unsupported->message,
            "arg 'n' = 2.5 is not an integer, but the kernel's parameter is one");
}

TEST(CudaLifter, EqualityOfRealsIsAChoiceOnBothOrders) {
  // x == 0 as max(x, 0) <= min(x, 0): true at 0 only, on either side of it.
  std::string path = scratch_kernel("float_equality", R"(#include <cuda_runtime.h>
// shardproof: launch k grid=(1) block=(2)
// shardproof: arg x = float32[2]
// shardproof: arg out = float32[2]
// shardproof: reference out = x
__global__ void k(const float *x, float *out) {
  int t = threadIdx.x;
  out[t] = t == 0 ? (x[t] == 0.0f ? 5.0f : x[t]) : (x[t] != 0.0f ? x[t] : 5.0f);
}
)");
  auto l = lift_file(path, "float_equality");
  ASSERT_FALSE(l->result.unsupported) << l->result.unsupported->message;
  const auto &x = l->inputs["x"];
  for (double v : {-2.0, 0.0, 3.0})
    for (int t : {0, 1}) {
      terms::DoubleEvaluator eval(l->store,
                                  [&](TermId var) { return var == x[t] ? v : 1.0; });
      EXPECT_EQ(eval(l->result.buffers["out"][t]), v == 0 ? 5.0 : v) << "x = " << v;
    }
}

// --- profiles and host dispatchers (issue 13) ---------------------------------

namespace {
std::string profile_path(const std::string &name) {
  return kernel_path("profiles/" + name);
}

const cuda::KernelSignature &signature(const cuda::FileListing &listing,
                                       const std::string &name) {
  for (const auto &k : listing.kernels)
    if (k.name == name)
      return k;
  throw std::runtime_error("no kernel " + name);
}
} // namespace

TEST(CudaProfiles, KernelsAndDispatchersAreListedWithTheirParameters) {
  auto listing = cuda::list_kernels(profile_path("dispatch_scaled_softmax.cu"), {});
  ASSERT_FALSE(listing.error) << listing.error->message;
  const auto &kernel = signature(listing, "scaled_softmax_warp_forward");
  EXPECT_EQ(kernel.template_params,
            (std::vector<std::string>{"input_t", "output_t", "acc_t", "log2_elements"}));
  EXPECT_EQ(kernel.params,
            (std::vector<std::string>{"dst", "src", "scale", "micro_batch_size",
                                      "element_count"}));
  const cuda::KernelProfile *profile = cuda::profile_for(kernel);
  ASSERT_TRUE(profile);
  EXPECT_EQ(profile->name(), "apex/Megatron scaled softmax (forward)");
  ASSERT_EQ(listing.hosts.size(), 1u);
  EXPECT_EQ(listing.hosts[0].name, "dispatch_scaled_softmax_forward");
  EXPECT_EQ(listing.hosts[0].int_params,
            (std::vector<std::string>{"query_seq_len", "key_seq_len", "batches",
                                      "attn_heads"}));
  EXPECT_EQ(listing.hosts[0].launches,
            std::vector<std::string>{"scaled_softmax_warp_forward"});
}

TEST(CudaProfiles, AKernelWithoutAProfileIsNotRecognised) {
  auto listing = cuda::list_kernels(kernel_path("no_annotations.cu"), {});
  ASSERT_FALSE(listing.error);
  ASSERT_EQ(listing.kernels.size(), 1u);
  EXPECT_FALSE(cuda::profile_for(listing.kernels[0]));
  EXPECT_TRUE(listing.hosts.empty());
}

namespace {
cuda::ParsedFile parse_dispatcher(const std::string &name) {
  return cuda::parse_file(profile_path(name), {}, {},
                          {"dispatch_scaled_softmax_forward<float, float, float>"});
}
const std::string kDispatcher = "dispatch_scaled_softmax_forward<float, float, float>";
} // namespace

TEST(CudaHost, TheDispatcherLaunchesTheCaseOfItsSizeAsItComputesIt) {
  auto parsed = parse_dispatcher("dispatch_scaled_softmax.cu");
  ASSERT_TRUE(parsed.file) << parsed.error->message;
  auto run = parsed.file->run_host(
      kDispatcher,
      {{"query_seq_len", 8}, {"key_seq_len", 17}, {"batches", 1}, {"attn_heads", 3}});
  ASSERT_EQ(run.end, cuda::HostRun::End::Returned) << run.why;
  ASSERT_EQ(run.launches.size(), 1u);
  const auto &launch = run.launches[0];
  EXPECT_EQ(launch.kernel, "scaled_softmax_warp_forward");
  EXPECT_EQ(launch.choice.template_args,
            (std::vector<std::string>{"float", "float", "float", "5"}));
  EXPECT_EQ(launch.choice.grid, (std::array<int, 3>{1, 3, 1}));
  EXPECT_EQ(launch.choice.block, (std::array<int, 3>{32, 4, 1}));
  EXPECT_EQ(launch.choice.ints.at("micro_batch_size"), 24);
  EXPECT_EQ(launch.choice.ints.at("element_count"), 17);
  EXPECT_EQ(run.switch_on, "log2_elements");
  EXPECT_EQ(run.switch_value, 5);
}

TEST(CudaHost, AFailedAssertionIsTheHostRefusingTheSizes) {
  auto parsed = parse_dispatcher("dispatch_scaled_softmax.cu");
  ASSERT_TRUE(parsed.file) << parsed.error->message;
  for (auto [query, key] : {std::pair{8, 65}, std::pair{3, 17}}) {
    auto run = parsed.file->run_host(kDispatcher, {{"query_seq_len", query},
                                                   {"key_seq_len", key},
                                                   {"batches", 1},
                                                   {"attn_heads", 1}});
    EXPECT_EQ(run.end, cuda::HostRun::End::Rejected) << query << " " << key;
    EXPECT_TRUE(run.launches.empty());
    EXPECT_NE(run.why.find("__assert_fail"), std::string::npos) << run.why;
  }
}

TEST(CudaHost, ASizeWithoutACaseReturnsWithoutALaunch) {
  auto parsed = parse_dispatcher("dispatch_scaled_softmax_missing_case.cu");
  ASSERT_TRUE(parsed.file) << parsed.error->message;
  auto run = parsed.file->run_host(
      kDispatcher,
      {{"query_seq_len", 8}, {"key_seq_len", 17}, {"batches", 1}, {"attn_heads", 1}});
  EXPECT_EQ(run.end, cuda::HostRun::End::Returned) << run.why;
  EXPECT_TRUE(run.launches.empty());
  EXPECT_EQ(run.switch_value, 5);
  EXPECT_EQ(run.at.line, 34);
}

TEST(CudaProfiles, TheMaskedSoftmaxMasksARowWholeAndSaysItGivesZero) {
  auto listing = cuda::list_kernels(profile_path("scaled_masked_softmax.cu"), {});
  ASSERT_FALSE(listing.error) << listing.error->message;
  const auto &kernel = signature(listing, "scaled_masked_softmax_warp_forward");
  const cuda::KernelProfile *profile = cuda::profile_for(kernel);
  ASSERT_TRUE(profile);
  auto choices = profile->own_launches(kernel);
  ASSERT_EQ(choices.size(), 3u);
  std::string why;
  auto launch = profile->complete(kernel, choices[1], why); // rows of 32
  ASSERT_TRUE(launch) << why;
  EXPECT_EQ(launch->callee(),
            "scaled_masked_softmax_warp_forward<float, float, float, 5>");
  EXPECT_EQ(launch->block, (std::array<int, 3>{32, 4, 1}));
  const cuda::KernelArg *mask = launch->arg("mask");
  ASSERT_TRUE(mask && mask->is_concrete());
  EXPECT_EQ(mask->shape, (ir::Shape{8, 32}));
  for (int c = 0; c < 32; ++c)
    EXPECT_EQ(mask->concrete[32 + c], 1) << "row 1 is masked whole";
  EXPECT_EQ(mask->concrete[0], 1); // every third key of the other rows
  EXPECT_EQ(mask->concrete[1], 0);
  EXPECT_EQ(mask->concrete[3], 1);
  EXPECT_NE(launch->reference.find("torch.where("), std::string::npos);
  // A mask per batch is not what the profile knows.
  auto per_batch = choices[1];
  per_batch.ints["pad_batches"] = 2;
  EXPECT_FALSE(profile->complete(kernel, per_batch, why));
  EXPECT_EQ(why, "a mask per batch (pad_batches > 1) is not profiled");
}

TEST(CudaLifter, AReferenceParameterNamesTheCallersVariableOrElement) {
  // apex's Welford updates: void f(U curr, U &mu, U &count), on registers
  // and on elements of a local array.
  std::string path = scratch_kernel("reference_parameters", R"(#include <cuda_runtime.h>
__device__ void accumulate(const float &v, float &sum, float &count) {
  sum += v;
  count = count + 1.0f;
}
// shardproof: launch k grid=(1) block=(2)
// shardproof: arg x = float32[2,3]
// shardproof: arg out = float32[2]
// shardproof: reference out = x.mean(-1)
__global__ void k(const float *x, float *out) {
  float sum = 0.0f, counts[1] = {0.0f};
  for (int c = 0; c < 3; ++c)
    accumulate(x[threadIdx.x * 3 + c], sum, counts[0]);
  out[threadIdx.x] = sum / counts[0];
}
)");
  auto l = lift_file(path, "reference_parameters");
  ASSERT_FALSE(l->parse_error) << l->parse_error->message;
  ASSERT_FALSE(l->result.unsupported) << l->result.unsupported->message;
  const auto &x = l->inputs["x"];
  std::vector<TermId> means;
  for (int row = 0; row < 2; ++row)
    means.push_back(
        l->store.mul(l->store.add(std::span<const TermId>(x.data() + 3 * row, 3)),
                     l->store.constant(mpq_class(1, 3))));
  auto verdict = prove(*l, l->result.buffers["out"], means);
  EXPECT_EQ(verdict.kind, prover::Verdict::Kind::Proved) << verdict.why;
}

// --- build flags (issue 13) ------------------------------------------------

TEST(CudaBuildFlags, CompileCommandsGiveWhatClangParsesAndDropNvccFlags) {
  std::string file = kernel_path("extension/csrc/softmax_extension_cuda.cu");
  auto command = cuda::compile_command_for(file);
  ASSERT_TRUE(command);
  ASSERT_FALSE(command->error) << *command->error;
  EXPECT_EQ(command->database, kernel_path("extension/compile_commands.json"));
  // -gencode, -O3, --use_fast_math, --expt-relaxed-constexpr, -c, -o dropped;
  // the include folder made absolute against the entry's directory.
  EXPECT_EQ(command->flags,
            (std::vector<std::string>{"-I" + kernel_path("extension/include"),
                                      "-U__CUDA_NO_HALF_OPERATORS__",
                                      "-DSOFTMAX_EXTENSION=1"}));
  EXPECT_TRUE(cuda::is_torch_extension(file));
  EXPECT_FALSE(cuda::is_torch_extension(kernel_path("block_sum.cu")));
  const auto &torch = cuda::torch_extension_flags();
  EXPECT_NE(std::find(torch.begin(), torch.end(), "-D__CUDA_NO_HALF_OPERATORS__"),
            torch.end());
}

TEST(CudaBuildFlags, ADatabaseWithoutTheFileSaysSo) {
  std::string dir = ::testing::TempDir() + "compile_commands_other/";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "compile_commands.json")
      << R"([{"directory": "/elsewhere", "file": "other.cu", "command": "nvcc -c other.cu"}])";
  std::ofstream(dir + "k.cu") << "__global__ void k() {}\n";
  auto command = cuda::compile_command_for(dir + "k.cu");
  ASSERT_TRUE(command);
  ASSERT_TRUE(command->error);
  EXPECT_NE(command->error->find("has no entry for"), std::string::npos)
      << *command->error;
  std::ofstream(dir + "compile_commands.json") << "not json";
  command = cuda::compile_command_for(dir + "k.cu");
  ASSERT_TRUE(command && command->error);
  EXPECT_NE(command->error->find("is not JSON"), std::string::npos) << *command->error;
}

// --- cooperative groups ----------------------------------------------------

namespace {
// out = x * rsqrt(mean(x^2) + eps) * weight over rows of `cols`, built here.
std::vector<TermId> rms_norm_terms(Lifted &l, int rows, int cols, double eps) {
  auto &s = l.store;
  const auto &x = l.inputs["x"], &w = l.inputs["weight"];
  std::vector<TermId> out;
  for (int r = 0; r < rows; ++r) {
    std::vector<TermId> squares;
    for (int c = 0; c < cols; ++c)
      squares.push_back(s.mul(x[r * cols + c], x[r * cols + c]));
    TermId mean = s.div(s.add(squares), s.constant(cols));
    TermId inv = s.app(terms::Fn::Rsqrt, s.add(mean, s.constant_from_double(eps)));
    for (int c = 0; c < cols; ++c)
      out.push_back(s.mul(s.mul(x[r * cols + c], inv), w[c]));
  }
  return out;
}

void expect_cg_rms_norm_proved(const cuda::ParseOptions &options) {
  auto l = lift("cg_rms_norm.cu", options);
  ASSERT_FALSE(l->parse_error) << l->parse_error->message;
  ASSERT_FALSE(l->result.unsupported) << l->result.unsupported->message;
  ASSERT_TRUE(l->result.findings.empty()) << l->result.findings[0].message;
  auto verdict = prove(*l, l->result.buffers["out"], rms_norm_terms(*l, 2, 96, 1e-5));
  EXPECT_EQ(verdict.kind, prover::Verdict::Kind::Proved) << verdict.why;
}
} // namespace

TEST(CudaCooperativeGroups, TileReductionsThroughSharedMemoryAreTheRmsNorm) {
  expect_cg_rms_norm_proved({});
}

TEST(CudaCooperativeGroups, TheToolkitsInlineMembersAreInterceptedByName) {
  if (!std::ifstream("/usr/local/cuda/include/cooperative_groups.h"))
    GTEST_SKIP() << "no CUDA toolkit at /usr/local/cuda";
  expect_cg_rms_norm_proved({.cuda_path = "/usr/local/cuda"});
}

TEST(CudaCooperativeGroups, AMissingBlockSyncIsARaceOnTheTilesPartials) {
  auto l = lift("cg_rms_norm_missing_sync.cu");
  ASSERT_FALSE(l->result.unsupported) << l->result.unsupported->message;
  ASSERT_EQ(l->result.findings.size(), 1u);
  const auto &f = l->result.findings[0];
  EXPECT_EQ(f.kind, cuda::KernelFinding::Kind::SharedMemoryRace);
  EXPECT_EQ(f.message, "shared-memory race on partials[1]: thread (1,0,0) of block "
                       "(0,0,0) reads it here and thread (16,0,0) of block (0,0,0) "
                       "writes it at " +
                           kernel_path("cg_rms_norm_missing_sync.cu") +
                           ":38:5 with no barrier between");
  EXPECT_EQ(f.loc.line, 42);
}

namespace {
// A kernel of tiles of 8 in a block of 64: what each member gives, per thread.
std::string tile_kernel(const std::string &body) {
  return "#include <cuda_runtime.h>\n"
         "#include <cooperative_groups.h>\n"
         "#include <cooperative_groups/reduce.h>\n"
         "namespace cg = cooperative_groups;\n"
         "// shardproof: launch k grid=(1) block=(64)\n"
         "// shardproof: arg x = float32[64]\n"
         "// shardproof: arg out = float32[4,64]\n"
         "// shardproof: reference out = x.repeat(4, 1)\n"
         "__global__ void k(const float *x, float *out) {\n"
         "  cg::thread_block block = cg::this_thread_block();\n"
         "  cg::thread_block_tile<8> tile = cg::tiled_partition<8>(block);\n"
         "  int t = block.thread_rank();\n"
         "  float v = x[t];\n" +
         body + "}\n";
}

std::vector<std::unique_ptr<Lifted>> lift_both_modes(const std::string &name,
                                                     const std::string &body) {
  std::vector<std::unique_ptr<Lifted>> out;
  std::string path = ::testing::TempDir() + name + ".cu";
  std::ofstream(path) << tile_kernel(body);
  out.push_back(lift_file(path, name));
  if (std::ifstream("/usr/local/cuda/include/cooperative_groups.h"))
    out.push_back(lift_file(path, name + " (toolkit)", {.cuda_path = "/usr/local/cuda"}));
  return out;
}

double constant_at(const Lifted &l, std::size_t i) {
  TermId t = l.result.buffers.at("out")[i];
  EXPECT_TRUE(l.store.is_const(t)) << "out[" << i << "]";
  return l.store.is_const(t) ? l.store.const_value(t).get_d() : -1;
}
} // namespace

TEST(CudaCooperativeGroups, TileShufflesUseTheTilesWidth) {
  for (auto &l :
       lift_both_modes("cg_tile_shuffles", "  out[t] = tile.shfl_xor(v, 4);\n"
                                           "  out[64 + t] = tile.shfl_down(v, 3);\n"
                                           "  out[128 + t] = tile.shfl_up(v, 2);\n"
                                           "  out[192 + t] = tile.shfl(v, 5);\n")) {
    ASSERT_FALSE(l->parse_error) << l->parse_error->message;
    ASSERT_FALSE(l->result.unsupported) << l->result.unsupported->message;
    const auto &x = l->inputs["x"];
    const auto &out = l->result.buffers["out"];
    cuda::Shuffle kinds[] = {cuda::Shuffle::Xor, cuda::Shuffle::Down, cuda::Shuffle::Up,
                             cuda::Shuffle::Idx};
    int args[] = {4, 3, 2, 5};
    for (int k = 0; k < 4; ++k)
      for (int t = 0; t < 64; ++t) {
        int base = t - t % 32;
        int source = base + cuda::shuffle_source(kinds[k], t % 32, args[k], 8);
        EXPECT_EQ(out[64 * k + t], x[source]) << "kind " << k << ", thread " << t;
      }
    EXPECT_EQ(out[7], x[3]);        // xor 4 within lanes 0-7
    EXPECT_EQ(out[64 + 6], x[6]);   // down 3 past the tile: its own value
    EXPECT_EQ(out[192 + 9], x[13]); // rank 5 of the second tile
  }
}

TEST(CudaCooperativeGroups, RanksSizesIndicesAndVotesAreTheToolkits) {
  for (auto &l : lift_both_modes(
           "cg_tile_integers",
           "  cg::thread_block_tile<4> quarter = cg::tiled_partition<4>(tile);\n"
           "  out[t] = tile.thread_rank() + 100 * tile.meta_group_rank() + 10000 * "
           "tile.meta_group_size();\n"
           "  out[64 + t] = quarter.meta_group_rank() + 10 * quarter.meta_group_size() + "
           "100 * quarter.size();\n"
           "  out[128 + t] = tile.ballot(t % 3 == 0) + 1000 * tile.any(t == 9) + "
           "10000 * tile.all(t < 60);\n"
           "  out[192 + t] = block.group_index().x + 10 * block.thread_index().x + "
           "1000 * block.group_dim().x + 100000 * block.size();\n")) {
    ASSERT_FALSE(l->parse_error) << l->parse_error->message;
    ASSERT_FALSE(l->result.unsupported) << l->result.unsupported->message;
    for (int t = 0; t < 64; ++t) {
      EXPECT_EQ(constant_at(*l, t), t % 8 + 100 * (t / 8) + 10000 * 8);
      EXPECT_EQ(constant_at(*l, 64 + t), (t % 8) / 4 + 10 * 2 + 100 * 4);
      unsigned ballot = 0;
      for (int r = 0; r < 8; ++r)
        ballot |= (t - t % 8 + r) % 3 == 0 ? 1u << r : 0;
      EXPECT_EQ(constant_at(*l, 128 + t),
                ballot + 1000 * (t / 8 == 1) + 10000 * (t / 8 != 7));
      EXPECT_EQ(constant_at(*l, 192 + t), 10 * t + 1000 * 64 + 100000 * 64);
    }
  }
}

TEST(CudaCooperativeGroups, TileReduceGivesEveryThreadItsTilesSumOrMaximum) {
  for (auto &l :
       lift_both_modes("cg_tile_reduce",
                       "  out[t] = cg::reduce(tile, v, cg::plus<float>());\n"
                       "  out[64 + t] = cg::reduce(tile, v, cg::greater<float>());\n"
                       "  out[128 + t] = cg::reduce(tile, v, cg::less<float>());\n"
                       "  out[192 + t] = v;\n")) {
    ASSERT_FALSE(l->parse_error) << l->parse_error->message;
    ASSERT_FALSE(l->result.unsupported) << l->result.unsupported->message;
    auto &s = l->store;
    const auto &x = l->inputs["x"];
    std::vector<TermId> want;
    for (int k = 0; k < 3; ++k)
      for (int t = 0; t < 64; ++t) {
        std::span<const TermId> tile(x.data() + t - t % 8, 8);
        TermId r = k == 0 ? s.add(tile) : tile[0];
        for (int j = 1; j < 8 && k > 0; ++j)
          r = k == 1 ? s.max(r, tile[j]) : s.min(r, tile[j]);
        want.push_back(r);
      }
    std::span<const TermId> got(l->result.buffers["out"].data(), want.size());
    auto verdict = prove(*l, got, want);
    EXPECT_EQ(verdict.kind, prover::Verdict::Kind::Proved) << verdict.why;
  }
}

TEST(CudaCooperativeGroups, TheGridOfALaunchOfSeveralBlocksIsNotModelled) {
  std::string path = scratch_kernel(
      "cg_grid_of_two", "#include <cuda_runtime.h>\n#include <cooperative_groups.h>\n"
                        "// shardproof: launch k grid=(2) block=(32)\n"
                        "// shardproof: arg x = float32[64]\n"
                        "// shardproof: arg out = float32[64]\n"
                        "// shardproof: reference out = x\n"
                        "__global__ void k(const float *x, float *out) {\n"
                        "  auto grid = cooperative_groups::this_grid();\n"
                        "  out[grid.thread_rank()] = x[grid.thread_rank()];\n}\n");
  auto l = lift_file(path, "cg_grid_of_two");
  ASSERT_TRUE(l->result.unsupported);
  EXPECT_EQ(l->result.unsupported->message,
            "'cooperative_groups::this_grid()' on a launch of 2 blocks (a grid-wide "
            "group) at " +
                path + ":8:15 is not modelled");
}

TEST(CudaCooperativeGroups, TheGridOfAOneBlockLaunchIsItsBlock) {
  std::string path = scratch_kernel(
      "cg_grid_of_one",
      "#include <cuda_runtime.h>\n#include <cooperative_groups.h>\n"
      "// shardproof: launch k grid=(1) block=(32)\n"
      "// shardproof: arg x = float32[32]\n"
      "// shardproof: arg out = float32[32]\n"
      "// shardproof: reference out = x\n"
      "__global__ void k(const float *x, float *out) {\n"
      "  __shared__ float s[32];\n"
      "  auto grid = cooperative_groups::this_grid();\n"
      "  s[grid.thread_rank()] = x[grid.thread_rank()];\n"
      "  grid.sync();\n"
      "  out[grid.thread_rank()] = s[grid.num_threads() - 1 - grid.thread_rank() + "
      "grid.block_rank() + grid.thread_index().x - grid.thread_rank()];\n}\n");
  auto l = lift_file(path, "cg_grid_of_one");
  ASSERT_FALSE(l->result.unsupported) << l->result.unsupported->message;
  ASSERT_TRUE(l->result.findings.empty()) << l->result.findings[0].message;
  EXPECT_EQ(l->result.buffers["out"][3], l->inputs["x"][28]);
}

// --- multi-rank launches (ranks.h) -------------------------------------------

namespace {

// Every rank's `out` is the sum over the ranks of their `data`.
void expect_all_reduced(Lifted &l, int ranks, int size) {
  ASSERT_FALSE(l.parse_error) << l.parse_error->message;
  ASSERT_FALSE(l.result.unsupported) << l.result.unsupported->message;
  ASSERT_TRUE(l.result.findings.empty()) << l.result.findings[0].message;
  const auto &data = l.inputs["data"];
  std::vector<TermId> sums;
  for (int rank = 0; rank < ranks; ++rank)
    for (int i = 0; i < size; ++i) {
      std::vector<TermId> column;
      for (int peer = 0; peer < ranks; ++peer)
        column.push_back(data[peer * size + i]);
      sums.push_back(l.store.add(column));
    }
  auto verdict = prove(l, l.result.buffers["out"], sums);
  EXPECT_EQ(verdict.kind, prover::Verdict::Kind::Proved) << verdict.why;
}

} // namespace

TEST(CudaLifter, TwoShotAllReduceOverTwoAndFourRanksIsTheSumOfTheirInputs) {
  auto two = lift("all_reduce_two_shot.cu");
  expect_all_reduced(*two, 2, 13);
  // Rank 1's element 12 (its slice's remainder) is gathered by rank 1's
  // block 0 from its own scratch buffer.
  const auto &write = two->result.writes["out"][13 + 12];
  ASSERT_TRUE(write);
  EXPECT_EQ(write->thread.str(), "thread (2,0,0) of block (1,0,0) of rank 1");
  auto four = lift("all_reduce_two_shot.cu", {}, 1);
  expect_all_reduced(*four, 4, 18);
  auto half = lift("all_reduce_two_shot.cu", {}, 2); // __half, summed in float
  expect_all_reduced(*half, 4, 10);
}

TEST(CudaLifter, AllReduceWithoutTheMiddleBarrierIsACrossRankRace) {
  auto l = lift("all_reduce_missing_barrier.cu");
  ASSERT_FALSE(l->result.unsupported) << l->result.unsupported->message;
  ASSERT_EQ(l->result.findings.size(), 1u);
  const auto &f = l->result.findings[0];
  EXPECT_EQ(f.kind, cuda::KernelFinding::Kind::CrossRankRace);
  // Rank 1 gathered rank 0's slice before rank 0 reduced it.
  EXPECT_EQ(f.loc.line, 34); // scratch[rank][i] = sum
  EXPECT_EQ(f.message,
            "cross-rank race on partial[0][0]: thread (0,0,0) of block (0,0,0) of rank 0 "
            "writes it here and thread (0,0,0) of block (0,0,0) of rank 1 reads it at " +
                kernel_path("all_reduce_missing_barrier.cu") +
                ":42:16, and no flag orders the two (a flag set after "
                "__threadfence_system() and awaited, with __syncthreads() before the set "
                "and after the wait)");
  ASSERT_TRUE(f.other_loc);
  EXPECT_EQ(f.other_loc->line, 42); // out[i] = scratch[peer][i]
}

TEST(CudaLifter, AllReduceReusingTheFirstBarriersFlagsIsACrossRankRace) {
  auto l = lift("all_reduce_reused_flag.cu");
  ASSERT_FALSE(l->result.unsupported) << l->result.unsupported->message;
  ASSERT_EQ(l->result.findings.size(), 1u);
  EXPECT_EQ(l->result.findings[0].kind, cuda::KernelFinding::Kind::CrossRankRace);
}

TEST(CudaLifter, AWaitNoRankEverEndsIsStoppedAtItsLine) {
  // Not after a hundred million steps: as soon as every rank waits.
  auto l = lift("all_reduce_waits_forever.cu");
  ASSERT_TRUE(l->result.unsupported);
  EXPECT_EQ(l->result.unsupported->loc.line, 17);
  EXPECT_EQ(
      l->result.unsupported->message,
      "the loop at " + kernel_path("all_reduce_waits_forever.cu") +
          ":17:10 never ends: thread (0,0,0) of block (0,0,0) of rank 0 spins on "
          "'own_flags[threadIdx.x] != 2' and every rank's launch waits with nothing "
          "written since (a flag no rank sets, or sets to another value)");
}

// --- views of another scalar type (issue 13) ----------------------------------

namespace {
// A kernel over float16 buffers x (two rows of eight) and out, of the test's
// own, lifted; `body` runs with t = threadIdx.x (two threads).
std::unique_ptr<Lifted> lift_halves(const std::string &name, const std::string &body,
                                    const std::string &x_shape = "2,8") {
  std::string path =
      scratch_kernel(name, "#include <cuda_fp16.h>\n"
                           "union Pack { float4 v; __half h[8]; };\n"
                           "// shardproof: launch k grid=(1) block=(2)\n"
                           "// shardproof: arg x = float16[" +
                               x_shape +
                               "]\n"
                               "// shardproof: arg out = float16[2,8]\n"
                               "// shardproof: reference out = x\n"
                               "__global__ void k(const __half *x, __half *out) {\n"
                               "  int t = threadIdx.x;\n  " +
                               body + "\n}\n");
  return lift_file(path, name);
}

// Whether out[i] is x[i] + x[i] for each i (x[i] alone where `twice` is false).
void expect_out_is_x(Lifted &l, bool twice) {
  ASSERT_FALSE(l.result.unsupported) << l.result.unsupported->message;
  ASSERT_TRUE(l.result.findings.empty()) << l.result.findings[0].message;
  const auto &x = l.inputs["x"];
  for (std::size_t i = 0; i < 16; ++i) {
    terms::DoubleEvaluator eval(l.store, [&](TermId var) {
      return var == x[i] ? 1.5 : 100.0 + static_cast<double>(i);
    });
    EXPECT_EQ(eval(l.result.buffers["out"][i]), twice ? 3.0 : 1.5) << "out[" << i << "]";
  }
}
} // namespace

TEST(CudaViews, HalvesCopiedThroughFloat2AndUint4AreTheHalves) {
  auto l =
      lift_halves("float2_uint4_copy",
                  "*((float2 *)(out + t * 8)) = *((const float2 *)(x + t * 8));\n"
                  "  uint4 w = reinterpret_cast<const uint4 *>(x)[t];\n"
                  "  *((float2 *)(out + t * 8 + 4)) = *((const float2 *)(x + t * 8 + "
                  "4));\n  reinterpret_cast<uint4 *>(out)[t] = w;");
  expect_out_is_x(*l, false);
}

TEST(CudaViews, HalvesReadBackThroughAUnionOrAPointerToTheVector) {
  auto l = lift_halves("union_read_back",
                       "Pack p;\n  p.v = reinterpret_cast<const float4 *>(x)[t];\n"
                       "  float4 q = reinterpret_cast<const float4 *>(x)[t];\n"
                       "  const __half *h = reinterpret_cast<const __half *>(&q);\n"
                       "  for (int i = 0; i < 8; ++i)\n"
                       "    out[t * 8 + i] = __float2half(__half2float(p.h[i]) + "
                       "__half2float(h[i]));");
  expect_out_is_x(*l, true);
}

TEST(CudaViews, ArithmeticOnReinterpretedBitsIsNotModelledAndSaysWhere) {
  auto l = lift_halves("bits_arithmetic",
                       "float2 f = reinterpret_cast<const float2 *>(x)[t];\n"
                       "  out[t] = __float2half(f.x * 2.0f);");
  ASSERT_TRUE(l->result.unsupported);
  EXPECT_EQ(l->result.unsupported->loc.line, 10);
  EXPECT_NE(l->result.unsupported->message.find(
                "on the bits of 2 float16 elements read as 'float' at "),
            std::string::npos)
      << l->result.unsupported->message;
  EXPECT_NE(l->result.unsupported->message.find("(arithmetic on reinterpreted bits) at " +
                                                l->launch.loc.file + ":10:"),
            std::string::npos)
      << l->result.unsupported->message;
}

TEST(CudaViews, AMisalignedViewIsAFinding) {
  auto l =
      lift_halves("misaligned_view",
                  "*((float2 *)(out + t * 8)) = *((const float2 *)(x + t * 8 + 2));");
  ASSERT_EQ(l->result.findings.size(), 1u);
  EXPECT_EQ(l->result.findings[0].kind, cuda::KernelFinding::Kind::OutOfBounds);
  EXPECT_EQ(l->result.findings[0].message,
            "misaligned access of x[2] ('*((const float2 *)(x + t * 8 + 2))') by thread "
            "(0,0,0) of block (0,0,0): a 'float2' needs 8-byte alignment and element 2 "
            "of the global float16 buffer starts at byte 4");
}

TEST(CudaViews, AViewStraddlingTheEndIsOutOfBounds) {
  auto l = lift_halves("straddling_view",
                       "reinterpret_cast<uint4 *>(out)[t] = "
                       "reinterpret_cast<const uint4 *>(x)[t];",
                       "12");
  ASSERT_EQ(l->result.findings.size(), 1u);
  EXPECT_EQ(l->result.findings[0].kind, cuda::KernelFinding::Kind::OutOfBounds);
  EXPECT_EQ(l->result.findings[0].message,
            "out-of-bounds read of x[12] ('reinterpret_cast<const uint4 *>(x)[t]') by "
            "thread (1,0,0) of block (0,0,0): the global buffer has 12 elements");
}

TEST(CudaViews, InlinePtxVectorLoadsAndAPredicatedZeroLoad) {
  // DeepSpeed's load_global<16> with PTX: four 32-bit words into a uint4
  // view of a local array of halves; the predicated form zeroes them.
  auto l = lift_halves(
      "ptx_loads",
      "__half a[8], z[8];\n"
      "  uint4 *d = reinterpret_cast<uint4 *>(a);\n"
      "  asm volatile(\"ld.global.ca.v4.u32 {%0, %1, %2, %3}, [%4];\\n\"\n"
      "      : \"=r\"(d[0].x), \"=r\"(d[0].y), \"=r\"(d[0].z), \"=r\"(d[0].w)\n"
      "      : \"l\"(x + t * 8));\n"
      "  uint4 *e = reinterpret_cast<uint4 *>(z);\n"
      "  asm volatile(\"{\\n\\t.reg .pred p;\\n\\tsetp.ne.b32 p, %5, 0;\\n\\tmov.b32 %0, "
      "0;\\n\\tmov.b32 %1, 0;\\n\\tmov.b32 %2, 0;\\n\\tmov.b32 %3, 0;\\n\\t@p "
      "ld.global.v4.u32 {%0, %1, %2, %3}, [%4];\\n}\\n\"\n"
      "      : \"=r\"(e[0].x), \"=r\"(e[0].y), \"=r\"(e[0].z), \"=r\"(e[0].w)\n"
      "      : \"l\"(x), \"r\"(0));\n"
      "  uint4 *o = reinterpret_cast<uint4 *>(out + t * 8);\n"
      "  for (int i = 0; i < 8; ++i) a[i] = __float2half(__half2float(a[i]) + "
      "__half2float(z[i]));\n"
      "  asm volatile(\"st.global.wb.v4.u32 [%0], {%1, %2, %3, %4};\\n\"\n"
      "      :: \"l\"(o), \"r\"(d[0].x), \"r\"(d[0].y), \"r\"(d[0].z), \"r\"(d[0].w) : "
      "\"memory\");");
  expect_out_is_x(*l, false);
}

TEST(CudaHost, DeviceQueriesAnswerForTheReferenceDevice) {
  std::string path = scratch_kernel("device_query", R"(#include <cuda_runtime.h>
__global__ void k(float *out) {}
void launch(float *out, int rows) {
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  int y = rows < prop.maxGridSize[1] ? rows : prop.maxGridSize[1];
  k<<<dim3(sms, y), prop.warpSize>>>(out);
}
)");
  auto parsed = cuda::parse_file(path, {}, {}, {"launch"});
  ASSERT_TRUE(parsed.file) << parsed.error->message;
  auto run = parsed.file->run_host("launch", {{"rows", 100000}});
  ASSERT_EQ(run.end, cuda::HostRun::End::Returned) << run.why;
  ASSERT_EQ(run.launches.size(), 1u);
  EXPECT_EQ(run.launches[0].choice.grid, (std::array<int, 3>{132, 65535, 1}));
  EXPECT_EQ(run.launches[0].choice.block, (std::array<int, 3>{32, 1, 1}));
}

TEST(CudaCooperativeGroups, ATileSyncOrdersItsOwnLanesOnly) {
  auto body = [](const char *read) {
    return std::string("  __shared__ float s[64];\n  s[t] = v;\n  tile.sync();\n"
                       "  out[t] = s[") +
           read + "];\n";
  };
  for (auto &l : lift_both_modes("cg_tile_sync_own", body("t ^ 1"))) {
    ASSERT_FALSE(l->result.unsupported) << l->result.unsupported->message;
    EXPECT_TRUE(l->result.findings.empty()) << l->result.findings[0].message;
  }
  for (auto &l : lift_both_modes("cg_tile_sync_other", body("t ^ 8"))) {
    ASSERT_FALSE(l->result.unsupported) << l->result.unsupported->message;
    ASSERT_EQ(l->result.findings.size(), 1u);
    EXPECT_EQ(l->result.findings[0].kind, cuda::KernelFinding::Kind::SharedMemoryRace);
    EXPECT_NE(l->result.findings[0].message.find(
                  "shared-memory race on s[8]: thread (0,0,0) of block (0,0,0) reads it "
                  "here and thread (8,0,0) of block (0,0,0) writes it"),
              std::string::npos)
        << l->result.findings[0].message;
  }
}
