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
    ID before: matches (max |d| = ...)     a regression's, before it came in

Exit status 0 only if every bug run differs at its parent and matches at its
fix and its `before` (an open bug has no fix: only the parent, and a
regression's `before`, are run).

    python confirm_real.py --bugs tests/upstream/bugs.toml --mirrors /work/.mirror [--only ID]
    python confirm_real.py --only ID --tree DIR --role parent   # a tree already extracted

The interpreter must have what tests/upstream/requirements.txt lists (torch
2.x with gloo; for DeepSpeed pydantic 2, numpy 1, py-cpuinfo, psutil, hjson,
tqdm; for Megatron einops, pyyaml, and six and regex for 2023 trees, whose
`import megatron` imports their tokenizers):

    python3 -m venv ENV && ENV/bin/pip install -r tests/upstream/requirements.txt

--python names another interpreter for the spawned workers. Megatron's CUDA calls are patched at run time in the workers
only (torch.cuda.current_device() -> "cpu", Tensor.cuda() -> self, the CUDA
RNG tracker's fork() -> no-op, use_cpu_initialization=True and
perform_initialization=True in the configs, torch.cuda.current_stream()
-> a stream whose synchronize() is a no-op); gloo's all_gather is given
NCCL's uneven lists along dim 0 (the all-to-all MoE dispatcher gathers
tokens over TP in uneven splits); DeepSpeed trees of May 2023 to March
2024, which insist on Intel's CPU extensions for DS_ACCELERATOR=cpu without
using them, import refusing stand-ins of those and run deepspeed.comm on
gloo (_cpu_accelerator_without_ipex); the trees are never edited.
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
# Files outside those paths that a tree imports where it has them: 2023
# Megatron's megatron/arguments.py (imported by `import megatron`) imports
# tools/retro/utils.py.
OPTIONAL_PATHS = {"megatron": ["tools/retro/utils.py"]}

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
    "deepspeed-moe-expert-grad-scale-zero0": dict(
        framework="deepspeed", builder="moe_engine_ep2_zero0", world=2,
        parent="4520edd61ce1235f87d062aa075cff412ae11a73",
        fix="e5dd5501c10227ae33dce7d5bdd897741dd3adb7"),
    "deepspeed-moe-clip-norm-averaged-zero0": dict(
        framework="deepspeed", builder="moe_engine_ep2_zero0_clip", world=2,
        parent="edaa7221267243c7be7fb49c5d5f5c4fb97b4641", fix=None),
    "deepspeed-pipeline-clip-norm-first-stage": dict(
        framework="deepspeed", builder="pipeline_engine_pp2_clip", world=2,
        parent="edaa7221267243c7be7fb49c5d5f5c4fb97b4641", fix=None),
    "deepspeed-pipeline-grad-accumulation-scaled-per-stage": dict(
        framework="deepspeed", builder="pipeline_engine_pp2", world=2,
        parent="75f395fd0ef95edede8983863f7a4f5024bdc19f",
        fix="d99a6429eeddb33915b910a1586b52ef927cb44f"),
    "deepspeed-pipeline-loss-not-scaled-by-gas": dict(
        framework="deepspeed", builder="pipeline_engine_dp2", world=2,
        parent="51dc888423da455d56da8e2dd4b237e511d27a1b",
        fix="53e91a098d0a0666ac8cb8025a5b36e5af172d08",
        before="d702eb5f79bcfc8a7afa735b70762633cd5a56e9"),
    "deepspeed-moe-expert-grad-scale-zero2": dict(
        framework="deepspeed", builder="moe_engine_ep2_zero2", world=2,
        parent="bf03f4835295bccc4765c9ae428c5d3e3ddb04fe",
        fix="b647fb2470f8f6fefe5cab0ea84a2d89696eb898"),
    # A regression of 2afa1c7f2 (#4695): `before` is its parent.
    "deepspeed-moe-zero2-double-scaling": dict(
        framework="deepspeed", builder="moe_engine_dp2_zero2", world=2,
        parent="7fb5bade3e57c0acd126a5e9e871fc28d569b931",
        fix="9d2660d2a3fac767972f01ac96858b2605ffc0e4",
        before="61391229c956356b71fe675a45d10d9b45111a31"),
    "megatron-moe-aux-loss-sequence-shard": dict(
        framework="megatron", builder="moe_router_aux_loss", world=2,
        parent="7214c115d20e6a8df2ca6b3ab9bfb7f307c1b707",
        fix="6cb81d7d54b50ea8cc91e45ce61d4f917e4f2b0c"),
    "megatron-router-per-token-loss-tp-scaling": dict(
        framework="megatron", builder="moe_router_aux_loss_per_token", world=2,
        parent="591605eedab0bfad5b1aacccef71a9f564299527",
        fix="9ef8a2a4208565d1d68728b864bcd873a7443f8a"),
    "megatron-moe-a2a-local-expert-order": dict(
        framework="megatron", builder="moe_layer_alltoall", world=4,
        parent="b1efb3c7126ef7615e8c333432d76e08038e17ff",
        fix="54d4b3ddbb43d7f9433712d4fc57aeb57c2b04fa"),
    "megatron-legacy-rmsnorm-sequence-parallel": dict(
        framework="megatron", builder="legacy_rms_norm", world=2,
        parent="52f13005148afa47a6f37b082083fa2c6675ae3e",
        fix="20b7a5489ddeb8c3bbac984350f09e3b1428ed7f"),
    "megatron-switch-mlp-tp-without-sp": dict(
        framework="megatron", builder="switch_mlp_no_sp", world=2,
        parent="86edcf1ff4ef616877e04ee78a628ec7eaef30b8",
        fix="063edede9477a9d2b5a619d8dc33891d7cd29e3a"),
    "megatron-switch-mlp-router-sequence-parallel": dict(
        framework="megatron", builder="switch_mlp", world=2,
        parent="cd760a9e0ec1417a0cb7081ce62dad832e06e6ad",
        fix="3c637fc0d2b24ee689929ff7923561892d415f45"),
    # A regression: `before` (the commit before the one that introduced it)
    # must match, as a fix does.
    "megatron-legacy-switch-mlp-tp-experts-unreduced": dict(
        framework="megatron", builder="switch_mlp_no_sp", world=2,
        parent="c4d12e26b2dc25a2eab7da92e2ac30338c0ed3de", fix=None,
        before="7f616b093172449174c3e8fdc203784512d07f76"),
}

