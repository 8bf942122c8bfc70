"""Entries that build nanotron's own parallel code (github.com/huggingface/
nanotron) from the tree given with `--python-path NANOTRON_ROOT/src`, as a
user of nanotron would: its ParallelContext for the process groups, its
tensor-parallel linear layers and embedding (sharded parameters marked with
nanotron's own metadata), its pipeline engine. Nothing of nanotron is copied
or patched; CUDA_DEVICE_MAX_CONNECTIONS=1 is what nanotron asks its users
to export for tensor parallelism.

    shardproof check tests/frameworks/other/nanotron_entries.py::FUNC \
        --world 2 --python-path NANOTRON_ROOT/src
"""
import os

import torch
import torch.distributed as dist
import torch.nn as nn

os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", "1")


def _context(tp=None, pp=1, dp=1):
    from nanotron.parallel import ParallelContext

    world = dist.get_world_size()
    tp = tp or world // (pp * dp)
    return ParallelContext(tensor_parallel_size=tp, pipeline_parallel_size=pp,
                           data_parallel_size=dp)


def _mode(name):
    from nanotron.parallel.tensor_parallel.enum import TensorParallelLinearMode

    return TensorParallelLinearMode[name]


def column_linear(mode="ALL_REDUCE"):
    ctx = _context()
    from nanotron.parallel.tensor_parallel.nn import TensorParallelColumnLinear

    layer = TensorParallelColumnLinear(4, 4, pg=ctx.tp_pg, mode=_mode(mode), bias=True)
    x = torch.randn(3, 2, 4, requires_grad=True)
    return {"model": layer, "inputs": (x,), "tensor_parallel_group": ctx.tp_pg}


def row_linear(mode="ALL_REDUCE"):
    ctx = _context()
    from nanotron.parallel.tensor_parallel.nn import TensorParallelRowLinear

    layer = TensorParallelRowLinear(4, 4, pg=ctx.tp_pg, mode=_mode(mode), bias=True)
    x = torch.randn(3, 2, 4, requires_grad=True)
    local = x.chunk(ctx.tp_pg.size(), -1)[dist.get_rank(ctx.tp_pg)]
    return {"model": layer, "inputs": (local,), "tensor_parallel_group": ctx.tp_pg}


class _ColumnRow(nn.Module):
    def __init__(self, pg, mode):
        super().__init__()
        from nanotron.parallel.tensor_parallel.nn import (
            TensorParallelColumnLinear, TensorParallelRowLinear)

        self.up = TensorParallelColumnLinear(4, 8, pg=pg, mode=mode, bias=False)
        self.down = TensorParallelRowLinear(8, 4, pg=pg, mode=mode, bias=False)

    def forward(self, x):
        return self.down(torch.nn.functional.silu(self.up(x)))


def column_row_mlp():
    ctx = _context()
    x = torch.randn(3, 2, 4, requires_grad=True)
    return {"model": _ColumnRow(ctx.tp_pg, _mode("ALL_REDUCE")), "inputs": (x,),
            "tensor_parallel_group": ctx.tp_pg}


def column_row_mlp_sequence_parallel():
    """REDUCE_SCATTER mode: nanotron's sequence parallelism, the input and
    the output split along dim 0. Two-dimensional ([tokens, hidden]): at
    one rank (the reference) nanotron's column backward returns the input's
    gradient flattened to two dimensions, which PyTorch's autograd rejects
    for a three-dimensional input ("returned an invalid gradient at index
    0 - got [8, 4] but expected shape compatible with [4, 2, 4]")."""
    ctx = _context()
    x = torch.randn(4, 4, requires_grad=True)
    local = x.chunk(ctx.tp_pg.size(), 0)[dist.get_rank(ctx.tp_pg)]
    return {"model": _ColumnRow(ctx.tp_pg, _mode("REDUCE_SCATTER")), "inputs": (local,),
            "tensor_parallel_group": ctx.tp_pg}


def embedding():
    ctx = _context()
    from nanotron.parallel.tensor_parallel.nn import TensorParallelEmbedding

    layer = TensorParallelEmbedding(num_embeddings=8, embedding_dim=4, pg=ctx.tp_pg,
                                    mode=_mode("ALL_REDUCE"))
    ids = torch.tensor([[0, 3, 5], [7, 2, 4]])
    return {"model": layer, "inputs": (ids,), "tensor_parallel_group": ctx.tp_pg}
