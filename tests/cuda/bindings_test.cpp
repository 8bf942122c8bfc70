// Linking an extension's Python functions to its kernels
// (frontend/cuda/bindings.h): the registrations of pybind11 and
// TORCH_LIBRARY blocks, followed through the call graph of the extension's
// files, with shardproof's own CUDA and PyTorch headers.
#include "frontend/cuda/bindings.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace cuda = shardproof::frontend::cuda;

namespace {

std::string source(const std::string &name) {
  return std::string(SHARDPROOF_SOURCE_DIR) + "/tests/cuda/kernels/bound_extension/" +
         name;
}

// As the analyzer parses a file: a torch extension gets the torch flags.
cuda::FileListing listing(const std::string &path) {
  cuda::ParseOptions options;
  if (cuda::is_torch_extension(path))
    options.extra_args = cuda::torch_extension_flags();
  options.extra_args.push_back("-DTORCH_EXTENSION_NAME=fused_bias_relu");
  cuda::FileListing out = cuda::list_kernels(path, options);
  EXPECT_FALSE(out.error) << out.error->loc.str() << ": " << out.error->message;
  return out;
}

std::vector<cuda::ExtensionFunction> linked(const std::vector<std::string> &names) {
  std::vector<cuda::FileListing> files;
  for (const std::string &name : names)
    files.push_back(listing(source(name)));
  return cuda::link_extensions(files);
}

const cuda::ExtensionFunction &named(const std::vector<cuda::ExtensionFunction> &fns,
                                     const std::string &python) {
  for (const cuda::ExtensionFunction &fn : fns)
    if (fn.binding.python() == python)
      return fn;
  ADD_FAILURE() << "no " << python;
  static const cuda::ExtensionFunction none;
  return none;
}

// A source written for one test, in a temporary folder.
std::string written(const std::string &name, const std::string &text) {
  auto dir = std::filesystem::temp_directory_path() / "shardproof_bindings_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / name) << text;
  return (dir / name).string();
}

} // namespace

TEST(CudaBindings, PybindFunctionsReachTheKernelsTheirLaunchersLaunch) {
  auto fns = linked({"fused_bias_relu.cpp", "fused_bias_relu_kernel.cu"});
  ASSERT_EQ(fns.size(), 3u);
  const cuda::ExtensionFunction &forward = named(fns, "fused_bias_relu.forward");
  EXPECT_EQ(forward.binding.function, "forward");
  EXPECT_EQ(forward.binding.loc.line, 28);
  ASSERT_EQ(forward.kernels.size(), 1u);
  EXPECT_EQ(forward.kernels[0].kernel, "bias_relu_forward");
  EXPECT_EQ(forward.kernels[0].launch.line, 26);
  EXPECT_EQ(forward.kernels[0].via,
            (std::vector<std::string>{"forward", "launch_bias_relu"}));
  EXPECT_TRUE(forward.undefined.empty());
}

TEST(CudaBindings, ALambdaBoundInPlaceIsFollowedIntoWhatItCalls) {
  auto fns = linked({"fused_bias_relu.cpp", "fused_bias_relu_kernel.cu"});
  const cuda::ExtensionFunction &backward = named(fns, "fused_bias_relu.backward");
  EXPECT_EQ(backward.binding.function.rfind("(lambda at ", 0), 0u)
      << backward.binding.function;
  ASSERT_EQ(backward.kernels.size(), 1u);
  EXPECT_EQ(backward.kernels[0].kernel, "bias_relu_backward");
  EXPECT_EQ(backward.kernels[0].via.size(), 3u); // lambda, backward, its launcher
}

TEST(CudaBindings, AFunctionThatLaunchesNothingHasNoKernelAndNothingUndefined) {
  auto fns = linked({"fused_bias_relu.cpp", "fused_bias_relu_kernel.cu"});
  const cuda::ExtensionFunction &rows = named(fns, "fused_bias_relu.rows_per_block");
  EXPECT_TRUE(rows.kernels.empty());
  EXPECT_TRUE(rows.undefined.empty());
}

TEST(CudaBindings, ALauncherInAFileNotGivenIsUndefinedNotSilentlyKernelFree) {
  auto fns = linked({"fused_bias_relu.cpp"});
  const cuda::ExtensionFunction &forward = named(fns, "fused_bias_relu.forward");
  EXPECT_TRUE(forward.kernels.empty());
  EXPECT_EQ(forward.undefined, (std::vector<std::string>{"launch_bias_relu"}));
}

