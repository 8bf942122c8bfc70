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
import dataclasses
import inspect
import os

import torch

from shardproof_recipes import RecipeError, framework_root, parallel


def _megatron(sequence_parallel=False):
    """Megatron's own parallel state on the simulated world, laid out as asked
    (tensor parallelism over the world by default). Returns
    (tensor_parallel module, layout) with layout.sp also set by `sequence_parallel`."""
    framework_root("MEGATRON_ROOT", os.path.join("megatron", "core"), "Megatron-LM")
    from megatron.core import parallel_state
    from megatron.core import tensor_parallel
    layout = parallel()
    if sequence_parallel and not layout.sp:
        layout = dataclasses.replace(layout, sp=True)
    parallel_state.initialize_model_parallel(
        tensor_model_parallel_size=layout.tp,
        context_parallel_size=layout.cp,
        expert_model_parallel_size=layout.ep,
        pipeline_model_parallel_size=layout.pp)
    # The RNG tracker Megatron's weight initialisers fork from.
    tensor_parallel.model_parallel_cuda_manual_seed(1234)
    return tensor_parallel, layout


def _component(module, name):
    if not hasattr(module, name):
        raise RecipeError(f"this Megatron tree has no {module.__name__}.{name}")
    return getattr(module, name)


def _accepts(callable_, name):
    """Whether this tree's `callable_` takes a parameter `name`."""
    return name in inspect.signature(callable_).parameters


def _config(layout):
    from megatron.core.model_parallel_config import ModelParallelConfig
    return ModelParallelConfig(tensor_model_parallel_size=layout.tp,
                               sequence_parallel=layout.sp and layout.tp > 1)


def _step(model, inputs, layout):
    """The entry's training step: a loss whose gradients depend on the values
    (a plain sum would make many of them constants), and, under sequence
    parallelism, the all-reduce over the tensor-parallel group of the
    gradients of parameters marked `sequence_parallel` (what Megatron's
    finalize_model_grads does for them; its DDP-wrapped version comes later)."""
    from megatron.core import parallel_state
    group = parallel_state.get_tensor_model_parallel_group()

    def finalize_grads():
        if not layout.sp or layout.tp == 1:
            return
        for p in model.parameters():
            if getattr(p, "sequence_parallel", False) and p.grad is not None:
                torch.distributed.all_reduce(p.grad, group=group)

    def loss(out):
        out = out[0] if isinstance(out, tuple) else out  # (output, bias) layers
        return (out * out).sum()

    return {"model": model, "inputs": inputs, "loss": loss,
            "finalize_grads": finalize_grads, "tensor_parallel_group": group}


def _tp_slice(x, layout, dim):
    """This rank's slice along `dim` of a tensor split over tensor parallelism."""
    return x.chunk(layout.tp, dim=dim)[layout.coordinate("tp")] if layout.tp > 1 else x


def _sequence_slice(x, layout):
    return _tp_slice(x, layout, 0) if layout.sp else x


def column_parallel_linear(sequence_parallel=False):
    tp, layout = _megatron(sequence_parallel)
    layer = _component(tp, "ColumnParallelLinear")(
        4, 8, config=_config(layout),
        init_method=torch.nn.init.normal_, bias=True, gather_output=False)
    x = torch.randn(4, 2, 4)  # [sequence, batch, hidden]
    return _step(layer, (_sequence_slice(x, layout),), layout)


def column_parallel_linear_sp():
    return column_parallel_linear(sequence_parallel=True)


def row_parallel_linear(sequence_parallel=False):
    tp, layout = _megatron(sequence_parallel)
    layer = _component(tp, "RowParallelLinear")(
        8, 4, config=_config(layout),
        init_method=torch.nn.init.normal_, bias=True, input_is_parallel=True,
        skip_bias_add=False)
    x = torch.randn(4, 2, 8)  # the full activation; this rank gets its hidden slice
    return _step(layer, (_tp_slice(x, layout, -1),), layout)


def row_parallel_linear_sp():
    return row_parallel_linear(sequence_parallel=True)


