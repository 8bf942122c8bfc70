// The same forward registered as a PyTorch operator (torch.ops), its schema
// and its CUDA implementation in two blocks.
#include <torch/library.h>

at::Tensor forward(at::Tensor x, at::Tensor bias);

TORCH_LIBRARY(shardproof_test, m) { m.def("bias_relu(Tensor x, Tensor bias) -> Tensor"); }

TORCH_LIBRARY_IMPL(shardproof_test, CUDA, m) { m.impl("bias_relu", TORCH_FN(forward)); }
