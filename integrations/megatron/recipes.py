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
import math
import os

import torch

from shardproof_recipes import (ComponentAbsent, RecipeError, asked, covering,
                                framework_root, option, options, parallel, variant)


def _megatron(sequence_parallel=False, expert_tensor_parallel=None):
    """Megatron's own parallel state on the simulated world, laid out as asked
    (tensor parallelism over the world by default), experts tensor-parallel
    over `expert_tensor_parallel` ranks (tp when None). Returns
    (tensor_parallel module, layout) with layout.sp also set by `sequence_parallel`."""
    framework_root("MEGATRON_ROOT", os.path.join("megatron", "core"), "Megatron-LM")
    from megatron.core import parallel_state
    from megatron.core import tensor_parallel
    layout = parallel()
    if sequence_parallel and not layout.sp:
        layout = dataclasses.replace(layout, sp=True)
    parallel_state.initialize_model_parallel(**_parallel_sizes(
        parallel_state.initialize_model_parallel, layout, expert_tensor_parallel))
    # The RNG tracker Megatron's weight initialisers fork from.
    tensor_parallel.model_parallel_cuda_manual_seed(1234)
    return tensor_parallel, layout


def _parallel_sizes(initialize, layout, expert_tensor_parallel=None):
    """initialize_model_parallel's size arguments for `layout`; an axis this
    tree cannot parallelise (2023 trees have no context or expert
    parallelism, 2024 trees no expert tensor parallelism of its own) is
    absent from it, not an error, when asked for."""
    sizes = {"tensor_model_parallel_size": layout.tp,
             "pipeline_model_parallel_size": layout.pp,
             "context_parallel_size": layout.cp,
             "expert_model_parallel_size": layout.ep}
    if expert_tensor_parallel not in (None, layout.tp):
        sizes["expert_tensor_parallel_size"] = expert_tensor_parallel
    missing = [name for name, size in sizes.items() if not _accepts(initialize, name)]
    for name in missing:
        if sizes.pop(name) > 1 or name == "expert_tensor_parallel_size":
            raise ComponentAbsent(f"this Megatron tree's initialize_model_parallel "
                                  f"has no {name}")
    return sizes