def vocab_parallel_embedding():
    tp, layout = _megatron()
    embedding = _component(tp, "VocabParallelEmbedding")(
        num_embeddings=8, embedding_dim=3, init_method=torch.nn.init.normal_,
        config=_config(dataclasses.replace(layout, sp=False)))
    return _step(embedding, (torch.tensor([[0, 5, 7], [3, 4, 1]]),),
                 dataclasses.replace(layout, sp=False))


def mlp(gated=False):
    tp, layout = _megatron()
    from megatron.core.transformer import mlp as mlp_module
    from megatron.core.transformer.transformer_config import TransformerConfig
    config = TransformerConfig(
        num_layers=1, hidden_size=4, ffn_hidden_size=8, num_attention_heads=4,
        tensor_model_parallel_size=layout.tp, add_bias_linear=True,
        gated_linear_unit=gated)
    submodules = _component(mlp_module, "MLPSubmodules")(
        linear_fc1=tp.ColumnParallelLinear, linear_fc2=tp.RowParallelLinear)
    mlp_class = _component(mlp_module, "MLP")
    # ffn_hidden_size became a constructor argument after 2024 (before, the
    # config's value was the only one).
    extra = {"ffn_hidden_size": 8} if _accepts(mlp_class, "ffn_hidden_size") else {}
    layer = mlp_class(config, submodules, **extra)
    return _step(layer, (torch.randn(3, 2, 4),), dataclasses.replace(layout, sp=False))


def mlp_swiglu():
    return mlp(gated=True)


