// An extension function called as Python calls it (frontend/cuda/extension.h):
// its host code run across the extension's sources at the arguments'
// sizes, and the kernels it launches lifted over their elements.
#include "frontend/cuda/extension.h"

#include <gtest/gtest.h>

namespace cuda = shardproof::frontend::cuda;
namespace frontend = shardproof::frontend;
namespace ir = shardproof::ir;
namespace terms = shardproof::terms;

namespace {

std::string source(const std::string &name) {
  return std::string(SHARDPROOF_SOURCE_DIR) + "/tests/cuda/kernels/" + name;
}

// The sources as the analyzer parses an extension's: with the torch flags.
cuda::CudaExtension parsed(const std::vector<std::string> &names) {
  std::vector<cuda::CudaExtension::Source> sources;
  for (const std::string &name : names) {
    cuda::ParseOptions options;
    options.extra_args = cuda::torch_extension_flags();
    options.extra_args.push_back("-DTORCH_EXTENSION_NAME=ext");
    sources.push_back({source(name), options});
  }
  auto extension = cuda::CudaExtension::parse(sources);
  if (auto *error = std::get_if<cuda::Diagnostic>(&extension))
    ADD_FAILURE() << error->loc.str() << ": " << error->message;
  return std::move(std::get<cuda::CudaExtension>(extension));
}

cuda::HostTensor tensor(ir::Shape shape, ir::DType dtype = ir::DType::Float32) {
  return {dtype, std::move(shape), true};
}

// A tensor of constants.
frontend::ExtensionTensor constants(terms::TermStore &store, ir::Shape shape,
                                    const std::vector<long> &values) {
  frontend::ExtensionTensor out{ir::DType::Float32, std::move(shape), {}};
  for (long v : values)
    out.elements.push_back(store.constant(v));
  return out;
}

// The elements' values, each a constant (the inputs were).
std::vector<double> values(const terms::TermStore &store,
                           const std::vector<terms::TermId> &elements) {
  std::vector<double> out;
  for (terms::TermId t : elements) {
    EXPECT_TRUE(store.is_const(t)) << "element " << out.size() << " is not a constant";
    out.push_back(store.is_const(t) ? store.const_value(t).get_d() : 0.0);
  }
  return out;
}

const cuda::CudaExtension &bias_relu() {
  static cuda::CudaExtension extension =
      parsed({"bound_extension/fused_bias_relu.cpp",
              "bound_extension/fused_bias_relu_kernel.cu"});
  return extension;
}

const cuda::CudaExtension &tensor_ops() {
  static cuda::CudaExtension extension = parsed({"extension_host/tensor_ops.cu"});
  return extension;
}

} // namespace

TEST(CudaExtension, RunsTheBindingAcrossItsSourcesToTheLaunchItMakes) {
  auto run = bias_relu().run("forward", {tensor({2, 3}), tensor({3})});
  ASSERT_EQ(run.run.end, cuda::HostRun::End::Returned) << run.run.why;
  ASSERT_EQ(run.run.launches.size(), 1u);
  const cuda::HostLaunch &launch = run.run.launches[0];
  EXPECT_EQ(launch.kernel, "bias_relu_forward");
  EXPECT_EQ(launch.choice.grid, (std::array<int, 3>{1, 1, 1}));
  EXPECT_EQ(launch.choice.block, (std::array<int, 3>{32, 4, 1}));
  EXPECT_EQ(launch.choice.ints.at("rows"), 2);
  EXPECT_EQ(launch.choice.ints.at("cols"), 3);
  // x and bias are the arguments' storages 0 and 1; out is empty_like's.
  EXPECT_EQ(launch.buffers.at("x").storage, 0);
  EXPECT_EQ(launch.buffers.at("bias").storage, 1);
  EXPECT_EQ(launch.buffers.at("out").storage, 2);
  ASSERT_EQ(run.storages.size(), 3u);
  EXPECT_EQ(run.storages[2].init, cuda::HostStorage::Init::Empty);
  EXPECT_EQ(run.storages[2].made_by, "at::empty_like");
  EXPECT_EQ(run.storages[2].at.line, 12);
  ASSERT_EQ(run.returned.size(), 1u);
  EXPECT_EQ(run.returned[0].storage, 2);
  EXPECT_EQ(run.returned[0].shape, (ir::Shape{2, 3}));
}

TEST(CudaExtension, ACallLiftsTheKernelOverTheArgumentsElements) {
  terms::TermStore store;
  auto result = bias_relu().call(store, "forward",
                                 {constants(store, {2, 3}, {1, -2, 3, -4, 5, -6}),
                                  constants(store, {3}, {1, 1, -1})});
  ASSERT_FALSE(result.unsupported) << *result.unsupported;
  ASSERT_FALSE(result.rejected) << *result.rejected;
  ASSERT_EQ(result.returned.size(), 1u);
  EXPECT_EQ(result.returned[0].shape, (ir::Shape{2, 3}));
  EXPECT_EQ(values(store, result.returned[0].elements),
            (std::vector<double>{2, 0, 2, 0, 6, 0}));
  EXPECT_EQ(result.returned_arguments, (std::vector<int>{-1}));
  EXPECT_TRUE(result.written.empty());
}

