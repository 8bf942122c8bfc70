// shardproof's stand-in for PyTorch's C++ headers (torch extensions parsed
// without a PyTorch install): declarations enough for a kernel file's host
// code to parse. Nothing here is run; the kernel check reads device code
// and runs host dispatchers' integer code only. c10::Half and
// c10::BFloat16 convert to and from float (reals for the lifter).
#pragma once

#include <c10/macros/Macros.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <assert.h>
#include <stdint.h>

// What PyTorch's headers bring in with them, which extension sources use
// without including it themselves.
#include <array>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace c10 {
struct Half {
  unsigned short x;
  Half() = default;
  __host__ __device__ Half(float value);
  __host__ __device__ operator float() const;
};
struct BFloat16 {
  unsigned short x;
  BFloat16() = default;
  __host__ __device__ BFloat16(float value);
  __host__ __device__ operator float() const;
};
// PyTorch's arithmetic on 16-bit values (c10/util/Half-inl.h and
// BFloat16-inl.h): computed in float, then rounded. T op T, T op int and
// T op int64_t give T; T op float gives float, T op double double; -T is T;
// the compound assignments store into their left operand's type. BFloat16
// also compares. Declared only: the lifter models each as its operation
// over the reals, as it models every 16-bit value (the rounding is not
// modelled, the report says so).
#define __SP_C10_OPERATOR(T, OP)                                                         \
  C10_HOST_DEVICE T operator OP(const T &a, const T &b);                                 \
  C10_HOST_DEVICE T &operator OP##=(T &a, const T &b);                                   \
  C10_HOST_DEVICE float operator OP(T a, float b);                                       \
  C10_HOST_DEVICE float operator OP(float a, T b);                                       \
  C10_HOST_DEVICE float &operator OP##=(float &a, const T &b);                           \
  C10_HOST_DEVICE double operator OP(T a, double b);                                     \
  C10_HOST_DEVICE double operator OP(double a, T b);                                     \
  C10_HOST_DEVICE T operator OP(T a, int b);                                             \
  C10_HOST_DEVICE T operator OP(int a, T b);                                             \
  C10_HOST_DEVICE T operator OP(T a, int64_t b);                                         \
  C10_HOST_DEVICE T operator OP(int64_t a, T b);
#define __SP_C10_ARITHMETIC(T)                                                           \
  __SP_C10_OPERATOR(T, +)                                                                \
  __SP_C10_OPERATOR(T, -)                                                                \
  __SP_C10_OPERATOR(T, *)                                                                \
  __SP_C10_OPERATOR(T, /)                                                                \
  C10_HOST_DEVICE T operator-(const T &a);
__SP_C10_ARITHMETIC(Half)
__SP_C10_ARITHMETIC(BFloat16)
C10_HOST_DEVICE bool operator>(BFloat16 &lhs, BFloat16 &rhs);
C10_HOST_DEVICE bool operator<(BFloat16 &lhs, BFloat16 &rhs);
#undef __SP_C10_ARITHMETIC
#undef __SP_C10_OPERATOR

enum class ScalarType : int8_t {
  Byte,
  Char,
  Short,
  Int,
  Long,
  Half,
  Float,
  Double,
  Bool,
  BFloat16
};
inline const char *toString(ScalarType) { return "ScalarType"; }
// c10::ArrayRef<int64_t> as extensions use it: a list of sizes, comparable.
struct IntArrayRef : std::vector<int64_t> {
  using std::vector<int64_t>::vector;
  IntArrayRef(const std::vector<int64_t> &v);
  bool equals(const IntArrayRef &other) const;
  IntArrayRef slice(size_t start) const;
  IntArrayRef slice(size_t start, size_t length) const;
};
std::ostream &operator<<(std::ostream &out, const IntArrayRef &sizes);
template <typename T> using optional = std::optional<T>;
constexpr std::nullopt_t nullopt = std::nullopt;
[[noreturn]] void __shardproof_torch_error(const char *what);
} // namespace c10

