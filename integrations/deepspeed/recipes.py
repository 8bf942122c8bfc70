"""Entries that build real DeepSpeed components at reduced sizes, for

    DEEPSPEED_ROOT=/path/to/DeepSpeed build/shardproof check \
        integrations/deepspeed/recipes.py::ulysses_attention --world 2

or `build/shardproof check ROOT --framework deepspeed --entry ulysses_attention --tp 2`.
DEEPSPEED_ROOT is a checkout of DeepSpeed (the folder that holds deepspeed/).

The whole `deepspeed` package is imported as a user would (its __init__
probes accelerators and op builders, builds its config models, ...), then
the component is built through its public API, so the code proved is the
tree's own.

DeepSpeed's Python requirements must be importable by shardproof's
interpreter. Debian 12 ships pydantic 1.10, which 2023 trees (pydantic 1's
API) and trees that carry deepspeed/pydantic_v1.py accept; newer trees need
pydantic>=2: run
shardproof in a virtual environment that has it (VIRTUAL_ENV), or name the
folder that holds it with --python-path.

Ulysses sequence parallelism (deepspeed.sequence.layer.DistributedAttention)
runs over a sequence-parallel process group; here that group is the "tp"
axis of the layout (shardproof_recipes.parallel()): `--tp N` (or `--world N`)
makes N-way sequence parallelism, and the other axes (data parallelism, ...)
hold replicas. The group is returned as the entry's
`tensor_parallel_group`.
"""
import contextlib
import dataclasses
import importlib
import inspect
import math
import os
import re
import sys
import types

import torch

try:
    import _shardproof as _sp
    _SYMBOLIC = (_sp.Term,)  # a Python number of a symbolic value
except ImportError:  # real PyTorch (tests/upstream/confirm_real.py runs these helpers)
    _SYMBOLIC = ()

from shardproof_recipes import (ComponentAbsent, RecipeError, asked, covering,
                                framework_root, option, options, parallel, variant)


def _requirements(root):
    """DeepSpeed's own requirements, before its import: a missing one would
    otherwise surface as an opaque value deep inside deepspeed/__init__."""
    try:
        import pydantic
    except ImportError:
        raise RecipeError("DeepSpeed needs pydantic, which this interpreter lacks: "
                          "pass --python-path with a folder that holds it") from None
    needed = _pydantic_major(root)
    installed = str(getattr(pydantic, "VERSION", "2")).split(".")[0]
    if needed and needed != installed:
        raise RecipeError(f"this DeepSpeed tree needs pydantic {needed}, the interpreter has "
                          f"{pydantic.VERSION} (from {os.path.dirname(pydantic.__file__)}): "
                          f"run in a virtual environment with pydantic {needed} or pass "
                          "--python-path with a folder that holds it")


def _pydantic_major(root):
    """The pydantic major version the tree's config models are written for:
    "2" (ConfigDict, field_serializer: mid-2024 on), "1" (2023: pydantic 1's
    API), None where its deepspeed/pydantic_v1.py takes either."""
    if os.path.exists(os.path.join(root, "deepspeed", "pydantic_v1.py")):
        return None
    try:
        with open(os.path.join(root, "deepspeed", "runtime", "config_utils.py")) as f:
            source = f.read()
    except OSError:
        return None
    return "2" if "ConfigDict" in source or "field_validator" in source else "1"


def _deepspeed():
    """The deepspeed package, with deepspeed.comm set up on the simulated world
    (torch.distributed is already initialised: DeepSpeed wraps it)."""
    root = framework_root("DEEPSPEED_ROOT", "deepspeed")
    for link in ("accelerator", os.path.join("ops", "op_builder")):
        path = os.path.join(root, "deepspeed", link)
        if os.path.islink(path) and not os.path.exists(path):
            raise RecipeError(f"{path} links to {os.readlink(path)}, which this checkout lacks: "
                              "check out the whole repository (an installed deepspeed "
                              "holds a copy there)")
    _requirements(root)
    import deepspeed
    import deepspeed.comm as dist
    dist.init_distributed(dist_backend="nccl", auto_mpi_discovery=False, verbose=False)
    return deepspeed, dist


def _sequence_parallel_group(dist, layout):
    """deepspeed.comm.new_group for every tp-axis group (every rank creates
    every group, in the same order, as torch.distributed requires); returns
    this rank's."""
    world, tp = torch.distributed.get_world_size(), layout.tp
    mine = None
    for first in range(0, world, tp):
        ranks = list(range(first, first + tp))
        group = dist.new_group(ranks)
        if torch.distributed.get_rank() in ranks:
            mine = group
    return mine, tp


class LocalAttention(torch.nn.Module):
    """softmax(Q K^T / sqrt(d)) V in plain PyTorch, over [seq, batch, heads,
    head_dim] (or [batch, seq, heads, head_dim] when `batch_first`): what
    DistributedAttention runs on the whole sequence and this rank's heads."""

    def __init__(self, batch_first=False):
        super().__init__()
        self.batch_first = batch_first

    def forward(self, q, k, v, *args, **kwargs):
        to_bhsd = (0, 2, 1, 3) if self.batch_first else (1, 2, 0, 3)
        q, k, v = (t.permute(*to_bhsd) for t in (q, k, v))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        context = torch.matmul(torch.softmax(scores, dim=-1), v)  # [b, h, s, d]
        return context.permute(*((0, 2, 1, 3) if self.batch_first else (2, 0, 1, 3)))