@dataclasses.dataclass(frozen=True)
class Sizes:
    """A component's global sizes for the layout the target asked for (the
    same in the single-device reference and on every rank): the smallest
    where each dimension a parallel axis shards holds at least two entries
    on every rank (one entry per rank would hide the order of what a rank
    holds), all kept divisible. Heads, the MLP's width and the vocabulary
    scale with tp; the sequence with tp (sequence parallelism) and cp (two
    chunks per rank); experts with ep. The batch takes a sample per
    data-parallel rank (dp, and ep: expert-parallel ranks are data-parallel
    ranks of the dense layers), two at least: each rank's tokens are at
    least two by the sequence already, and more tokens per rank make the
    MoE routers' proofs outgrow their time limit."""
    sequence: int
    batch: int
    heads: int
    head_dim: int
    vocab: int
    experts: int

    @property
    def hidden(self):
        return self.heads * self.head_dim

    @property
    def ffn(self):
        return 2 * self.hidden

    def moe(self, tp):
        """The sizes of an MoE layer alone, whose hidden width no axis shards:
        kept at 4 (a wider one multiplies the router's proofs), with one head
        per tensor-parallel rank as the config asks."""
        hidden = max(4, tp)
        return dataclasses.replace(self, heads=tp, head_dim=hidden // tp)

    def routed(self, layout, experts_per_rank):
        """An MoE layer whose own router chooses: every routing of the tokens
        is a path to prove (experts ** tokens of them at top-1), so one token
        per rank (the sequence one per tensor-parallel rank, the batch one
        per data-parallel rank), `experts_per_rank` experts per
        expert-parallel rank, and the hidden width 2 per head (one head per
        tensor-parallel rank): each path's proofs are of the experts'
        gradients, whose size grows with the width squared."""
        return dataclasses.replace(self, sequence=layout.tp, batch=layout.dp * layout.ep,
                                   experts=experts_per_rank * layout.ep,
                                   heads=layout.tp, head_dim=2)


PER_RANK = 2


def _sizes():
    layout = asked()
    context_chunks = 2 * layout.cp if layout.cp > 1 else 1
    return Sizes(sequence=max(4, PER_RANK * layout.tp * context_chunks),
                 batch=max(2, layout.dp * layout.ep), heads=PER_RANK * layout.tp,
                 head_dim=2, vocab=8 * layout.tp, experts=max(4, PER_RANK * layout.ep))


def _activation(sizes, width=None):
    """A global activation [sequence, batch, width (hidden)]."""
    return torch.randn(sizes.sequence, sizes.batch, width or sizes.hidden)


def _token_ids(shape, vocab, offset=0):
    """Token ids of `shape` spread over the whole vocabulary (every
    vocabulary-parallel shard gets some)."""
    count = 1
    for n in shape:
        count *= n
    return ((torch.arange(count) * 5 + 3 + offset) % vocab).reshape(*shape)


def _component(module, name):
    if not hasattr(module, name):
        raise ComponentAbsent(f"this Megatron tree has no {module.__name__}.{name}")
    return getattr(module, name)


def _accepts(callable_, name):
    """Whether this tree's `callable_` takes a parameter `name`."""
    return name in inspect.signature(callable_).parameters


def _tp_layer(tp, name, *args, layout, **kwargs):
    """The tree's tensor_parallel.`name` built for `layout`: from a
    ModelParallelConfig where the constructor takes one (late 2023 on), else
    with the 2023 keyword for sequence parallelism."""
    layer_class = _component(tp, name)
    sequence_parallel = layout.sp and layout.tp > 1
    if _accepts(layer_class, "config"):
        from megatron.core.model_parallel_config import ModelParallelConfig
        config = ModelParallelConfig(tensor_model_parallel_size=layout.tp,
                                     sequence_parallel=sequence_parallel)
        if hasattr(config, "async_tensor_model_parallel_allreduce"):
            # Megatron's training sets it on unless sequence parallelism is
            # (arguments.py); newer trees always overlap so.
            config.async_tensor_model_parallel_allreduce = not sequence_parallel
        kwargs["config"] = config
    elif _accepts(layer_class, "sequence_parallel_enabled"):
        kwargs["sequence_parallel_enabled"] = sequence_parallel
        if _accepts(layer_class, "async_tensor_model_parallel_allreduce"):
            # As Megatron's arguments.py set it: the two exclude each other.
            kwargs["async_tensor_model_parallel_allreduce"] = not sequence_parallel
    elif sequence_parallel:
        raise ComponentAbsent(f"this Megatron tree's {name} has no sequence parallelism")
    return layer_class(*args, **kwargs)


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
        out = _biased(out)
        return (out * out).sum()

    return {"model": model, "inputs": _activations(inputs), "loss": loss,
            "finalize_grads": finalize_grads, "tensor_parallel_group": group}


def _biased(out):
    """A layer's output as the layer after it reads it: (output, bias) layers
    (skip_bias_add) leave the bias to the next bias-dropout-add, which adds it,
    so its gradient is not a constant zero."""
    if not isinstance(out, tuple):
        return out
    if len(out) > 1 and isinstance(out[1], torch.Tensor):
        return out[0] + out[1]
    return out[0]


def _activations(inputs):
    """Float inputs are activations coming from the layers before, so they
    require grad, as inside a model (their gradients are checked where a
    rank gets them whole); token ids and masks are passed as they are. Each
    is a contiguous tensor of its own, as a data loader hands a rank its
    batch (a slice along the batch dim of [s, b, h] is not)."""
    return tuple(x.detach().contiguous().requires_grad_() if isinstance(x, torch.Tensor)
                 and x.is_floating_point() else x for x in inputs)


def _tp_slice(x, layout, dim):
    """This rank's slice along `dim` of a tensor split over tensor parallelism."""
    return x.chunk(layout.tp, dim=dim)[layout.coordinate("tp")] if layout.tp > 1 else x


def _sequence_slice(x, layout):
    return _tp_slice(x, layout, 0) if layout.sp else x


@options(bias=(1, 0), gather_output=(0, 1), frozen=(0, 1))
def column_parallel_linear(sequence_parallel=False):
    """ColumnParallelLinear; `frozen`: its weight does not require grad (a
    frozen backbone, LoRA), so the tree's frozen-weight linear function
    computes the input gradient."""
    tp, layout = _megatron(sequence_parallel)
    sizes = _sizes()
    layer = _tp_layer(
        tp, "ColumnParallelLinear", sizes.hidden, sizes.ffn, layout=layout,
        init_method=torch.nn.init.normal_, bias=bool(option("bias")),
        gather_output=bool(option("gather_output")))
    if option("frozen"):  # only the input and the bias get gradients
        layer.weight.requires_grad_(False)
    return _step(layer, (_sequence_slice(_activation(sizes), layout),), layout)


def column_parallel_linear_sp():
    return column_parallel_linear(sequence_parallel=True)


column_parallel_linear_frozen = variant(column_parallel_linear, frozen=1)


def column_parallel_linear_frozen_sp():
    return column_parallel_linear_frozen(sequence_parallel=True)


@options(bias=(1, 0), input_is_parallel=(1, 0), skip_bias_add=(0, 1))
def row_parallel_linear(sequence_parallel=False):
    """RowParallelLinear; its input is this rank's slice of the activation,
    or (input_is_parallel=0) the whole activation, which the layer scatters."""
    tp, layout = _megatron(sequence_parallel)
    sizes = _sizes()
    layer = _tp_layer(
        tp, "RowParallelLinear", sizes.ffn, sizes.hidden, layout=layout,
        init_method=torch.nn.init.normal_, bias=bool(option("bias")),
        input_is_parallel=bool(option("input_is_parallel")),
        skip_bias_add=bool(option("skip_bias_add")))
    x = _activation(sizes, sizes.ffn)  # the full activation
    return _step(layer, (_tp_slice(x, layout, -1) if option("input_is_parallel") else x,),
                 layout)


def row_parallel_linear_sp():
    return row_parallel_linear(sequence_parallel=True)


def vocab_parallel_embedding():
    tp, layout = _megatron()
    sizes = _sizes()
    embedding = _tp_layer(tp, "VocabParallelEmbedding", num_embeddings=sizes.vocab,
                          embedding_dim=sizes.hidden, init_method=torch.nn.init.normal_,
                          layout=dataclasses.replace(layout, sp=False))
    tokens = _token_ids((sizes.batch, sizes.sequence), sizes.vocab)
    return _step(embedding, (tokens,), dataclasses.replace(layout, sp=False))


@options(gated=(0, 1), bias=(1, 0))
def mlp():
    """Megatron's MLP (fc1 column-parallel, fc2 row-parallel); `gated`: a
    gated linear unit (SwiGLU), fc1's shards interleaving gate and up."""
    return _mlp(gated=bool(option("gated")), bias=bool(option("bias")))


def _mlp(gated, bias):
    tp, layout = _megatron()
    sizes = _sizes()
    from megatron.core.transformer import mlp as mlp_module
    from megatron.core.transformer.transformer_config import TransformerConfig
    config = TransformerConfig(
        num_layers=1, hidden_size=sizes.hidden, ffn_hidden_size=sizes.ffn,
        num_attention_heads=sizes.heads, tensor_model_parallel_size=layout.tp,
        add_bias_linear=bias, gated_linear_unit=gated,
        sequence_parallel=layout.sp and layout.tp > 1)
    submodules = _component(mlp_module, "MLPSubmodules")(
        linear_fc1=tp.ColumnParallelLinear, linear_fc2=tp.RowParallelLinear)
    mlp_class = _component(mlp_module, "MLP")
    # ffn_hidden_size became a constructor argument after 2024 (before, the
    # config's value was the only one).
    extra = {"ffn_hidden_size": sizes.ffn} if _accepts(mlp_class, "ffn_hidden_size") else {}
    layer = mlp_class(config, submodules, **extra)
    # Under sequence parallelism (--sp) the input is this rank's sequence slice.
    return _step(layer, (_sequence_slice(_activation(sizes), layout),), layout)


mlp_swiglu = variant(mlp, gated=1)


@options(label_smoothing=("off", "on"))
def vocab_parallel_cross_entropy(sequence_parallel=False):
    """The GPT loss head: a ColumnParallelLinear output layer gives this
    rank's vocabulary shard of the logits, and the tree's
    tensor_parallel.vocab_parallel_cross_entropy turns them into per-token
    losses (max, predicted logit and normaliser all-reduced over the group;
    its own backward). Targets hit both vocabulary shards. Label smoothing
    (0.1 when on) averages the log-probabilities over the whole vocabulary,
    every rank's shard."""
    tp, layout = _megatron(sequence_parallel)
    cross_entropy = _component(tp, "vocab_parallel_cross_entropy")
    smoothing = {}
    label_smoothing = 0.1 if option("label_smoothing") == "on" else 0.0
    if label_smoothing:
        if not _accepts(cross_entropy, "label_smoothing"):
            raise ComponentAbsent("this Megatron tree's vocab_parallel_cross_entropy has no "
                                  "label_smoothing")
        smoothing["label_smoothing"] = label_smoothing
    sizes = _sizes()
    output_layer = _tp_layer(tp, "ColumnParallelLinear", sizes.hidden, sizes.vocab,
                             layout=layout,
                             init_method=torch.nn.init.normal_, bias=False,
                             gather_output=False)

    class LossHead(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.output_layer = output_layer

        def forward(self, hidden, target):
            logits, _ = self.output_layer(hidden)
            return cross_entropy(logits, target, **smoothing)

    target = _token_ids((sizes.sequence, sizes.batch), sizes.vocab)
    return _step(LossHead(), (_sequence_slice(_activation(sizes), layout), target), layout)


def vocab_parallel_cross_entropy_sp():
    return vocab_parallel_cross_entropy(sequence_parallel=True)


vocab_parallel_cross_entropy_label_smoothing = variant(vocab_parallel_cross_entropy,
                                                      label_smoothing="on")


# ---- The tensor-parallel mappings themselves (mappings.py) ----


def _noncontiguous(t):
    """`t`'s values in a tensor that is not contiguous (every other element of
    a wider one), as a transposed or sliced activation reaches a mapping."""
    return torch.stack([t, t], dim=-1)[..., 0]


class TensorParallelMappings(torch.nn.Module):
    """Every mapping of the tree's tensor_parallel/mappings.py that moves
    activations between the replicated, hidden-sharded and sequence-sharded
    layouts, in one forward, with a column shard W1 [ffn/tp, hidden] and a row shard
    W2 [hidden, ffn/tp] between them so each mapping's forward and backward carries
    values that depend on the parameters. `contiguous=False` hands every
    mapping a non-contiguous tensor of the same values."""

    MAPPINGS = ("copy_to_tensor_model_parallel_region", "gather_from_tensor_model_parallel_region",
                "scatter_to_tensor_model_parallel_region",
                "reduce_from_tensor_model_parallel_region", "gather_from_sequence_parallel_region",
                "scatter_to_sequence_parallel_region",
                "reduce_scatter_to_sequence_parallel_region")

    def __init__(self, tp, layout, sizes, contiguous):
        super().__init__()
        # The functions are read from mappings.py itself: 2023 trees do not
        # export all of them from the package.
        from megatron.core.tensor_parallel import mappings
        for name in self.MAPPINGS:
            _component(mappings, name)
        self.tp, self.sequence_parallel = mappings, layout.sp and layout.tp > 1
        self.prepare = (lambda t: t) if contiguous else _noncontiguous
        self.w1 = torch.nn.Parameter(torch.empty(sizes.ffn // layout.tp, sizes.hidden))
        self.w2 = torch.nn.Parameter(torch.empty(sizes.hidden, sizes.ffn // layout.tp))
        for weight, dim in ((self.w1, 0), (self.w2, 1)):
            torch.nn.init.normal_(weight)
            tp.set_tensor_model_parallel_attributes(weight, True, dim, 1)

    def forward(self, x):  # [s, b, hidden]: this rank's sequence slice under sp
        tp, prepare = self.tp, self.prepare
        F = torch.nn.functional
        if self.sequence_parallel:
            whole = tp.gather_from_sequence_parallel_region(prepare(x))
        else:
            whole = tp.copy_to_tensor_model_parallel_region(prepare(x))
        column = F.linear(whole, self.w1)  # [s, b, ffn/tp]
        gathered = tp.gather_from_tensor_model_parallel_region(prepare(column))
        hidden = tp.scatter_to_tensor_model_parallel_region(prepare(gathered * gathered))
        partial = F.linear(hidden, self.w2)  # [s, b, hidden], a partial sum
        if self.sequence_parallel:
            out = tp.reduce_scatter_to_sequence_parallel_region(prepare(partial))
            # Gathered for replicated use (its gradient is whole on every
            # rank, not a partial sum), then scattered back.
            whole_out = tp.gather_from_sequence_parallel_region(
                prepare(out), tensor_parallel_output_grad=False)
            return out + tp.scatter_to_sequence_parallel_region(prepare(whole_out * whole_out))
        out = tp.reduce_from_tensor_model_parallel_region(prepare(partial))
        return out + out * out  # the same function of the parameters as above


@options(contiguous=(1, 0))
def tp_mappings(sequence_parallel=False):
    tp, layout = _megatron(sequence_parallel)
    sizes = _sizes()
    model = TensorParallelMappings(tp, layout, sizes, bool(option("contiguous")))
    return _step(model, (_sequence_slice(_activation(sizes), layout),), layout)


def tp_mappings_sp():
    return tp_mappings(sequence_parallel=True)


tp_mappings_noncontiguous = variant(tp_mappings, contiguous=0)


def tp_mappings_noncontiguous_sp():
    return tp_mappings_noncontiguous(sequence_parallel=True)


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


def _ddp_step(step, config, batch_dim=1, average_in_collective=False, per_token_loss=False,
              distributed_optimizer=False):
    """`step` (an entry dict from _step) with its model wrapped in Megatron's
    DistributedDataParallel, its input cut to this rank's slice of the batch,
    a loss that is the mean over the batch of each sample's (out * out).sum(),
    and finalize_grads = megatron.core.distributed.finalize_model_grads.

    Megatron's DDP hooks move each .grad into param.main_grad (a view of the
    flat grad buffer that finalize_model_grads all-reduces, scaled by
    1/dp) and set .grad to None. What the optimizer reads is main_grad:
    Megatron's FP32Optimizer.prepare_grads sets `param.grad = param.main_grad`
    before the step; finalize_grads ends with the same assignment, so the
    gradients checked are the ones the optimizer would apply.

    `average_in_collective` picks Megatron's other way to average over DP:
    an AVG all-reduce instead of scaling by 1/dp before a SUM.

    `per_token_loss` is Megatron's calculate_per_token_loss: the loss is the
    sum over this rank's tokens, DDP does not scale, and finalize_model_grads
    divides every gradient by the global token count (this rank's tokens,
    summed over the data- and context-parallel ranks by the tree itself).

    `distributed_optimizer`: the grad buffers laid out for Megatron's
    DistributedOptimizer, which finalize_model_grads then reduce-scatters."""
    from megatron.core import distributed
    ddp_class = _component(distributed, "DistributedDataParallel")
    options = dict(overlap_grad_reduce=False,
                   use_distributed_optimizer=bool(distributed_optimizer))
    if average_in_collective:
        options["average_in_collective"] = True
    finalize_model_grads = _component(distributed, "finalize_model_grads")
    from megatron.core import parallel_state
    if per_token_loss:
        if not _accepts(finalize_model_grads, "num_tokens") or \
                not hasattr(config, "calculate_per_token_loss"):
            raise ComponentAbsent("this Megatron tree has no calculate_per_token_loss")
        config.calculate_per_token_loss = True
    args, kwargs = _ddp_arguments(distributed, ddp_class, config, step["model"], options)
    model = ddp_class(*args, **kwargs, **_ddp_groups(ddp_class))
    _zero_grad_buffer(model)
    inputs = _activations(_data_parallel_slice(x, batch_dim) for x in step["inputs"])

    tokens = []  # this rank's token count, for per_token_loss

    def loss(out):
        out = _biased(out)
        if per_token_loss:
            tokens.append(_tokens_of(out, batch_dim, config.sequence_parallel))
            return (out * out).sum()
        return (out * out).sum() / out.shape[batch_dim]

    def finalize_grads():
        if per_token_loss:
            finalize_model_grads([model], num_tokens=torch.tensor(float(sum(tokens))))
        else:
            finalize_model_grads([model])
        for p in model.parameters():
            if getattr(p, "main_grad", None) is not None:
                p.grad = p.main_grad  # FP32Optimizer.prepare_grads

    return dict(step, model=model, inputs=inputs, loss=loss,
                finalize_grads=finalize_grads,
                data_parallel_group=parallel_state.get_data_parallel_group())


def _tokens_of(out, batch_dim, sequence_parallel):
    """The tokens the loss of this rank's output `out` [sequence, batch, ...]
    covers as Megatron counts them: the whole sequence of the data-parallel
    rank's samples (the loss follows the sequence-parallel gather), the
    rank's own chunk under context parallelism."""
    from megatron.core import parallel_state
    tp = parallel_state.get_tensor_model_parallel_world_size()
    gathered = tp if sequence_parallel else 1
    return out.shape[1 - batch_dim] * gathered * out.shape[batch_dim]


def _ddp_groups(ddp_class):
    """The process groups DistributedDataParallel takes as arguments in 2024
    trees (data-parallel with context parallelism, expert data-parallel);
    none in the trees that read them from parallel_state."""
    from megatron.core import parallel_state
    groups = {}
    if _accepts(ddp_class, "data_parallel_group"):
        groups["data_parallel_group"] = parallel_state.get_data_parallel_group(
            **({"with_context_parallel": True} if _accepts(
                parallel_state.get_data_parallel_group, "with_context_parallel") else {}))
    if _accepts(ddp_class, "expert_data_parallel_group"):
        groups["expert_data_parallel_group"] = \
            parallel_state.get_data_modulo_expert_parallel_group()
    return groups


def _zero_grad_buffer(model):
    """What the training loop does before each step (2023 trees ask whether
    to zero the buffer itself: yes without the distributed optimizer)."""
    model.zero_grad_buffer(**({"zero_buffer": True} if _accepts(
        model.zero_grad_buffer, "zero_buffer") else {}))


def _ddp_arguments(distributed, ddp_class, config, module, options):
    """DistributedDataParallel's (arguments, keyword arguments): (config, DDP
    config, module), or in 2023 trees (config, module) with the options as
    keyword arguments of the constructor, gradients kept in fp32."""
    if hasattr(distributed, "DistributedDataParallelConfig"):
        ddp_config_class = distributed.DistributedDataParallelConfig
        missing = [k for k in options if not _accepts(ddp_config_class, k)]
        if missing:
            raise ComponentAbsent(f"this Megatron tree's DistributedDataParallelConfig has "
                                  f"no {missing[0]}")
        return (config, ddp_config_class(**options), module), {}
    missing = [k for k in options if not _accepts(ddp_class, k)]
    if missing:
        raise ComponentAbsent(f"this Megatron tree's DistributedDataParallel has no {missing[0]}")
    return (config, module), dict(options, accumulate_allreduce_grads_in_fp32=True)


@options(gated=(0, 1), average_in_collective=(0, 1), per_token_loss=(0, 1))
def mlp_ddp():
    """mlp under Megatron's DDP and finalize_model_grads; averaging over the
    data-parallel group by scaling before a SUM, or (average_in_collective)
    by an AVG all-reduce, or (per_token_loss) dividing by the global token
    count."""
    step = _mlp(gated=bool(option("gated")), bias=True)
    return _ddp_step(step, step["model"].config,
                     average_in_collective=bool(option("average_in_collective")),
                     per_token_loss=bool(option("per_token_loss")))


mlp_ddp_avg = variant(mlp_ddp, average_in_collective=1)


# ---- The optimizer: gradient norm, clipping and the step ----


@options(optimizer=("adam", "sgd"), clip=(1, 0), distributed_optimizer=(0, 1))
def mlp_optimizer():
    """mlp_ddp trained one step by the tree's own optimizer, built by
    get_megatron_optimizer as training does (fp32, SGD or Adam; Megatron's
    DistributedOptimizer when `distributed_optimizer`): after
    finalize_model_grads, the gradient norm it computes for clipping (over
    the gradients that are not tensor-parallel duplicates, summed over the
    model-parallel group), clipping at 1.0 (`clip`), and the step, whose
    updated parameters (all-gathered from the distributed optimizer's
    shards by the tree) are checked against the reference's."""
    distributed = bool(option("distributed_optimizer"))
    step = _mlp(gated=False, bias=True)
    step = _ddp_step(step, step["model"].config, distributed_optimizer=distributed)
    if distributed:
        step = dict(step, finalize_grads=_gathering_grad_shards(step))
    return _optimizer_step(step, option("optimizer"), clip=1.0 if option("clip") else 0.0,
                           distributed_optimizer=distributed)


def _gathering_grad_shards(step):
    """`step`'s finalize_grads, then each bucket's reduce-scattered gradient
    shards gathered over the distributed optimizer's group, so `.grad` is
    whole where it is checked: after finalize_model_grads a rank's grad
    buffer holds the reduced gradient only in its own shard of each bucket,
    the part its optimizer reads (the others are left as they were). The
    optimizer still reads its shard alone."""
    finalize = step["finalize_grads"]
    buckets = _grad_buckets(step["model"])

    def finalize_grads():
        finalize()
        for grad_data, group in buckets:
            size = torch.distributed.get_world_size(group=group)
            shard = grad_data.chunk(size)[torch.distributed.get_rank(group=group)].clone()
            torch.distributed.all_gather_into_tensor(grad_data, shard, group=group)
    return finalize_grads


def _grad_buckets(model):
    """Each gradient bucket of the tree's DDP with the group the distributed
    optimizer reduce-scatters it over, as (gradients, group): bucket groups
    over the distributed-optimizer instance (over the data-parallel group
    before instances, 2024-08 to 2025), buffers' buckets
    over the data-parallel group (2024-03 on: `grad_data`), or, in 2023 trees,
    the grad buffers' buckets (`data`)."""
    pairs = []
    for group in [*getattr(model, "bucket_groups", []),
                  *getattr(model, "expert_parallel_bucket_groups", [])]:
        process_group = getattr(group, "intra_distributed_optimizer_instance_group",
                                None) or group.data_parallel_group  # before 2025
        pairs += [(bucket.grad_data, process_group) for bucket in group.buckets]
    if pairs:
        return pairs
    def listed(name):  # `buffers` is also nn.Module's method
        value = getattr(model, name, [])
        return list(value.values() if isinstance(value, dict) else value) \
            if isinstance(value, (list, tuple, dict)) else []
    buffers = listed("buffers") + listed("expert_parallel_buffers") + listed("grad_buffers")
    for buffer in buffers:
        for bucket in buffer.buckets:
            data = getattr(bucket, "grad_data", None)
            pairs.append((bucket.data if data is None else data, bucket.data_parallel_group))
    if not pairs:
        raise RecipeError("this Megatron tree's DistributedDataParallel has neither bucket "
                          "groups nor grad buffers: the distributed optimizer's gradient "
                          "shards cannot be gathered")
    return pairs


def mlp_optimizer_norm_with_duplicates():
    """The twin: mlp_optimizer with the norm counting every gradient on every
    tensor-parallel rank (the tree's param_is_not_tensor_parallel_duplicate
    answering yes for all, as a norm that forgets the replicated biases are
    copies does): the replicated fc2 bias is counted tp times, so the norm,
    the clipping and every stepped parameter are refuted (SP006)."""
    step = mlp_optimizer()
    from megatron.core import tensor_parallel
    tensor_parallel.param_is_not_tensor_parallel_duplicate = lambda *args, **kwargs: True
    return step


def _fused_multi_tensor_ops():
    """Megatron computes the norm and scales gradients with Transformer
    Engine's (or apex's) multi-tensor kernels, as a training install has
    them; without either, its fallback reads the norm as a Python float.
    The recipe gives the optimizer modules shardproof's models of those
    kernels (models/python/shardproof_accelerators.py)."""
    import importlib
    import shardproof_accelerators
    modules = []
    for name in ("clip_grads", "optimizer", "distrib_optimizer"):
        try:
            modules.append(importlib.import_module(f"megatron.core.optimizer.{name}"))
        except ImportError:
            pass
    shardproof_accelerators.install_multi_tensor_ops(*modules)


def _optimizer_step(step, kind, clip, distributed_optimizer=False):
    """`step` (an entry dict from _ddp_step) with grad_norm and step from the
    tree's get_megatron_optimizer: the norm the optimizer computes (and
    clips by when `clip` > 0), then its step with the gradients ready."""
    from megatron.core import optimizer as optimizer_module
    _fused_multi_tensor_ops()
    config_class = _component(optimizer_module, "OptimizerConfig")
    fields = dict(optimizer=kind, lr=0.5, weight_decay=0.0, clip_grad=clip,
                  use_distributed_optimizer=distributed_optimizer)
    missing = [k for k in fields if not _accepts(config_class, k)]
    if missing:
        raise ComponentAbsent(f"this Megatron tree's OptimizerConfig has no {missing[0]}")
    config = config_class(**fields)
    optimizer = _component(optimizer_module, "get_megatron_optimizer")(config, [step["model"]])
    for name in ("prepare_grads", "step_with_ready_grads"):
        if not hasattr(optimizer, name):
            raise ComponentAbsent(f"this Megatron tree's optimizer has no {name}")

    def grad_norm():
        optimizer.prepare_grads()
        if clip > 0:
            return optimizer.clip_grad_norm(clip)
        return optimizer.get_grad_norm()

    return dict(step, grad_norm=grad_norm, step=optimizer.step_with_ready_grads)


def mlp_dp():
    """mlp_ddp with pure data parallelism (tp=1, dp=world) when run as a plain
    entry (`recipes.py::mlp_dp --world 2`), where the default layout would be
    tensor parallelism over the world; with `--tp/--dp` it is mlp_ddp."""
    if os.environ.get("SHARDPROOF_PARALLEL"):
        return mlp_ddp()
    os.environ["SHARDPROOF_PARALLEL"] = f"dp={torch.distributed.get_world_size()}"
    try:
        return mlp_ddp()
    finally:
        del os.environ["SHARDPROOF_PARALLEL"]


def _transformer_config(layout, **fields):
    """A TransformerConfig of _sizes() laid out as asked; fields this tree's
    config does not have are left out (the recipes ask only for defaults
    there)."""
    from megatron.core.transformer.transformer_config import TransformerConfig
    known = {f.name for f in dataclasses.fields(TransformerConfig)}
    sizes = _sizes()
    values = dict(num_layers=1, hidden_size=sizes.hidden, ffn_hidden_size=sizes.ffn,
                  num_attention_heads=sizes.heads, tensor_model_parallel_size=layout.tp,
                  context_parallel_size=layout.cp, expert_model_parallel_size=layout.ep,
                  sequence_parallel=layout.sp and layout.tp > 1,
                  add_bias_linear=True, attention_dropout=0.0, hidden_dropout=0.0,
                  masked_softmax_fusion=False, bias_dropout_fusion=False,
                  apply_rope_fusion=False, gradient_accumulation_fusion=False,
                  persist_layer_norm=False)
    missing = [k for k, v in fields.items() if k not in known and v and v != values.get(k)]
    if missing:
        raise ComponentAbsent(f"this Megatron tree's TransformerConfig has no {missing[0]}")
    values.update(fields)
    return TransformerConfig(**{k: v for k, v in values.items() if k in known})


def _transformer_engine_wrappers():
    """Before late 2024, megatron/core/transformer/attention.py (and the GPT
    layer specs, TransformerBlock) imported the Transformer Engine wrappers
    in transformer/custom_layers/transformer_engine.py, which imports
    transformer_engine unguarded and reads its installed version: such a tree
    cannot import SelfAttention without TE. Where that import fails, the
    wrapper module is replaced by one that gives the values the tree itself
    uses when TE lacks them (SplitAlongDim and get_cpu_offload_context are
    None: QKV is split with torch.split) and whose TE classes refuse to be
    built, so a path that needs TE stops with a RecipeError naming it.
    Newer trees guard the import themselves; nothing is replaced there."""
    import importlib
    import sys
    import types
    name = "megatron.core.transformer.custom_layers.transformer_engine"
    root = framework_root("MEGATRON_ROOT", os.path.join("megatron", "core"))
    path = os.path.join(root, *name.split(".")) + ".py"
    if not os.path.exists(path) or getattr(sys.modules.get(name), "_shardproof_stand_in", 0):
        return
    imported = None
    try:
        imported = importlib.import_module(name)
        if not _is_opaque(sys.modules.get("transformer_engine")):
            return
    except Exception:  # no TE here: ImportError, or its version unreadable
        pass
    # No TE: an unguarded `import transformer_engine` only made it opaque
    # (2023 trees then fail at TE's version() once a TE class is built).
    sys.modules.pop(name, None)
    wrappers = types.ModuleType(name)
    wrappers.__file__ = path
    wrappers._shardproof_stand_in = True
    wrappers.SplitAlongDim = None
    wrappers.get_cpu_offload_context = None

    def needs_te(attr):
        if attr.startswith("__"):
            raise AttributeError(attr)

        def refuse(*args, **kwargs):
            raise RecipeError(f"this Megatron tree's {attr} (from {path}) is "
                              "Transformer Engine's, which is not modelled")
        return type(attr, (), {"__new__": refuse, "__init__": refuse}) \
            if attr[:1].isupper() else refuse

    class TENorm:
        """TE's LayerNorm computes a layer norm and marks its weight and bias
        `sequence_parallel` as Megatron's FusedLayerNorm does: the tree's
        own FusedLayerNorm stands for it (with apex modelled, see
        _apex_layer_norm_model). A class, as the tree's build_module
        returns a function spec uncalled."""

        def __new__(cls, config, hidden_size, eps=1e-5):
            if getattr(config, "normalization", "LayerNorm") != "LayerNorm":
                needs_te("TENorm")()
            from megatron.core.fusions.fused_layer_norm import FusedLayerNorm
            return FusedLayerNorm(config=config, hidden_size=hidden_size, eps=eps)

    wrappers.TENorm = TENorm
    if "megatron.core.fusions.fused_layer_norm" not in sys.modules:
        import shardproof_accelerators  # what TENorm stands on
        shardproof_accelerators.install_apex_layer_norm()
    wrappers.__getattr__ = needs_te
    sys.modules[name] = wrappers
    if imported is not None:
        _rebind(imported, wrappers)


def _rebind(old, new):
    """Modules of the tree that imported names from `old` (TransformerBlock's
    `from ...transformer_engine import TENorm`) get `new`'s instead."""
    import sys
    names = [n for n, v in vars(old).items()  # defined there, not imported by it
             if not n.startswith("__") and getattr(v, "__module__", None) == old.__name__]
    for module in list(sys.modules.values()):
        if module is old or not getattr(module, "__name__", "").startswith("megatron."):
            continue
        for attr, value in list(vars(module).items()):
            if attr in names and value is vars(old)[attr]:
                setattr(module, attr, getattr(new, attr))


def _is_opaque(module):
    """Whether `module` is one the import policy made opaque (not installed)."""
    import import_policy
    return isinstance(module, import_policy._OpaqueModule)


def _apex_layer_norm_model(sequence_parallel):
    """Megatron's local layer spec normalises with FusedLayerNorm, which
    calls apex's fused kernel. Where the tree has no PyTorch path for it (2024
    trees) or refuses that path under sequence parallelism (newer trees'
    WrappedTorchNorm), apex's FusedLayerNormAffineFunction is modelled by what
    it computes, a layer norm over the trailing dims, installed before the
    tree is imported. What is checked is then the tree's own FusedLayerNorm
    module: its sequence_parallel marks on weight and bias, and the gradient
    reduction they ask for. The kernel is not checked here, and nothing else
    of apex exists (its other modules stay absent, as on a machine without
    apex). Where the tree's PyTorch layer norm serves, nothing is installed."""
    root = framework_root("MEGATRON_ROOT", os.path.join("megatron", "core"))
    transformer = os.path.join(root, "megatron", "core", "transformer")
    has_torch_norm = any(os.path.exists(os.path.join(transformer, f))
                         for f in ("torch_norm.py", "torch_layer_norm.py"))
    if has_torch_norm and not sequence_parallel:
        return
    import shardproof_accelerators
    shardproof_accelerators.install_apex_layer_norm()


def _local_layer_spec(**options):
    """The tree's TransformerLayer spec built from Megatron-core modules only
    (no Transformer Engine, no apex)."""
    _transformer_engine_wrappers()
    from megatron.core.models.gpt import gpt_layer_specs
    make = _component(gpt_layer_specs, "get_gpt_layer_local_spec")
    unknown = [k for k, v in options.items() if v and not _accepts(make, k)]
    if unknown:
        raise ComponentAbsent(f"this Megatron tree's get_gpt_layer_local_spec has no "
                              f"option {', '.join(unknown)}")
    return make(**{k: v for k, v in options.items() if v or _accepts(make, k)})


def _build(spec, *args, **kwargs):
    from megatron.core.transformer.spec_utils import build_module
    return _without_apex(build_module, spec, *args, **kwargs)


def _without_apex(make, *args, **kwargs):
    """make(...), the tree's own refusals of its local layer norms on this
    machine turned into a RecipeError: FusedLayerNorm without apex (2024
    trees have no PyTorch path), the PyTorch fallback under sequence
    parallelism (newer trees)."""
    try:
        return make(*args, **kwargs)
    except (ValueError, AssertionError) as e:
        text = str(e)
        if "Apex must" in text or "not supported by torch LayerNorm" in text:
            raise RecipeError(f"this Megatron tree's local layer norm cannot be "
                              f"built without apex here: {text}") from e
        raise


def _hidden(layout, batch=None):
    """The activation [sequence, batch, hidden] of _sizes() given to a layer:
    this rank's sequence slice under sequence parallelism."""
    sizes = _sizes()
    if batch is not None:
        sizes = dataclasses.replace(sizes, batch=batch)
    return _sequence_slice(_activation(sizes), layout)


# Attention options: key-value groups ("heads": one per head, no GQA; 1: a
# single group, fewer groups than tensor-parallel ranks; "tp": a group per
# rank), layer norms of the queries and keys, biases of the linear layers.
ATTENTION_OPTIONS = dict(kv_groups=("heads", 1, "tp"), qk_layernorm=(0, 1))


def _attention_fields():
    """TransformerConfig fields of the attention options asked for. The model
    is the asked layout's in the reference too: "tp" groups are the asked
    tensor-parallel degree's, not the running world's."""
    groups = {"heads": None, "tp": asked().tp}.get(option("kv_groups"), option("kv_groups"))
    fields = {} if groups is None else {"num_query_groups": groups}
    if option("qk_layernorm", 0):
        fields["qk_layernorm"] = True
    return fields


@options(**ATTENTION_OPTIONS, bias=(1, 0))
def self_attention(sequence_parallel=False):
    """SelfAttention from the tree's local layer spec: ColumnParallelLinear
    QKV, the pure-PyTorch DotProductAttention core (causal mask, softmax in
    PyTorch), RowParallelLinear output projection."""
    if option("qk_layernorm"):
        _apex_layer_norm_model(sequence_parallel or parallel().sp)
    _, layout = _megatron(sequence_parallel)
    spec = _local_layer_spec(qk_layernorm=bool(option("qk_layernorm"))) \
        .submodules.self_attention
    config = _transformer_config(layout, add_bias_linear=bool(option("bias")),
                                 **_attention_fields())
    attention = _build(spec, config=config, layer_number=1)
    hidden = _hidden(layout)
    return _finalized_as_trained(_step(attention, (hidden, None), layout), config)


def _finalized_as_trained(step, config):
    """`step`, its gradients finalized by the tree's own finalize_model_grads
    (under its DDP) where an option needs more than _step's reduction of
    sequence-parallel gradients: the q/k layer norms' weights see only this
    rank's heads, and it is finalize_model_grads that sums their gradients
    over tensor parallelism (a tree that does not is a finding)."""
    return _ddp_step(step, config) if option("qk_layernorm", 0) else step


def self_attention_sp():
    return self_attention(sequence_parallel=True)


# ---- Mixture of experts: TopKRouter and MoELayer (SequentialMLP experts) ----
# Expert parallelism over `--ep`: on expert-parallel rank e, local expert i is
# global expert e * num_local + i, so each rank's parameter names are mapped
# to the reference's ("parameter_names"). The expert-parallel ranks are
# data-parallel ranks of the dense parts: each takes its slice of the batch,
# and the layer is trained under Megatron's DDP (_moe_step).


def _moe_config(layout, dispatcher="alltoall", num_experts=None, topk=2, sizes=None,
                **extra):
    """The MoE layers' TransformerConfig at `sizes` (_sizes().moe by
    default); options a 2023 tree's config does not have yet (top-k,
    dispatchers: it routes top-1) are left out."""
    from megatron.core.transformer.transformer_config import TransformerConfig
    known = {f.name for f in dataclasses.fields(TransformerConfig)}
    if "num_moe_experts" not in known:
        raise ComponentAbsent("this Megatron tree's TransformerConfig has no num_moe_experts")
    sizes = sizes or _sizes().moe(layout.tp)
    values = dict(
        num_layers=1, hidden_size=sizes.hidden, ffn_hidden_size=sizes.ffn,
        num_attention_heads=sizes.heads, tensor_model_parallel_size=layout.tp,
        expert_model_parallel_size=layout.ep, sequence_parallel=layout.tp > 1,
        num_moe_experts=num_experts or sizes.experts,
        moe_router_topk=topk, moe_token_dispatcher_type=dispatcher,
        moe_aux_loss_coeff=0.0, add_bias_linear=False)
    if option("per_token_loss", 0):  # the router reads it when built
        values["calculate_per_token_loss"] = True
    missing = [k for k, v in extra.items() if k not in known and v]
    if missing:
        raise ComponentAbsent(f"this Megatron tree's TransformerConfig has no {missing[0]}")
    values.update(extra)
    return TransformerConfig(**{k: v for k, v in values.items() if k in known})


def _moe_tokens(x, layout):
    """This rank's tokens of the global batch `x` [sequence, batch, ...]: its
    data-parallel slice of the batch and, as MoE with tensor parallelism
    needs sequence parallelism, its tensor-parallel slice of the sequence."""
    return _tp_slice(_data_parallel_slice(x, 1), layout, 0)


def _moe_step(layout, build, sequence_parallel=None, sizes=None):
    """The MoE entry: the layer `build()` returns (with its config) wrapped in
    Megatron's DDP as in training (dense parameters averaged over the
    data-parallel group, which holds the expert-parallel ranks, expert
    parameters over the expert-data-parallel group, by finalize_model_grads),
    this rank's tokens of a [sequence, batch, hidden] batch of _sizes(), a
    batch-mean loss, expert names mapped."""
    # The batch comes first: symbolic inputs are matched to the reference's
    # by creation order, and a rank builds fewer experts than the reference.
    x = _activation(sizes or _sizes().moe(layout.tp))
    layer, config = build()
    if sequence_parallel is None:
        sequence_parallel = layout.tp > 1  # MoE with TP needs SP (since 2024)
    sp = dataclasses.replace(layout, sp=sequence_parallel)
    step = _step(layer, (_sequence_slice(x, sp),), sp)
    root = os.environ["MEGATRON_ROOT"]
    if os.path.isdir(os.path.join(root, "megatron", "core", "distributed")):
        step = _ddp_step(step, config, per_token_loss=bool(option("per_token_loss", 0)))
    elif layout.dp * layout.ep > 1:  # trees of mid-2023 train with the legacy DDP
        raise ComponentAbsent("this Megatron tree has no megatron.core.distributed "
                              "(data parallelism is its legacy model's)")
    if hasattr(layer, "local_expert_indices"):  # a router alone has no experts
        step["parameter_names"] = _expert_names(layer)
    return step


def _expert_names(layer):
    """Maps this rank's `local_experts.i` to the reference's name of the same
    (global) expert, local_expert_indices[i]."""
    import re
    indices = list(layer.local_expert_indices)

    def rename(name):
        return re.sub(r"(local_experts\.)(\d+)",
                      lambda m: f"{m.group(1)}{indices[int(m.group(2))]}", name)
    return rename


def _moe_layer(layout, dispatcher, **extra):
    """MoELayer from the tree's local (no Transformer Engine) MoE spec; 2024
    trees have none (their spec module imports TE), so MoELayer is built from
    its MLP submodules, which picks SequentialMLP without grouped GEMM."""
    config = _moe_config(layout, dispatcher, **extra)
    try:
        from megatron.core.models.gpt.moe_module_specs import get_moe_module_spec
    except (ImportError, ComponentAbsent) as e:
        return _moe_layer_of_sequential_experts(config), config
    except Exception as e:  # the spec module reads TE's installed version
        if "transformer" not in str(e).lower():
            raise
        return _moe_layer_of_sequential_experts(config), config
    from megatron.core.transformer.spec_utils import ModuleSpec, build_module
    spec = get_moe_module_spec(use_te=False, num_experts=config.num_moe_experts,
                               moe_grouped_gemm=False)
    layer = build_module(spec, config=config) if isinstance(spec, ModuleSpec) \
        else spec(config=config)
    return layer, config


def _moe_layer_of_sequential_experts(config):
    """MoELayer with SequentialMLP experts built from the tree's submodule
    classes: MoESubmodules(experts=...) where the tree has it (2025), the
    experts' MLPSubmodules before that (2024)."""
    from megatron.core.tensor_parallel import ColumnParallelLinear, RowParallelLinear
    from megatron.core.transformer.mlp import MLPSubmodules
    from megatron.core.transformer.moe import moe_layer
    mlp = MLPSubmodules(linear_fc1=ColumnParallelLinear, linear_fc2=RowParallelLinear)
    if not hasattr(moe_layer, "MoESubmodules"):
        return moe_layer.MoELayer(config, mlp)
    from megatron.core.transformer.moe.experts import SequentialMLP
    from megatron.core.transformer.spec_utils import ModuleSpec
    experts = ModuleSpec(module=SequentialMLP, submodules=mlp)
    return moe_layer.MoELayer(config, moe_layer.MoESubmodules(experts=experts))


class RouterOutput(torch.nn.Module):
    """The router's (probabilities, routing map) with the probabilities
    [tokens, experts] viewed back as [sequence, batch, experts], so that the
    batch dimension the data-parallel split and the batch-mean loss use is
    dim 1 again."""

    def __init__(self, router):
        super().__init__()
        self.router = router

    def forward(self, x):
        probs, _ = self.router(x)
        return probs.reshape(x.shape[0], x.shape[1], -1)


# The router's auxiliary losses: TransformerConfig coefficients set after the
# config is built (it checks them against the dispatcher), and fields set in it.
ROUTER_LOSSES = {
    "z_loss": ({"moe_aux_loss_coeff": 0.0, "moe_z_loss_coeff": 0.01}, {}),
    "aux_loss": ({"moe_aux_loss_coeff": 0.01}, {}),
    "seq_aux_loss": ({"moe_aux_loss_coeff": 0.01},
                     {"moe_router_load_balancing_type": "seq_aux_loss"}),
}


@options(loss=tuple(ROUTER_LOSSES), dispatcher=("allgather", "alltoall"),
         score=("softmax", "sigmoid"), per_token_loss=(0, 1))
def moe_router():
    """Megatron's TopKRouter on this rank's tokens: the gating linear, the
    score function and the top-k choice of experts, replayed (_routing),
    with the auxiliary loss asked for: its gradients reach the gating
    weight through the tree's own loss hooks."""
    _, layout = _megatron()
    from megatron.core.transformer.moe import router
    from megatron.core.transformer.transformer_config import TransformerConfig
    dispatcher = option("dispatcher")
    losses, fields = ROUTER_LOSSES[option("loss")]
    if option("score") != "softmax":
        fields = dict(fields, moe_router_score_function=option("score"))
    missing = [k for k in (*losses, *fields) if not _accepts(TransformerConfig, k)]
    if missing:
        raise ComponentAbsent(f"this Megatron tree's TransformerConfig has no {missing[0]}")
    balancing = fields.get("moe_router_load_balancing_type")
    if balancing and f'"{balancing}"' not in inspect.getsource(router):
        # The config takes any string; the router refuses it in forward.
        raise ComponentAbsent(f"this Megatron tree's router has no {balancing} load balancing")
    router_class = _component(router, "TopKRouter")
    extra = {}
    # Explicit process groups: mid-2025 trees' model_comm_pgs, pg_collection after.
    for argument, default in (("pg_collection", "get_default_pg_collection"),
                              ("model_comm_pgs", "get_default_model_comm_pgs")):
        if _accepts(router_class, argument):
            from megatron.core.transformer.moe import moe_utils
            extra[argument] = getattr(moe_utils, default)()

    def build():
        config = _moe_config(layout, dispatcher, **fields)
        for name, value in losses.items():  # the config checks them against the dispatcher
            setattr(config, name, value)
        module = RouterOutput(router_class(config=config, **extra))
        _replay_routing(layout, config, _routing(config.moe_router_topk))
        return module, config
    return _moe_step(layout, build)


moe_router_z_loss = variant(moe_router, loss="z_loss")
moe_router_aux_loss = variant(moe_router, loss="aux_loss")


@options(dispatcher=("alltoall", "allgather"), topk=(1, 2), local_experts=(1, 2),
         pre_softmax=(1, 0))
def moe_layer():
    """Megatron's MoELayer with the pure-PyTorch SequentialMLP experts and the
    `dispatcher` token dispatcher, its router choosing (not replayed): every
    routing of the tokens is a path (docs/entry-contract.md, "Value-dependent
    decisions"), so the layer runs at the routing sizes (Sizes.routed).
    `pre_softmax`: the router's softmax before its top-k (trees of 2025 on
    ask for it at top-1), else over the values picked."""
    _, layout = _megatron()
    sizes = _sizes().routed(asked(), option("local_experts"))
    extra = {"moe_router_pre_softmax": bool(option("pre_softmax"))}

    def build():
        return _moe_layer(layout, option("dispatcher"), sizes=sizes,
                          num_experts=sizes.experts, topk=option("topk"), **extra)
    return _moe_step(layout, build, sizes=sizes)


moe_layer_allgather = variant(moe_layer, dispatcher="allgather")


@options(**ATTENTION_OPTIONS, gated=(0, 1))
def transformer_layer(sequence_parallel=False):
    """TransformerLayer from the tree's local spec: layer norm, SelfAttention
    (as in self_attention), bias-dropout-add, layer norm, MLP (gated: SwiGLU)."""
    _apex_layer_norm_model(sequence_parallel or parallel().sp)
    _, layout = _megatron(sequence_parallel)
    config = _transformer_config(layout, gated_linear_unit=bool(option("gated")),
                                 **_attention_fields())
    layer = _build(_local_layer_spec(qk_layernorm=bool(option("qk_layernorm"))),
                   config=config, layer_number=1)
    hidden = _hidden(layout)
    return _finalized_as_trained(_step(layer, (hidden, None), layout), config)



def transformer_layer_sp():
    return transformer_layer(sequence_parallel=True)


def _replay_routing(layout, config, routing):
    """Pins the router's top-k choice to `routing` ([sequence, batch, topk]
    expert ids of the global batch) through the tree's own routing replay
    (RouterReplay, REPLAY_FORWARD): this rank replays its slice of the batch.
    The choice is then a given, not computed: what is proved holds for this
    routing, not for every routing the logits could produce."""
    routing = _moe_tokens(routing, layout).reshape(-1, config.moe_router_topk)
    if not getattr(config, "moe_enable_routing_replay", False):
        return _replay_top_k(routing)
    from megatron.core.transformer.moe import router_replay
    router_replay.RouterReplay.set_replay_data([routing])
    router_replay.RouterReplay.set_global_router_replay_action(
        router_replay.RouterReplayAction.REPLAY_FORWARD)


class _TorchReplayingTopK:
    """`torch` as the tree's MoE modules see it, but whose topk over router
    scores [tokens, experts] returns the replayed expert ids (and the scores
    there): what RouterReplay does in trees that have it."""

    def __init__(self, routing):
        self._routing = routing

    def __getattr__(self, name):
        return getattr(torch, name)

    def topk(self, scores, k, dim=-1, *args, **kwargs):
        if scores.dim() == 2 and dim in (1, -1) and tuple(self._routing.shape) == (
                scores.shape[0], k):
            return torch.gather(scores, 1, self._routing), self._routing
        return torch.topk(scores, k, dim, *args, **kwargs)


def _replay_top_k(routing):
    """Routing replay for trees without RouterReplay: the module global
    `torch` of the tree's router and moe_utils answers topk with `routing`."""
    from megatron.core.transformer.moe import moe_utils, router
    for module in (moe_utils, router):
        module.torch = _TorchReplayingTopK(routing)


def _routing(topk):
    """Expert ids [sequence, batch, topk] per token of the global batch of
    _sizes(): distinct per token, every expert getting tokens from every
    slice of the batch, in uneven numbers."""
    sizes = _sizes()
    tokens = torch.arange(sizes.sequence * sizes.batch)
    experts = sizes.experts
    choices = [(3 * tokens + k * (1 + tokens % (experts - 1))) % experts for k in range(topk)]
    return torch.stack(choices, dim=-1).reshape(sizes.sequence, sizes.batch, topk)


@options(dispatcher=("alltoall", "allgather"), topk=(2, 1), shared_expert=(0, 1),
         etp=("tp", 1))
def moe_layer_replay():
    """moe_layer with its routing replayed (`_routing`): the dispatch, the
    experts and the combine for that routing, with the router's gating and
    probabilities (and their gradients) symbolic: through the tree's
    RouterReplay where it has one, else by answering its topk
    (_replay_top_k). Options: top-1 or top-2 routing, a shared expert beside
    the routed ones, experts tensor-parallel over tp or not at all (etp=1)."""
    layout = parallel()
    _, layout = _megatron(expert_tensor_parallel=layout.tp if option("etp") == "tp"
                          else option("etp"))
    from megatron.core.transformer.transformer_config import TransformerConfig
    extra = {"moe_enable_routing_replay": True} \
        if _accepts(TransformerConfig, "moe_enable_routing_replay") else {}
    extra["topk"] = option("topk")
    if option("topk") == 1 and _accepts(TransformerConfig, "moe_router_pre_softmax"):
        extra["moe_router_pre_softmax"] = True  # newer trees refuse top-1 without it
    if option("shared_expert"):
        if not _accepts(TransformerConfig, "moe_shared_expert_intermediate_size"):
            raise ComponentAbsent("this Megatron tree's TransformerConfig has no "
                                  "moe_shared_expert_intermediate_size")
        extra["moe_shared_expert_intermediate_size"] = _sizes().moe(layout.tp).ffn
    if option("etp") != "tp":
        extra["expert_tensor_parallel_size"] = option("etp")
    dispatcher = option("dispatcher")

    def build():
        layer, config = _moe_layer(layout, dispatcher, **extra)
        _replay_routing(layout, config, _routing(config.moe_router_topk))
        return layer, config
    return _moe_step(layout, build)


moe_layer_replay_allgather = variant(moe_layer_replay, dispatcher="allgather")


@options(position=("learned_absolute", "rope"), tied=(1, 0),
         kv_groups=ATTENTION_OPTIONS["kv_groups"])
def gpt_model(sequence_parallel=False):
    """GPTModel from the tree's local layer spec at _sizes(): 2 layers,
    learned absolute or rotary positions, the output layer tied to the
    embedding or not; with labels it returns the per-token loss
    (vocab_parallel_cross_entropy over the vocab-parallel output layer)."""
    _apex_layer_norm_model(sequence_parallel or parallel().sp)
    _, layout = _megatron(sequence_parallel)
    _transformer_engine_wrappers()
    from megatron.core.models.gpt import gpt_model as gpt_module
    config = _transformer_config(layout, num_layers=2, **_attention_fields())
    sizes = _sizes()
    model = _without_apex(
        _component(gpt_module, "GPTModel"), config=config,
        transformer_layer_spec=_local_layer_spec(), vocab_size=sizes.vocab,
        max_sequence_length=sizes.sequence, parallel_output=True,
        share_embeddings_and_output_weights=bool(option("tied")),
        position_embedding_type=option("position"))
    shape = (sizes.batch, sizes.sequence)
    tokens = _token_ids(shape, sizes.vocab)
    positions = torch.arange(sizes.sequence).expand(*shape).contiguous()
    labels = _token_ids(shape, sizes.vocab, offset=1)
    return _step(GPTStep(model), (tokens, positions, labels), layout)


class GPTStep(torch.nn.Module):
    """GPTModel.forward with the causal mask built by the attention core."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, tokens, positions, labels):
        return self.model(tokens, positions, None, labels=labels)


def gpt_model_sp():
    return gpt_model(sequence_parallel=True)


# ---- Pipeline parallelism: GPTModel in stages under Megatron's own schedules ----
# Each pipeline stage builds the tree's GPTModel with its pre_process and
# post_process (the first stage holds the embedding, the last the final norm
# and the output layer; the transformer layers are split between them by the
# tree's own layer offsets), wrapped in the tree's DistributedDataParallel as
# in training. The step is the tree's own: get_forward_backward_func()
# (forward_backward_pipelining_without_interleaving over the stages,
# forward_backward_no_pipelining in the single-device reference) over
# MICRO_BATCHES micro-batches of a data iterator, the activations and their
# gradients sent between stages by its p2p_communication (batch_isend_irecv
# of P2POps, or isend/irecv), and finalize_model_grads (config's
# finalize_model_grads_func, called by the schedule), which sums the tied
# embedding's gradients over the embedding group (first and last stage).

MICRO_BATCHES = 4
PIPELINE_SEQUENCE = 2


PIPELINE_OPTIONS = dict(tied=(1, 0), p2p=("batched", "unbatched"), per_token_loss=(0, 1))


@options(**PIPELINE_OPTIONS)
def gpt_model_pp():
    """GPTModel (2 layers, as gpt_model) split into `--pp` pipeline stages,
    trained one step on MICRO_BATCHES micro-batches of one sample by
    Megatron's schedule; the loss of each micro-batch is the mean of its
    per-token losses (pretrain_gpt's loss function: the sum and the token
    count, which the schedule divides by, and by the number of micro-batches),
    or with per_token_loss=1 the sum, divided by the global token count in
    finalize_model_grads. Output: the step's loss as the training loop
    reports it (the last stage's, sent to every stage). Run as a plain entry
    (`recipes.py::gpt_model_pp --world 2`) every rank is a pipeline stage."""
    return _with_pipeline_world(_gpt_model_pp)


@options(**PIPELINE_OPTIONS)
def gpt_model_pp_without_embedding_grad_reduction():
    """The twin: gpt_model_pp with finalize_model_grads' all-reduce of the tied
    embedding's gradients over the embedding group left out, so the first
    stage keeps only the embedding's gradient and the last only the output
    layer's: refuted (SP006/SP007 on embedding.word_embeddings.weight)."""
    return _with_pipeline_world(lambda: _gpt_model_pp(embedding_reduction=False))


def _with_pipeline_world(build):
    if os.environ.get("SHARDPROOF_PARALLEL"):
        return build()
    world = os.environ.get("SHARDPROOF_WORLD") or torch.distributed.get_world_size()
    os.environ["SHARDPROOF_PARALLEL"] = f"pp={world}"
    try:
        return build()
    finally:
        del os.environ["SHARDPROOF_PARALLEL"]


def _gpt_model_pp(embedding_reduction=True):
    _apex_layer_norm_model(parallel().sp)
    _, layout = _megatron()
    _transformer_engine_wrappers()
    from megatron.core import distributed, parallel_state
    from megatron.core.models.gpt import gpt_model as gpt_module
    try:
        from megatron.core.pipeline_parallel import get_forward_backward_func
        from megatron.core.models.common.language_module import language_module
    except ImportError as e:
        raise ComponentAbsent(f"this Megatron tree has no {e.name}") from e
    finalize_model_grads = _component(distributed, "finalize_model_grads")
    config = _transformer_config(layout, num_layers=2,
                                 pipeline_model_parallel_size=layout.pp,
                                 pipeline_dtype=torch.float32,
                                 batch_p2p_comm=option("p2p") == "batched")
    if option("per_token_loss"):
        if not _accepts(finalize_model_grads, "num_tokens") or \
                not hasattr(config, "calculate_per_token_loss"):
            raise ComponentAbsent("this Megatron tree has no calculate_per_token_loss")
        config.calculate_per_token_loss = True
    # Pipeline stages shard no dimension: each micro-batch is one sample of a
    # sequence of 2 (the four micro-batches' gradients sum 8 tokens, which
    # keeps each proof within its time limit).
    sizes = dataclasses.replace(_sizes(), sequence=PIPELINE_SEQUENCE)
    gpt_class = _component(gpt_module, "GPTModel")
    stages = {}
    if _accepts(gpt_class, "pre_process"):
        stages = dict(pre_process=parallel_state.is_pipeline_first_stage(),
                      post_process=parallel_state.is_pipeline_last_stage())
    with _tied_copy_as_run(language_module):
        gpt = _without_apex(
            gpt_class, config=config, transformer_layer_spec=_local_layer_spec(),
            vocab_size=sizes.vocab, max_sequence_length=sizes.sequence,
            parallel_output=True, share_embeddings_and_output_weights=bool(option("tied")),
            position_embedding_type="learned_absolute", **stages)
    ddp_class = _component(distributed, "DistributedDataParallel")
    args, kwargs = _ddp_arguments(distributed, ddp_class, config, gpt,
                                  dict(overlap_grad_reduce=False,
                                       use_distributed_optimizer=False))
    model = ddp_class(*args, **kwargs, **_ddp_groups(ddp_class))
    _zero_grad_buffer(model)
    # What Megatron's training loop hands the schedule (training.py).
    config.no_sync_func = model.no_sync
    config.finalize_model_grads_func = finalize_model_grads if embedding_reduction \
        else _without_embedding_grad_reduction(finalize_model_grads)
    shape = (MICRO_BATCHES, sizes.sequence)  # micro-batches of one sample
    tokens = _token_ids(shape, sizes.vocab)
    positions = torch.arange(sizes.sequence).expand(*shape).contiguous()
    labels = _token_ids(shape, sizes.vocab, offset=1)
    step = PipelineStep(model, get_forward_backward_func(), sizes.sequence)

    def finalize_grads():  # finalize_model_grads already ran in the schedule
        for p in model.parameters():
            if getattr(p, "main_grad", None) is not None:
                p.grad = p.main_grad  # FP32Optimizer.prepare_grads

    return {"model": step, "inputs": (tokens, positions, labels),
            "loss": lambda loss: loss,
            # The schedule ran every micro-batch's backward (and
            # finalize_model_grads) inside the step: nothing is left to run.
            "backward": lambda loss: None,
            "finalize_grads": finalize_grads,
            "tensor_parallel_group": parallel_state.get_tensor_model_parallel_group(),
            "parameter_names": _stage_names(gpt, bool(option("tied")))}


class PipelineStep(torch.nn.Module):
    """One training step of `model` by Megatron's `schedule` (the function
    get_forward_backward_func returned) over the micro-batches of the global
    batch; returns the step's loss as the training loop reports it: the sum
    of the micro-batches' reported losses over the sum of their token counts
    (what the last stage's forward_data_store holds), broadcast over the
    pipeline group from the last stage. The tensor returned requires grad
    only so that the driver calls the entry's backward, which does nothing:
    the schedule has run the backward of every micro-batch already."""

    def __init__(self, model, schedule, sequence):
        super().__init__()
        self.model, self.schedule, self.sequence = model, schedule, sequence

    def forward(self, tokens, positions, labels):
        from megatron.core import parallel_state
        batches = iter(list(zip(tokens.chunk(MICRO_BATCHES), positions.chunk(MICRO_BATCHES),
                                labels.chunk(MICRO_BATCHES))))

        def loss_func(losses):  # pretrain_gpt's: (sum, tokens, reported)
            total = losses.float().sum()
            count = torch.tensor(losses.numel(), dtype=torch.int)
            reported = {"lm loss": torch.cat([total.clone().detach().view(1),
                                              count.float().view(1)])}
            if not _schedule_counts_tokens():  # before 2024-05: (mean, reported)
                return total / count, reported
            return total, count, reported

        def forward_step(data_iterator, model):
            tokens, positions, labels = next(data_iterator)
            return model(tokens, positions, None, labels=labels), loss_func

        store = self.schedule(forward_step_func=forward_step, data_iterator=batches,
                              model=[self.model], num_microbatches=MICRO_BATCHES,
                              seq_length=self.sequence, micro_batch_size=1,
                              forward_only=False)
        if store:  # the last stage
            reported = torch.stack([s["lm loss"] for s in store]).sum(0)
            loss = reported[0] / reported[1]
        else:
            loss = torch.empty(())
        torch.distributed.broadcast(
            loss, src=parallel_state.get_pipeline_model_parallel_last_rank(),
            group=parallel_state.get_pipeline_model_parallel_group())
        return loss.requires_grad_()


def _schedule_counts_tokens():
    """Whether the tree's schedules take a loss function's token count (a
    three-value return, 2024-05 on); before, it returns the micro-batch's
    mean loss and what is reported."""
    from megatron.core.pipeline_parallel import schedules
    return "len(outputs) == 3" in inspect.getsource(schedules.forward_step)


def _stage_names(gpt, tied):
    """This stage's parameter names -> the reference's: its transformer
    layer i is global layer layer_number - 1 (the tree's offset of the
    stage), and on a last stage without the embedding the tied output
    layer's weight is the reference's word embedding."""
    import re
    numbers = [layer.layer_number - 1 for layer in gpt.decoder.layers]
    pre_process = getattr(gpt, "pre_process", True)

    def rename(name):
        name = re.sub(r"(decoder\.layers\.)(\d+)",
                      lambda m: f"{m.group(1)}{numbers[int(m.group(2))]}", name)
        if tied and not pre_process and name.endswith("output_layer.weight"):
            name = name[:-len("output_layer.weight")] + "embedding.word_embeddings.weight"
        return name
    return rename


def _tied_copy_as_run(language_module):
    """While GPTModel is built, a Parameter keeps its own symbolic values
    (initialisation writes are not taken). setup_embeddings_and_output_layer
    makes the last stage's copy of the tied embedding equal to the first
    stage's by zeroing it and all-reducing it over the embedding group: that
    method runs with its writes taken as written (runtime
    parameters_written_as_run), so the copy holds the first stage's values,
    and each stage's weight is recorded by the values it was made with."""
    import contextlib
    from shardproof_recipes import parameters_written_as_run
    module_class = _component(language_module, "LanguageModule")
    original = _component(module_class, "setup_embeddings_and_output_layer")

    def setup(self, *args, **kwargs):
        weight = self.shared_embedding_or_output_weight() \
            if getattr(self, "share_embeddings_and_output_weights", False) else None
        with parameters_written_as_run([weight] if weight is not None else []):
            return original(self, *args, **kwargs)

    @contextlib.contextmanager
    def installed():
        module_class.setup_embeddings_and_output_layer = setup
        try:
            yield
        finally:
            module_class.setup_embeddings_and_output_layer = original
    return installed()


def _without_embedding_grad_reduction(finalize_model_grads):
    """finalize_model_grads with its all-reduce of the tied embedding's
    gradients over the embedding group taken out (the twin)."""
    import sys
    module = sys.modules[finalize_model_grads.__module__]

    def finalize(*args, **kwargs):
        original = module._allreduce_word_embedding_grads
        module._allreduce_word_embedding_grads = lambda *a, **k: None
        try:
            return finalize_model_grads(*args, **kwargs)
        finally:
            module._allreduce_word_embedding_grads = original
    return finalize


def _legacy(module):
    """`module` of the legacy model (megatron/model before 2024,
    megatron/legacy/model after) and the global-arguments module its code
    reads Megatron's training arguments from."""
    import importlib
    root = os.environ["MEGATRON_ROOT"]
    for package, arguments in (("megatron.legacy.model", "megatron.training.global_vars"),
                               ("megatron.model", "megatron.global_vars")):
        if os.path.isdir(os.path.join(root, *package.split("."))):
            _transformer_engine_wrappers()  # the legacy model imports core's GPT model
            return (importlib.import_module(f"{package}.{module}"),
                    importlib.import_module(arguments))
    raise ComponentAbsent("this Megatron tree has no legacy model "
                          "(megatron/model or megatron/legacy/model)")


def _training_arguments(global_vars, **values):
    """Megatron's global training arguments as the legacy model reads them:
    the defaults of its argument parser for what the recipe does not set, in
    the argparse.Namespace the parser returns (the legacy code asks
    `"apply_layernorm_1p" in args`)."""
    import argparse
    defaults = dict(swiglu=False, openai_gelu=False, onnx_safe=False, squared_relu=False,
                    bias_gelu_fusion=False, normalization="LayerNorm", norm_epsilon=1e-5,
                    apply_layernorm_1p=False, hidden_size=_sizes().hidden,
                    sequence_parallel=False,
                    moe_router_topk=1)
    global_vars.set_args(argparse.Namespace(**dict(defaults, **values)))


def switch_mlp(sequence_parallel=True):
    """The legacy SwitchMLP: top-1 routing after sinkhorn load balancing,
    experts as ParallelMLPs, under Megatron's DDP; its routing replayed
    (_routing's first choice per token). It reads Megatron's global training
    arguments, which the recipe sets. Sequence parallelism on with tensor
    parallelism unless `sequence_parallel` is False."""
    _, layout = _megatron()
    legacy, global_vars = _legacy("transformer")
    switch_class = _component(legacy, "SwitchMLP")
    config = _moe_config(layout, topk=1,
                         sequence_parallel=sequence_parallel and layout.tp > 1)
    _training_arguments(global_vars, num_experts=config.num_moe_experts,
                        hidden_size=config.hidden_size,
                        sequence_parallel=config.sequence_parallel)

    def build():
        layer = PreNormMLP(_legacy_norm(config, global_vars), switch_class(config))
        _replay_argmax(legacy, _routing(1), layout,
                       config.sequence_parallel)
        layer.local_expert_indices = layer.mlp.local_expert_indices
        return layer, config
    return _moe_step(layout, build, sequence_parallel=config.sequence_parallel)


class PreNormMLP(torch.nn.Module):
    """A transformer layer's MLP half: its pre-MLP norm, then the MLP (the
    norm's parameters are what finalize_model_grads all-reduces under
    sequence parallelism, as in every model)."""

    def __init__(self, norm, mlp):
        super().__init__()
        self.norm, self.mlp = norm, mlp

    def forward(self, x):
        return self.mlp(self.norm(x))


def _legacy_norm(config, global_vars):
    """The legacy model's RMSNorm from its get_norm (pure PyTorch)."""
    import types
    utils, _ = _legacy("utils")
    if not hasattr(utils, "get_norm"):
        raise ComponentAbsent("this Megatron tree's legacy model has no get_norm")
    arguments = global_vars.get_args()
    _training_arguments(global_vars, **dict(vars(arguments), normalization="RMSNorm"))
    return utils.get_norm(types.SimpleNamespace(
        hidden_size=config.hidden_size, layernorm_epsilon=1e-5, persist_layer_norm=False,
        sequence_parallel=config.sequence_parallel))


def switch_mlp_no_sp():
    """switch_mlp with tensor parallelism and no sequence parallelism: every
    tensor-parallel rank holds the whole sequence."""
    return switch_mlp(sequence_parallel=False)


class _TorchReplayingArgmax:
    """`torch` as the legacy SwitchMLP sees it, whose max over the router's
    [tokens, experts] scores returns the replayed expert per token."""

    def __init__(self, routing):
        self._routing = routing

    def __getattr__(self, name):
        return getattr(torch, name)

    def max(self, input, dim=None, *args, **kwargs):
        if dim == 1 and input.dim() == 2 and input.shape[0] == self._routing.shape[0]:
            return torch.gather(input, 1, self._routing).squeeze(1), self._routing.squeeze(1)
        return torch.max(input, *((dim,) if dim is not None else ()), *args, **kwargs)


def _replay_argmax(legacy, routing, layout, sequence_parallel=True):
    """The legacy SwitchMLP picks each token's expert with torch.max over its
    sinkhorn-balanced scores (a choice only: no gradient flows through it);
    it gets this rank's tokens of `routing`, and the balancing, a loop until
    the symbolic scores converge, is skipped."""
    tokens = _data_parallel_slice(routing, 1)
    if sequence_parallel:
        tokens = _tp_slice(tokens, layout, 0)
    legacy.torch = _TorchReplayingArgmax(tokens.reshape(-1, 1))
    legacy.sinkhorn = lambda cost, tol=0.0001: cost


def legacy_norm(normalization="RMSNorm"):
    """The legacy model's get_norm (LayerNorm or RMSNorm as the training
    arguments say) under sequence parallelism: its weight's gradient is each
    rank's sequence shard's, and must be all-reduced over the group, which
    the training loop does for parameters marked `sequence_parallel`."""
    import types
    _, layout = _megatron(sequence_parallel=True)
    utils, global_vars = _legacy("utils")
    if not hasattr(utils, "get_norm"):
        raise ComponentAbsent("this Megatron tree's legacy model has no get_norm")
    _training_arguments(global_vars, normalization=normalization,
                        sequence_parallel=layout.tp > 1)
    sizes = _sizes()
    config = types.SimpleNamespace(hidden_size=sizes.hidden, layernorm_epsilon=1e-5,
                                   persist_layer_norm=False,
                                   sequence_parallel=layout.tp > 1)
    norm = _without_apex(utils.get_norm, config)
    return _step(norm, (_sequence_slice(_activation(sizes), layout),), layout)





def mla_self_attention(sequence_parallel=False):
    """MLASelfAttention (multi-latent attention) from the tree's local layer
    spec with multi_latent_attention=True: low-rank query and key-value
    projections, a rotary-embedded part of each head, the pure-PyTorch
    DotProductAttention core. Plain RoPE, no query LoRA."""
    _, layout = _megatron(sequence_parallel)
    from megatron.core.transformer import transformer_config
    if not hasattr(transformer_config, "MLATransformerConfig"):
        raise ComponentAbsent("this Megatron tree has no multi-latent attention "
                              "(megatron.core.transformer.transformer_config."
                              "MLATransformerConfig)")
    spec = _local_layer_spec(multi_latent_attention=True).submodules.self_attention
    core = spec.submodules.core_attention
    from megatron.core.transformer import multi_latent_attention
    if "k_channels=" in inspect.getsource(multi_latent_attention) \
            and not _accepts(core, "k_channels"):
        spec.submodules.core_attention = _with_channel_sizes(core)
    known = {f.name for f in dataclasses.fields(transformer_config.MLATransformerConfig)}
    sizes = _sizes()
    values = dict(num_layers=1, hidden_size=sizes.hidden, num_attention_heads=sizes.heads,
                  tensor_model_parallel_size=layout.tp,
                  sequence_parallel=layout.sp and layout.tp > 1,
                  multi_latent_attention=True, q_lora_rank=None, kv_lora_rank=2,
                  qk_head_dim=1, qk_pos_emb_head_dim=2, v_head_dim=1, kv_channels=1,
                  max_position_embeddings=sizes.sequence,  # early MLA ropes the whole table
                  rope_type="rope", normalization="LayerNorm",
                  add_bias_linear=False, attention_dropout=0.0, hidden_dropout=0.0,
                  masked_softmax_fusion=False, apply_rope_fusion=False,
                  gradient_accumulation_fusion=False, persist_layer_norm=False)
    config = transformer_config.MLATransformerConfig(
        **{k: v for k, v in values.items() if k in known})
    try:
        attention = _build(spec, config=config, layer_number=1)
    except TypeError as e:
        if "parallel_mode" not in str(e):
            raise
        raise ComponentAbsent(f"this Megatron tree's MLA passes Transformer Engine's "
                              f"parallel_mode to its local spec's linear layers ({e}): "
                              "its MLA needs Transformer Engine") from e
    hidden = _hidden(layout, batch=1)
    return _step(attention, (hidden, None), layout)


def _with_channel_sizes(core):
    """Newer trees' MLA hands its core attention separate key and value head
    sizes (k_channels, v_channels), which only Transformer Engine's core
    takes. The tree's local DotProductAttention computes the same attention
    for any query/key head size (MLA passes its own softmax scale); the one
    size it takes from the config, kv_channels, shapes its output, the value
    heads. So the local core is used as it is, and the sizes MLA passes are
    checked against it instead of being dropped unseen."""

    class CoreAttention(core):
        def __init__(self, *args, k_channels=None, v_channels=None, **kwargs):
            super().__init__(*args, **kwargs)
            if v_channels is not None and v_channels != self.config.kv_channels:
                raise RecipeError(f"MLA's value head size {v_channels} is not the "
                                  f"config's kv_channels {self.config.kv_channels}, "
                                  f"which the local {core.__name__} reshapes by")

    CoreAttention.__name__ = CoreAttention.__qualname__ = core.__name__
    return CoreAttention


def mla_self_attention_sp():
    return mla_self_attention(sequence_parallel=True)


# ---- What `shardproof scan ROOT` checks (`scan ROOT --list` prints it) ----
# Every recipe over its layouts and its declared options, pairwise
# (shardproof_recipes.covering); the data- and expert-parallel recipes at
# their own layouts.
TP2 = ("tp=2,sp=0", "tp=2,sp=1")


def _not_sequence_parallel_without_parallel_input(layout, values):
    # RowParallelLinear: "To enable sequence_parallel, input_is_parallel must be True".
    return values["input_is_parallel"] or not layout.sp


def _one_way_to_average(layout, values):
    # DDP: "Cannot average in collective when calculating per-token loss!"
    return not (values["average_in_collective"] and values["per_token_loss"])


def _expert_tp_differs(layout, values):
    # etp=1 at tp=1 is the default row again.
    return values["etp"] == "tp" or layout.tp > 1


def _within_proof_budget(layout, values):
    # q/k layer norms over a key-value group every rank holds whole: the
    # layer norm's rsqrt through both ranks' partial gradients of the shared
    # keys runs each of three gradient proofs past its time limit (could not
    # prove, 160 s a row); `check --option` still runs it.
    return not (values.get("qk_layernorm") and values.get("kv_groups") == 1)


# The bound on value-dependent paths (shardproof --max-paths, default 16): a layer
# whose own router chooses is explored routing by routing.
MAX_PATHS = 16


def _optimizer_it_distributes(layout, values):
    # Megatron's DistributedOptimizer takes Adam only ("due to checkpointing
    # requirements"): an SGD row of it would only be absent.
    return not (values["distributed_optimizer"] and values["optimizer"] == "sgd")


def _routings_within_bound(layout, values):
    """moe_layer rows whose routings fit the path bound: C(experts, topk)
    picks per token (the router's scatter reads which experts, not their
    order), one token per rank (Sizes.routed); a row past it would only
    report the bound (`check --option` still runs it)."""
    experts = layout.ep * values["local_experts"]
    return math.comb(experts, values["topk"]) ** layout.world <= MAX_PATHS


SCAN = [
    *covering(column_parallel_linear, TP2),
    *covering(row_parallel_linear, TP2 + ("tp=2,dp=2,sp=1",),
              _not_sequence_parallel_without_parallel_input),
    *covering(tp_mappings, ("tp=2,sp=0", "tp=4,sp=1")),
    ("vocab_parallel_embedding", "tp=2,sp=0"),
    *covering(mlp, TP2),
    *covering(mlp_ddp, ("tp=1,dp=2,sp=0", "tp=2,sp=0", "tp=2,dp=2,sp=1", "tp=1,cp=2,sp=0"),
              _one_way_to_average),
    *covering(mlp_optimizer, ("tp=2,sp=0", "tp=2,dp=2,sp=1"), _optimizer_it_distributes),
    *covering(vocab_parallel_cross_entropy, TP2),
    *covering(self_attention, TP2, _within_proof_budget),
    *covering(transformer_layer, TP2, _within_proof_budget),
    *covering(gpt_model, TP2),
    *covering(gpt_model_pp, ("tp=1,pp=2,sp=0", "tp=2,pp=2,sp=0")),
    *covering(moe_layer_replay, ("tp=1,ep=2,sp=0", "tp=2,ep=2,sp=1"), _expert_tp_differs),
    *covering(moe_router, ("tp=2,sp=0",)),
    # The router choosing (no replay): every routing a path, at routing sizes.
    *covering(moe_layer, ("tp=1,ep=2,sp=0",), _routings_within_bound),
    ("mla_self_attention", "tp=2,sp=0"),
    # The legacy model, where a tree still has it (absent from 2025 on).
    ("legacy_norm", "tp=2,sp=1"),
    ("switch_mlp", "tp=2,sp=1"),
    ("switch_mlp_no_sp", "tp=2,sp=0"),
]
