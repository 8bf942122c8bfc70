"""Models of accelerator library ops by what they compute, for recipes whose
framework tree has no PyTorch path around them. Nothing here is installed by
the import policy (optional accelerators stay absent, so frameworks take
their PyTorch paths); a recipe installs a model explicitly, and the kernel
behind it is not what such a run checks. Frames here are shardproof's own, so
locations point at the framework code that calls the model."""
import sys
import types

import torch


class FusedLayerNormAffineFunction:
    """apex.normalization.fused_layer_norm.FusedLayerNormAffineFunction: a
    layer norm over the trailing `normalized_shape` dims, with its gradient
    from shardproof's autograd."""

    @staticmethod
    @torch._tracing.no_effect(ctx="the model keeps no state of its own for the backward")
    def forward(ctx, input, weight, bias, normalized_shape, eps):
        return FusedLayerNormAffineFunction.apply(input, weight, bias,
                                                  normalized_shape, eps)

    @staticmethod
    @torch._tracing.no_effect(memory_efficient="apex recomputes instead of saving; "
                              "the values and gradients are the same")
    def apply(input, weight, bias, normalized_shape, eps, memory_efficient=False):
        return torch.nn.functional.layer_norm(input, tuple(normalized_shape),
                                              weight, bias, eps)


def install_apex_layer_norm():
    """Makes `apex.normalization.fused_layer_norm` importable with the model
    above; every other apex module stays absent. The driver drops these
    modules before the next run, as it does the user's."""
    modules = {}
    for name in ("apex", "apex.normalization", "apex.normalization.fused_layer_norm"):
        modules[name] = types.ModuleType(name)
        modules[name].__path__ = []  # a package whose other modules are absent
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(modules[parent], child, modules[name])
    modules["apex.normalization.fused_layer_norm"].FusedLayerNormAffineFunction = \
        FusedLayerNormAffineFunction
    sys.modules.update(modules)


# ---- The multi-tensor ops of apex's amp_C and Transformer Engine ----------
# Frameworks compute gradient norms and scale gradients with these fused
# kernels (one launch over a list of tensors); their PyTorch fallbacks read
# the norm back as a Python float, which a symbolic proof cannot follow.


def multi_tensor_applier(op, noop_flag_buffer, tensor_lists, *args):
    """apex.multi_tensor_apply.multi_tensor_applier (and TE's): `op` over the
    lists in chunks of 65536 elements; the chunking changes no value. The
    kernels set the noop flag on a non-finite value, which the models do not:
    such a value is not modelled."""
    for tensors in tensor_lists:
        for t in tensors:
            if not bool(torch.isfinite(t).all()):
                torch._tracing.unmodelled("a multi-tensor kernel over a non-finite value "
                                          "(its noop flag)")
    return op(2048 * 32, noop_flag_buffer, tensor_lists, *args)


@torch._tracing.no_effect(chunk_size="the chunking changes no value",
                          noop_flag="set only on a non-finite value, which "
                                    "multi_tensor_applier refuses")
def multi_tensor_l2norm(chunk_size, noop_flag, tensor_lists, per_tensor=False):
    """amp_C.multi_tensor_l2norm: (the L2 norm of all of tensor_lists[0]
    together, a float32 tensor of one element; the norm of each tensor when
    `per_tensor`, else an empty tensor). The kernel accumulates in fp32."""
    squares = [t.float().pow(2).sum() for t in tensor_lists[0]]
    if not squares:
        return torch.zeros(1), torch.zeros(0)
    total = torch.stack(squares).sum().sqrt().reshape(1)
    each = torch.stack([s.sqrt() for s in squares]) if per_tensor else torch.zeros(0)
    return total, each


@torch._tracing.no_effect(chunk_size="the chunking changes no value",
                          noop_flag="set only on a non-finite value, which "
                                    "multi_tensor_applier refuses")
def multi_tensor_scale(chunk_size, noop_flag, tensor_lists, scale):
    """amp_C.multi_tensor_scale (TE's multi_tensor_scale_tensor takes `scale`
    as a tensor): tensor_lists[1][i] = tensor_lists[0][i] * scale, in
    tensor_lists[1]'s dtype; the two lists may be the same tensors."""
    sources, destinations = tensor_lists[0], tensor_lists[1]
    if len(sources) != len(destinations):
        raise RuntimeError("multi_tensor_scale: the two tensor lists differ in length")
    for source, destination in zip(sources, destinations):
        destination.copy_(source * scale)


def install_multi_tensor_ops(*modules):
    """Points each module's multi-tensor names (as Megatron's optimizer and
    clip_grads bind them from Transformer Engine, apex or their local
    fallbacks) at the models above, with a tensor scale as TE has: the norm
    then stays a tensor, as it does in a TE install."""
    names = dict(multi_tensor_applier=multi_tensor_applier,
                 l2_norm_impl=multi_tensor_l2norm,
                 multi_tensor_scale_impl=multi_tensor_scale,
                 multi_tensor_scale_tensor_impl=multi_tensor_scale)
    for module in modules:
        for name, model in names.items():
            if hasattr(module, name):
                setattr(module, name, model)