class _Call(torch.nn.Module):
    """DistributedAttention called as this tree's forward expects: newer
    trees take `batch_dim_idx` after q, k, v (1 for [seq, batch, ...], 0 for
    [batch, seq, ...]); older ones assume [seq, batch, ...]."""

    def __init__(self, attention, batch_first):
        super().__init__()
        self.attention = attention
        self.batch_dim = (0 if batch_first else 1) if _takes_batch_dim(attention) else None

    def forward(self, q, k, v):
        if self.batch_dim is None:
            return self.attention(q, k, v)
        return self.attention(q, k, v, self.batch_dim)


def _takes_batch_dim(attention):
    return "batch_dim_idx" in inspect.signature(attention.forward).parameters


def _distributed_attention(batch_first):
    """DistributedAttention over this rank's sequence-parallel group, around
    LocalAttention: scatter the heads (dim 2), gather the sequence (dim 0, or
    1 batch-first)."""
    _, dist = _deepspeed()
    from deepspeed.sequence import layer
    if not hasattr(layer, "DistributedAttention"):
        raise ComponentAbsent("this DeepSpeed tree has no "
                              "deepspeed.sequence.layer.DistributedAttention")
    layout = parallel()
    group, sp = _sequence_parallel_group(dist, layout)
    attention = layer.DistributedAttention(LocalAttention(batch_first), group,
                                           scatter_idx=2, gather_idx=1 if batch_first else 0)
    if batch_first and not _takes_batch_dim(attention):
        raise ComponentAbsent("this tree's DistributedAttention has no batch_dim_idx: it "
                              "takes [seq, batch, heads, head_dim] only")
    return _Call(attention, batch_first), group, layout, sp


def _sequence_slice(x, layout, sp, dim):
    """This rank's slice of an activation; it requires grad, as inside a
    model (the gradient of a slice is that rank's local one, not checked)."""
    local = x.chunk(sp, dim=dim)[layout.coordinate("tp")] if sp > 1 else x
    return local.detach().requires_grad_()


def _loss(out):
    return (out * out).sum()


@dataclasses.dataclass(frozen=True)
class Sizes:
    """Global sizes for the layout the target asked for (the same in the
    single-device reference and on every rank): the sequence and the heads,
    which Ulysses shards in turn over its sp ranks (the layout's tp axis),
    two per rank at least; the layer's hidden width, which nothing shards."""
    sequence: int
    heads: int
    head_dim: int = 2
    hidden: int = 2


def _sizes():
    sp = asked().tp
    return Sizes(sequence=max(4, 2 * sp), heads=max(4, 2 * sp))


@options(batch=(2, 1), batch_first=(0, 1))
def ulysses_attention():
    """Ulysses attention on q, k, v [seq, batch, heads, head_dim] ([batch,
    seq, ...] when `batch_first`); each rank gets its slice of the sequence
    and returns its slice of the output."""
    batch, batch_first = option("batch"), bool(option("batch_first"))
    model, group, layout, sp = _distributed_attention(batch_first)
    sizes = _sizes()
    shape = (batch, sizes.sequence, sizes.heads, sizes.head_dim) if batch_first \
        else (sizes.sequence, batch, sizes.heads, sizes.head_dim)
    q, k, v = (torch.randn(*shape) for _ in range(3))
    inputs = tuple(_sequence_slice(t, layout, sp, 1 if batch_first else 0) for t in (q, k, v))
    return {"model": model, "inputs": inputs, "loss": _loss,
            "tensor_parallel_group": group}


# Sequence-first with a batch of one: the only batch size trees before
# DeepSpeed's fix of batch > 1 (#5823, Aug 2024) handle.
ulysses_attention_batch1 = variant(ulysses_attention, batch=1)
# Batch-first q, k, v [batch, seq, heads, head_dim] (batch_dim_idx 0).
ulysses_attention_batch_first = variant(ulysses_attention, batch_first=1)


def _layer_input(sizes, batch, batch_first):
    """x [batch, sequence, hidden], or [sequence, batch, hidden]."""
    shape = (batch, sizes.sequence) if batch_first else (sizes.sequence, batch)
    return torch.randn(*shape, sizes.hidden)


class UlyssesLayer(torch.nn.Module):
    """An attention layer around DistributedAttention: q, k, v and output
    projections (replicated weights) on this rank's slice of the sequence,
    so the gradients of the weights run through the all-to-alls' backward."""

    def __init__(self, attention, sizes):
        super().__init__()
        self.heads, self.head_dim = sizes.heads, sizes.head_dim
        width = sizes.heads * sizes.head_dim
        self.query, self.key, self.value = (
            torch.nn.Linear(sizes.hidden, width, bias=False) for _ in range(3))
        self.dense = torch.nn.Linear(width, sizes.hidden)
        self.attention = attention

    def forward(self, x):  # [seq, batch, hidden] ([batch, seq, hidden] batch-first)
        q, k, v = (proj(x).view(*x.shape[:2], self.heads, self.head_dim)
                   for proj in (self.query, self.key, self.value))
        context = self.attention(q, k, v)
        return self.dense(context.reshape(*x.shape[:2], self.heads * self.head_dim))


