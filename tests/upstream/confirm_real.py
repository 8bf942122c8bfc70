#!/usr/bin/env python3
"""Ground truth for the real-bug corpus (tests/upstream/bugs.toml) under REAL
PyTorch 2.x, not shardproof's stand-in.

For each bug, the parent tree (the buggy commit) and the fix tree are taken
from a bare mirror of the upstream repository with `git archive COMMIT PATHS |
tar -x` (never a checkout), and the bug's component (the same component and
configuration as the entry's recipe and layout) is run with the tree's own
code at the parallel degree N (N processes, gloo, CPU) and at degree 1. Every
run sets the same global weights (each full parameter drawn from a generator
seeded by its name; a rank takes its slice along the parameter's
partition_dim) and the same global inputs. Each rank's outputs, input
gradients and parameter gradients are compared with the matching slices of
the world-1 run:

    ID parent: differs (max |d| = ...)     expected at the buggy commit
    ID fix: matches (max |d| = ...)        expected at the fix commit

Exit status 0 only if every bug run differs at its parent and matches at its
fix (an open bug has no fix: only the parent is run).

    python confirm_real.py --bugs tests/upstream/bugs.toml --mirrors /work/.mirror [--only ID]
    python confirm_real.py --only ID --tree DIR --role parent   # a tree already extracted

The interpreter must have torch 2.x with gloo (and, for DeepSpeed, pydantic 2,
py-cpuinfo, psutil, hjson, tqdm); --python names another interpreter for the
spawned workers. Megatron's CUDA calls are patched at run time in the workers
only (torch.cuda.current_device() -> "cpu", Tensor.cuda() -> self, the CUDA
RNG tracker's fork() -> no-op, use_cpu_initialization=True and
perform_initialization=True in the configs); the trees are never edited.
"""
import argparse
import contextlib
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

# ---------------------------------------------------------------------------
# The bugs: the commits and the builder that runs each one's component.
# bugs.toml, where it lists the id, may override the commits (parent/seen_at,
# fix/fixed_in).

REPOSITORIES = {
    "megatron": ("NVIDIA+Megatron-LM", ["megatron"]),
    "deepspeed": ("deepspeedai+DeepSpeed", ["deepspeed", "accelerator", "op_builder", "version.txt"]),
}

BUGS = {
    "deepspeed-ulysses-batch": dict(
        framework="deepspeed", builder="ulysses_attention", world=2,
        parent="ade7149db491cec71d49814013f1be2d7041dbdc",
        fix="ffe0af23575c4f03a07408eacfc50b1a58781429"),
    "megatron-frozen-weight-input-grad": dict(
        framework="megatron", builder="column_parallel_linear_frozen", world=2,
        parent="16b67ff547ebe2145ada9776c02144243e2c2056",
        fix="5fffdfc737f14297bc3781dfc9e273199d1df52e"),
    "megatron-cross-entropy-label-smoothing": dict(
        framework="megatron", builder="vocab_parallel_cross_entropy_label_smoothing", world=2,
        parent="990ced9407ec86c9f468faefff553ec511cbf809",
        fix="d6fc45bb4c87cddb2ee542c6f614e51b7fcc5e29"),
    "megatron-reduce-noncontiguous": dict(
        framework="megatron", builder="tp_mappings_noncontiguous", world=2,
        parent="59494787f03a31f0133ce4917160b3a3982c8451",
        fix="97a12b0e8f2040234ec45c85c17532be0c190bfd"),
    "megatron-mla-kv-pos-emb-grad": dict(
        framework="megatron", builder="mla_self_attention", world=2,
        parent="d98e8a64dd", fix=None),
    "megatron-ddp-cp-grad-scaling": dict(
        framework="megatron", builder="mlp_ddp_cp", world=2,
        parent="ce2b51999bc7a60da75e5ab4db7608e45aeaaf41",
        fix="3bdcbbbe5d2a455a75e28969be7250cd4bd27bae"),
    "deepspeed-zero0-ulysses-grad-scale": dict(
        framework="deepspeed", builder="ulysses_engine", world=2,
        parent="af4356b348c64d227d08cdc192ac7c053a0c10b6",
        fix="6b6d64185708e194ad06a8b6e08a15af3f59d1d4"),
    "megatron-router-z-loss-tp-scaling": dict(
        framework="megatron", builder="moe_router_z_loss", world=2,
        parent="db3a3f79d1cda60ea4b3db0ceffcf20c5760e11d",
        fix="cac8d1a3f08cc6291b3abb8b01bc2e97fbac3a0a"),
}

# Listed in bugs.toml, not run here, and why.
NOT_RUN = {
    "megatron-moe-a2a-local-expert-order":
        "needs tp=2 and ep=2 together (world 4): the wrong order is [tp, ep, local].T.ravel() "
        "against [tp*ep, local].T.ravel(), the same whenever tp or ep is 1; this script keeps "
        "to 2 worker processes",
}

RELATIVE_TOLERANCE = 1e-4  # |d| / max |reference| of the quantity, float32


# ===========================================================================
# Worker side: runs inside a spawned process with the tree on sys.path.
# ===========================================================================

