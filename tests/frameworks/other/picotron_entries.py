"""Entries that build picotron's own parallel code (github.com/huggingface/
picotron) from the tree given with `--python-path PICOTRON_ROOT`, as a user
of picotron would: its process-group manager set up by its own
setup_process_group_manager, its tensor-parallel layers, its Llama with
apply_tensor_parallel, its PipelineParallel stage with its 1F1B and AFAB
steps, its DataParallelBucket. Nothing of picotron is copied or patched;
the settings are picotron's own environment variables (FLASH_ATTEN=0 takes
its PyTorch attention and RMSNorm, as on a machine without flash-attn).

    shardproof check tests/frameworks/other/picotron_entries.py::FUNC \
        --world 2 --python-path PICOTRON_ROOT
"""
import os
import types

import torch
import torch.distributed as dist
import torch.nn as nn

os.environ.setdefault("FLASH_ATTEN", "0")
os.environ.setdefault("DTYPE", "float32")


def _setup(tp=None, pp=1, dp=1):
    import picotron.process_group_manager as pgm

    world = dist.get_world_size()
    tp = tp or world // (pp * dp)
    pgm.setup_process_group_manager(tp_size=tp, cp_size=1, pp_size=pp, dp_size=dp)
    return pgm.process_group_manager


def _config(layers=1, heads=4, vocab=8):
    # Heads divisible by a tensor-parallel size up to 4, the same at world 1
    # (the reference is the same model); rotary embeddings need an even
    # head size.
    hidden = 2 * heads
    # The fields of the Hugging Face LlamaConfig picotron's Llama reads.
    return types.SimpleNamespace(
        vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden,
        num_attention_heads=heads, num_key_value_heads=heads, num_hidden_layers=layers,
        max_position_embeddings=3, rms_norm_eps=1e-5, rope_theta=10000.0)


def _column_parallel_linear(**options):
    pg = _setup()
    from picotron.tensor_parallel.tensor_parallel import ColumnParallelLinear

    layer = ColumnParallelLinear(4, 4, gather_output=True, **options)
    x = torch.randn(2, 3, 4, requires_grad=True)
    return {"model": layer, "inputs": (x,), "tensor_parallel_group": pg.tp_group}


def column_parallel_linear():
    return _column_parallel_linear(bias=False)


def column_parallel_linear_async():
    return _column_parallel_linear(bias=False, async_all_reduce=True)


def column_parallel_linear_bias():
    """A bias picotron zeroes rather than slicing from a whole one: nothing
    says which shard of the reference's bias a rank holds."""
    return _column_parallel_linear(bias=True)


def row_parallel_linear():
    pg = _setup()
    from picotron.tensor_parallel.tensor_parallel import RowParallelLinear

    layer = RowParallelLinear(4, 4, bias=True)
    x = torch.randn(2, 3, 4, requires_grad=True)
    rank = dist.get_rank(pg.tp_group)
    # Row-parallel input: this rank's slice of the last dim.
    local = x.chunk(pg.tp_world_size, -1)[rank]
    return {"model": layer, "inputs": (local,), "tensor_parallel_group": pg.tp_group}


class _ColumnRow(nn.Module):
    def __init__(self):
        super().__init__()
        from picotron.tensor_parallel.tensor_parallel import ColumnParallelLinear, RowParallelLinear

        self.up = ColumnParallelLinear(4, 8, bias=False)
        self.down = RowParallelLinear(8, 4, bias=False)

    def forward(self, x):
        return self.down(torch.nn.functional.silu(self.up(x)))


def column_row_mlp():
    pg = _setup()
    x = torch.randn(2, 3, 4, requires_grad=True)
    return {"model": _ColumnRow(), "inputs": (x,), "tensor_parallel_group": pg.tp_group}


def vocab_parallel_embedding():
    pg = _setup()
    from picotron.tensor_parallel.tensor_parallel import VocabParallelEmbedding

    layer = VocabParallelEmbedding(8, 4)
    ids = torch.tensor([[0, 3, 5], [7, 2, 4]])
    return {"model": layer, "inputs": (ids,), "tensor_parallel_group": pg.tp_group}


def _llama(config):
    from picotron.model import Llama

    return Llama(config)