TEST(CudaExtension, AFunctionReturningANumberGivesIt) {
  terms::TermStore store;
  auto result = bias_relu().call(store, "rows_per_block", {});
  ASSERT_FALSE(result.unsupported) << *result.unsupported;
  ASSERT_TRUE(result.returned_number);
  EXPECT_EQ(std::get<std::int64_t>(*result.returned_number), 4);
  EXPECT_TRUE(result.returned.empty());
}

TEST(CudaExtension, TheDispatchPicksTheKernelForTheDtypeWithTheScalar) {
  auto run = tensor_ops().run("scale", {tensor({2, 40}, ir::DType::Float16), 0.1});
  ASSERT_EQ(run.run.end, cuda::HostRun::End::Returned) << run.run.why;
  ASSERT_EQ(run.run.launches.size(), 1u);
  const cuda::HostLaunch &launch = run.run.launches[0];
  EXPECT_EQ(launch.choice.template_args, (std::vector<std::string>{"c10::Half"}));
  EXPECT_EQ(launch.choice.grid[0], 2); // 80 elements, 64 per block
  EXPECT_EQ(launch.reals.at("factor"), static_cast<double>(0.1f)); // a float parameter
  ASSERT_EQ(run.storages.size(), 2u);
  EXPECT_EQ(run.storages[1].dtype, ir::DType::Float16); // x.options()

  terms::TermStore store;
  auto result = tensor_ops().call(store, "scale",
                                  {constants(store, {1, 2}, {3, -4}), std::int64_t{2}});
  ASSERT_FALSE(result.unsupported) << *result.unsupported;
  EXPECT_EQ(values(store, result.returned[0].elements), (std::vector<double>{6, -8}));
}

TEST(CudaExtension, AScalarConvertedToHalfIsRoundedToIt) {
  auto run = tensor_ops().run("scale_half", {tensor({8}, ir::DType::Float16), 0.1});
  ASSERT_EQ(run.run.end, cuda::HostRun::End::Returned) << run.run.why;
  ASSERT_EQ(run.run.launches.size(), 1u);
  // 0.1 in half precision: 1638 / 2^14 (the nearest of its 11-bit values).
  EXPECT_EQ(run.run.launches[0].reals.at("factor"), 1638.0 / 16384.0);
}

TEST(CudaExtension, OutputReferencesOptionalTensorsAndSizeListsAreFollowed) {
  terms::TermStore store;
  auto result = tensor_ops().call(store, "row_stats",
                                  {constants(store, {2, 3}, {1, 2, 3, 4, 5, 6}),
                                   std::vector<std::int64_t>{3}, std::monostate{}});
  ASSERT_FALSE(result.unsupported) << *result.unsupported;
  ASSERT_FALSE(result.rejected) << *result.rejected;
  EXPECT_EQ(values(store, result.returned.at(0).elements), (std::vector<double>{6, 15}));
  auto wrong = tensor_ops().call(store, "row_stats",
                                 {constants(store, {2, 3}, {1, 2, 3, 4, 5, 6}),
                                  std::vector<std::int64_t>{2}, std::monostate{}});
  ASSERT_TRUE(wrong.rejected);
  EXPECT_EQ(*wrong.rejected, "the check 'trailing.equals(normalized_shape)' failed (at " +
                                 source("extension_host/tensor_ops.cu") + ":91:3)");
}

TEST(CudaExtension, AnIntegerMaskIsReadAsItsKnownValues) {
  terms::TermStore store;
  frontend::ExtensionTensor mask = constants(store, {3}, {0, 1, 0});
  mask.dtype = ir::DType::Other; // uint8
  auto result =
      tensor_ops().call(store, "masked_zero", {constants(store, {3}, {1, 2, 3}), mask});
  ASSERT_FALSE(result.unsupported) << *result.unsupported;
  EXPECT_EQ(values(store, result.returned.at(0).elements),
            (std::vector<double>{1, 0, 3}));
  mask.elements[1] = store.var("m", terms::VarKind::Reference);
  auto symbolic =
      tensor_ops().call(store, "masked_zero", {constants(store, {3}, {1, 2, 3}), mask});
  ASSERT_TRUE(symbolic.unsupported);
  EXPECT_NE(
      symbolic.unsupported->find("the integer tensor 'mask' has values that are not "
                                 "known integers (its element 1 is symbolic)"),
      std::string::npos)
      << *symbolic.unsupported;
}