def vocab_parallel_cross_entropy(sequence_parallel=False):
    """The GPT loss head: a ColumnParallelLinear output layer gives this
    rank's vocabulary shard of the logits, and the tree's
    tensor_parallel.vocab_parallel_cross_entropy turns them into per-token
    losses (max, predicted logit and normaliser all-reduced over the group;
    its own backward). Targets hit both vocabulary shards."""
    tp, layout = _megatron(sequence_parallel)
    cross_entropy = _component(tp, "vocab_parallel_cross_entropy")
    output_layer = _component(tp, "ColumnParallelLinear")(
        4, 8, config=_config(layout), init_method=torch.nn.init.normal_,
        bias=False, gather_output=False)

    class LossHead(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.output_layer = output_layer

        def forward(self, hidden, target):
            logits, _ = self.output_layer(hidden)
            return cross_entropy(logits, target)

    hidden = torch.randn(4, 2, 4)  # [sequence, batch, hidden]
    target = torch.tensor([[0, 7], [5, 2], [3, 4], [6, 1]])  # [sequence, batch]
    return _step(LossHead(), (_sequence_slice(hidden, layout), target), layout)


def vocab_parallel_cross_entropy_sp():
    return vocab_parallel_cross_entropy(sequence_parallel=True)


# ---- Data parallelism: Megatron's DistributedDataParallel and finalize_model_grads ----
# The component is wrapped in the tree's DistributedDataParallel (contiguous
# grad buffers, the grad-accumulator hooks that add .grad into .main_grad, no
# overlap, no distributed optimizer) and the entry's finalize_grads is the
# tree's finalize_model_grads. Every data-parallel rank takes its own slice of
# the global batch, and the loss is a mean over the batch, so the DP-averaged
# gradient is the reference's gradient of the whole batch.


def _data_parallel_slice(x, dim):
    """This data-parallel rank's slice of the global batch along `dim`, by
    Megatron's own data-parallel rank and size (under expert parallelism the
    expert-parallel ranks are data-parallel ranks of the dense layers)."""
    from megatron.core import parallel_state
    size = parallel_state.get_data_parallel_world_size()
    if size == 1:
        return x
    return x.chunk(size, dim=dim)[parallel_state.get_data_parallel_rank()]


def _ddp_step(step, config, batch_dim=1):
    """`step` (an entry dict from _step) with its model wrapped in Megatron's
    DistributedDataParallel, its input cut to this rank's slice of the batch,
    a loss that is the mean over the batch of each sample's (out * out).sum(),
    and finalize_grads = megatron.core.distributed.finalize_model_grads.

    Megatron's DDP hooks move each .grad into param.main_grad (a view of the
    flat grad buffer that finalize_model_grads all-reduces, scaled by
    1/dp) and set .grad to None. What the optimizer reads is main_grad:
    Megatron's FP32Optimizer.prepare_grads sets `param.grad = param.main_grad`
    before the step; finalize_grads ends with the same assignment, so the
    gradients checked are the ones the optimizer would apply."""
    from megatron.core import distributed
    ddp_class = _component(distributed, "DistributedDataParallel")
    ddp_config = _component(distributed, "DistributedDataParallelConfig")(
        overlap_grad_reduce=False, use_distributed_optimizer=False)
    finalize_model_grads = _component(distributed, "finalize_model_grads")
    model = ddp_class(config, ddp_config, step["model"])
    model.zero_grad_buffer()  # what the training loop does before each step
    inputs = tuple(_data_parallel_slice(x, batch_dim) for x in step["inputs"])

    def loss(out):
        out = out[0] if isinstance(out, tuple) else out  # (output, bias) layers
        return (out * out).sum() / out.shape[batch_dim]

    def finalize_grads():
        finalize_model_grads([model])
        for p in model.parameters():
            if getattr(p, "main_grad", None) is not None:
                p.grad = p.main_grad  # FP32Optimizer.prepare_grads

    return dict(step, model=model, inputs=inputs, loss=loss,
                finalize_grads=finalize_grads)


def mlp_ddp():
    step = mlp()
    return _ddp_step(step, step["model"].config)


def _transformer_config(layout, **fields):
    """A tiny TransformerConfig laid out as asked; fields this tree's config
    does not have are left out (the recipes ask only for defaults there)."""
    from megatron.core.transformer.transformer_config import TransformerConfig
    known = {f.name for f in dataclasses.fields(TransformerConfig)}
    values = dict(num_layers=1, hidden_size=4, ffn_hidden_size=8,
                  num_attention_heads=2, tensor_model_parallel_size=layout.tp,
                  sequence_parallel=layout.sp and layout.tp > 1,
                  add_bias_linear=True, attention_dropout=0.0, hidden_dropout=0.0,
                  masked_softmax_fusion=False, bias_dropout_fusion=False,
                  apply_rope_fusion=False, gradient_accumulation_fusion=False,
                  persist_layer_norm=False)
    values.update(fields)
    return TransformerConfig(**{k: v for k, v in values.items() if k in known})


def _local_layer_spec(**options):
    """The tree's TransformerLayer spec built from Megatron-core modules only
    (no Transformer Engine, no apex)."""
    from megatron.core.models.gpt import gpt_layer_specs
    make = _component(gpt_layer_specs, "get_gpt_layer_local_spec")
    unknown = [k for k in options if not _accepts(make, k)]
    if unknown:
        raise RecipeError(f"this Megatron tree's get_gpt_layer_local_spec has no "
                          f"option {', '.join(unknown)}")
    return make(**options)


def _build(spec, *args, **kwargs):
    from megatron.core.transformer.spec_utils import build_module
    return build_module(spec, *args, **kwargs)


def _hidden(layout, sequence=4, batch=2, hidden=4):
    """The activation [sequence, batch, hidden] given to a layer: this rank's
    sequence slice under sequence parallelism."""
    return _sequence_slice(torch.randn(sequence, batch, hidden), layout)


def self_attention(sequence_parallel=False):
    """SelfAttention from the tree's local layer spec: ColumnParallelLinear
    QKV, the pure-PyTorch DotProductAttention core (causal mask, softmax in
    PyTorch), RowParallelLinear output projection."""
    _, layout = _megatron(sequence_parallel)
    spec = _local_layer_spec().submodules.self_attention
    config = _transformer_config(layout)
    attention = _build(spec, config=config, layer_number=1)
    return _step(attention, (_hidden(layout), None), layout)


def self_attention_sp():
    return self_attention(sequence_parallel=True)


# ---- Mixture of experts: TopKRouter and MoELayer (SequentialMLP experts) ----
# Expert parallelism over `--ep`: on expert-parallel rank e, local expert i is
# global expert e * num_local + i, so each rank's parameter names are mapped
# to the reference's ("parameter_names"). The expert-parallel ranks are
# data-parallel ranks of the dense parts: each takes its slice of the batch.


def _moe_config(layout, dispatcher="alltoall", num_experts=4, topk=2):
    from megatron.core.transformer.transformer_config import TransformerConfig
    return TransformerConfig(
        num_layers=1, hidden_size=4, ffn_hidden_size=8, num_attention_heads=4,
        tensor_model_parallel_size=layout.tp, expert_model_parallel_size=layout.ep,
        sequence_parallel=layout.tp > 1, num_moe_experts=num_experts,
        moe_router_topk=topk, moe_token_dispatcher_type=dispatcher,
        moe_aux_loss_coeff=0.0, add_bias_linear=False)


def _expert_names(layer):
    """Maps this rank's `local_experts.i` to the reference's name of the same
    (global) expert, local_expert_indices[i]."""
    import re
    indices = list(layer.local_expert_indices)

    def rename(name):
        return re.sub(r"(local_experts\.)(\d+)",
                      lambda m: f"{m.group(1)}{indices[int(m.group(2))]}", name)
    return rename


def _moe_layer(layout, dispatcher):
    """MoELayer from the tree's local (no Transformer Engine) MoE spec; 2024
    trees have none (their spec module imports TE), so MoELayer is built from
    its MLP submodules, which picks SequentialMLP without grouped GEMM."""
    config = _moe_config(layout, dispatcher)
    try:
        from megatron.core.models.gpt.moe_module_specs import get_moe_module_spec
    except ImportError:
        from megatron.core.tensor_parallel import ColumnParallelLinear, RowParallelLinear
        from megatron.core.transformer.mlp import MLPSubmodules
        from megatron.core.transformer.moe.moe_layer import MoELayer
        return MoELayer(config, MLPSubmodules(linear_fc1=ColumnParallelLinear,
                                              linear_fc2=RowParallelLinear)), config
    from megatron.core.transformer.spec_utils import ModuleSpec, build_module
    spec = get_moe_module_spec(use_te=False, num_experts=config.num_moe_experts,
                               moe_grouped_gemm=False)
    layer = build_module(spec, config=config) if isinstance(spec, ModuleSpec) \
        else spec(config=config)
    return layer, config


def moe_router():
    """Megatron's TopKRouter on this rank's tokens: the gating linear, the
    score function and the top-k choice of experts."""
    _, layout = _megatron()
    from megatron.core.transformer.moe import router
    config = _moe_config(layout)
    router_class = _component(router, "TopKRouter")
    extra = {}
    if _accepts(router_class, "pg_collection"):  # after 2024: explicit process groups
        from megatron.core.transformer.moe.moe_utils import get_default_pg_collection
        extra["pg_collection"] = get_default_pg_collection()
    layer = router_class(config=config, **extra)
    x = torch.randn(3, 2, 4)  # [sequence, batch, hidden]
    step = _step(layer, (_data_parallel_slice(x, 1),), dataclasses.replace(layout, sp=False))
    return step


def moe_layer(dispatcher="alltoall"):
    """Megatron's MoELayer with the pure-PyTorch SequentialMLP experts and the
    `dispatcher` token dispatcher."""
    _, layout = _megatron()
    layer, config = _moe_layer(layout, dispatcher)
    x = torch.randn(3, 2, 4)  # [sequence, batch, hidden]
    step = _step(layer, (_data_parallel_slice(x, 1),), dataclasses.replace(layout, sp=False))
    step["parameter_names"] = _expert_names(layer)
    return step


def moe_layer_allgather():
    return moe_layer("allgather")


def transformer_layer(sequence_parallel=False):
    """TransformerLayer from the tree's local spec: layer norm, SelfAttention
    (as in self_attention), bias-dropout-add, layer norm, MLP."""
    _, layout = _megatron(sequence_parallel)
    config = _transformer_config(layout)
    layer = _build(_local_layer_spec(), config=config, layer_number=1)
    return _step(layer, (_hidden(layout, batch=1), None), layout)


def transformer_layer_sp():
    return transformer_layer(sequence_parallel=True)