@options(batch=(2, 1), batch_first=(1, 0))
def ulysses_attention_layer():
    """UlyssesLayer on x [batch, seq, hidden] (batch-first: the layout the
    newest trees handle for any batch size); each rank gets its slice of the
    sequence. After backward, every weight's gradient is all-reduced (summed)
    over the sequence-parallel group through deepspeed.comm: what DeepSpeed's
    engine does for the ranks of a sequence-parallel group, which hold
    replicas of the weights (the loss here is a sum over the sequence)."""
    batch, batch_first = option("batch"), bool(option("batch_first"))
    attention, group, layout, sp = _distributed_attention(batch_first)
    from deepspeed import comm as dist
    sizes = _sizes()
    model = UlyssesLayer(attention, sizes)
    x = _layer_input(sizes, batch, batch_first)

    def finalize_grads():
        if sp == 1:
            return
        for p in model.parameters():
            if p.grad is not None:
                dist.all_reduce(p.grad, group=group)

    return {"model": model, "inputs": (_sequence_slice(x, layout, sp, 1 if batch_first else 0),),
            "loss": _loss, "finalize_grads": finalize_grads, "tensor_parallel_group": group}


class SequenceParallelMPU:
    """The model-parallel unit DeepSpeed's engine asks for its groups (what
    Megatron-DeepSpeed passes as `mpu`): the layout's tp axis is Ulysses
    sequence parallelism, its dp axis data parallelism, and the
    sequence-data-parallel group (the ranks the engine reduces the
    gradients of replicated weights over) both; no tensor parallelism.
    Every rank creates every group, in the same order."""

    def __init__(self, dist, layout):
        world, rank = torch.distributed.get_world_size(), torch.distributed.get_rank()
        self.sp, self.dp, self.rank = layout.tp, world // layout.tp, rank
        self.sp_group = self.dp_group = None
        for first in range(0, world, self.sp):
            ranks = list(range(first, first + self.sp))
            group = dist.new_group(ranks)
            if rank in ranks:
                self.sp_group = group
        for first in range(self.sp):
            ranks = list(range(first, world, self.sp))
            group = dist.new_group(ranks)
            if rank in ranks:
                self.dp_group = group
        self.sp_dp_group = dist.new_group(list(range(world)))
        self.world = world
        for alone in range(world):  # model (tensor) parallel groups: one rank each
            group = dist.new_group([alone])
            if alone == rank:
                self.mp_group = group

    def get_sequence_parallel_group(self):
        return self.sp_group

    def get_sequence_parallel_world_size(self):
        return self.sp

    def get_sequence_parallel_rank(self):
        return self.rank % self.sp

    def get_sequence_data_parallel_group(self):
        return self.sp_dp_group

    def get_sequence_data_parallel_world_size(self):
        return self.world

    def get_sequence_data_parallel_rank(self):
        return self.rank

    def get_data_parallel_group(self):
        return self.dp_group

    def get_data_parallel_world_size(self):
        return self.dp

    def get_data_parallel_rank(self):
        return self.rank // self.sp

    def get_model_parallel_world_size(self):
        return 1

    def get_model_parallel_rank(self):
        return 0

    def get_model_parallel_group(self):
        return self.mp_group

    get_tensor_model_parallel_world_size = get_model_parallel_world_size
    get_tensor_model_parallel_rank = get_model_parallel_rank
    get_tensor_model_parallel_group = get_model_parallel_group


def _engine_prerequisites():
    """What deepspeed.initialize needs around it: LOCAL_RANK, which a
    launcher sets (one device per simulated rank), and two spellings of
    PyTorch the stand-in torch lacks and real PyTorch has:
    `torch.distributed.distributed_c10d` (the module torch.distributed
    re-exports; deepspeed.comm looks up get_global_rank and
    _coalescing_manager there) and `Tensor.is_sparse` (False for every
    dense tensor; the engine asks it of every gradient)."""
    os.environ.setdefault("LOCAL_RANK", "0")
    if not hasattr(torch.distributed, "distributed_c10d"):
        torch.distributed.distributed_c10d = torch.distributed
        sys.modules.setdefault("torch.distributed.distributed_c10d", torch.distributed)
    if "is_sparse" not in vars(torch.Tensor):
        torch.Tensor.is_sparse = property(lambda self: False)
    _utils_op_as_torch()


def _engine_with(component):
    """(deepspeed, deepspeed.comm, the module `component`) with what
    deepspeed.initialize needs around it; a tree without that module has no
    such component."""
    deepspeed, dist = _deepspeed()
    try:
        module = importlib.import_module(component)
    except ImportError as missing:
        raise ComponentAbsent(f"this DeepSpeed tree has no {component} ({missing})") from None
    _engine_prerequisites()
    return deepspeed, dist, module