def llama_tensor_parallel():
    """picotron's Llama, made tensor-parallel by its apply_tensor_parallel
    (q/k/v, up/gate column-parallel, out/down row-parallel, a vocab-parallel
    embedding and a gathered column-parallel final projection)."""
    pg = _setup()
    from picotron.tensor_parallel.tensor_parallel import apply_tensor_parallel

    model = apply_tensor_parallel(_llama(_config()))
    ids = torch.tensor([[0, 3, 5], [7, 2, 4]])
    return {"model": model, "inputs": (ids,), "tensor_parallel_group": pg.tp_group}


class _Batches:
    """picotron's data loader as its train steps read it: `grad_acc_steps`
    and next() giving a micro-batch's input_ids, target_ids, position_ids."""

    def __init__(self, ids, targets, micro_batches):
        self.grad_acc_steps = micro_batches
        self._ids = ids.chunk(micro_batches)
        self._targets = targets.chunk(micro_batches)
        self._next = 0

    def __next__(self):
        i, self._next = self._next, self._next + 1
        ids = self._ids[i]
        return {"input_ids": ids, "target_ids": self._targets[i],
                "position_ids": torch.arange(ids.shape[1]).unsqueeze(0)}


class _PipelineStep(nn.Module):
    """One training step of picotron's pipeline schedule on this stage;
    returns the loss picotron logs (the mean over micro-batches, which
    only the last stage computes), broadcast from the last stage as a
    user's report of it would be."""

    def __init__(self, stage, schedule, shapes, micro_batches):
        super().__init__()
        self.stage, self.schedule = stage, schedule
        self.shapes, self.micro_batches = shapes, micro_batches

    def forward(self, ids, targets):
        loader = _Batches(ids, targets, self.micro_batches)
        loss = self.schedule(self.stage, loader, self.shapes, "cuda", torch.float32)
        loss = torch.tensor([float(loss)])
        import picotron.process_group_manager as pgm

        dist.broadcast(loss, src=pgm.process_group_manager.pp_last_rank,
                       group=pgm.process_group_manager.pp_group)
        return loss


def _pipeline(schedule_name, micro_batches=2):
    world = dist.get_world_size()
    pg = _setup(tp=1, pp=world)
    from picotron.pipeline_parallel import pipeline_parallel as pp

    config = _config(layers=2)
    stage = pp.PipelineParallel(_llama(config), config)
    ids = torch.tensor([[0, 3, 5], [7, 2, 4]])
    targets = torch.tensor([[3, 5, 1], [2, 4, 6]])
    shapes = (ids.shape[0] // micro_batches, ids.shape[1], config.hidden_size)
    step = _PipelineStep(stage, getattr(pp, schedule_name), shapes, micro_batches)

    def parameter_names(name):
        # Stage-local names as the whole model's: picotron's ModuleDict keys
        # are the global layer numbers already.
        return name.replace("stage.", "", 1)

    return {"model": step, "inputs": (ids, targets), "parameter_names": parameter_names}


def pipeline_1f1b():
    return _pipeline("train_step_pipeline_1f1b")


def pipeline_afab():
    return _pipeline("train_step_pipeline_afab")


def _data_parallel(tp):
    """picotron's DataParallelBucket over its data-parallel group (its
    gradient hooks, buckets, async all-reduce and post-backward callback),
    each rank taking its slice of the batch, the loss a mean over it; with
    tp > 1 the model inside is built of picotron's tensor-parallel layers.
    (A small model: the whole Llama's gradients under a batch split are
    more than the solver finishes in the default 20 s per obligation.)"""
    world = dist.get_world_size()
    tp = min(tp, world)  # the reference (world 1) is one rank
    pg = _setup(tp=tp, dp=world // tp)
    from picotron.data_parallel.data_parallel import DataParallelBucket

    model = DataParallelBucket(_ColumnRow())
    x = torch.randn(4, 3, 4)
    local = x.chunk(pg.dp_world_size)[pg.dp_rank]

    def loss(out):
        return (out * out).mean()

    return {"model": model, "inputs": (local,), "loss": loss,
            "tensor_parallel_group": pg.tp_group, "data_parallel_group": pg.dp_group}


def data_parallel_bucket():
    return _data_parallel(tp=1)


def data_parallel_bucket_tp():
    return _data_parallel(tp=2)