TEST(CudaExtension, AVectorOfTensorsIsReturnedAsASequence) {
  terms::TermStore store;
  auto result =
      tensor_ops().call(store, "sums", {constants(store, {2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_FALSE(result.unsupported) << *result.unsupported;
  EXPECT_TRUE(result.returns_sequence);
  ASSERT_EQ(result.returned.size(), 2u);
  EXPECT_EQ(values(store, result.returned[0].elements), (std::vector<double>{6, 15}));
  EXPECT_EQ(values(store, result.returned[1].elements), (std::vector<double>{5, 7, 9}));
}

TEST(CudaExtension, AStdTupleIsReturnedAsATupleAndOnesAreOnes) {
  terms::TermStore store;
  auto result = tensor_ops().call(store, "with_ones", {constants(store, {2}, {3, 4})});
  ASSERT_FALSE(result.unsupported) << *result.unsupported;
  EXPECT_TRUE(result.returns_sequence);
  EXPECT_TRUE(result.returns_tuple);
  ASSERT_EQ(result.returned.size(), 2u);
  EXPECT_EQ(values(store, result.returned[0].elements), (std::vector<double>{4, 5}));
}

TEST(CudaExtension, ATensorVariableAssignedAnotherTensorHoldsIt) {
  terms::TermStore store;
  auto result = tensor_ops().call(store, "reassigned", {constants(store, {2}, {3, 4})});
  ASSERT_FALSE(result.unsupported) << *result.unsupported;
  EXPECT_EQ(result.returned_arguments, (std::vector<int>{-1})); // not x
  EXPECT_EQ(values(store, result.returned.at(0).elements), (std::vector<double>{3, 4}));
  EXPECT_TRUE(result.written.empty()); // x itself is untouched
}

TEST(CudaExtension, AnArgumentTheKernelWritesIsWrittenAndReturnedAsItself) {
  terms::TermStore store;
  auto result = tensor_ops().call(
      store, "add_",
      {constants(store, {3}, {1, 2, 3}), constants(store, {3}, {10, 20, 30})});
  ASSERT_FALSE(result.unsupported) << *result.unsupported;
  ASSERT_EQ(result.written.count(0), 1u);
  EXPECT_EQ(values(store, result.written.at(0)), (std::vector<double>{11, 22, 33}));
  EXPECT_EQ(result.written.count(1), 0u);
  EXPECT_EQ(result.returned_arguments, (std::vector<int>{0}));
}

TEST(CudaExtension, AFailedCheckOrAWrongDataPointerTypeRefusesTheArguments) {
  terms::TermStore store;
  auto check = tensor_ops().call(store, "scale",
                                 {constants(store, {3}, {1, 2, 3}), std::int64_t{2}});
  ASSERT_TRUE(check.rejected);
  EXPECT_EQ(*check.rejected, "the check 'x.dim() == 2' failed (at " +
                                 source("extension_host/tensor_ops.cu") + ":40:3)");
  auto type =
      bias_relu().run("forward", {tensor({2, 3}, ir::DType::Float16), tensor({3})});
  EXPECT_EQ(type.run.end, cuda::HostRun::End::Rejected);
  EXPECT_EQ(type.run.why, "expected scalar type float but found float16");
}

TEST(CudaExtension, WhatTheHostCodeDoesThatIsNotModelledStopsTheCall) {
  terms::TermStore store;
  auto library = tensor_ops().call(store, "copied", {constants(store, {2}, {1, 2})});
  ASSERT_TRUE(library.unsupported);
  EXPECT_EQ(*library.unsupported,
            "the host code's call of 'copy_out' with a tensor or its memory (defined in "
            "none of the sources) at " +
                source("extension_host/tensor_ops.cu") + ":67:3 is not followed");
  auto extra = bias_relu().call(
      store, "forward",
      {constants(store, {1}, {1}), constants(store, {1}, {1}), std::int64_t{3}});
  ASSERT_TRUE(extra.unsupported);
  EXPECT_EQ(*extra.unsupported, "forward takes 2 arguments, given 3 (defaults and "
                                "keyword arguments are not modelled)");
  auto kept =
      tensor_ops().call(store, "through_a_class", {constants(store, {2}, {1, 2})});
  ASSERT_TRUE(kept.unsupported);
  EXPECT_NE(
      kept.unsupported->find("construction of 'Doubler' from a tensor or its memory"),
      std::string::npos)
      << *kept.unsupported;
  auto twice = tensor_ops().call(store, "doubled", {constants(store, {2}, {1, 2})});
  ASSERT_TRUE(twice.unsupported);
  EXPECT_NE(twice.unsupported->find("launch given one tensor's memory twice ('x' and "
                                    "'y')"),
            std::string::npos)
      << *twice.unsupported;
}
