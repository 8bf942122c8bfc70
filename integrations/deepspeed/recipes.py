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
interpreter. Debian 12 ships pydantic 1.10, which only trees that still carry
deepspeed/pydantic_v1.py accept; newer trees need pydantic>=2. Such
requirements may be put in folders named by DEEPSPEED_PYTHONPATH
(os.pathsep-separated, searched before the system's site-packages).

Ulysses sequence parallelism (deepspeed.sequence.layer.DistributedAttention)
runs over a sequence-parallel process group; here that group is the "tp"
axis of the layout (shardproof_recipes.parallel()): `--tp N` (or `--world N`)
makes N-way sequence parallelism, and the other axes (data parallelism, ...)
hold replicas. The group is returned as the entry's
`tensor_parallel_group`.
"""
import inspect
import math
import os
import sys

import torch

from shardproof_recipes import RecipeError, framework_root, parallel


def _requirements(root):
    """DeepSpeed's own requirements, before its import: a missing one would
    otherwise surface as an opaque value deep inside deepspeed/__init__."""
    extra = [p for p in os.environ.get("DEEPSPEED_PYTHONPATH", "").split(os.pathsep) if p]
    for folder in reversed(extra):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    try:
        import pydantic
    except ImportError:
        raise RecipeError("DeepSpeed needs pydantic, which this interpreter lacks: "
                          "name a folder that holds it in DEEPSPEED_PYTHONPATH") from None
    shim = os.path.join(root, "deepspeed", "pydantic_v1.py")
    if not str(getattr(pydantic, "VERSION", "2")).startswith("2") and not os.path.exists(shim):
        raise RecipeError(f"this DeepSpeed tree needs pydantic>=2, the interpreter has "
                          f"{pydantic.VERSION}: name a folder that holds pydantic 2 in "
                          "DEEPSPEED_PYTHONPATH")


def _deepspeed():
    """The deepspeed package, with deepspeed.comm set up on the simulated world
    (torch.distributed is already initialised: DeepSpeed wraps it)."""
    root = framework_root("DEEPSPEED_ROOT", "deepspeed")
    _requirements(root)
    import deepspeed
    import deepspeed.comm as dist
    dist.init_distributed(dist_backend="nccl", auto_mpi_discovery=False, verbose=False)
    return deepspeed, dist


def _sequence_parallel_group(dist, layout):
    """deepspeed.comm.new_group for every tp-axis group (every rank creates
    every group, in the same order, as torch.distributed requires); returns
    this rank's."""
    world = torch.distributed.get_world_size()
    tp = layout.tp if world > 1 else 1
    mine = None
    for first in range(0, world, tp):
        ranks = list(range(first, first + tp))
        group = dist.new_group(ranks)
        if torch.distributed.get_rank() in ranks:
            mine = group
    return mine, tp


class LocalAttention(torch.nn.Module):
    """softmax(Q K^T / sqrt(d)) V over [seq, batch, heads, head_dim], in plain
    PyTorch: what DistributedAttention runs on the whole sequence and this
    rank's heads."""

    def forward(self, q, k, v, *args, **kwargs):
        q, k, v = (t.permute(1, 2, 0, 3) for t in (q, k, v))  # [b, h, s, d]
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        context = torch.matmul(torch.softmax(scores, dim=-1), v)
        return context.permute(2, 0, 1, 3)  # [s, b, h, d]


class _Call(torch.nn.Module):
    """DistributedAttention called as this tree's forward expects: newer
    trees take `batch_dim_idx` (1: [seq, batch, ...]) after q, k, v."""

    def __init__(self, attention):
        super().__init__()
        self.attention = attention
        self._batch_dim = "batch_dim_idx" in inspect.signature(attention.forward).parameters

    def forward(self, q, k, v):
        if self._batch_dim:
            return self.attention(q, k, v, 1)
        return self.attention(q, k, v)


def _distributed_attention(local):
    deepspeed, dist = _deepspeed()
    from deepspeed.sequence import layer
    if not hasattr(layer, "DistributedAttention"):
        raise RecipeError("this DeepSpeed tree has no deepspeed.sequence.layer.DistributedAttention")
    layout = parallel()
    group, sp = _sequence_parallel_group(dist, layout)
    attention = layer.DistributedAttention(local, group)  # scatter heads (2), gather sequence (0)
    return _Call(attention), group, layout, sp


def _sequence_slice(x, layout, sp):
    return x.chunk(sp, dim=0)[layout.coordinate("tp")] if sp > 1 else x


def _loss(out):
    return (out * out).sum()


SEQ, BATCH, HEADS, HEAD_DIM = 4, 2, 4, 2


def ulysses_attention():
    """Ulysses attention on q, k, v [seq, batch, heads, head_dim]; each rank
    gets its slice of the sequence and returns its slice of the output."""
    model, group, layout, sp = _distributed_attention(LocalAttention())
    q, k, v = (torch.randn(SEQ, BATCH, HEADS, HEAD_DIM) for _ in range(3))
    inputs = tuple(_sequence_slice(t, layout, sp) for t in (q, k, v))
    return {"model": model, "inputs": inputs, "loss": _loss,
            "tensor_parallel_group": group}