def _seed_of(name):
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "little")


def _full_tensor(name, shape):
    import torch
    g = torch.Generator().manual_seed(_seed_of(name))
    return torch.randn(*shape, generator=g) * 0.5


class Shard:
    """How a rank's tensor is a slice of the world-1 tensor: `chunk(parts,
    dim)[index]`, or the whole tensor (parts == 1)."""

    def __init__(self, dim=0, parts=1, index=0):
        self.dim, self.parts, self.index = dim, parts, index

    def take(self, full):
        return full.chunk(self.parts, dim=self.dim)[self.index] if self.parts > 1 else full

    def as_dict(self):
        return {"dim": self.dim, "parts": self.parts, "index": self.index}


WHOLE = None


def _patch_torch_for_cpu():
    """CUDA calls of the trees on a machine without a GPU: devices become the
    CPU, .cuda() a no-op. Nothing of the trees is edited."""
    import torch
    torch.cuda.current_device = lambda: "cpu"
    torch.Tensor.cuda = lambda self, *a, **k: self
    torch.nn.Module.cuda = lambda self, *a, **k: self
    torch.cuda.set_device = lambda *a, **k: None
    torch.cuda.synchronize = lambda *a, **k: None
    torch.cuda.nvtx.range_push = lambda *a, **k: None
    torch.cuda.nvtx.range_pop = lambda *a, **k: None
    torch.cuda.device_count = lambda: 1

    # Factories called with device="cuda" (the causal mask of newest trees)
    # make CPU tensors.
    def on_cpu(factory):
        def make(*args, **kwargs):
            device = kwargs.get("device")
            if device is not None and str(device).startswith("cuda"):
                kwargs["device"] = "cpu"
            return factory(*args, **kwargs)
        make.__wrapped__ = factory
        return make

    for name in ("ones", "zeros", "empty", "full", "arange", "tensor", "rand", "randn",
                 "ones_like", "zeros_like", "empty_like", "full_like", "eye", "linspace"):
        setattr(torch, name, on_cpu(getattr(torch, name)))
    # Dtypes newer than this torch that newest trees name at import time only
    # (MXFP8 inference paths not taken here).
    for name in ("float8_e8m0fnu", "float4_e2m1fn_x2"):
        if not hasattr(torch, name):
            setattr(torch, name, torch.uint8)
    os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", "1")
    # A private helper of torch's elastic agent (gone after torch 2.3) that
    # 2024 DeepSpeed's elastic agent imports at import time; not used here.
    try:
        from torch.distributed.elastic.agent.server import api as elastic_api
        if not hasattr(elastic_api, "_get_socket_with_port"):
            def _get_socket_with_port():
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.bind(("127.0.0.1", 0))
                sock.listen(0)
                return sock
            elastic_api._get_socket_with_port = _get_socket_with_port
    except ImportError:
        pass


def _accepts(callable_, name):
    import inspect
    try:
        return name in inspect.signature(callable_).parameters
    except (TypeError, ValueError):
        return False


def _known_fields(cls, values):
    import dataclasses
    known = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in values.items() if k in known}


# ---- Megatron ----

def _megatron(world, tp=None, cp=1, ep=1):
    """Megatron's parallel state on the gloo world; the CUDA RNG tracker's
    fork() made a no-op (dropout is 0 everywhere here)."""
    from megatron.core import parallel_state
    from megatron.core.tensor_parallel import random as mrandom
    tp = world // (cp * ep) if tp is None else tp
    kwargs = {"tensor_model_parallel_size": tp, "pipeline_model_parallel_size": 1}
    if cp > 1:
        kwargs["context_parallel_size"] = cp
    if ep > 1:
        kwargs["expert_model_parallel_size"] = ep
    parallel_state.initialize_model_parallel(**kwargs)
    for cls_name in ("CudaRNGStatesTracker",):
        cls = getattr(mrandom, cls_name, None)
        if cls is not None:
            cls.fork = lambda self, *a, **k: contextlib.nullcontext()
    tracker = mrandom.get_cuda_rng_tracker()
    tracker.fork = lambda *a, **k: contextlib.nullcontext()
    return parallel_state


def _model_parallel_config(tp, **extra):
    from megatron.core.model_parallel_config import ModelParallelConfig
    values = dict(tensor_model_parallel_size=tp, sequence_parallel=False,
                  use_cpu_initialization=True, perform_initialization=True,
                  gradient_accumulation_fusion=False)
    values.update(extra)
    return ModelParallelConfig(**_known_fields(ModelParallelConfig, values))


def _megatron_param_shards(model, tp, tp_rank):
    """Shard of each parameter by Megatron's own attributes
    (tensor_model_parallel, partition_dim, partition_stride)."""
    shards = {}
    for name, p in model.named_parameters():
        if getattr(p, "tensor_model_parallel", False) and tp > 1:
            stride = getattr(p, "partition_stride", 1)
            if stride != 1:
                raise RuntimeError(f"{name}: partition_stride {stride} not handled")
            shards[name] = Shard(p.partition_dim, tp, tp_rank)
        else:
            shards[name] = WHOLE
    return shards


