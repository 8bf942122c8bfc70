// A PyTorch extension in the style of apex's and Megatron's: the Python
// functions are registered here, the kernels and their launchers live in
// fused_bias_relu_kernel.cu (compiled apart, linked by name).
#include <torch/extension.h>

void launch_bias_relu(float *out, const float *x, const float *bias, int rows, int cols);
void launch_bias_relu_backward(float *grad_x, const float *grad_out, const float *out,
                               int n);

torch::Tensor forward(torch::Tensor x, torch::Tensor bias) {
  TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
  auto out = torch::empty_like(x);
  launch_bias_relu(out.data_ptr<float>(), x.data_ptr<float>(), bias.data_ptr<float>(),
                   x.size(0), x.size(1));
  return out;
}

torch::Tensor backward(torch::Tensor grad_out, torch::Tensor out) {
  auto grad_x = torch::empty_like(grad_out);
  launch_bias_relu_backward(grad_x.data_ptr<float>(), grad_out.data_ptr<float>(),
                            out.data_ptr<float>(), grad_out.numel());
  return grad_x;
}

int rows_per_block() { return 4; }

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &forward, "relu(x + bias) (CUDA)", py::arg("x"), py::arg("bias"));
  m.def(
      "backward",
      [](torch::Tensor grad_out, torch::Tensor out) { return backward(grad_out, out); },
      "the gradient of forward", py::call_guard<py::gil_scoped_release>());
  m.def("rows_per_block", &rows_per_block);
}
