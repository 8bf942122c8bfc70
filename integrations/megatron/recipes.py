"""Entries that build real Megatron-LM core components at reduced sizes, for

    MEGATRON_ROOT=/path/to/Megatron-LM build/shardproof check \
        integrations/megatron/recipes.py::column_parallel_linear --world 2

MEGATRON_ROOT is a checkout of Megatron-LM (the folder that holds megatron/).
Each function is an entry per docs/entry-contract.md: Megatron's own
parallel state is initialised on the simulated world (tensor parallelism over
all ranks) and the component is built through its public constructor, so the
code proved is the tree's own. `_sp` variants turn sequence parallelism on:
the input is then this rank's slice of the sequence.
"""
import os
import sys

import torch

_ROOT = os.environ.get("MEGATRON_ROOT")


class RecipeError(RuntimeError):
    """The tree cannot build this component (absent, or too different)."""


def _megatron():
    if not _ROOT:
        raise RecipeError("set MEGATRON_ROOT to a Megatron-LM checkout "
                          "(the folder that holds megatron/core)")
    if not os.path.isdir(os.path.join(_ROOT, "megatron", "core")):
        raise RecipeError(f"{_ROOT} is not a Megatron-LM checkout: it has no megatron/core")
    if _ROOT not in sys.path:
        sys.path.insert(0, _ROOT)
    from megatron.core import parallel_state
    from megatron.core import tensor_parallel
    world = torch.distributed.get_world_size()
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=world)
    # The RNG tracker Megatron's weight initialisers fork from.
    tensor_parallel.model_parallel_cuda_manual_seed(1234)
    return tensor_parallel, world, torch.distributed.get_rank()


def _component(module, name):
    if not hasattr(module, name):
        raise RecipeError(f"this Megatron tree has no {module.__name__}.{name}")
    return getattr(module, name)


def _config(world, sequence_parallel):
    from megatron.core.model_parallel_config import ModelParallelConfig
    return ModelParallelConfig(tensor_model_parallel_size=world,
                               sequence_parallel=sequence_parallel and world > 1)


def _step(model, inputs, sequence_parallel=False):
    """The entry's training step: a loss whose gradients depend on the values
    (a plain sum would make many of them constants), and, under sequence
    parallelism, the all-reduce over the tensor-parallel group of the
    gradients of parameters marked `sequence_parallel` (what Megatron's
    finalize_model_grads does for them; its DDP-wrapped version comes later)."""
    from megatron.core import parallel_state

    def finalize_grads():
        if not sequence_parallel or torch.distributed.get_world_size() == 1:
            return
        group = parallel_state.get_tensor_model_parallel_group()
        for p in model.parameters():
            if getattr(p, "sequence_parallel", False) and p.grad is not None:
                torch.distributed.all_reduce(p.grad, group=group)

    def loss(out):
        out = out[0] if isinstance(out, tuple) else out  # (output, bias) layers
        return (out * out).sum()

    return {"model": model, "inputs": inputs, "loss": loss,
            "finalize_grads": finalize_grads}


def _sequence_slice(x, world, rank, sequence_parallel):
    return x.chunk(world, dim=0)[rank] if sequence_parallel and world > 1 else x


def column_parallel_linear(sequence_parallel=False):
    tp, world, rank = _megatron()
    layer = _component(tp, "ColumnParallelLinear")(
        4, 8, config=_config(world, sequence_parallel),
        init_method=torch.nn.init.normal_, bias=True, gather_output=False)
    x = torch.randn(4, 2, 4)  # [sequence, batch, hidden]
    return _step(layer, (_sequence_slice(x, world, rank, sequence_parallel),),
                 sequence_parallel)


def column_parallel_linear_sp():
    return column_parallel_linear(sequence_parallel=True)


def row_parallel_linear(sequence_parallel=False):
    tp, world, rank = _megatron()
    layer = _component(tp, "RowParallelLinear")(
        8, 4, config=_config(world, sequence_parallel),
        init_method=torch.nn.init.normal_, bias=True, input_is_parallel=True,
        skip_bias_add=False)
    x = torch.randn(4, 2, 8)  # the full activation; this rank gets its hidden slice
    return _step(layer, (x.chunk(world, dim=-1)[rank],), sequence_parallel)


def row_parallel_linear_sp():
    return row_parallel_linear(sequence_parallel=True)


def vocab_parallel_embedding():
    tp, world, _ = _megatron()
    embedding = _component(tp, "VocabParallelEmbedding")(
        num_embeddings=8, embedding_dim=3, init_method=torch.nn.init.normal_,
        config=_config(world, False))
    return _step(embedding, (torch.tensor([[0, 5, 7], [3, 4, 1]]),))


def mlp(gated=False):
    tp, world, _ = _megatron()
    from megatron.core.transformer import mlp as mlp_module
    from megatron.core.transformer.transformer_config import TransformerConfig
    config = TransformerConfig(
        num_layers=1, hidden_size=4, ffn_hidden_size=8, num_attention_heads=4,
        tensor_model_parallel_size=world, add_bias_linear=True,
        gated_linear_unit=gated)
    submodules = _component(mlp_module, "MLPSubmodules")(
        linear_fc1=tp.ColumnParallelLinear, linear_fc2=tp.RowParallelLinear)
    layer = _component(mlp_module, "MLP")(config, submodules, ffn_hidden_size=8)
    return _step(layer, (torch.randn(3, 2, 4),))


def mlp_swiglu():
    return mlp(gated=True)
