# A module that builds its fused kernel with torch.utils.cpp_extension.load,
# as Megatron's fused_kernels did: shardproof reads the extension's sources
# for the functions it registers and the kernels behind each.
import os

import torch
from torch.utils import cpp_extension

HERE = os.path.dirname(os.path.abspath(__file__))
fused = cpp_extension.load(
    name="fused_bias_relu",
    sources=[os.path.join(HERE, "fused_bias_relu.cpp"),
             os.path.join(HERE, "fused_bias_relu_kernel.cu")])


class BiasRelu(torch.nn.Module):
    def __init__(self, features, fused_kernel):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.empty(features))
        self.fused_kernel = fused_kernel

    def forward(self, x):
        if self.fused_kernel and hasattr(fused, "forward"):
            return fused.forward(x, self.bias)
        return torch.relu(x + self.bias)


def calls_the_kernel():
    return BiasRelu(3, fused_kernel=True), (torch.randn(2, 3),)


def unfused():
    if hasattr(fused, "forward_fp8"):
        raise AssertionError("the extension registers no forward_fp8")
    return BiasRelu(3, fused_kernel=False), (torch.randn(2, 3),)


def missing_source():
    cpp_extension.load(name="fused_bias_relu",
                       sources=[os.path.join(HERE, "fused_bias_relu_kernel_v2.cu")])
    return BiasRelu(3, fused_kernel=False), (torch.randn(2, 3),)


def reads_the_module_file():
    os.path.dirname(fused.__file__)  # a built module has one; this one is not modelled
    return BiasRelu(3, fused_kernel=False), (torch.randn(2, 3),)


def unknown_build_option():
    cpp_extension.load(name="fused_bias_relu", sources=[os.path.join(HERE, "ops.cpp")],
                       with_pytorch_error_handling=False)
    return BiasRelu(3, fused_kernel=False), (torch.randn(2, 3),)


def imported_by_name():
    # After load(), `import NAME` gives the built module, as in PyTorch.
    import fused_bias_relu as by_name
    assert by_name is fused
    return BiasRelu(3, fused_kernel=True), (torch.randn(2, 3),)