#define AT_ERROR(...) ::c10::__shardproof_torch_error("AT_ERROR")
#define TORCH_CHECK(cond, ...) ((cond) ? (void)0 : ::c10::__shardproof_torch_error(#cond))
#define TORCH_INTERNAL_ASSERT(cond, ...)                                                 \
  ((cond) ? (void)0 : ::c10::__shardproof_torch_error(#cond))
#define AT_ASSERTM(cond, ...) TORCH_INTERNAL_ASSERT(cond)

namespace at {
using c10::BFloat16;
using c10::Half;
using c10::IntArrayRef;
using c10::nullopt;
using c10::optional;
using c10::ScalarType;
using c10::toString;
constexpr ScalarType kFloat = ScalarType::Float, kHalf = ScalarType::Half,
                     kBFloat16 = ScalarType::BFloat16, kByte = ScalarType::Byte;
template <typename T, bool is_cuda> struct AccumulateType { using type = float; };
template <typename T, bool is_cuda>
using acc_type = typename AccumulateType<T, is_cuda>::type;

enum class Layout : int8_t { Strided };
constexpr Layout kStrided = Layout::Strided;
enum class MemoryFormat : int8_t { Contiguous, Preserve, ChannelsLast, ChannelsLast3d };
enum class DeviceType : int8_t { CPU, CUDA };
constexpr DeviceType kCUDA = DeviceType::CUDA, kCPU = DeviceType::CPU;
struct Device {
  Device(DeviceType type, int index = -1);
  int index() const;
  bool is_cuda() const;
  DeviceType type() const;
  bool operator==(const Device &) const;
  bool operator!=(const Device &) const;
};
struct TensorOptions {
  TensorOptions requires_grad(bool) const { return *this; }
  TensorOptions dtype(ScalarType) const { return *this; }
  ScalarType dtype() const;
  TensorOptions device(int) const { return *this; }
  TensorOptions device(Device) const { return *this; }
  TensorOptions device(DeviceType) const { return *this; }
  TensorOptions layout(Layout) const { return *this; }
};
int64_t elementSize(ScalarType);
struct Tensor {
  int64_t size(int64_t) const;
  int64_t ndimension() const;
  int64_t element_size() const;
  IntArrayRef strides() const;
  Device device() const;
  TensorOptions type() const; // the deprecated DeprecatedTypeProperties, as options
  int64_t get_device() const;
  bool defined() const;
  bool requires_grad() const;
  Tensor reshape(IntArrayRef) const;
  Tensor narrow(int64_t, int64_t, int64_t) const;
  Tensor select(int64_t, int64_t) const;
  Tensor unsqueeze(int64_t) const;
  Tensor squeeze(int64_t) const;
  Tensor flatten(int64_t = 0, int64_t = -1) const;
  Tensor to(ScalarType) const;
  Tensor &zero_();
  Tensor &copy_(const Tensor &);
  template <typename T> T item() const;
  template <typename T> const T *const_data_ptr() const;
  template <typename T> T *mutable_data_ptr() const;
  int64_t stride(int64_t) const;
  int64_t dim() const;
  int64_t numel() const;
  IntArrayRef sizes() const;
  ScalarType scalar_type() const;
  TensorOptions options() const;
  Tensor contiguous() const;
  Tensor transpose(int64_t, int64_t) const;
  Tensor view(IntArrayRef) const;
  ScalarType dtype() const;
  bool is_contiguous(MemoryFormat = MemoryFormat::Contiguous) const;
  bool is_cuda() const;
  void *data_ptr() const;
  template <typename T> T *data_ptr() const;
  template <typename T> T *data() const;
};
Tensor empty(IntArrayRef, TensorOptions = {});
Tensor from_blob(void *data, IntArrayRef sizes, TensorOptions = {});
Tensor from_blob(void *data, IntArrayRef sizes, IntArrayRef strides, TensorOptions = {});
Tensor ones(IntArrayRef, TensorOptions = {});
Tensor cat(const std::vector<Tensor> &, int64_t dim = 0);
Tensor matmul(const Tensor &, const Tensor &);
int64_t numel(const Tensor &);
Tensor empty_like(const Tensor &, TensorOptions = {});
Tensor zeros(IntArrayRef, TensorOptions = {});
Tensor zeros_like(const Tensor &, TensorOptions = {});
Tensor ones_like(const Tensor &, TensorOptions = {});
} // namespace at

namespace torch {
using at::empty;
using at::from_blob;
using at::numel;
using at::ones;
using c10::ScalarType;
constexpr ScalarType kFloat = ScalarType::Float, kFloat32 = ScalarType::Float,
                     kHalf = ScalarType::Half, kFloat16 = ScalarType::Half,
                     kBFloat16 = ScalarType::BFloat16;
using at::empty_like;
using at::Tensor;
using at::zeros;
using at::zeros_like;
using at::ones_like;
} // namespace torch
