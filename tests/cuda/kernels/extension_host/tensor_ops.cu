// Host code an extension's functions run, for tests/cuda/extension_test.cpp:
// a dtype dispatch, allocation with a tensor's options, a float scalar, a
// list returned, an argument written in place, and what shardproof does
// not follow (a call defined in no source, one tensor given twice).
#include <torch/extension.h>

template <typename scalar_t>
__global__ void scale_kernel(scalar_t *out, const scalar_t *x, float factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = x[i] * factor;
}

// One thread per row; thread 0 also sums the columns.
__global__ void row_and_column_sums(float *rows, float *cols, const float *x, int m,
                                    int n) {
  int r = threadIdx.x;
  if (r < m) {
    float s = 0.f;
    for (int c = 0; c < n; ++c)
      s += x[r * n + c];
    rows[r] = s;
  }
  if (r == 0)
    for (int c = 0; c < n; ++c) {
      float s = 0.f;
      for (int k = 0; k < m; ++k)
        s += x[k * n + c];
      cols[c] = s;
    }
}

__global__ void add_into(float *x, const float *y, int n) {
  int i = threadIdx.x;
  if (i < n)
    x[i] += y[i];
}

torch::Tensor scale(torch::Tensor x, double factor) {
  TORCH_CHECK(x.dim() == 2, "x must be a matrix");
  auto out = torch::empty({x.size(0), x.sizes()[1]}, x.options());
  const int n = x.numel();
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.scalar_type(), "scale", [&] {
    scale_kernel<scalar_t><<<(n + 63) / 64, 64>>>(out.data_ptr<scalar_t>(),
                                                  x.data_ptr<scalar_t>(), factor, n);
  });
  return out;
}

std::vector<torch::Tensor> sums(torch::Tensor x) {
  auto rows = torch::zeros({x.size(0)}, x.options());
  auto cols = torch::zeros({x.size(1)}, x.options());
  row_and_column_sums<<<1, 32>>>(rows.data_ptr<float>(), cols.data_ptr<float>(),
                                 x.data_ptr<float>(), x.size(0), x.size(1));
  return {rows, cols};
}

torch::Tensor add_(torch::Tensor x, torch::Tensor y) {
  add_into<<<1, 32>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
  return x;
}

void copy_out(torch::Tensor out, torch::Tensor x); // a library's: no source defines it

torch::Tensor copied(torch::Tensor x) {
  auto out = torch::empty_like(x);
  copy_out(out, x);
  return out;
}

torch::Tensor doubled(torch::Tensor x) {
  add_into<<<1, 32>>>(x.data_ptr<float>(), x.data_ptr<float>(), x.numel());
  return x;
}

// The factor as Megatron's softmax passes its scale: through c10::Half.
torch::Tensor scale_half(torch::Tensor x, float factor) {
  auto out = torch::empty_like(x);
  const at::Half half_factor = factor;
  scale_kernel<at::Half><<<1, 64>>>(out.data_ptr<at::Half>(), x.data_ptr<at::Half>(),
                                    static_cast<float>(half_factor), x.numel());
  return out;
}

// apex's layer norm host code: sizes through int& outputs, the statistics'
// dtype chosen from the input's, an optional tensor.
namespace {
void rows_and_columns(at::Tensor input, at::IntArrayRef normalized_shape, int &n1,
                      int &n2) {
  auto trailing = input.sizes().slice(input.dim() - normalized_shape.size());
  TORCH_CHECK(trailing.equals(normalized_shape));
  n2 = normalized_shape[0];
  n1 = input.numel() / n2;
}
} // namespace

std::vector<at::Tensor> row_stats(const at::Tensor &input,
                                  at::IntArrayRef normalized_shape,
                                  const std::optional<at::Tensor> &weight) {
  int n1, n2;
  rows_and_columns(input, normalized_shape, n1, n2);
  const auto stats_dtype = (input.scalar_type() == at::ScalarType::Half ||
                            input.scalar_type() == at::ScalarType::BFloat16)
                               ? at::ScalarType::Float
                               : input.scalar_type();
  at::Tensor sums = at::empty({n1}, input.options().dtype(stats_dtype));
  at::Tensor unused = at::empty({n2}, input.options());
  TORCH_CHECK(!weight.has_value() || weight->numel() == n2);
  row_and_column_sums<<<1, 32>>>(sums.data_ptr<float>(), unused.data_ptr<float>(),
                                 input.data_ptr<float>(), n1, n2);
  return {sums};
}

// A launcher object that keeps a tensor's memory and launches from a method.
struct Doubler {
  float *data;
  int n;
  explicit Doubler(at::Tensor x) : data(x.data_ptr<float>()), n(x.numel()) {}
  void run() const { add_into<<<1, 32>>>(data, data, n); }
};

torch::Tensor through_a_class(torch::Tensor x) {
  Doubler(x).run();
  return x;
}

__global__ void zero_masked(float *out, const float *x, const uint8_t *mask, int n) {
  int i = threadIdx.x;
  if (i < n)
    out[i] = mask[i] ? 0.f : x[i];
}

// A uint8 mask, as Megatron's masked softmax takes it: through a void*.
torch::Tensor masked_zero(torch::Tensor x, torch::Tensor mask) {
  auto out = torch::empty_like(x);
  void *mask_ptr = mask.data_ptr();
  zero_masked<<<1, 32>>>(out.data_ptr<float>(), x.data_ptr<float>(),
                         reinterpret_cast<const uint8_t *>(mask_ptr), x.numel());
  return out;
}

// Two tensors as a std::tuple (Python gets a tuple), one of them ones.
std::tuple<torch::Tensor, torch::Tensor> with_ones(torch::Tensor x) {
  auto ones = torch::ones_like(x);
  auto sum = torch::empty_like(x);
  add_into<<<1, 32>>>(ones.data_ptr<float>(), x.data_ptr<float>(), x.numel());
  return std::make_tuple(ones, sum);
}

// A tensor variable assigned another tensor: the launch writes the new one.
torch::Tensor reassigned(torch::Tensor x) {
  torch::Tensor out = x;
  out = torch::zeros_like(x);
  add_into<<<1, 32>>>(out.data_ptr<float>(), x.data_ptr<float>(), x.numel());
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("scale", &scale);
  m.def("sums", &sums);
  m.def("add_", &add_);
  m.def("copied", &copied);
  m.def("doubled", &doubled);
  m.def("scale_half", &scale_half);
  m.def("row_stats", &row_stats);
  m.def("through_a_class", &through_a_class);
  m.def("masked_zero", &masked_zero);
  m.def("with_ones", &with_ones);
  m.def("reassigned", &reassigned);
}