def _utils_op_as_torch():
    """Trees before mid-2023 JIT-compile DeepSpeed's `utils` C++ op for the
    engine's buckets; its flatten and unflatten are PyTorch's own
    (csrc/utils/flatten_unflatten.cpp wraps torch::utils'
    flatten_dense_tensors and unflatten_dense_tensors), which the stand-in
    models: the op is those two functions."""
    try:
        from deepspeed.ops.op_builder import UtilsBuilder
    except ImportError:
        return
    from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors
    op = types.SimpleNamespace(flatten=_flatten_dense_tensors,
                               unflatten=_unflatten_dense_tensors)
    UtilsBuilder.load = lambda self, verbose=True: op


def _gather_zero_gradients(optimizer, dist):
    """ZeRO 1/2 keep this rank's partition of each parameter group's flat
    gradient (`averaged_gradients[i]`, the pieces of the parameters in its
    partition, what step() applies): gathered over the group's
    data-parallel ranks and cut back into the parameters (the flat buffer
    holds `bit16_groups[i]` in order, padded at the end), as `.grad`, in
    the parameter's dtype as PyTorch requires of a `.grad` (2023 trees keep
    a bf16 model's partition in fp32)."""
    for i, params in enumerate(optimizer.bit16_groups):
        pieces = optimizer.averaged_gradients[i]
        size = int(optimizer.partition_size[i])
        flat = torch.cat([g.reshape(-1) for g in pieces]) if pieces else torch.zeros(0)
        if flat.numel() < size:
            flat = torch.cat([flat, torch.zeros(size - flat.numel(), dtype=flat.dtype)])
        group = optimizer.real_dp_process_group[i]
        parts = [torch.zeros(size, dtype=flat.dtype) for _ in range(dist.get_world_size(group=group))]
        dist.all_gather(parts, flat, group=group)
        whole, offset = torch.cat(parts), 0
        for p in params:
            p.grad = whole[offset:offset + p.numel()].view(p.shape).to(p.dtype)
            offset += p.numel()


def _engine_backward(engine, stage):
    """(backward, reduction) of the engine: engine.backward, whose reduction
    is inside it, except on the 2023 trees whose engine.backward logs the
    loss through `.item()` first (written when a Python float of a symbolic
    value stopped tracing; .item() now gives a SymbolicFloat, and the
    steps stay apart, as measured): there its remaining steps are run one by one, the ZeRO
    optimizer's backward (loss scaling, bucket set-up) or the plain one, then
    engine.allreduce_gradients(), what engine.backward runs after its log."""
    # The class's text: engine.backward is wrapped (instrument_w_nvtx) by a
    # function that hides its own.
    text = inspect.getsource(type(engine))
    body = text[text.index("    def backward("):]
    body = body[:body.find("\n    def ", 1)]
    if ".item()" not in body.split("if self.monitor")[0]:
        return engine.backward, lambda: None
    return (engine.optimizer.backward if stage else None), engine.allreduce_gradients


def _engine_step(engine, stage, dist):
    """The entry's (backward, finalize_grads) for a model the engine trains:
    the engine's backward, then its reduction where that runs apart, and
    under ZeRO 1 and 2 the optimizer's gradient partitions gathered as
    `.grad` (what is checked)."""
    backward, reduce = _engine_backward(engine, stage)

    def finalize_grads():
        reduce()
        if stage:
            _gather_zero_gradients(engine.optimizer, dist)
    return backward, finalize_grads


CLIPPING = 1.0  # the config's gradient_clipping of the recipes' `clip` option


@contextlib.contextmanager
def _clip_norms_recorded(norms):
    """While inside: each norm deepspeed.runtime.engine's clip_grad_norm_
    (ZeRO 0's clipping) returns, appended to `norms` (the engine discards
    it)."""
    import deepspeed.runtime.engine as engine_module
    clip = engine_module.clip_grad_norm_

    def recording(*args, **kwargs):
        norms.append(clip(*args, **kwargs))
        return norms[-1]
    engine_module.clip_grad_norm_ = recording
    try:
        yield
    finally:
        engine_module.clip_grad_norm_ = clip


def _clipping_norm(engine, norms):
    """The norm the engine's step clipped by: the last one clip_grad_norm_
    returned (`norms`), else the ZeRO optimizer's _global_grad_norm: a
    tensor, or a symbolic Python float (the unfused FP16/BF16 optimizer's
    get_global_norm: math.sqrt of the groups' squares); the initial 0. is no
    norm."""
    if norms:
        return norms[-1]
    norm = getattr(engine.optimizer, "_global_grad_norm", None)
    if not isinstance(norm, (torch.Tensor, *_SYMBOLIC)):
        raise RecipeError("the engine's step computed no gradient norm to clip by")
    return norm


def _engine_norm_and_step(engine):
    """The entry's (grad_norm, step) for an engine configured with gradient
    clipping: engine.step(), which computes the global gradient norm,
    clips by it and steps (ZeRO inside its optimizer's step, ZeRO 0 by
    deepspeed.runtime.utils.clip_grad_norm_ in _take_model_step). The norm
    is the one it clipped by (_clipping_norm). The step itself has then
    run; `step` has nothing left to do and the updated parameters are
    checked."""
    def grad_norm():
        norms = []
        with _clip_norms_recorded(norms):
            engine.step()
        return _clipping_norm(engine, norms)

    return grad_norm, lambda: None