# Listed in bugs.toml, not run here, and why.
NOT_RUN = {
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
    dim)[index]`, or the whole tensor (parts == 1); `then`, another Shard
    cut from that slice (a rank's slice of the batch, then of the sequence)."""

    def __init__(self, dim=0, parts=1, index=0, then=None):
        self.dim, self.parts, self.index, self.then = dim, parts, index, then

    def take(self, full):
        part = full.chunk(self.parts, dim=self.dim)[self.index] if self.parts > 1 else full
        return self.then.take(part) if self.then else part

    def as_dict(self):
        return {"dim": self.dim, "parts": self.parts, "index": self.index,
                "then": self.then.as_dict() if self.then else None}


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

    class _Stream:  # torch.cuda.current_stream().synchronize() (MoE dispatchers)
        def synchronize(self):
            pass

        def wait_stream(self, *a, **k):
            pass
    torch.cuda.current_stream = lambda *a, **k: _Stream()
    _gloo_uneven_all_gather()
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
        factory = getattr(torch, name)
        setattr(torch, name, on_cpu(factory))
        # TorchScript functions of the trees (2023's erf_gelu calls
        # torch.ones_like) compile a call of it as the aten op it wraps.
        builtin = torch.jit._builtins._find_builtin(factory)
        if builtin:
            torch.jit._builtins._register_builtin(getattr(torch, name), builtin)
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
        # ... and its module logger, `log` before it was renamed `logger`
        # (early-2024 trees import both; the agent is not used here either).
        if not hasattr(elastic_api, "log") and hasattr(elastic_api, "logger"):
            elastic_api.log = elastic_api.logger
    except ImportError:
        pass
    # 2024 Megatron reads `packaging` from pkg_resources, which setuptools 81
    # removed: where it is gone, a module holding only that.
    try:
        import pkg_resources  # noqa: F401
    except ImportError:
        import types
        import packaging.version
        sys.modules["pkg_resources"] = types.ModuleType("pkg_resources")
        sys.modules["pkg_resources"].packaging = packaging


def _gloo_uneven_all_gather():
    """gloo's all_gather wants every tensor of the list the size of the input;
    NCCL's (what Megatron's gather with output_split_sizes, e.g. the
    all-to-all dispatcher's gather of tokens over TP, relies on) takes
    tensors of different lengths along dim 0. Uneven lists are gathered
    padded to the longest and cut back: the same values NCCL gives."""
    import torch.distributed as tdist
    real = tdist.all_gather
    if getattr(real, "_uneven", False):
        return

    def all_gather(tensor_list, tensor, group=None, async_op=False):
        if async_op or all(t.shape == tensor.shape for t in tensor_list):
            return real(tensor_list, tensor, group=group, async_op=async_op)
        rest = tuple(tensor.shape[1:])
        if any(tuple(t.shape[1:]) != rest for t in tensor_list):
            raise RuntimeError("uneven all_gather: only dim 0 may differ")
        longest = max(t.shape[0] for t in tensor_list)
        padded = tensor.new_zeros((longest,) + rest)
        padded[:tensor.shape[0]] = tensor
        gathered = [tensor.new_empty((longest,) + rest) for _ in tensor_list]
        real(gathered, padded, group=group)
        for out, got in zip(tensor_list, gathered):
            out.copy_(got[:out.shape[0]])
        return None

    all_gather._uneven = True
    tdist.all_gather = all_gather


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
    .grad (FP32Optimizer.prepare_grads); finalize(num_tokens=n) passes
    calculate_per_token_loss's token count (config.calculate_per_token_loss
    must be set before this call: DDP then does not scale)."""
    import torch
    from megatron.core import distributed
    options = dict(overlap_grad_reduce=False, use_distributed_optimizer=False)
    if hasattr(distributed, "DistributedDataParallelConfig"):
        ddp_config_cls = distributed.DistributedDataParallelConfig
        args = (config, ddp_config_cls(**_known_fields(
            ddp_config_cls, dict(options, average_in_collective=False))), module)
        options = {}
    else:  # 2023 trees: the options are the constructor's, gradients in fp32
        args = (config, module)
        options["accumulate_allreduce_grads_in_fp32"] = True
    groups = {}
    if _accepts(distributed.DistributedDataParallel, "data_parallel_group"):
        groups["data_parallel_group"] = parallel_state.get_data_parallel_group(
            **({"with_context_parallel": True}
               if _accepts(parallel_state.get_data_parallel_group, "with_context_parallel") else {}))
    if _accepts(distributed.DistributedDataParallel, "expert_data_parallel_group"):
        groups["expert_data_parallel_group"] = parallel_state.get_data_modulo_expert_parallel_group()
    model = distributed.DistributedDataParallel(*args, **options, **groups)
    # (2023 trees ask whether to zero the buffer: yes without the distributed optimizer)
    model.zero_grad_buffer(**({"zero_buffer": True} if _accepts(model.zero_grad_buffer, "zero_buffer") else {}))

    def finalize(num_tokens=None):
        # num_tokens (calculate_per_token_loss): this rank's token count; the
        # tree sums it over the data-parallel ranks and divides every gradient.
        distributed.finalize_model_grads([model], **(
            {} if num_tokens is None else {"num_tokens": torch.tensor(float(num_tokens))}))
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


def _router_probs(router):
    """The router's probabilities [tokens, experts] viewed back as [sequence,
    batch, experts] (the recipes' RouterOutput)."""
    import torch

    class RouterProbs(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.router = router

        def forward(self, x):
            probs = self.router(x)[0]
            return probs.reshape(x.shape[0], x.shape[1], -1)
    return RouterProbs()


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

    model, finalize = _ddp(_router_probs(r), config, parallel_state)

    def loss(out):
        return (out * out).sum() / out.shape[1]

    return dict(model=model, inputs=[("x", (4, 2, 4), Shard(0, tp, rank))],
                params={n: WHOLE for n, _ in model.named_parameters()}, outputs=[Shard(0, tp, rank)],
                loss=loss, finalize=finalize)


def _recipe_routing(sequence, batch, experts, topk):
    """shardproof's recipes._routing: expert ids [sequence, batch, topk] of
    the global batch, distinct per token, every expert getting tokens from
    every slice of the batch, in uneven numbers (with even numbers per
    sequence shard the aux-loss bug would be invisible)."""
    import torch
    tokens = torch.arange(sequence * batch)
    choices = [(3 * tokens + k * (1 + tokens % (experts - 1))) % experts for k in range(topk)]
    return torch.stack(choices, dim=-1).reshape(sequence, batch, topk)


def _replay_routing(routing, this_rank, *modules):
    """The router's top-k choice pinned to `routing` (the global batch's) in
    the tree's `modules`: torch.topk over scores of this rank's tokens (or
    of the whole batch) returns their expert ids. Also the real ids under
    identical weights; pinned as the recipes pin them."""
    import torch
    topk = routing.shape[-1]
    fixed = _TorchWithFixedTopk(torch, [this_rank.take(routing).reshape(-1, topk),
                                        routing.reshape(-1, topk)])
    for module in modules:
        module.torch = fixed


def build_moe_router_aux_loss(world, per_token_loss=False):
    """shardproof's moe_router recipe with loss=aux_loss at tp=world: TopKRouter
    (4 experts, top-2, allgather dispatcher, hidden 4), sequence parallel
    (MoE with TP needs SP), load-balancing loss coefficient 0.01 (no z-loss),
    routing replayed (_recipe_routing); each rank routes its sequence shard.
    Under Megatron's DDP and finalize_model_grads (the gating weight is a
    sequence-parallel parameter: all-reduced over TP). Loss: the batch mean
    of (probs * probs).sum(); the aux loss reaches the gating weight through
    the tree's MoEAuxLossAutoScaler. Output: the routing probabilities.

    `per_token_loss` is Megatron's calculate_per_token_loss, as the recipe's
    per_token_loss=1 (recipes._ddp_step, _tokens_of): set in the config
    before the router (which reads it when built) and DDP; the loss is the
    SUM of (probs * probs).sum() over this rank's tokens, and
    finalize_model_grads gets num_tokens = this rank's token count as
    Megatron counts it (the whole sequence of the data-parallel rank's
    samples: the local shard's length * tp under sequence parallelism *
    batch), which it sums over DP and divides every gradient by."""
    import torch
    parallel_state = _megatron(world)
    tp, rank = _tp_rank_size()
    from megatron.core.transformer.moe import router, moe_utils
    from megatron.core.transformer.transformer_config import TransformerConfig
    values = dict(num_layers=1, hidden_size=4, ffn_hidden_size=8, num_attention_heads=tp,
                  tensor_model_parallel_size=tp, sequence_parallel=tp > 1, num_moe_experts=4,
                  moe_router_topk=2, moe_token_dispatcher_type="allgather", moe_aux_loss_coeff=0.0,
                  add_bias_linear=False, use_cpu_initialization=True,
                  perform_initialization=True, gradient_accumulation_fusion=False)
    config = TransformerConfig(**_known_fields(TransformerConfig, values))
    config.moe_aux_loss_coeff = 0.01  # after the config's checks, as the recipe sets it
    if per_token_loss:
        if not hasattr(config, "calculate_per_token_loss"):
            raise RuntimeError("this Megatron tree has no calculate_per_token_loss")
        config.calculate_per_token_loss = True  # before the router and DDP read it
    kw = {}
    if _accepts(router.TopKRouter, "pg_collection"):
        kw["pg_collection"] = moe_utils.get_default_pg_collection()
    r = router.TopKRouter(config=config, **kw)
    tokens = Shard(0, tp, rank)
    _replay_routing(_recipe_routing(4, 2, 4, 2), tokens, moe_utils, router)

    model, ddp_finalize = _ddp(_router_probs(r), config, parallel_state)
    counted = []  # this rank's token count (per_token_loss)

    def loss(out):
        if per_token_loss:
            counted.append(out.shape[0] * (tp if config.sequence_parallel else 1) * out.shape[1])
            return (out * out).sum()
        return (out * out).sum() / out.shape[1]

    def finalize():
        ddp_finalize(num_tokens=sum(counted) if per_token_loss else None)

    return dict(model=model, inputs=[("x", (4, 2, 4), tokens)],
                params={n: WHOLE for n, _ in model.named_parameters()}, outputs=[tokens],
                loss=loss, finalize=finalize)


def build_moe_router_aux_loss_per_token(world):
    """build_moe_router_aux_loss under calculate_per_token_loss (the recipe's
    per_token_loss=1)."""
    return build_moe_router_aux_loss(world, per_token_loss=True)


def build_moe_layer_alltoall(world):
    """shardproof's moe_layer_replay recipe (alltoall dispatcher, top-2,
    experts tensor-parallel over tp) at tp=2, ep=2 (world 4; tp=ep=1 at world
    1): the tree's MoELayer with MoESubmodules of SequentialMLP experts of
    Column/RowParallelLinear (get_moe_module_spec(use_te=False)), 4 experts (2 local per
    expert-parallel rank), hidden 4, ffn 8, sequence parallel, no aux loss,
    routing replayed (_recipe_routing). The expert-parallel ranks are
    data-parallel ranks of the dense router: each takes its slice of the
    batch (dim 1), then its tensor-parallel slice of the sequence. Under
    Megatron's DDP and finalize_model_grads; loss the batch mean of
    (out * out).sum(). Local expert i of expert-parallel rank e is compared
    with global expert e*2+i of the world-1 run (spec["rename"])."""
    import re
    import torch
    tp, ep = (2, 2) if world > 1 else (1, 1)
    if tp * ep != world:
        raise RuntimeError(f"moe_layer_alltoall runs at world 1 or 4, not {world}")
    parallel_state = _megatron(world, tp=tp, ep=ep)
    tp, tp_rank = _tp_rank_size()
    dp, dp_rank = parallel_state.get_data_parallel_world_size(), parallel_state.get_data_parallel_rank()
    from megatron.core.transformer.moe import router, moe_utils
    from megatron.core.transformer.transformer_config import TransformerConfig
    from megatron.core.transformer.spec_utils import ModuleSpec
    from megatron.core.transformer.mlp import MLPSubmodules
    from megatron.core.transformer.moe import moe_layer
    from megatron.core.transformer.moe.experts import SequentialMLP
    from megatron.core.tensor_parallel import ColumnParallelLinear, RowParallelLinear
    values = dict(num_layers=1, hidden_size=4, ffn_hidden_size=8, num_attention_heads=tp,
                  tensor_model_parallel_size=tp, expert_model_parallel_size=ep,
                  sequence_parallel=tp > 1, num_moe_experts=4, moe_router_topk=2,
                  moe_token_dispatcher_type="alltoall", moe_aux_loss_coeff=0.0,
                  add_bias_linear=False, use_cpu_initialization=True,
                  perform_initialization=True, gradient_accumulation_fusion=False,
                  bias_activation_fusion=False)
    config = TransformerConfig(**_known_fields(TransformerConfig, values))
    # What get_moe_module_spec(use_te=False, moe_grouped_gemm=False) builds;
    # its module (megatron.core.models.gpt) imports Transformer Engine.
    experts = ModuleSpec(module=SequentialMLP, submodules=MLPSubmodules(
        linear_fc1=ColumnParallelLinear, linear_fc2=RowParallelLinear))
    layer = moe_layer.MoELayer(config, moe_layer.MoESubmodules(experts=experts))
    tokens = Shard(1, dp, dp_rank, then=Shard(0, tp, tp_rank))
    _replay_routing(_recipe_routing(4, 2, 4, 2), tokens, moe_utils, router)
    model, finalize = _ddp(layer, config, parallel_state)
    indices = list(layer.local_expert_indices)

    def rename(name):
        return re.sub(r"(local_experts\.)(\d+)", lambda m: f"{m.group(1)}{indices[int(m.group(2))]}", name)

    # Experts are tensor-parallel over the expert-tensor-parallel group (tp here).
    etp_rank = tp_rank
    if tp > 1 and hasattr(parallel_state, "get_expert_tensor_parallel_rank"):
        etp_rank = parallel_state.get_expert_tensor_parallel_rank()
    params = _megatron_param_shards(model, tp, tp_rank)
    for name, p in model.named_parameters():
        if "local_experts" in name and params[name] is not None:
            params[name] = Shard(p.partition_dim, tp, etp_rank)

    def loss(out):
        return (out * out).sum() / out.shape[1]

    return dict(model=model, inputs=[("x", (4, 2, 4), tokens)], params=params, outputs=[tokens],
                loss=loss, finalize=finalize, rename=rename, input_grad_scale=1.0 / dp)


# ---- Megatron's legacy model (megatron/model, later megatron/legacy/model) ----

def _legacy(module, **arguments):
    """`module` of the tree's legacy model, Megatron's global training
    arguments set first (as shardproof's recipes set them): the argument
    parser's defaults of what the legacy code reads, and `arguments`."""
    import importlib.util
    import types
    legacy = importlib.util.find_spec("megatron.legacy") is not None  # moved there in 2024
    package, global_vars = (("megatron.legacy.model", "megatron.training.global_vars") if legacy
                            else ("megatron.model", "megatron.global_vars"))
    _transformer_engine_stand_in()
    values = dict(swiglu=False, openai_gelu=False, onnx_safe=False, squared_relu=False,
                  bias_gelu_fusion=False, normalization="RMSNorm", norm_epsilon=1e-5,
                  apply_layernorm_1p=False, sequence_parallel=False, moe_router_topk=1)
    _import_without_apex(global_vars).set_args(types.SimpleNamespace(**dict(values, **arguments)))
    return _import_without_apex(f"{package}.{module}")


def _transformer_engine_stand_in():
    """2024 trees import megatron/core/transformer/custom_layers/
    transformer_engine.py, which imports transformer_engine unguarded, from
    the GPT model the legacy model imports. Without TE it is a module whose
    classes and functions refuse to be used: nothing run here uses TE."""
    import importlib
    name = "megatron.core.transformer.custom_layers.transformer_engine"
    try:
        importlib.import_module(name)
        return
    except ImportError:
        pass
    stand_in = _refusing_module(name, "Transformer Engine's")
    stand_in.SplitAlongDim = stand_in.get_cpu_offload_context = None  # the trees' own "no TE" values
    sys.modules[name] = stand_in


def _refusing_module(name, whose):
    """A module whose every attribute refuses to be used: a class that cannot
    be built for a capitalised name, else a function that raises."""
    import types
    module = types.ModuleType(name)

    def attribute(attr):
        if attr.startswith("__"):
            raise AttributeError(attr)

        def used(*args, **kwargs):
            raise RuntimeError(f"{name}.{attr} ({whose}) is absent here")
        return type(attr, (), {"__new__": used}) if attr[:1].isupper() else used

    module.__getattr__ = attribute
    return module


def _import_without_apex(name):
    """import `name` where apex is absent: the legacy optimizer and 2024's
    megatron.training (through megatron.core.optimizer) import apex at
    import time, and nothing run here uses it. For that import only, apex's
    modules are refusing ones (_refusing_module)."""
    import importlib
    stand_ins = {}
    for module in ("apex", "apex.optimizers", "apex.multi_tensor_apply", "amp_C"):
        try:
            importlib.import_module(module)
        except ImportError:
            stand_ins[module] = _refusing_module(module, "apex's")
    sys.modules.update(stand_ins)
    try:
        return importlib.import_module(name)
    finally:
        for module in stand_ins:
            sys.modules.pop(module, None)


def _legacy_layernorm_grad_reduction(model):
    """The legacy training loop's reduction of the gradients of parameters
    marked `sequence_parallel` (trees without megatron.core.distributed): the
    tree's MegatronOptimizer.allreduce_layernorm_grads, on main_grad = grad
    (the legacy DDP's buffer, at dp 1). With no parameter marked it is not
    called: it would all-reduce an empty list, which torch refuses, and
    reduces nothing of this component then."""
    import types

    def finalize():
        if not any(getattr(p, "sequence_parallel", False) for p in model.parameters()):
            return
        for p in model.parameters():
            p.main_grad = p.grad
        from megatron import get_args
        optimizer = _import_without_apex("megatron.optimizer.optimizer")
        optimizer.MegatronOptimizer.allreduce_layernorm_grads(types.SimpleNamespace(models=[model]), get_args())

    return finalize


def _legacy_norm(hidden, sequence_parallel):
    """The legacy model's get_norm (RMSNorm, as the training arguments say)."""
    import types
    utils = _legacy("utils", hidden_size=hidden, sequence_parallel=sequence_parallel)
    return utils.get_norm(types.SimpleNamespace(hidden_size=hidden, layernorm_epsilon=1e-5,
                                                persist_layer_norm=False, sequence_parallel=sequence_parallel))


def build_legacy_rms_norm(world):
    """shardproof's legacy_norm recipe at tp=world, sp on: the legacy model's
    get_norm (RMSNorm) on this rank's sequence shard of [seq 4, batch 2,
    hidden 8], its weight's gradient reduced as the legacy training loop
    does (_legacy_layernorm_grad_reduction)."""
    _megatron(world)
    tp, rank = _tp_rank_size()
    norm = _legacy_norm(8, tp > 1)
    seq = Shard(0, tp, rank)
    return dict(model=norm, inputs=[("x", (4, 2, 8), seq)], params={n: WHOLE for n, _ in norm.named_parameters()},
                outputs=[seq], finalize=_legacy_layernorm_grad_reduction(norm))


class _TorchReplayingArgmax:
    """Stands for `torch` in the legacy transformer module: the max over
    sinkhorn-balanced router scores [tokens, experts] (dim 1) returns the
    fixed expert of each token (a choice: no gradient flows through it), as
    the recipes replay it; every other attribute is torch's. Sinkhorn
    balances over the tokens a rank holds: under sequence parallelism its
    choice would differ from the whole sequence's by that alone."""

    def __init__(self, real, experts):
        self._real, self._experts = real, experts.reshape(-1, 1)

    def __getattr__(self, name):
        return getattr(self._real, name)

    def max(self, input, *args, **kwargs):
        dim = args[0] if args else kwargs.get("dim")
        if dim == 1 and input.dim() == 2 and input.shape[0] == self._experts.shape[0]:
            return self._real.gather(input, 1, self._experts).squeeze(1), self._experts.squeeze(1)
        return self._real.max(input, *args, **kwargs)


def build_switch_mlp(world, sequence_parallel=True):
    """shardproof's switch_mlp recipe at tp=world: the legacy get_norm
    (RMSNorm), then the legacy SwitchMLP (4 experts of ParallelMLP 4 -> 8 ->
    4, no bias, top-1 after sinkhorn, the choice replayed: _recipe_routing)
    on [seq 4, batch 2, hidden 4], this rank's sequence shard under sequence
    parallelism. Trained as the tree trains it: Megatron's DDP and
    finalize_model_grads where it has megatron.core.distributed, else the
    legacy optimizer's reduction. Loss: the batch mean of (out * out).sum()."""
    import importlib.util
    import torch
    parallel_state = _megatron(world)
    tp, rank = _tp_rank_size()
    sp = sequence_parallel and tp > 1
    from megatron.core.transformer.transformer_config import TransformerConfig
    config = TransformerConfig(**_known_fields(TransformerConfig, dict(
        num_layers=1, hidden_size=4, ffn_hidden_size=8, num_attention_heads=tp,
        tensor_model_parallel_size=tp, sequence_parallel=sp, num_moe_experts=4, moe_router_topk=1,
        moe_aux_loss_coeff=0.0, add_bias_linear=False, use_cpu_initialization=True,
        perform_initialization=True, gradient_accumulation_fusion=False)))
    norm = _legacy_norm(4, sp)
    legacy = _legacy("transformer", hidden_size=4, sequence_parallel=sp, num_experts=4)
    tokens = Shard(0, tp, rank) if sp else WHOLE
    routing = _recipe_routing(4, 2, 4, 1)
    legacy.torch = _TorchReplayingArgmax(torch, tokens.take(routing) if tokens else routing)

    class PreNormMLP(torch.nn.Module):  # a transformer layer's MLP half (as the recipe's)
        def __init__(self):
            super().__init__()
            self.norm, self.mlp = norm, legacy.SwitchMLP(config)

        def forward(self, x):
            return self.mlp(self.norm(x))

    module = PreNormMLP()
    if importlib.util.find_spec("megatron.core.distributed"):
        model, finalize = _ddp(module, config, parallel_state)
    else:
        model, finalize = module, _legacy_layernorm_grad_reduction(module)

    def loss(out):
        return (out * out).sum() / out.shape[1]

    return dict(model=model, inputs=[("x", (4, 2, 4), tokens)], params=_megatron_param_shards(model, tp, rank),
                outputs=[tokens], loss=loss, finalize=finalize)


def build_switch_mlp_no_sp(world):
    """build_switch_mlp with tensor parallelism and no sequence parallelism
    (shardproof's switch_mlp_no_sp): every rank holds the whole sequence."""
    return build_switch_mlp(world, sequence_parallel=False)


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


def _cpu_accelerator_without_ipex():
    """DeepSpeed trees from May 2023 to March 2024 (1f72082fc to c08e69f21)
    refuse DS_ACCELERATOR=cpu unless `import intel_extension_for_pytorch`
    succeeds, a check only, and their CPU accelerator's module imports
    oneccl_bindings_for_pytorch unguarded for its side effect (registering
    the "ccl" backend of torch.distributed): their CPU accelerator, engine,
    ZeRO and MoE code use neither, and the process group here is gloo's
    (_deepspeed_comm initialises it first, so deepspeed.initialize keeps
    it). For such a tree only (its accelerator's source says so), where
    they are not installed, a module that refuses every use of its
    attributes (_refusing_module) is importable under each name (a "ccl"
    group would still fail: nothing registers it); nothing of the trees is
    edited. Their CPU accelerator then names "ccl" as its communication
    backend, which would make deepspeed.comm build its oneCCL backend (a
    JIT-compiled op): it is made to name "gloo", as the trees from March
    2024 on do themselves when oneCCL is absent, so that deepspeed.comm
    runs on torch.distributed (TorchBackend) as theirs do."""
    import importlib.util
    import re
    root = importlib.util.find_spec("deepspeed").submodule_search_locations[0]

    def source(name):
        path = os.path.join(root, "accelerator", name)
        return open(path).read() if os.path.exists(path) else ""

    def absent(name):
        return name not in sys.modules and importlib.util.find_spec(name) is None

    ipex, oneccl = "intel_extension_for_pytorch", "oneccl_bindings_for_pytorch"
    if "CPU_Accelerator requires intel_extension_for_pytorch" in source("real_accelerator.py") and absent(ipex):
        sys.modules[ipex] = _refusing_module(ipex, "Intel Extension for PyTorch's")
        print(f"note: {ipex} absent: a refusing stand-in (the tree's CPU check)", file=sys.stderr)
    if re.search(r"^import oneccl_bindings_for_pytorch", source("cpu_accelerator.py"), re.M) and absent(oneccl):
        sys.modules[oneccl] = _refusing_module(oneccl, "oneCCL's bindings'")
        from deepspeed.accelerator import get_accelerator
        accelerator = get_accelerator()
        if accelerator.communication_backend_name() == "ccl":
            accelerator._communication_backend_name = "gloo"
        print(f"note: {oneccl} absent: a refusing stand-in, the CPU accelerator's backend gloo", file=sys.stderr)


def _deepspeed_comm():
    import importlib
    _cpu_accelerator_without_ipex()
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


def _deepspeed_recipes():
    """integrations/deepspeed/recipes.py, loaded under real PyTorch: the
    functions shardproof's recipes run, run here too rather than copied."""
    import importlib.util
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "..", "frontend", "python", "runtime"))
    spec = importlib.util.spec_from_file_location(
        "shardproof_deepspeed_recipes",
        os.path.join(here, "..", "..", "integrations", "deepspeed", "recipes.py"))
    recipes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recipes)
    return recipes


def _zero_gradients_as_grad(optimizer, dist):
    """ZeRO 1/2's gradient partitions gathered over each group's
    data-parallel ranks and cut back into the parameters' `.grad`, by the
    very function shardproof's recipe runs (`_gather_zero_gradients` in
    integrations/deepspeed/recipes.py, here under real PyTorch), each then
    copied out of the gathered buffer."""
    recipes = _deepspeed_recipes()
    recipes._gather_zero_gradients(optimizer, dist)
    for params in optimizer.bit16_groups:
        for p in params:
            p.grad = p.grad.clone()


def _moe_engine(world, ep, stage, local=1, tokens=2, clip=False):
    """shardproof's moe_engine recipe (topk 1, local_experts `local`) at the
    layout tp=1, ep=`ep` over `world` ranks (the others data parallel), ZeRO
    `stage`; at world 1 the same experts (ep * local) all local. The tree's
    deepspeed.moe.layer.MoE over Linear(2, 2) experts, top-1 gate with
    use_rts=False, no noise, capacity_factor = eval_capacity_factor =
    num_experts, min_capacity 0, drop_tokens=True (the capacity holds every
    token: nothing is dropped, so the routing is the argmax of the same
    gate weights over the same tokens in every run); the model returns the
    MoE output only. DeepSpeedEngine (deepspeed.initialize, SGD over the
    groups of split_params_into_different_moe_groups_for_optimizer where it
    exists, fp32, ZeRO `stage` with the recipe's 64-element buckets),
    train_micro_batch_size_per_gpu = tokens // world: one token of hidden 2
    per rank at world 2, the whole batch (`tokens`) at world 1. Loss: the
    mean over the rank's tokens of (out * out).sum(); backward is
    engine.backward (the engine's own reduction: ZeRO 0's
    allreduce_gradients, ZeRO 2's hooks and epilogue). The gradients read
    are what the optimizer steps with: .grad at stage 0, the partitions
    ZeRO keeps gathered at stages 1 and 2. Local expert i of
    expert-parallel rank e is the world-1 run's expert e*local+i. Each
    rank's loss is the mean over its slice of the batch: its input gradient
    is world times the global mean's (input_grad_scale)."""
    import inspect
    import re
    import torch
    dist = _deepspeed_comm()  # (first: it lets the CPU accelerator load)
    import deepspeed
    from deepspeed.moe.layer import MoE
    from deepspeed.moe import utils as moe_utils
    rank = torch.distributed.get_rank()
    experts, ep = ep * local, (ep if world > 1 else 1)
    if world % ep or tokens % world:
        raise RuntimeError(f"moe_engine: ep {ep}, {tokens} tokens over world {world}")
    hidden = 2
    wanted = {"num_experts": experts, "ep_size": ep, "k": 1,
              "capacity_factor": float(experts), "eval_capacity_factor": float(experts),
              "min_capacity": 0, "noisy_gate_policy": None, "drop_tokens": True,
              "use_rts": False, "top2_2nd_expert_sampling": False}
    taken = inspect.signature(MoE.__init__).parameters
    moe = MoE(hidden, torch.nn.Linear(hidden, hidden), **{n: v for n, v in wanted.items() if n in taken})

    class MoEModel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.moe = moe

        def forward(self, x):
            return self.moe(x)[0]

    model = MoEModel()
    groups = [{"params": list(model.parameters()), "name": "parameters"}]
    split = getattr(moe_utils, "split_params_into_different_moe_groups_for_optimizer", None)
    config = {"train_micro_batch_size_per_gpu": tokens // world, "gradient_accumulation_steps": 1,
              "zero_optimization": {"stage": stage, "reduce_bucket_size": 64,
                                    "allgather_bucket_size": 64},
              "zero_allow_untested_optimizer": True,
              "gradient_clipping": 1.0 if clip else 0.0}
    optimizer = torch.optim.SGD(split(groups) if split else groups, lr=0.1)
    engine, _, _, _ = deepspeed.initialize(model=model, config=config, optimizer=optimizer)
    if hasattr(engine, "monitor"):
        engine.monitor.enabled = False  # logging only (mid-2024 trees count comet as enabled)
    # DeepSpeed's expert-parallel groups are consecutive ranks: ep rank = rank % ep.
    ep_rank = rank % ep
    group = getattr(moe.deepspeed_moe, "ep_group", None)
    if group is not None and dist.get_rank(group=group) != ep_rank:
        raise RuntimeError(f"rank {rank}: expert-parallel rank {dist.get_rank(group=group)}, not {ep_rank}")
    pattern = re.compile(r"(deepspeed_experts\.)(\d+)(\.|$)")

    def rename(name):
        return pattern.sub(lambda m: f"{m[1]}{ep_rank * local + int(m[2])}{m[3]}", name)

    def loss(out):
        return (out * out).sum() / out.shape[0]

    def finalize():
        if stage:
            _zero_gradients_as_grad(engine.optimizer, dist)

    # What engine.step() clips by, by the recipe's own function.
    norm = _deepspeed_recipes()._engine_norm_and_step(engine)[0] if clip else None

    batch = Shard(0, world, rank)
    return dict(model=engine, inputs=[("x", (tokens, hidden), batch)],
                params={n: WHOLE for n, _ in engine.named_parameters()}, outputs=[batch],
                loss=loss, backward=engine.backward, finalize=finalize, rename=rename,
                input_grad_scale=1.0 / world, norm=norm)


def build_moe_engine_ep2_zero0(world):
    """moe_engine at tp=1,ep=2 (world 2), ZeRO 0."""
    return _moe_engine(world, ep=2, stage=0)


def build_moe_engine_ep2_zero2(world):
    """moe_engine at tp=1,ep=2,stage=2 (world 2)."""
    return _moe_engine(world, ep=2, stage=2)


def build_moe_engine_ep2_zero0_clip(world):
    """moe_engine at tp=1,ep=2,clip=1 (world 2), ZeRO 0: the norm clipped by."""
    return _moe_engine(world, ep=2, stage=0, clip=True)


def build_moe_engine_dp2_zero2(world):
    """moe_engine at tp=1,dp=2,stage=2: world 2, ep 1 (one expert, replicated)."""
    return _moe_engine(world, ep=1, stage=2)

def _pipeline_engine(world, clip, dp=1):
    """shardproof's pipeline_engine recipe at tp=1, `dp` data-parallel
    replicas of world // dp stages, ZeRO 0, gradient clipping at the
    recipe's 1.0 (DeepSpeed's default) or off: the tree's PipelineModule of
    Linear(2, 2) layers trained one step by PipelineEngine.train_batch over
    the recipe's micro-batches per replica, with the recipe's own
    PipelineTrainBatch (the gradients read before the schedule's optimizer
    step, the norm that step clipped by), here under real PyTorch; at world
    1 the recipe's own single-device reference (SingleDeviceTrainBatch:
    plain PyTorch over every micro-batch, not the engine). Every rank gets
    the whole batch (the first stage loads the inputs, the last the
    labels); its output is the loss."""
    import torch
    dist = _deepspeed_comm()
    import deepspeed
    from deepspeed.pipe import LayerSpec, PipelineModule
    recipes = _deepspeed_recipes()
    samples = recipes.PIPE_MICRO_BATCHES * dp
    stages = world // dp if world > 1 else 1
    module = PipelineModule(layers=[LayerSpec(torch.nn.Linear, 2, 2)
                                    for _ in range(recipes.PIPE_LAYERS)],
                            num_stages=stages, loss_fn=recipes._pipe_loss,
                            partition_method="uniform")
    batch = [("inputs", (samples, 2), None), ("labels", (samples, 2), None)]
    if world == 1:
        model = recipes.SingleDeviceTrainBatch(module, clip)
        return dict(model=model, inputs=batch,
                    params={n: WHOLE for n, _ in model.named_parameters()}, outputs=[None],
                    loss=lambda loss: loss, norm=model.grad_norm if clip else None)
    micro_batches = samples // (world // stages)
    engine, _, _, _ = deepspeed.initialize(
        model=module, config=recipes._pipeline_config(micro_batches, 0, clip),
        optimizer=torch.optim.SGD(module.parameters(), lr=0.1))
    engine.monitor.enabled = False
    step = recipes.PipelineTrainBatch(engine, micro_batches, 0, dist)
    return dict(model=step, inputs=batch,
                params={n: WHOLE for n, _ in step.named_parameters()}, outputs=[None],
                loss=lambda loss: loss, backward=lambda loss: None,
                finalize=step.finalize_grads, norm=step.grad_norm if clip else None)


def build_pipeline_engine_pp2_clip(world):
    """pipeline_engine at tp=1,pp=2 (DeepSpeed's default clipping): the norm."""
    return _pipeline_engine(world, clip=True)


def build_pipeline_engine_pp2(world):
    """pipeline_engine at tp=1,pp=2,clip=0: the gradients, unclipped."""
    return _pipeline_engine(world, clip=False)


def build_pipeline_engine_dp2(world):
    """pipeline_engine at tp=1,dp=2,clip=0: one stage, two replicas."""
    return _pipeline_engine(world, clip=False, dp=2)


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
    # a generator seeded by its name, this rank's slice copied in. A rank's
    # name is the world-1 run's name of the same parameter by spec["rename"]
    # (local expert i of expert-parallel rank e is global expert e*local+i).
    rename = spec.get("rename") or (lambda name: name)
    with torch.no_grad():
        for name, p in model.named_parameters():
            shard = spec["params"].get(name, WHOLE)
            full_shape = list(p.shape)
            if shard is not None:
                full_shape[shard.dim] *= shard.parts
            full = _full_tensor(rename(name), full_shape)
            p.copy_(shard.take(full) if shard else full)
    inputs = []
    for name, shape, shard in spec["inputs"]:
        full = _full_tensor("input:" + name, shape)
        inputs.append((shard.take(full) if shard else full).detach().clone().requires_grad_())
    out = model(*inputs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    outs = [o for o in outs if o is not None]
    loss_fn = spec.get("loss") or (lambda o: (o * o).sum())
    # spec["backward"]: the engine's own backward (DeepSpeed's engine.backward).
    (spec.get("backward") or (lambda loss: loss.backward()))(loss_fn(outs[0]))
    if spec.get("finalize"):
        spec["finalize"]()
    # The parameters this rank holds (world-1 names): an expert is held by
    # its expert-parallel rank only.
    result = {"outputs": [], "grads": {}, "input_grads": [],
              "held": [rename(name) for name, _ in model.named_parameters()]}
    for o, shard in zip(outs, spec["outputs"]):
        result["outputs"].append((o.detach().clone(), shard.as_dict() if shard else None))
    for name, p in model.named_parameters():
        if p.grad is not None:
            shard = spec["params"].get(name, WHOLE)
            result["grads"][rename(name)] = (p.grad.detach().clone(), shard.as_dict() if shard else None)
    # A rank whose loss is the mean over its data-parallel slice of the batch
    # gets dp times the input gradient of the global batch mean (DDP scales
    # the parameter gradients by 1/dp; nothing scales the input's):
    # spec["input_grad_scale"] is that 1/dp.
    input_scale = spec.get("input_grad_scale", 1.0)
    for (name, _, shard), x in zip(spec["inputs"], inputs):
        if x.grad is not None:
            result["input_grads"].append((name, x.grad.detach().clone() * input_scale,
                                          shard.as_dict() if shard else None))
    if spec.get("norm"):  # the gradient norm the step clips by, after the grads are read
        result["norm"] = torch.as_tensor(spec["norm"]()).detach().float().reshape(1)
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
    _extract_optional(git_dir, full, tree, OPTIONAL_PATHS.get(framework, []))
    return tree, full


def _extract_optional(git_dir, commit, tree, paths):
    """Each of `paths` the commit has and the tree lacks, `git archive`d into it."""
    for path in paths:
        present = subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "-e", f"{commit}:{path}"],
                                 capture_output=True).returncode == 0
        if present and not os.path.exists(os.path.join(tree, path)):
            archive = subprocess.Popen(["git", f"--git-dir={git_dir}", "archive", commit, path],
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            subprocess.run(["tar", "-x", "-C", tree], stdin=archive.stdout, check=True)
            archive.wait()


def run_world(python, tree, framework, builder, world, work, tag, timeout):
    """The builder at `world` processes; returns each rank's result file."""
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([tree, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
               OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    if framework == "deepspeed":
        env["DS_ACCELERATOR"] = "cpu"
        # 2026 trees torch.compile small helpers; dynamo probes the CUDA RNG
        # (no driver on these machines). Eager runs the same code.
        env["TORCHDYNAMO_DISABLE"] = "1"
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
        if shard is None:
            return full
        return take(full.chunk(shard["parts"], dim=shard["dim"])[shard["index"]], shard.get("then"))

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
    held_anywhere = set()
    for path in rank_paths:
        got = torch.load(path, weights_only=True)
        held = set(got.get("held", ref["grads"]))  # a rank holds only its experts
        held_anywhere |= held
        for i, ((o, shard), (ro, _)) in enumerate(zip(got["outputs"], ref["outputs"])):
            note(f"output[{i}]", o, ro, shard)
        for name, (g, shard) in got["grads"].items():
            if name not in ref["grads"]:
                rows[f"grad {name}"] = (float("inf"), float("inf"), "no gradient in the world-1 run")
                continue
            note(f"grad {name}", g, ref["grads"][name][0], shard)
        for name in ref["grads"]:
            if name in held and name not in got["grads"]:
                rows[f"grad {name}"] = (float("inf"), float("inf"), "no gradient at world N")
        for name, g, shard in got["input_grads"]:
            note(f"input grad {name}", g, ref_inputs[name], shard)
        if "norm" in ref:
            note("grad norm", got["norm"], ref["norm"], None)
    for name in ref["grads"]:
        if name not in held_anywhere:
            rows[f"grad {name}"] = (float("inf"), float("inf"), "held by no rank at world N")
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
    parser.add_argument("--role", choices=["parent", "fix", "before"], help="with --tree")
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
        # A regression's `before` (clean, as a fix is) where one is named.
        bug["before"] = entry.get("before", bug.get("before"))
        roles = [args.role] if args.role else (
            ["parent"] + (["fix"] if bug["fix"] else []) + (["before"] if bug["before"] else []))
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
            print(f"{bug_id}: open bug (no fix commit): parent"
                  f"{' and before' if bug['before'] else ' only'}")
    print("confirmed" if ok else "NOT confirmed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
