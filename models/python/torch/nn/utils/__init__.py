"""torch.nn.utils: gradient clipping, what engines and optimizers call
between the backward and the step (DeepSpeed's unfused FP16/BF16 optimizer
binds clip_grad_norm_), and parameters as one vector. As in PyTorch, the
norm is taken of the gradients as they are, outside autograd, and the
gradients are scaled in place by min(max_norm / (norm + 1e-6), 1): no
branch. PyTorch's other names here are "not modelled" where used."""
import warnings

import torch

from ... import _tracing


@_tracing.no_effect(foreach="the fused foreach kernels compute what the loop does")
def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the tensors' norms (ord 2 only, as torch.linalg.vector_norm
    here)."""
    tensors = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors)
    if not tensors:
        return torch.tensor(0.0)
    with torch.no_grad():
        norms = [torch.linalg.vector_norm(t, norm_type) for t in tensors]
        total = torch.linalg.vector_norm(torch.stack(norms), norm_type)
    if error_if_nonfinite and bool(torch.logical_or(total.isnan(), total.isinf())):
        raise RuntimeError(f"The total norm of order {float(norm_type)} for gradients from "
                           "`parameters` is non-finite, so it cannot be clipped.")
    return total


@_tracing.no_effect(foreach="the fused foreach kernels compute what the loop does")
def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    parameters = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return
    with torch.no_grad():
        coefficient = torch.clamp(float(max_norm) / (total_norm + 1e-6), max=1.0)
        for g in grads:
            g.mul_(coefficient)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    parameters = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)
    total = get_total_norm([p.grad for p in parameters if p.grad is not None], norm_type,
                           error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                   foreach=None):
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@_tracing.no_effect(foreach="the fused foreach kernels compute what the loop does")
def clip_grad_value_(parameters, clip_value, foreach=None):
    parameters = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)
    with torch.no_grad():
        for p in parameters:
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)


def parameters_to_vector(parameters):
    return torch.cat([p.view(-1) for p in parameters])


# PyTorch 2.x's other public names here.
_REAL_NAMES = frozenset([
    "clip_grad", "convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format",
    "convert_parameters", "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
    "fuse_linear_bn_weights", "fusion", "init", "memory_format", "parametrizations",
    "parametrize", "remove_spectral_norm", "remove_weight_norm", "rnn", "skip_init",
    "spectral_norm", "stateless", "vector_to_parameters", "weight_norm"])


def __getattr__(name):
    if name in _REAL_NAMES:
        raise _tracing.NotModelledAttribute(f"torch.nn.utils.{name} is not modelled")
    raise AttributeError(f"module 'torch.nn.utils' has no attribute '{name}'")