@options(stage=(0, 1, 2))
def ulysses_engine():
    """UlyssesLayer trained by DeepSpeedEngine (deepspeed.initialize with
    an SGD optimizer, ZeRO `stage`, fp32, and a SequenceParallelMPU): each
    rank takes its data-parallel slice of the batch and its
    sequence-parallel slice of that; the loss is the sum over the sequence
    of the mean over the batch. The backward pass is the engine's own
    (`engine.backward(loss)`, with the gradient reduction it runs: ZeRO 0's
    bucketed all-reduce, ZeRO 1's reduce_gradients, ZeRO 2's reduction
    hooks), so every weight's gradient must be the reference's: summed over
    the sequence-parallel ranks and averaged over the data-parallel ones.
    Batch-first q, k, v where the tree takes batch_dim_idx (batch 2); older
    trees' all-to-all handles a sequence-first batch of one only, so there
    each data-parallel rank gets one sequence. Under ZeRO 1 and 2 the
    gradients checked are the partitions the optimizer keeps for step(),
    gathered (_gather_zero_gradients)."""
    stage = option("stage")
    deepspeed, dist = _deepspeed()
    from deepspeed.sequence import layer
    if not hasattr(layer, "DistributedAttention"):
        raise ComponentAbsent("this DeepSpeed tree has no "
                              "deepspeed.sequence.layer.DistributedAttention")
    _engine_prerequisites()
    mpu = SequenceParallelMPU(dist, parallel())
    batch_first = _takes_batch_dim(layer.DistributedAttention(LocalAttention(), mpu.sp_group))
    attention = layer.DistributedAttention(LocalAttention(batch_first), mpu.sp_group,
                                           scatter_idx=2, gather_idx=1 if batch_first else 0)
    sizes = _sizes()
    model = UlyssesLayer(_Call(attention, batch_first), sizes)
    batch = 2 if batch_first else asked().dp
    batch_dim, seq_dim = (0, 1) if batch_first else (1, 0)
    if batch % mpu.dp:
        raise RecipeError(f"a batch of {batch} does not split over {mpu.dp} data-parallel ranks")
    config = {"train_micro_batch_size_per_gpu": batch // mpu.dp,
              "gradient_accumulation_steps": 1,
              # Buckets at the toy sizes' scale: the defaults (5e8 elements)
              # would be buffers of that many symbolic values.
              "zero_optimization": {"stage": stage, "reduce_bucket_size": 64,
                                    "allgather_bucket_size": 64},
              "zero_allow_untested_optimizer": True}
    engine, _, _, _ = deepspeed.initialize(model=model, mpu=mpu, config=config,
                                           optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
    # Logging off: it reads the loss into a Python float for the logs only
    # (mid-2024 trees' monitor config counts comet as enabled when absent).
    if hasattr(engine, "monitor"):
        engine.monitor.enabled = False
    x = _layer_input(sizes, batch, batch_first)
    local = x.chunk(mpu.dp, batch_dim)[mpu.get_data_parallel_rank()]
    local = local.chunk(mpu.sp, seq_dim)[mpu.get_sequence_parallel_rank()]

    def loss(out):
        return (out * out).sum() / out.shape[batch_dim]

    backward, finalize_grads = _engine_step(engine, stage, dist)
    return {"model": engine, "inputs": (local.detach().requires_grad_(),), "loss": loss,
            "backward": backward, "finalize_grads": finalize_grads,
            "tensor_parallel_group": mpu.sp_group, "data_parallel_group": mpu.dp_group}


ulysses_engine_zero1 = variant(ulysses_engine, stage=1)


# ---- Mixture of experts: deepspeed.moe.layer.MoE under DeepSpeedEngine ----


class MoEModel(torch.nn.Module):
    """A model around one deepspeed.moe.layer.MoE: its output (the gate's
    auxiliary loss is left out: DeepSpeed computes it per expert-parallel
    group of tokens, GShard's definition, which no single-device run on the
    whole batch reproduces)."""

    def __init__(self, moe):
        super().__init__()
        self.moe = moe

    def forward(self, x):
        return self.moe(x)[0]


def _moe_layer(experts, ep, k):
    """MoE over `experts` experts in `ep`-way expert parallelism, each a
    Linear(hidden, hidden), routed top-`k` by its gate. Nothing is dropped
    (the capacity holds every token, so a token's output does not depend on
    how the batch is split into groups: the single-device reference routes
    the same) and the gate is deterministic (no random token selection, no
    noise: shardproof would compare different draws)."""
    from deepspeed.moe.layer import MoE
    hidden = 2
    wanted = {"num_experts": experts, "ep_size": ep, "k": k,
              "capacity_factor": float(experts), "eval_capacity_factor": float(experts),
              "min_capacity": 0, "noisy_gate_policy": None, "drop_tokens": True,
              "use_rts": False, "top2_2nd_expert_sampling": False}
    taken = inspect.signature(MoE.__init__).parameters
    if k == 2 and "top2_2nd_expert_sampling" not in taken:
        raise ComponentAbsent("this tree's top-2 gate always samples its second expert "
                              "with Gumbel noise (no top2_2nd_expert_sampling)")
    arguments = {name: value for name, value in wanted.items() if name in taken}
    return MoE(hidden, torch.nn.Linear(hidden, hidden), **arguments), hidden


def _moe_optimizer_groups(model):
    """The optimizer's parameter groups: experts apart from the rest, as
    DeepSpeed requires under ZeRO (split_params_into_different_moe_groups_for_optimizer)."""
    from deepspeed.moe import utils
    groups = [{"params": list(model.parameters()), "name": "parameters"}]
    split = getattr(utils, "split_params_into_different_moe_groups_for_optimizer", None)
    return split(groups) if split else groups


def _expert_names(local, ep_rank):
    """Local expert i on expert-parallel rank e is the reference's expert
    e * local + i."""
    pattern = re.compile(r"(deepspeed_experts\.)(\d+)(\.|$)")

    def rename(name):
        return pattern.sub(lambda m: f"{m[1]}{ep_rank * local + int(m[2])}{m[3]}", name)
    return rename


@options(stage=(0, 1, 2), topk=(1, 2), local_experts=(1, 2), clip=(0, 1), bf16=(0, 1))
def moe_engine():
    """deepspeed.moe.layer.MoE trained by DeepSpeedEngine (SGD, fp32, ZeRO
    `stage`): `--ep E` experts-parallel ranks, `--dp D` more data-parallel
    replicas of every expert (DeepSpeed's expert-data-parallel group); every
    rank is data parallel for the gate and takes its slice of the batch, one
    token each. The loss is the mean over the batch. The engine's own
    backward and gradient reduction run (the non-expert gradients averaged
    over all ranks, the experts' over their expert-data-parallel group and
    scaled as the data-parallel average), so every gradient must be the
    reference's: the same MoE on one device over the whole batch."""
    stage, k, local = option("stage"), option("topk"), option("local_experts")
    clip, bf16 = option("clip"), option("bf16")
    deepspeed, dist, _ = _engine_with("deepspeed.moe.layer")
    layout, world = parallel(), torch.distributed.get_world_size()
    moe, hidden = _moe_layer(asked().ep * local, layout.ep, k)
    model = MoEModel(moe)
    tokens = asked().world
    config = {"train_micro_batch_size_per_gpu": tokens // world,
              "gradient_accumulation_steps": 1,
              "zero_optimization": {"stage": stage, "reduce_bucket_size": 64,
                                    "allgather_bucket_size": 64},
              "zero_allow_untested_optimizer": True,
              "gradient_clipping": CLIPPING if clip else 0.0}
    if bf16:
        config["bf16"] = {"enabled": True}
    optimizer = torch.optim.SGD(_moe_optimizer_groups(model), lr=0.1)
    engine, _, _, _ = deepspeed.initialize(model=model, config=config, optimizer=optimizer)
    if hasattr(engine, "monitor"):
        engine.monitor.enabled = False
    x = torch.randn(tokens, hidden, dtype=torch.bfloat16 if bf16 else torch.float32)
    local_x = x.chunk(world, 0)[torch.distributed.get_rank()]

    def loss(out):
        return (out * out).sum() / out.shape[0]

    backward, finalize_grads = _engine_step(engine, stage, dist)
    entry = {"model": engine, "inputs": (local_x.detach().requires_grad_(),), "loss": loss,
             "backward": backward, "finalize_grads": finalize_grads,
             "parameter_names": _expert_names(local, layout.coordinate("ep"))}
    if clip:
        entry["grad_norm"], entry["step"] = _engine_norm_and_step(engine)
    return entry


def _experts_to_pick_from(layout, values):
    """moe_engine rows whose gate has at least `topk` experts."""
    return layout.ep * values["local_experts"] >= values["topk"]


# ---- Pipeline parallelism: deepspeed.pipe.PipelineModule under PipelineEngine ----

PIPE_LAYERS = 4  # Linear(2, 2) layers, split evenly over the stages (one each past 4)
PIPE_MICRO_BATCHES = 2  # per data-parallel rank, of one sample each


def _pipe_loss(out, labels):
    """The loss of one micro-batch: the squared error against its labels."""
    return ((out - labels) ** 2).sum()


def _pipe_layers(tied):
    """PIPE_LAYERS Linear(2, 2) layers, or one per stage of the asked
    layout's pipeline if it has more stages (the reference, one stage, has
    as many); with `tied` the first and the last are one module without
    bias (TiedLayerSpec, as a tied embedding and output layer: the first and
    last stages each hold a copy, whose weight gradients the schedule
    all-reduces over the tied group)."""
    from deepspeed.pipe import LayerSpec, TiedLayerSpec
    count = max(PIPE_LAYERS, asked().pp)
    layers = [LayerSpec(torch.nn.Linear, 2, 2) for _ in range(count)]
    if tied:
        layers[0] = layers[-1] = TiedLayerSpec("tied", torch.nn.Linear, 2, 2, bias=False)
    return layers


class PipelineTrainBatch(torch.nn.Module):
    """One training step of a PipelineEngine: `engine.train_batch` over this
    data-parallel rank's micro-batches (of `micro_batch` samples each) of
    the global batch. The schedule's
    optimizer step runs where the schedule puts it, after the gradients it
    reduced are recorded (under ZeRO 1 the optimizer's partitions,
    gathered), since the step zeroes them; `finalize_grads` puts them back
    as `.grad` for the check, and the norm a clipping step clipped by is
    `grad_norm`. Returns the loss train_batch returns: the mean over the
    micro-batches and the data-parallel ranks, broadcast from the last
    stage. It requires grad only so that the driver calls the entry's
    backward, which has nothing left to do."""

    def __init__(self, engine, micro_batches, stage, dist, micro_batch=1):
        super().__init__()
        self.engine, self.micro_batches = engine, micro_batches
        self.micro_batch = micro_batch  # samples per micro-batch
        self.gradients, self.norms = None, []
        from deepspeed.runtime.pipe import schedule
        instructions = dict(type(engine)._INSTRUCTION_MAP)
        take_step = instructions[schedule.OptimizerStep]

        def step_after_recording(engine, **kwargs):
            if stage:
                _gather_zero_gradients(engine.optimizer, dist)
            # The gradients as the backward made them are kept; the step
            # (which may clip or zero them in place) works on copies.
            self.gradients = {p: p.grad for p in engine.module.parameters()
                              if p.grad is not None}
            for p, gradient in self.gradients.items():
                p.grad = gradient.clone()
            with _clip_norms_recorded(self.norms):
                take_step(engine, **kwargs)
        instructions[schedule.OptimizerStep] = step_after_recording
        engine._INSTRUCTION_MAP = instructions

    def forward(self, inputs, labels):
        first = self.engine.grid.data_parallel_id * self.micro_batches
        # Data, as a loader gives it (the harness's inputs require grad).
        inputs, labels = inputs.detach(), labels.detach()
        mine = list(zip(inputs.split(self.micro_batch), labels.split(self.micro_batch)))
        loss = self.engine.train_batch(data_iter=iter(mine[first:first + self.micro_batches]))
        return loss.clone().detach().requires_grad_()

    def finalize_grads(self):
        if self.gradients is None:
            raise RecipeError("the pipeline schedule ran no optimizer step")
        for p, gradient in self.gradients.items():
            p.grad = gradient

    def grad_norm(self):
        return _clipping_norm(self.engine, self.norms)


@options(stage=(0, 1), clip=(1, 0), tied=(0, 1), bf16=(0, 1))
def pipeline_engine():
    """PIPE_LAYERS Linear(2, 2) layers, one per stage past that (with `tied`,
    the first and the last one tied module: _pipe_layers) in a
    deepspeed.pipe.PipelineModule of
    `--pp` stages, `--dp` data-parallel replicas of each, trained one step
    (SGD, fp32, ZeRO `stage` 0 or 1, DeepSpeed's default gradient clipping
    at 1.0 unless clip=0) by PipelineEngine.train_batch over
    PIPE_MICRO_BATCHES micro-batches of one sample per data-parallel rank:
    the engine's own schedule (activations and gradients sent between
    stages, their shapes first), its reduction of the gradients over the
    data-parallel group, its gradient norm and its step. The reference is
    the same module in one stage over every micro-batch. Checked: the loss
    train_batch returns, every gradient after the schedule's reduction (a
    micro-batch's loss scaled by 1 / micro-batches, the replicas averaged),
    the norm the step clipped by, and every parameter after the step."""
    return _pipeline_engine(option("tied"))


@options(stage=(0, 1), clip=(1, 0), bf16=(0, 1))
def pipeline_engine_without_tied_reduction():
    """The twin: pipeline_engine with tied layers, its schedule's
    ReduceTiedGrads instruction skipped, so the first and the last stage
    each keep their own use's gradient of the tied weight: refuted (SP006
    on tied_modules.tied.weight)."""
    return _pipeline_engine(tied=True, tied_reduction=False)


def _pipeline_config(micro_batches, stage, clip):
    """The engine's config: micro-batches of one sample, ZeRO `stage` with
    buckets at the toy sizes' scale, DeepSpeed's default clipping or none."""
    return {"train_micro_batch_size_per_gpu": 1,
            "gradient_accumulation_steps": micro_batches,
            "zero_optimization": {"stage": stage, "reduce_bucket_size": 64,
                                  "allgather_bucket_size": 64},
            "zero_allow_untested_optimizer": True,
            "gradient_clipping": CLIPPING if clip else 0.0,
            # Logging only. From f74ea69ab (#6602) to 20f988ead (#7104),
            # v0.16.0 among them, the default (None) makes train_batch raise
            # TypeError (`global_steps % None`): a crash a user sees at once
            # and works around so; the training step is checked.
            "steps_per_print": 10 ** 9}


def _pipeline_engine(tied, tied_reduction=True):
    stage, clip = option("stage"), option("clip")
    deepspeed, dist, pipe = _engine_with("deepspeed.pipe")
    world, pp = torch.distributed.get_world_size(), parallel().pp
    if world % pp:
        raise RecipeError(f"{pp} pipeline stages do not divide a world of {world}")
    samples = PIPE_MICRO_BATCHES * asked().dp  # the global batch
    micro_batches = samples // (world // pp)  # this rank's
    module = pipe.PipelineModule(layers=_pipe_layers(tied), num_stages=pp,
                            loss_fn=_pipe_loss, partition_method="uniform")
    config = _pipeline_config(micro_batches, stage, clip)
    dtype = torch.float32
    if option("bf16"):  # the engine's BF16_Optimizer: bf16 weights, fp32 master copies
        config["bf16"], dtype = {"enabled": True}, torch.bfloat16
    inputs = (torch.randn(samples, 2, dtype=dtype), torch.randn(samples, 2, dtype=dtype))
    if world == 1 and not option("bf16"):
        return _single_device_step(module, inputs, clip)
    engine, _, _, _ = deepspeed.initialize(
        model=module, config=config, optimizer=torch.optim.SGD(module.parameters(), lr=0.1))
    if hasattr(engine, "monitor"):
        engine.monitor.enabled = False
    step = PipelineTrainBatch(engine, micro_batches, stage, dist)
    if not tied_reduction:
        from deepspeed.runtime.pipe import schedule
        engine._INSTRUCTION_MAP[schedule.ReduceTiedGrads] = lambda engine: None
    entry = {"model": step, "inputs": inputs,
             "loss": lambda loss: loss, "backward": lambda loss: None,
             "finalize_grads": step.finalize_grads,
             # The schedule has stepped: the parameters are checked as updated.
             "step": lambda: None}
    if clip:
        entry["grad_norm"] = step.grad_norm
    return entry


class _EngineNames(torch.nn.Module):
    """Holds the module as `module`, so that its parameters are named as
    under the engine (engine.module.N.weight)."""

    def __init__(self, module):
        super().__init__()
        self.module = module


class SingleDeviceTrainBatch(torch.nn.Module):
    """The reference of pipeline_engine: the same layers on one device in
    plain PyTorch, not the engine (the engine in one stage shares the
    engine's bugs: from fc4e73370 on it did not scale the loss by the
    micro-batch count, so one stage and many agreed on gradients
    `micro-batches` times the mean's). The loss is the mean over the
    micro-batches of their losses; the driver's backward; PyTorch's
    clip_grad_norm_ (the global norm) where the engine clips; SGD."""

    def __init__(self, module, clip):
        super().__init__()
        self.engine = _EngineNames(module)
        self.clip = clip
        self.optimizer = torch.optim.SGD(module.parameters(), lr=0.1)

    def forward(self, inputs, labels):
        # Data, as a loader gives it (the harness's inputs require grad).
        n = inputs.shape[0]
        losses = [_pipe_loss(self.engine.module(x), y)
                  for x, y in zip(inputs.detach().chunk(n), labels.detach().chunk(n))]
        return sum(losses) / n

    def grad_norm(self):
        return torch.nn.utils.clip_grad_norm_(self.engine.module.parameters(), CLIPPING)

    def step(self):
        self.optimizer.step()


def _single_device_step(module, inputs, clip):
    reference = SingleDeviceTrainBatch(module, clip)
    entry = {"model": reference, "inputs": inputs, "step": reference.step}
    if clip:
        entry["grad_norm"] = reference.grad_norm
    return entry


def _fp32_only(layout, values):
    return not values["bf16"]


# ---- What `shardproof scan ROOT` checks (`scan ROOT --list` prints it) ----
# 2-way sequence parallelism, the layer also with 2-way data parallelism;
# every option pairwise (shardproof_recipes.covering).
SCAN = [
    *covering(ulysses_attention, ("tp=2",)),
    *covering(ulysses_attention_layer, ("tp=2", "tp=2,dp=2")),
    # The engine's own backward (engine.backward) and reduction, ZeRO 0 and 1.
    *covering(ulysses_engine, ("tp=2", "tp=2,dp=2")),
    # MoE under the engine: every option with data parallelism alone (both
    # experts on every rank), and expert parallelism under ZeRO 0 and 2 (the
    # experts' own gradient scaling; each routing of the tokens a path).
    *covering(moe_engine, ("tp=1,dp=2",), _experts_to_pick_from),
    ("moe_engine", "tp=1,ep=2"),
    ("moe_engine", "tp=1,ep=2,stage=2"),
    # Clipping by the engine's gradient norm with experts spread over ranks.
    ("moe_engine", "tp=1,ep=2,clip=1"),
    # The pipeline engine's schedule, reduction, norm and step: two stages,
    # and two stages of two replicas. Not bf16: its BF16_Optimizer asserts
    # the norm is positive, a decision on a square root whose other side the
    # path explorer does not settle (every gradient, the norm and the step
    # are proved, in about 300 s; `check --option bf16=1` runs it).
    *covering(pipeline_engine, ("tp=1,pp=2", "tp=1,pp=2,dp=2"), _fp32_only),
]
