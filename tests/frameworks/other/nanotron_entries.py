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


class _Layer(nn.Module):
    """A pipeline block's module: nanotron's blocks take and return dicts
    of named tensors."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        return {"x": torch.tanh(self.linear(x))}


class _Loss(nn.Module):
    def forward(self, x):
        return {"loss": (x * x).sum()}


class _PipelineModel(nn.Module):
    """Layers in nanotron PipelineBlocks, layer i on pipeline rank
    i * pp // layers (every block on rank 0 at one stage), and a loss block
    on the last stage, as nanotron's models assign their blocks."""

    def __init__(self, p2p, pp, layers=2):
        super().__init__()
        from nanotron.parallel.pipeline_parallel.block import PipelineBlock

        self.blocks = nn.ModuleList(
            PipelineBlock(p2p=p2p, module_builder=_Layer, module_kwargs={},
                          module_input_keys={"x"}, module_output_keys={"x"})
            for _ in range(layers))
        self.loss = PipelineBlock(p2p=p2p, module_builder=_Loss, module_kwargs={},
                                  module_input_keys={"x"}, module_output_keys={"loss"})
        for i, block in enumerate(self.blocks):
            block.build_and_set_rank(i * pp // layers)
        self.loss.build_and_set_rank(pp - 1)

    def forward(self, x):
        for block in self.blocks:
            x = block(x=x)["x"]
        return self.loss(x=x)["loss"]


class _EngineStep(nn.Module):
    """One train_batch_iter of a nanotron pipeline engine over the
    micro-batches of x (given on the first stage, TensorPointers to it on
    the others, as nanotron's data loader gives them); returns the summed
    micro-batch losses the engine outputs on the last stage, broadcast from
    there as a user's report of the loss would be."""

    def __init__(self, model, engine, pg, micro_batches, told=None):
        super().__init__()
        self.model, self.engine, self.pg, self.micro_batches = model, engine, pg, micro_batches
        self.told = micro_batches if told is None else told  # nb_microbatches the engine is given

    def forward(self, x):
        from nanotron.parallel.pipeline_parallel.tensor_pointer import TensorPointer

        first = dist.get_rank(self.pg) == 0
        batch = [{"x": chunk if first else TensorPointer(group_rank=0)}
                 for chunk in x.chunk(self.micro_batches)]
        outputs = self.engine.train_batch_iter(self.model, pg=self.pg, batch=batch,
                                               nb_microbatches=self.told,
                                               grad_accumulator=None)
        last = dist.get_rank(self.pg) == self.pg.size() - 1
        loss = sum(o["loss"] for o in outputs) if last else torch.zeros(())
        loss = loss.reshape(1).clone()
        dist.broadcast(loss, src=dist.get_global_rank(self.pg, self.pg.size() - 1),
                       group=self.pg)
        return loss


def _pipeline(engine_name, micro_batches=2, told=None):
    # The same at every world (the loss is each micro-batch's over their
    # count); nanotron's 1F1B asserts at least pp - 1 of them.
    world = dist.get_world_size()
    ctx = _context(tp=1, pp=world)
    from nanotron.parallel.pipeline_parallel import engine
    from nanotron.parallel.pipeline_parallel.p2p import P2P

    p2p = P2P(ctx.pp_pg, device=torch.device("cuda"))
    model = _PipelineModel(p2p, ctx.pp_pg.size())
    step = _EngineStep(model, getattr(engine, engine_name)(), ctx.pp_pg, micro_batches, told)
    x = torch.randn(4, 4)
    return {"model": step, "inputs": (x,)}


def pipeline_afab():
    return _pipeline("AllForwardAllBackwardPipelineEngine")


def pipeline_1f1b():
    return _pipeline("OneForwardOneBackwardPipelineEngine")


def pipeline_afab_count_is_world():
    """A user's bug, not nanotron's: the engine is told the world size as
    the number of micro-batches (2 run), so each micro-batch's loss is
    divided by 2 at world 2 and by 1 in the reference: refuted."""
    return _pipeline("AllForwardAllBackwardPipelineEngine", told=dist.get_world_size())