TEST(CudaBindings, AnOperatorsSchemaAndItsImplementationAreOneFunction) {
  auto fns = linked({"ops.cpp", "fused_bias_relu.cpp", "fused_bias_relu_kernel.cu"});
  const cuda::ExtensionFunction &op = named(fns, "torch.ops.shardproof_test.bias_relu");
  EXPECT_EQ(op.binding.schema, "bias_relu(Tensor x, Tensor bias) -> Tensor");
  EXPECT_EQ(op.binding.function, "forward");
  ASSERT_EQ(op.kernels.size(), 1u);
  EXPECT_EQ(op.kernels[0].kernel, "bias_relu_forward");
  EXPECT_EQ(std::count_if(fns.begin(), fns.end(),
                          [](const auto &fn) {
                            return fn.binding.python() ==
                                   "torch.ops.shardproof_test.bias_relu";
                          }),
            1);
}

TEST(CudaBindings, OperatorNamespacesWithUnderscoresAndOverloadsAreNamedAsPyTorchDoes) {
  std::string path = written("ops_fragments.cpp", R"(
#include <torch/library.h>
at::Tensor scale(at::Tensor x);
TORCH_LIBRARY_FRAGMENT(my_fused_ops, m) { m.def("my_fused_ops::scale.out(Tensor x) -> Tensor"); }
TORCH_LIBRARY_IMPL(my_fused_ops, CUDA, m) { m.impl("scale.out", &scale); }
TORCH_LIBRARY(other_ops, m) { m.def("unimplemented(Tensor x) -> Tensor"); }
)");
  auto fns = cuda::link_extensions({listing(path)});
  ASSERT_EQ(fns.size(), 2u);
  EXPECT_EQ(fns[0].binding.python(), "torch.ops.my_fused_ops.scale");
  EXPECT_EQ(fns[0].binding.function, "scale");
  EXPECT_EQ(fns[0].undefined, (std::vector<std::string>{"scale"}));
  EXPECT_EQ(fns[1].binding.python(), "torch.ops.other_ops.unimplemented");
  EXPECT_TRUE(fns[1].binding.function.empty());
}

TEST(CudaBindings, AModuleWithoutTheBuildsNameKeepsTheMacrosName) {
  std::string path = written("unnamed.cpp", R"(
#include <torch/extension.h>
int answer() { return 42; }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("answer", &answer); }
)");
  cuda::ParseOptions options;
  options.extra_args = cuda::torch_extension_flags();
  auto fns = cuda::link_extensions({cuda::list_kernels(path, options)});
  ASSERT_EQ(fns.size(), 1u);
  EXPECT_EQ(fns[0].binding.python(), "TORCH_EXTENSION_NAME.answer");
}

TEST(CudaBindings, ADtypeDispatchIsFollowedIntoTheLauncherItInstantiates) {
  // AT_DISPATCH_FLOATING_TYPES_AND_HALF's lambda, as PyTorch's macro expands
  // it (shardproof's stand-in ATen/Dispatch.h): the templated launcher it
  // calls and the kernel that launches are reached.
  std::string path = written("dispatched.cu", R"(
#include <torch/extension.h>
template <typename T> __global__ void scale_kernel(T *x, int n) {
  if (threadIdx.x < n) x[threadIdx.x] = x[threadIdx.x] * 2;
}
template <typename T> void launch_scale(T *x, int n) { scale_kernel<T><<<1, 32>>>(x, n); }
void scale(at::Tensor x) {
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.scalar_type(), "scale", [&] {
    launch_scale<scalar_t>(x.data_ptr<scalar_t>(), x.numel());
  });
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("scale", &scale); }
)");
  auto fns = cuda::link_extensions({listing(path)});
  ASSERT_EQ(fns.size(), 1u);
  ASSERT_EQ(fns[0].kernels.size(), 1u);
  EXPECT_EQ(fns[0].kernels[0].kernel, "scale_kernel");
  EXPECT_EQ(fns[0].kernels[0].via, (std::vector<std::string>{"scale", "launch_scale"}));
  EXPECT_TRUE(fns[0].undefined.empty());
}
