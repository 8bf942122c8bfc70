// shardproof stand-in (see ATen/ATen.h): the device guards a host function
// sets before launching (no effect on what a kernel computes).
#pragma once
#include <ATen/cuda/CUDAContext.h>
namespace c10::cuda {
struct CUDAGuard {
  explicit CUDAGuard(int device);
  explicit CUDAGuard(at::Device device);
};
struct OptionalCUDAGuard {
  OptionalCUDAGuard();
  explicit OptionalCUDAGuard(std::optional<at::Device> device);
};
} // namespace c10::cuda
namespace at {
std::optional<Device> device_of(const Tensor &);
namespace cuda {
using c10::cuda::CUDAGuard;
using c10::cuda::OptionalCUDAGuard;
} // namespace cuda
} // namespace at