def _tp_rank_size():
    from megatron.core import parallel_state
    return (parallel_state.get_tensor_model_parallel_world_size(),
            parallel_state.get_tensor_model_parallel_rank())


def build_column_parallel_linear_frozen(world):
    """ColumnParallelLinear(4 -> 8, bias, gather_output=False) whose weight is
    frozen (LinearWithFrozenWeight), async all-reduce of the input gradient
    on (Megatron's training default without SP)."""
    import torch
    _megatron(world)
    from megatron.core import tensor_parallel
    tp, rank = _tp_rank_size()
    config = _model_parallel_config(tp, async_tensor_model_parallel_allreduce=True)
    layer = tensor_parallel.ColumnParallelLinear(4, 8, config=config, init_method=torch.nn.init.normal_,
                                                 bias=True, gather_output=False)
    layer.weight.requires_grad_(False)
    return dict(model=layer, inputs=[("x", (4, 2, 4), WHOLE)],
                params=_megatron_param_shards(layer, tp, rank),
                outputs=[Shard(-1, tp, rank)])


def build_vocab_parallel_cross_entropy_label_smoothing(world):
    """A ColumnParallelLinear output layer (4 -> vocab 8) and the tree's
    vocab_parallel_cross_entropy with label_smoothing=0.1; per-token losses."""
    import torch
    _megatron(world)
    from megatron.core import tensor_parallel
    tp, rank = _tp_rank_size()
    config = _model_parallel_config(tp)
    output_layer = tensor_parallel.ColumnParallelLinear(4, 8, config=config, init_method=torch.nn.init.normal_,
                                                        bias=False, gather_output=False)
    target = torch.tensor([[0, 7], [5, 2], [3, 4], [6, 1]])

    class LossHead(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.output_layer = output_layer

        def forward(self, hidden):
            logits, _ = self.output_layer(hidden)
            return tensor_parallel.vocab_parallel_cross_entropy(logits, target, label_smoothing=0.1)

    model = LossHead()
    return dict(model=model, inputs=[("hidden", (4, 2, 4), WHOLE)],
                params=_megatron_param_shards(model, tp, rank), outputs=[WHOLE])


def build_tp_mappings_noncontiguous(world):
    """shardproof's tp_mappings_noncontiguous recipe at tp=world, sp off:
    every activation mapping of the tree's tensor_parallel/mappings.py
    (copy_to, gather_from, scatter_to, reduce_from the tensor-parallel
    region) in one forward, each handed a non-contiguous tensor of the same
    values, with a column shard W1 [8/tp, 4] and a row shard W2 [4, 8/tp]
    between them. reduce_from_tensor_model_parallel_region gets the
    non-contiguous partial sum F.linear(hidden, W2)."""
    import torch
    _megatron(world)
    from megatron.core import tensor_parallel as tp_module
    tp, rank = _tp_rank_size()

    def noncontiguous(t):  # t's values, every other element of a wider tensor
        return torch.stack([t, t], dim=-1)[..., 0]

    class TensorParallelMappings(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w1 = torch.nn.Parameter(torch.empty(8 // tp, 4))
            self.w2 = torch.nn.Parameter(torch.empty(4, 8 // tp))
            for weight, dim in ((self.w1, 0), (self.w2, 1)):
                torch.nn.init.normal_(weight)
                tp_module.set_tensor_model_parallel_attributes(weight, True, dim, 1)

        def forward(self, x):
            F, prepare = torch.nn.functional, noncontiguous
            whole = tp_module.copy_to_tensor_model_parallel_region(prepare(x))
            column = F.linear(whole, self.w1)  # [s, b, 8/tp]
            gathered = tp_module.gather_from_tensor_model_parallel_region(prepare(column))
            hidden = tp_module.scatter_to_tensor_model_parallel_region(prepare(gathered * gathered))
            partial = F.linear(hidden, self.w2)  # [s, b, 4], a partial sum
            out = tp_module.reduce_from_tensor_model_parallel_region(prepare(partial))
            return out + out * out

    model = TensorParallelMappings()
    return dict(model=model, inputs=[("x", (4, 2, 4), WHOLE)],
                params=_megatron_param_shards(model, tp, rank), outputs=[WHOLE])


def build_mla_self_attention(world):
    """MLASelfAttention from the tree's local spec (multi_latent_attention=True),
    the sizes of shardproof's mla_self_attention recipe, tp=world, sp off."""
    import dataclasses
    import inspect
    import torch
    _megatron(world)
    tp, rank = _tp_rank_size()
    from megatron.core.models.gpt import gpt_layer_specs
    from megatron.core.transformer import transformer_config, multi_latent_attention
    from megatron.core.transformer.spec_utils import build_module
    spec = gpt_layer_specs.get_gpt_layer_local_spec(multi_latent_attention=True).submodules.self_attention
    core = spec.submodules.core_attention
    if "k_channels=" in inspect.getsource(multi_latent_attention) and not _accepts(core, "k_channels"):
        class CoreAttention(core):  # the local core computes any k/v head size (see recipes.py)
            def __init__(self, *args, k_channels=None, v_channels=None, **kwargs):
                super().__init__(*args, **kwargs)
                assert v_channels is None or v_channels == self.config.kv_channels
        spec.submodules.core_attention = CoreAttention
    values = dict(num_layers=1, hidden_size=4, num_attention_heads=2,
                  tensor_model_parallel_size=tp, sequence_parallel=False,
                  multi_latent_attention=True, q_lora_rank=None, kv_lora_rank=2,
                  qk_head_dim=1, qk_pos_emb_head_dim=2, v_head_dim=1, kv_channels=1,
                  max_position_embeddings=4, rope_type="rope", normalization="LayerNorm",
                  add_bias_linear=False, attention_dropout=0.0, hidden_dropout=0.0,
                  masked_softmax_fusion=False, apply_rope_fusion=False,
                  gradient_accumulation_fusion=False, persist_layer_norm=False,
                  use_cpu_initialization=True, perform_initialization=True)
    config = transformer_config.MLATransformerConfig(
        **_known_fields(transformer_config.MLATransformerConfig, values))
    attention = build_module(spec, config=config, layer_number=1)

    class Call(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attention = attention

        def forward(self, hidden):
            return self.attention(hidden, None)[0]

    model = Call()
    return dict(model=model, inputs=[("hidden", (4, 1, 4), WHOLE)],
                params=_megatron_param_shards(model, tp, rank), outputs=[WHOLE])


def _mlp(world, tp, **config_extra):
    import torch
    from megatron.core import tensor_parallel
    from megatron.core.transformer import mlp as mlp_module
    from megatron.core.transformer.transformer_config import TransformerConfig
    values = dict(num_layers=1, hidden_size=4, ffn_hidden_size=8, num_attention_heads=4,
                  tensor_model_parallel_size=tp, add_bias_linear=True, sequence_parallel=False,
                  use_cpu_initialization=True, perform_initialization=True,
                  gradient_accumulation_fusion=False, bias_activation_fusion=False)
    values.update(config_extra)
    config = TransformerConfig(**_known_fields(TransformerConfig, values))
    submodules = mlp_module.MLPSubmodules(linear_fc1=tensor_parallel.ColumnParallelLinear,
                                          linear_fc2=tensor_parallel.RowParallelLinear)
    extra = {"ffn_hidden_size": 8} if _accepts(mlp_module.MLP, "ffn_hidden_size") else {}
    return mlp_module.MLP(config, submodules, **extra), config


def _ddp(module, config, parallel_state):
    """Megatron's DistributedDataParallel (no overlap, no distributed
    optimizer, SUM + gradient_scaling_factor) around `module`; returns
    (model, finalize) with finalize = finalize_model_grads + main_grad as
    .grad (FP32Optimizer.prepare_grads)."""
    from megatron.core import distributed
    ddp_config_cls = distributed.DistributedDataParallelConfig
    ddp_config = ddp_config_cls(**_known_fields(ddp_config_cls, dict(
        overlap_grad_reduce=False, use_distributed_optimizer=False, average_in_collective=False)))
    groups = {}
    if _accepts(distributed.DistributedDataParallel, "data_parallel_group"):
        groups["data_parallel_group"] = parallel_state.get_data_parallel_group(
            **({"with_context_parallel": True}
               if _accepts(parallel_state.get_data_parallel_group, "with_context_parallel") else {}))
    if _accepts(distributed.DistributedDataParallel, "expert_data_parallel_group"):
        groups["expert_data_parallel_group"] = parallel_state.get_data_modulo_expert_parallel_group()
    model = distributed.DistributedDataParallel(config, ddp_config, module, **groups)
    model.zero_grad_buffer()

    def finalize():
        distributed.finalize_model_grads([model])
        for p in model.parameters():
            if getattr(p, "main_grad", None) is not None:
                p.grad = p.main_grad

    return model, finalize


def build_mlp_ddp_cp(world):
    """MLP under Megatron's DDP with context parallelism cp=world (tp=1, dp=1):
    every CP rank sees the whole (tiny) batch, as shardproof's mlp_ddp
    recipe at tp=1,cp=2 does, so the right gradient is the CP average.
    Loss: the batch mean of (out * out).sum()."""
    cp = world
    parallel_state = _megatron(world, tp=1, cp=cp)
    module, config = _mlp(world, 1, context_parallel_size=cp)
    model, finalize = _ddp(module, config, parallel_state)

    def loss(out):
        out = out[0] if isinstance(out, tuple) else out
        return (out * out).sum() / out.shape[1]

    return dict(model=model, inputs=[("x", (4, 2, 4), WHOLE)],
                params={n: WHOLE for n, _ in model.named_parameters()}, outputs=[WHOLE, WHOLE],
                loss=loss, finalize=finalize)


_ROUTING = [[[0, 2], [1, 3]], [[3, 0], [2, 1]], [[1, 2], [0, 1]], [[2, 3], [3, 0]]]  # [s, b, k]


class _TorchWithFixedTopk:
    """Stands for `torch` in moe_utils/router: torch.topk over router scores
    [tokens, experts] returns the fixed expert ids (_ROUTING) of these
    tokens, with their scores; every other attribute is torch's."""

    def __init__(self, real, options):
        self._real, self._options = real, options

    def __getattr__(self, name):
        return getattr(self._real, name)

    def topk(self, scores, k, dim=-1, *args, **kwargs):
        if scores.dim() == 2 and dim in (1, -1):
            for idx in self._options:
                if idx.shape == (scores.shape[0], k):
                    return self._real.gather(scores, 1, idx), idx
            raise RuntimeError(f"no fixed routing for scores {tuple(scores.shape)} k={k}")
        return self._real.topk(scores, k, dim, *args, **kwargs)

    def histc(self, input, *args, **kwargs):
        # CUDA's histc takes the integer expert ids; the CPU kernel wants floats
        # (same counts).
        if not input.is_floating_point():
            input = input.float()
        return self._real.histc(input, *args, **kwargs)


def build_moe_router_z_loss(world):
    """TopKRouter (4 experts, top-2, allgather dispatcher) with z-loss 0.01 and
    no aux loss, tp=world with sequence parallelism (MoE with TP needs SP):
    each rank routes its sequence shard; routing fixed (torch.topk in the
    router's modules returns _ROUTING's ids). Under Megatron's DDP and
    finalize_model_grads (which all-reduces sequence-parallel params over
    TP). Output: the routing probabilities [s, b, experts]."""
    import torch
    parallel_state = _megatron(world)
    tp, rank = _tp_rank_size()
    from megatron.core.transformer.moe import router, moe_utils
    from megatron.core.transformer.transformer_config import TransformerConfig
    values = dict(num_layers=1, hidden_size=4, ffn_hidden_size=8, num_attention_heads=4,
                  tensor_model_parallel_size=tp, sequence_parallel=tp > 1, num_moe_experts=4,
                  moe_router_topk=2, moe_token_dispatcher_type="allgather", moe_aux_loss_coeff=0.0,
                  moe_z_loss_coeff=0.01, add_bias_linear=False, use_cpu_initialization=True,
                  perform_initialization=True, gradient_accumulation_fusion=False)
    config = TransformerConfig(**_known_fields(TransformerConfig, values))
    config.moe_z_loss_coeff = 0.01
    kw = {}
    if _accepts(router.TopKRouter, "pg_collection"):
        kw["pg_collection"] = moe_utils.get_default_pg_collection()
    r = router.TopKRouter(config=config, **kw)
    routing = torch.tensor(_ROUTING)
    local = routing.chunk(tp, dim=0)[rank] if tp > 1 else routing
    fixed = _TorchWithFixedTopk(torch, [local.reshape(-1, 2), routing.reshape(-1, 2)])
    for module in (moe_utils, router):
        module.torch = fixed

    class Probs(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.router = r

        def forward(self, x):
            probs = self.router(x)[0]
            return probs.reshape(x.shape[0], x.shape[1], -1)

    model, finalize = _ddp(Probs(), config, parallel_state)

    def loss(out):
        return (out * out).sum() / out.shape[1]

    return dict(model=model, inputs=[("x", (4, 2, 4), Shard(0, tp, rank))],
                params={n: WHOLE for n, _ in model.named_parameters()}, outputs=[Shard(0, tp, rank)],
                loss=loss, finalize=finalize)


# ---- DeepSpeed ----

def build_ulysses_attention(world):
    """DeepSpeed Ulysses DistributedAttention (scatter heads, gather the
    sequence) around softmax(QK^T/sqrt(d))V, sp=world, q/k/v [seq 4, batch 2,
    heads 4, head_dim 2] sequence-first; each rank its sequence slice."""
    import math
    import inspect
    import torch
    dist = _deepspeed_comm()
    from deepspeed.sequence.layer import DistributedAttention
    group = dist.new_group(list(range(world)))
    rank = torch.distributed.get_rank()

    class LocalAttention(torch.nn.Module):
        def forward(self, q, k, v, *args, **kwargs):
            q, k, v = (t.permute(1, 2, 0, 3) for t in (q, k, v))  # [b, h, s, d]
            scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
            return torch.matmul(torch.softmax(scores, dim=-1), v).permute(2, 0, 1, 3)

    attention = DistributedAttention(LocalAttention(), group, scatter_idx=2, gather_idx=0)
    takes_batch_dim = "batch_dim_idx" in inspect.signature(attention.forward).parameters

    class Call(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attention = attention

        def forward(self, q, k, v):
            return self.attention(q, k, v, 1) if takes_batch_dim else self.attention(q, k, v)

    seq = Shard(0, world, rank)
    # Plain attention on the whole sequence: what the world-1 run should give.
    return dict(model=Call(), inputs=[(n, (4, 2, 4, 2), seq) for n in "qkv"], params={},
                outputs=[seq], oracle=lambda q, k, v: LocalAttention()(q, k, v))


def _deepspeed_comm():
    import importlib
    import deepspeed.comm as dist
    # (not `import deepspeed.comm.torch as ...`: deepspeed.comm's attribute
    # `torch` is PyTorch itself)
    ds_torch_backend = importlib.import_module("deepspeed.comm.torch")
    if hasattr(ds_torch_backend, "build_shm_op"):
        # The CPU accelerator's shared-memory all-reduce kernel (a JIT-built C++
        # op, an optimisation of all_reduce): torch.distributed's is used instead.
        ds_torch_backend.build_shm_op = lambda: None
    dist.init_distributed(dist_backend="gloo", auto_mpi_discovery=False, verbose=False)
    return dist


class _SequenceParallelMPU:
    """The mpu deepspeed.initialize takes for Ulysses (as shardproof's
    recipe's SequenceParallelMPU): sp = world, dp = 1, model parallel 1."""

    def __init__(self, dist, world, rank):
        self.sp, self.dp, self.rank, self.world = world, 1, rank, world
        self.sp_group = self.sp_dp_group = dist.new_group(list(range(world)))
        self.dp_group = None
        for r in range(world):
            g = dist.new_group([r])
            if r == rank:
                self.dp_group = self.mp_group = g

    def get_sequence_parallel_group(self): return self.sp_group
    def get_sequence_parallel_world_size(self): return self.sp
    def get_sequence_parallel_rank(self): return self.rank
    def get_sequence_data_parallel_group(self): return self.sp_dp_group
    def get_sequence_data_parallel_world_size(self): return self.world
    def get_sequence_data_parallel_rank(self): return self.rank
    def get_data_parallel_group(self): return self.dp_group
    def get_data_parallel_world_size(self): return 1
    def get_data_parallel_rank(self): return 0
    def get_model_parallel_world_size(self): return 1
    def get_model_parallel_rank(self): return 0
    def get_model_parallel_group(self): return self.mp_group
    get_tensor_model_parallel_world_size = get_model_parallel_world_size
    get_tensor_model_parallel_rank = get_model_parallel_rank
    get_tensor_model_parallel_group = get_model_parallel_group


def build_ulysses_engine(world):
    """shardproof's ulysses_engine recipe at tp=world (sp=world, dp=1): q, k,
    v and output projections (replicated Linear weights) around Ulysses
    DistributedAttention, trained by DeepSpeedEngine (deepspeed.initialize,
    SGD, ZeRO stage 0, fp32, the mpu above); x [seq 4, batch 1, hidden 2]
    sequence-first (the tree predates batch_dim_idx), each rank its
    sequence slice; loss the sum of (out * out); the engine's own gradient
    reduction (engine.allreduce_gradients(), what engine.backward runs)."""
    import inspect
    import math
    import torch
    import deepspeed
    dist = _deepspeed_comm()
    from deepspeed.sequence.layer import DistributedAttention
    rank = torch.distributed.get_rank()
    mpu = _SequenceParallelMPU(dist, world, rank)
    heads, head_dim, hidden = 4, 2, 2

    class LocalAttention(torch.nn.Module):
        def forward(self, q, k, v, *args, **kwargs):
            q, k, v = (t.permute(1, 2, 0, 3) for t in (q, k, v))
            scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
            return torch.matmul(torch.softmax(scores, dim=-1), v).permute(2, 0, 1, 3)

    attention = DistributedAttention(LocalAttention(), mpu.sp_group, scatter_idx=2, gather_idx=0)
    takes_batch_dim = "batch_dim_idx" in inspect.signature(attention.forward).parameters

    class UlyssesLayer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.query, self.key, self.value = (
                torch.nn.Linear(hidden, heads * head_dim, bias=False) for _ in range(3))
            self.dense = torch.nn.Linear(heads * head_dim, hidden)
            self.attention = attention

        def forward(self, x):  # [seq, batch, hidden]
            q, k, v = (proj(x).view(*x.shape[:2], heads, head_dim)
                       for proj in (self.query, self.key, self.value))
            context = self.attention(q, k, v, 1) if takes_batch_dim else self.attention(q, k, v)
            return self.dense(context.reshape(*x.shape[:2], heads * head_dim))

    model = UlyssesLayer()
    config = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
              "zero_optimization": {"stage": 0}, "zero_allow_untested_optimizer": True}
    engine, _, _, _ = deepspeed.initialize(model=model, mpu=mpu, config=config,
                                           optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
    seq = Shard(0, world, rank)
    return dict(model=engine, inputs=[("x", (4, 1, hidden), seq)],
                params={n: WHOLE for n, _ in engine.named_parameters()}, outputs=[seq],
                finalize=engine.allreduce_gradients)


BUILDERS = {name[len("build_"):]: fn for name, fn in list(globals().items())
            if name.startswith("build_")}


def worker(builder, world, rank, port, out_path):
    import torch
    _patch_torch_for_cpu()
    import torch.distributed as tdist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                             world_size=world)
    torch.manual_seed(1234)
    spec = BUILDERS[builder](world)
    model = spec["model"]
    # The same global weights on every degree: each full parameter drawn from
    # a generator seeded by its name, this rank's slice copied in.
    with torch.no_grad():
        for name, p in model.named_parameters():
            shard = spec["params"].get(name, WHOLE)
            full_shape = list(p.shape)
            if shard is not None:
                full_shape[shard.dim] *= shard.parts
            p.copy_(shard.take(_full_tensor(name, full_shape)) if shard else _full_tensor(name, full_shape))
    inputs = []
    for name, shape, shard in spec["inputs"]:
        full = _full_tensor("input:" + name, shape)
        inputs.append((shard.take(full) if shard else full).detach().clone().requires_grad_())
    out = model(*inputs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    outs = [o for o in outs if o is not None]
    loss_fn = spec.get("loss") or (lambda o: (o * o).sum())
    loss_fn(outs[0]).backward()
    if spec.get("finalize"):
        spec["finalize"]()
    result = {"outputs": [], "grads": {}, "input_grads": []}
    for o, shard in zip(outs, spec["outputs"]):
        result["outputs"].append((o.detach().clone(), shard.as_dict() if shard else None))
    for name, p in model.named_parameters():
        if p.grad is not None:
            shard = spec["params"].get(name, WHOLE)
            result["grads"][name] = (p.grad.detach().clone(), shard.as_dict() if shard else None)
    for (name, _, shard), x in zip(spec["inputs"], inputs):
        if x.grad is not None:
            result["input_grads"].append((name, x.grad.detach().clone(), shard.as_dict() if shard else None))
    if spec.get("oracle") and world == 1:
        with torch.no_grad():
            plain = spec["oracle"](*(x.detach() for x in inputs))
        result["oracle_max_abs"] = (outs[0].detach() - plain).abs().max().item()
    torch.save(result, out_path)
    tdist.barrier()
    tdist.destroy_process_group()


# ===========================================================================
# Driver side.
# ===========================================================================

def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def extract(mirror_root, framework, commit, work):
    """The tree of `commit`: `git archive COMMIT PATHS | tar -x`, cached by commit."""
    mirror, paths = REPOSITORIES[framework]
    git_dir = os.path.join(mirror_root, mirror, "repo")
    full = subprocess.run(["git", f"--git-dir={git_dir}", "rev-parse", "--verify", f"{commit}^{{commit}}"],
                          capture_output=True, text=True, check=True).stdout.strip()
    tree = os.path.join(work, "trees", f"{framework}-{full}")
    marker = os.path.join(tree, ".extracted")
    if not os.path.exists(marker):
        os.makedirs(tree, exist_ok=True)
        archive = subprocess.Popen(["git", f"--git-dir={git_dir}", "archive", full, *paths],
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        subprocess.run(["tar", "-x", "-C", tree], stdin=archive.stdout, check=True)
        archive.wait()
        package = os.path.join(tree, paths[0], "__init__.py")
        if not os.path.exists(package) and not os.path.isdir(os.path.join(tree, paths[0], "core")):
            raise RuntimeError(f"git archive of {full} gave no {paths[0]}/")
        open(marker, "w").close()
    return tree, full


def run_world(python, tree, framework, builder, world, work, tag, timeout):
    """The builder at `world` processes; returns each rank's result file."""
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([tree, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
               OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    if framework == "deepspeed":
        env["DS_ACCELERATOR"] = "cpu"
    outs, procs = [], []
    for rank in range(world):
        out = os.path.join(work, f"{tag}-w{world}-r{rank}.pt")
        if os.path.exists(out):
            os.remove(out)
        log = open(os.path.join(work, f"{tag}-w{world}-r{rank}.log"), "w")
        procs.append((subprocess.Popen([python, os.path.abspath(__file__), "--worker", builder,
                                        "--world", str(world), "--rank", str(rank), "--port", str(port),
                                        "--out", out], env=env, stdout=log, stderr=subprocess.STDOUT,
                                       cwd=work), log))
        outs.append(out)
    deadline = time.time() + timeout
    failed = None
    for proc, log in procs:
        try:
            rc = proc.wait(timeout=max(1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = "timeout"
        log.close()
        if rc != 0 and failed is None:
            failed = (log.name, rc)
    if failed:
        for proc, _ in procs:
            if proc.poll() is None:
                proc.kill()
        tail = open(failed[0]).read()[-3000:]
        raise RuntimeError(f"world {world} worker failed ({failed[1]}), log {failed[0]}:\n{tail}")
    return outs


def compare(reference_path, rank_paths):
    """Max |d| of every quantity: rank shards against the matching slices of
    the world-1 run. Returns (max_abs, max_rel, rows)."""
    import torch
    ref = torch.load(reference_path, weights_only=True)

    def take(full, shard):
        return full if shard is None else full.chunk(shard["parts"], dim=shard["dim"])[shard["index"]]

    rows = {}

    def note(key, got, full, shard):
        want = take(full, shard)
        if got.shape != want.shape:
            rows[key] = (float("inf"), float("inf"), f"shape {tuple(got.shape)} vs {tuple(want.shape)}")
            return
        d = (got.float() - want.float()).abs().max().item() if got.numel() else 0.0
        scale = want.float().abs().max().item() if want.numel() else 0.0
        old = rows.get(key, (0.0, 0.0, ""))
        rows[key] = (max(old[0], d), max(old[1], d / scale if scale else (0.0 if d == 0 else float("inf"))), "")

    ref_inputs = {name: g for name, g, _ in ref["input_grads"]}
    for path in rank_paths:
        got = torch.load(path, weights_only=True)
        for i, ((o, shard), (ro, _)) in enumerate(zip(got["outputs"], ref["outputs"])):
            note(f"output[{i}]", o, ro, shard)
        for name, (g, shard) in got["grads"].items():
            if name not in ref["grads"]:
                rows[f"grad {name}"] = (float("inf"), float("inf"), "no gradient in the world-1 run")
                continue
            note(f"grad {name}", g, ref["grads"][name][0], shard)
        for name in ref["grads"]:
            if name not in got["grads"]:
                rows[f"grad {name}"] = (float("inf"), float("inf"), "no gradient at world N")
        for name, g, shard in got["input_grads"]:
            note(f"input grad {name}", g, ref_inputs[name], shard)
    max_abs = max((r[0] for r in rows.values()), default=0.0)
    max_rel = max((r[1] for r in rows.values()), default=0.0)
    return max_abs, max_rel, rows


def confirm_one(args, bug_id, bug, role, tree):
    work = args.work
    world = bug["world"]
    tag = f"{bug_id}-{role}"
    t0 = time.time()
    ref = run_world(args.python, tree, bug["framework"], bug["builder"], 1, work, tag, args.timeout)[0]
    ranks = run_world(args.python, tree, bug["framework"], bug["builder"], world, work, tag, args.timeout)
    max_abs, max_rel, rows = compare(ref, ranks)
    print(f"  {bug_id} {role} ({bug['builder']}, world {world} vs 1, {time.time() - t0:.1f} s):")
    import torch
    oracle = torch.load(ref, weights_only=True).get("oracle_max_abs")
    if oracle is not None:
        print(f"    (world-1 output vs a plain single-device computation: max |d| = {oracle:.3g})")
    for key, (d, rel, why) in sorted(rows.items()):
        print(f"    {key:<48} max |d| = {d:.3g}  (rel {rel:.3g}){'  ' + why if why else ''}")
    differs = max_rel > RELATIVE_TOLERANCE
    verdict = "differs" if differs else "matches"
    print(f"{bug_id} {role}: {verdict} (max |d| = {max_abs:.3g}, rel {max_rel:.3g})", flush=True)
    return differs


def load_bugs(path):
    import tomllib
    if not path or not os.path.exists(path):
        return {}
    with open(path, "rb") as f:
        return {b["id"]: b for b in tomllib.load(f).get("bug", [])}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bugs", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "bugs.toml"))
    parser.add_argument("--mirrors", default="/work/.mirror")
    parser.add_argument("--only", action="append", help="bug id (repeatable)")
    parser.add_argument("--tree", help="an extracted tree to use instead of the mirror (with --only, --role)")
    parser.add_argument("--role", choices=["parent", "fix"], help="with --tree")
    parser.add_argument("--python", default=sys.executable, help="interpreter of the workers (torch 2.x)")
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "confirm_real"))
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--worker")
    parser.add_argument("--world", type=int)
    parser.add_argument("--rank", type=int)
    parser.add_argument("--port", type=int)
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.world, args.rank, args.port, args.out)
        return 0
    os.makedirs(args.work, exist_ok=True)
    listed = load_bugs(args.bugs)
    if args.list:
        for bug_id, bug in BUGS.items():
            print(f"{bug_id:<42} {bug['framework']:<10} {bug['builder']:<46} "
                  f"{'in bugs.toml' if bug_id in listed else 'not in bugs.toml'}")
        return 0
    ids = args.only or list(BUGS)
    unknown = [i for i in ids if i not in BUGS]
    if unknown:
        print(f"no builder for {', '.join(unknown)} (known: {', '.join(BUGS)})", file=sys.stderr)
        return 2
    for bug_id in listed:
        if bug_id not in BUGS:
            why = NOT_RUN.get(bug_id, "no builder here")
            print(f"note: {bug_id} (bugs.toml) not run: {why}")
    if args.tree and (len(ids) != 1 or not args.role):
        parser.error("--tree needs one --only ID and --role")
    ok = True
    for bug_id in ids:
        bug = dict(BUGS[bug_id])
        entry = listed.get(bug_id, {})
        # bugs.toml's commits, where it names them, take precedence.
        bug["parent"] = entry.get("parent", entry.get("seen_at", bug["parent"]))
        fixed_in = entry.get("fix", entry.get("fixed_in", bug["fix"]))
        bug["fix"] = None if fixed_in in (None, "open") else fixed_in
        roles = [args.role] if args.role else ["parent"] + (["fix"] if bug["fix"] else [])
        for role in roles:
            try:
                if args.tree:
                    tree, commit = os.path.abspath(args.tree), "(given tree)"
                else:
                    tree, commit = extract(args.mirrors, bug["framework"], bug[role], args.work)
                print(f"== {bug_id} {role} {commit}", flush=True)
                differs = confirm_one(args, bug_id, bug, role, tree)
            except Exception as e:  # a crash is not a confirmation either way
                print(f"{bug_id} {role}: error ({type(e).__name__}: {str(e).strip()[-2000:]})", flush=True)
                ok = False
                continue
            expected = role == "parent"
            if differs != expected:
                ok = False
        if not bug["fix"]:
            print(f"{bug_id}: open bug (no fix commit): parent only")
    print("confirmed" if ok else "NOT confirmed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
