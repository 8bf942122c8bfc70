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
