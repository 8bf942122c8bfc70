"""The training step a user launches with Megatron-LM (docs/launch.md):

    shardproof check /path/to/Megatron-LM --launch model_config.yaml [--world N]

The launch (a functional-test model_config.yaml, a launch script or an
arguments file, read by launch_file.py) names the tree's entry script and its
arguments. plan() decides the world and the reduced sizes; entry() runs, on
every simulated rank and once at world 1 with every parallel size 1 (the
reference), the entry script itself with those arguments: its argument
parsing and validation, initialize_megatron, its model provider, the
optimizer the arguments choose (setup_model_and_optimizer) and one
train_step (the schedule from get_forward_backward_func over the
micro-batches, finalize_model_grads, the optimizer step) on a generated
batch. Only the entry script's call of `pretrain` is replaced, by one step.

Compared: the step's reported losses, the gradient norm, every main
gradient and every parameter after the step."""
import contextlib
import dataclasses
import importlib.util
import inspect
import os
import sys

import torch

import launch_file
from shardproof_recipes import (LaunchError, RecipeError, asked, framework_root,
                                parallel)

# ---- The launch's parallel sizes and its reduction ----

PARALLEL_FLAGS = {"tp": "--tensor-model-parallel-size", "pp": "--pipeline-model-parallel-size",
                  "cp": "--context-parallel-size", "ep": "--expert-model-parallel-size"}


class Arguments:
    """A launch's arguments as argparse will see them: `--flag value`,
    `--flag=value` and bare flags; the last occurrence wins."""

    def __init__(self, words):
        self.items = []  # [flag, [values]]
        for word in words:
            if word.startswith("--"):
                flag, eq, value = word.partition("=")
                self.items.append([flag.replace("_", "-"), [value] if eq else []])
            elif self.items:
                self.items[-1][1].append(word)
            else:
                self.items.append(["", [word]])

    def has(self, flag):
        return any(f == flag for f, _ in self.items)

    def value(self, flag, default=None):
        for f, values in reversed(self.items):
            if f == flag:
                return values[0] if values else default
        return default

    def int(self, flag, default):
        text = self.value(flag)
        try:
            return int(text) if text is not None else default
        except ValueError:
            return default

    def drop(self, *flags):
        self.items = [item for item in self.items if item[0] not in flags]

    def set(self, flag, *values):
        self.drop(flag)
        self.items.append([flag, [str(v) for v in values]])

    def words(self):
        return [w for flag, values in self.items for w in ([flag] if flag else []) + values]


@dataclasses.dataclass(frozen=True)
class Layout:
    tp: int
    pp: int
    cp: int
    ep: int
    etp: int
    vpp: int
    sp: bool
    launched_vpp: int = 1

    @property
    def model_parallel(self):
        return self.tp * self.pp * self.cp

    def text(self, world):
        """The layout as SHARDPROOF_PARALLEL carries it: the world is
        tp x cp x dp x pp; expert parallelism lives inside the dense
        layers' data x context x tensor ranks and rides as an option."""
        dp = world // self.model_parallel
        extra = "".join(f",{name}={value}" for name, value in
                        (("moe_ep", self.ep), ("etp", self.etp), ("vpp", self.vpp))
                        if value > 1 and (name != "etp" or value != self.tp))
        return f"tp={self.tp},cp={self.cp},dp={dp},pp={self.pp},sp={int(self.sp)}" + extra


def layout_of(args):
    tp, pp, cp, ep = (args.int(PARALLEL_FLAGS[a], 1) for a in ("tp", "pp", "cp", "ep"))
    experts = args.has("--num-experts")
    etp = args.int("--expert-tensor-parallel-size", tp) if experts else 1
    layers = args.int("--num-layers", 1)
    vpp = args.int("--num-virtual-stages-per-pipeline-rank", 0)
    per_virtual = args.int("--num-layers-per-virtual-pipeline-stage", 0)
    if not vpp and per_virtual and pp > 1:
        vpp = max(1, layers // (pp * per_virtual))
    # Virtual stages beyond 2 are folded to 2: the interleaved schedule is
    # the same code for every count, and 2 already interleaves.
    return Layout(tp, pp, cp, ep, etp, min(max(vpp, 1), 2),
                  args.has("--sequence-parallel") and tp > 1, max(vpp, 1))


def launched_world(launch, args, layout, world):
    """--world, else the launcher's own, else the model-parallel sizes times
    2 (times what expert parallelism needs more), so that data parallelism
    is always exercised."""
    if not world:
        world = launch.world
    if not world:
        dp = 2
        expert_ranks = layout.ep * layout.etp
        while (dp * layout.cp * layout.tp) % expert_ranks:
            dp += 1
        world = layout.model_parallel * dp
    if world % layout.model_parallel:
        raise launch.error(PARALLEL_FLAGS["tp"], f"world {world} is not a multiple of "
                           f"tp x pp x cp = {layout.model_parallel}")
    if (world // layout.pp) % (layout.ep * layout.etp):
        raise launch.error(PARALLEL_FLAGS["ep"], f"world {world}: expert parallel "
                           f"{layout.ep} x expert tensor parallel {layout.etp} does not "
                           f"divide the {world // layout.pp} ranks of a pipeline stage")
    return world


# Options whose meaning needs hardware or files this run does not have: the
# framework's own fallback is taken (named in the report).
FALLBACKS = {
    "--transformer-impl": ("local", "Transformer Engine layers: Megatron's local layers"),
    "--attention-backend": ("unfused", "fused/flash attention: the unfused attention"),
    # A captured graph replays the kernels eager execution runs.
    "--cuda-graph-impl": ("none", "CUDA graphs: eager execution"),
}
# Flags dropped with a named fallback: what the step runs instead.
DROPPED_FLAGS = {
    "--enable-cuda-graph": "CUDA graphs: eager execution",
    "--external-cuda-graph": "CUDA graphs: eager execution",
    # The check is a fresh step: no checkpoint to read arguments from.
    "--use-checkpoint-args": "arguments from a checkpoint: the launch's own",
}
# Arguments of input/output only: files, logging, checkpoints, evaluation.
DROPPED = (
    "--data-path", "--train-data-path", "--valid-data-path", "--test-data-path",
    "--vocab-file", "--merge-file", "--tokenizer-model", "--tokenizer-type", "--split",
    "--data-cache-path", "--save", "--load", "--pretrained-checkpoint", "--save-interval",
    "--eval-interval", "--eval-iters", "--tensorboard-dir", "--wandb-project",
    "--wandb-exp-name", "--wandb-save-dir", "--async-save", "--use-persistent-ckpt-worker",
    "--ckpt-format", "--dist-ckpt-strictness", "--use-checkpoint-opt_param-scheduler",
    "--use-checkpoint-opt-param-scheduler", "--ckpt-fully-parallel-save",
    "--ckpt-fully-parallel-load", "--ckpt-assume-constant-structure", "--exit-interval",
    "--exit-duration-in-mins", "--timing-log-level", "--log-interval", "--train-iters",
    "--train-samples", "--lr-warmup-fraction", "--lr-warmup-iters", "--lr-warmup-samples",
    "--lr-decay-iters", "--lr-decay-samples", "--lr-decay-style", "--lr-wsd-decay-iters",
    "--lr-wsd-decay-samples", "--rampup-batch-size", "--num-workers", "--mock-data",
    "--profile", "--profile-step-start", "--profile-step-end", "--use-pytorch-profiler",
    "--record-memory-history", "--memory-snapshot-path", "--log-params-norm",
    "--log-num-zeros-in-grad", "--log-validation-ppl-to-tensorboard",
    "--log-timers-to-tensorboard", "--log-memory-to-tensorboard", "--log-throughput",
    "--tensorboard-log-interval", "--finetune", "--no-load-optim", "--no-load-rng",
    "--auto-detect-ckpt-format", "--non-persistent-ckpt-type", "--non-persistent-save-interval",
    "--non-persistent-global-ckpt-dir", "--object-storage-cache-path", "--exit-on-missing-checkpoint",
    "--global-batch-size", "--micro-batch-size", "--seq-length", "--max-position-embeddings",
    "--num-layers", "--hidden-size", "--ffn-hidden-size", "--num-attention-heads",
    "--num-query-groups", "--kv-channels", "--num-experts", "--moe-ffn-hidden-size",
    "--moe-shared-expert-intermediate-size", "--vocab-size", "--make-vocab-size-divisible-by",
    "--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank",
    "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers",
    "--distributed-backend", "--use-flash-attn",
)
DROPOUTS = ("--attention-dropout", "--hidden-dropout")
MLA_WIDTHS = ("--q-lora-rank", "--kv-lora-rank", "--qk-head-dim", "--qk-pos-emb-head-dim",
              "--v-head-dim")
# Kernel fusions only CUDA builds have: turned off (the unfused code is the
# framework's own reference for them).
UNFUSED = ("--no-gradient-accumulation-fusion", "--no-masked-softmax-fusion",
           "--no-bias-gelu-fusion", "--no-bias-swiglu-fusion", "--no-bias-dropout-fusion",
           "--no-persist-layer-norm", "--no-rope-fusion")
# Options the run cannot reduce or model soundly: "could not prove", named.
UNSUPPORTED = {
    "--fp8-format": "fp8 (Transformer Engine only)",
    "--fp8": "fp8 (Transformer Engine only)",
    "--fp4-format": "fp4 (Transformer Engine only)",
    "--pipeline-model-parallel-layout": "an explicit pipeline layout (not reduced yet)",
    "--decoder-first-pipeline-num-layers": "an uneven pipeline split (not reduced yet)",
    "--decoder-last-pipeline-num-layers": "an uneven pipeline split (not reduced yet)",
    "--tp-comm-overlap": "userbuffers tensor-parallel overlap (Transformer Engine only)",
    "--cpu-offloading": "activation offloading to the CPU",
    "--fine-grained-activation-offloading": "activation offloading",
    "--yaml-cfg": "a YAML argument file inside the launch",
    "--use-torch-fsdp2": "torch FSDP2",
    "--use-megatron-fsdp": "Megatron-FSDP",
    "--hybrid-context-parallel": "hybrid context parallelism",
    "--mtp-num-layers": "multi-token prediction",
}


@dataclasses.dataclass
class Reduced:
    words: list
    notes: list  # what was reduced, "name launched -> run"
    fallbacks: list
    stops: list  # (flag, what) the run cannot model


def reduce(launch, layout, dp):
    """The launch's arguments at reduced sizes for `layout` (the same sizes
    at world 1 and on the ranks; the reference only drops the parallel
    sizes): every dimension a parallel axis shards keeps two entries per
    rank, the step one iteration on generated data."""
    args = Arguments(launch.args)
    notes, fallbacks, stops = [], [], []
    for flag, what in UNSUPPORTED.items():
        if args.has(flag) and args.value(flag) not in ("none", "None", "0", "false"):
            stops.append((flag, what))
    for flag, (value, what) in FALLBACKS.items():
        if args.has(flag) and args.value(flag) not in (value, "local"):
            fallbacks.append(f"{flag} {args.value(flag)} -> {value} ({what})")
    for flag, what in DROPPED_FLAGS.items():
        if args.has(flag):
            fallbacks.append(f"{flag} -> {what}")
    if args.has("--use-flash-attn"):
        fallbacks.append("--use-flash-attn -> the unfused attention")
    dropouts = [flag for flag in DROPOUTS if float(args.value(flag, 0.1)) != 0.0]
    if dropouts:  # Megatron's defaults are 0.1
        fallbacks.append(" and ".join(f.lstrip("-") for f in dropouts) + " -> 0 (dropout "
                         "under tensor parallelism is equal to the reference only in "
                         "distribution, docs/entry-contract.md)")
    heads_per_rank = 2
    tp_cp = layout.tp * (layout.cp if args.value("--cp-comm-type") == "a2a" else 1)
    grouped = args.has("--group-query-attention")
    groups = 2 * tp_cp if grouped else None
    heads = 2 * groups if grouped else heads_per_rank * tp_cp
    head_dim = 2
    sequence = 2 * (layout.tp if layout.sp else 1) * (2 * layout.cp if layout.cp > 1 else 1)
    layers = 2 * layout.pp * layout.vpp
    ffn = 2 * max(layout.tp, 1)
    experts = 2 * layout.ep if args.has("--num-experts") else None
    launched_micro = max(1, args.int("--global-batch-size", 1) //
                         max(1, args.int("--micro-batch-size", 1) *
                             (launch.world or 1)))
    micro_batches = max(layout.pp, min(2, max(launched_micro, args.int(
        "--global-batch-size", 1) // max(1, args.int("--micro-batch-size", 1) * dp))))
    if layout.vpp > 1 and micro_batches % layout.pp:
        micro_batches += layout.pp - micro_batches % layout.pp
    micro_batch = min(2, args.int("--micro-batch-size", 1))
    global_batch = micro_batch * dp * micro_batches
    vocab = 2 * layout.tp

    def note(flag, run):
        launched = args.value(flag)
        if launched is not None and str(launched) != str(run):
            notes.append(f"{flag.lstrip('-')} {launched}->{run}")

    for flag, run in (("--num-layers", layers), ("--hidden-size", heads * head_dim),
                      ("--num-attention-heads", heads), ("--ffn-hidden-size", ffn),
                      ("--seq-length", sequence), ("--num-query-groups", groups),
                      ("--num-experts", experts), ("--micro-batch-size", micro_batch),
                      ("--global-batch-size", global_batch)):
        if run is not None:
            note(flag, run)
    if layout.launched_vpp != layout.vpp:
        notes.append(f"virtual pipeline stages {layout.launched_vpp}->{layout.vpp}")
    top_k = args.int("--moe-router-topk", 2)
    args.drop(*DROPPED, *FALLBACKS, *DROPPED_FLAGS)
    args.drop(*UNFUSED)
    args.drop(*PARALLEL_FLAGS.values(), "--expert-tensor-parallel-size", "--sequence-parallel")
    sizes = [("--num-layers", layers), ("--hidden-size", heads * head_dim),
             ("--num-attention-heads", heads), ("--kv-channels", head_dim),
             ("--ffn-hidden-size", ffn), ("--seq-length", sequence),
             ("--max-position-embeddings", sequence), ("--micro-batch-size", micro_batch),
             ("--global-batch-size", global_batch), ("--vocab-size", vocab),
             ("--make-vocab-size-divisible-by", 1), ("--train-iters", 1),
             ("--eval-iters", 0), ("--eval-interval", 1000), ("--lr-warmup-iters", 0),
             ("--lr-decay-style", "constant"), ("--tokenizer-type", "NullTokenizer"),
             ("--distributed-backend", "gloo"), ("--transformer-impl", "local"),
             ("--attention-dropout", 0.0), ("--hidden-dropout", 0.0)]
    if groups:
        sizes.append(("--num-query-groups", groups))
    if experts:
        sizes += [("--num-experts", experts), ("--moe-ffn-hidden-size", 2 * layout.etp),
                  ("--moe-router-topk", min(top_k, experts))]
    if layout.vpp > 1:
        sizes.append(("--num-virtual-stages-per-pipeline-rank", layout.vpp))
    if args.has("--moe-shared-expert-intermediate-size"):
        sizes.append(("--moe-shared-expert-intermediate-size", 2 * layout.tp))
    # Multi-latent attention's own widths: its low-rank projections and head
    # parts, 2 each (rotary parts rotate pairs); none is sharded.
    for flag in MLA_WIDTHS:
        if args.has(flag):
            note(flag, 2)
            sizes.append((flag, 2))
    for flag, value in sizes:
        args.set(flag, value)
    for flag in ("--mock-data", *UNFUSED):
        args.set(flag)
    notes.append("1 step, learning rate constant from step 0, generated tokens")
    return Reduced(args.words(), notes, fallbacks, stops)


def parallel_arguments(layout):
    words = []
    for axis, flag in PARALLEL_FLAGS.items():
        words += [flag, str(getattr(layout, axis))]
    if layout.ep > 1 or layout.etp != 1:
        words += ["--expert-tensor-parallel-size", str(layout.etp)]
    if layout.sp:
        words.append("--sequence-parallel")
    return words


# The functional-test models whose cases train through pretrain_gpt.py.
SCANNED_MODELS = ("gpt", "moe")


def configurations(root):
    """The tree's own launch configurations: its functional-test cases of
    the GPT and MoE models (tests/functional_tests/test_cases/MODEL/CASE/
    model_config.yaml), in name order."""
    cases = os.path.join(root, "tests", "functional_tests", "test_cases")
    if not os.path.isdir(cases):
        raise RecipeError(f"{root} has no tests/functional_tests/test_cases")
    found = []
    for model in SCANNED_MODELS:
        folder = os.path.join(cases, model)
        for case in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
            config = os.path.join(folder, case, "model_config.yaml")
            if os.path.isfile(config):
                found.append(config)
    return found


def _training_script(launch, root, script):
    """The entry script, which must be in the tree and train (call
    pretrain): an inference or conversion script has no step to check."""
    path = os.path.join(root, script) if root else script
    if root and not os.path.isfile(path):
        raise LaunchError(launch.path, 0, f"the tree has no entry script {script}")
    if root:
        with open(path, encoding="utf-8", errors="replace") as f:
            if "pretrain(" not in f.read():
                raise LaunchError(launch.path, 0, f"{script} is not a training launch "
                                  "(it calls no pretrain)")
    return path


def plan(path, world, model_entry):
    launch = launch_file.read(path)
    if model_entry and not model_entry.endswith(".py"):
        raise LaunchError(path, 0, "--entry with a Megatron launch names the entry "
                          f"script in the tree (pretrain_gpt.py), not {model_entry}")
    args = Arguments(launch.args)
    layout = layout_of(args)
    world = launched_world(launch, args, layout, world)
    reduced = reduce(launch, layout, world // layout.model_parallel)
    script = model_entry or launch.script or "pretrain_gpt.py"
    _training_script(launch, os.environ.get("MEGATRON_ROOT", ""), script)
    summary = [f"{script} at {layout.text(world).replace(',', ' ')} (world {world})",
               "reduced: " + ", ".join(reduced.notes)]
    if reduced.fallbacks:
        summary.append("fallbacks: " + "; ".join(reduced.fallbacks))
    if reduced.stops:
        summary.append("not modelled: " + "; ".join(f"{f} ({w})" for f, w in reduced.stops))
    # Megatron asserts it under tensor or context parallelism (a launch
    # script exports it); it changes no value.
    environment = {"CUDA_DEVICE_MAX_CONNECTIONS": "1", **launch.environment}
    return {"layout": layout.text(world), "world": world, "summary": "; ".join(summary),
            "environment": environment}


# ---- One training step of the launch, by the tree's own entry script ----


class _StepDone(Exception):
    """Raised by the pretrain stand-in once it has run the step, so that the
    entry script's own code after pretrain (none in practice) is skipped."""


def entry():
    root = framework_root("MEGATRON_ROOT", os.path.join("megatron", "core"), "Megatron-LM")
    launch = launch_file.read(os.environ["SHARDPROOF_LAUNCH"])
    launched = layout_of(Arguments(launch.args))
    reduced = reduce(launch, launched, asked().dp)
    if reduced.stops:
        from torch import _tracing
        flag, what = reduced.stops[0]
        raise _tracing.Unsupported(f"the launch turns on {what} ({flag})",
                                   loc=(launch.path, launch.line(flag)))
    reference = torch.distributed.get_world_size() == 1
    here = Layout(1, 1, 1, 1, 1, 1, False) if reference else launched
    if not reference:
        parallel()  # the world must be the layout's
    script = _training_script(launch, root, os.environ.get("SHARDPROOF_LAUNCH_MODEL")
                              or launch.script or "pretrain_gpt.py")
    argv = reduced.words + parallel_arguments(here)
    if here.vpp == 1:
        argv = _without(argv, "--num-virtual-stages-per-pipeline-rank")
    step = _TrainStep(launch)
    with _entry_script_run(script, argv, step):
        pass
    if not step.ran:
        raise LaunchError(launch.path, 0, f"{os.path.basename(script)} did not call pretrain")
    return step.contract()


# The layout keys a launch carries beyond the axes (SHARDPROOF_PARALLEL).
entry.options = {"moe_ep": (), "etp": (), "vpp": ()}


def _without(words, flag):
    """`words` (command-line arguments) without `flag` and its value, if it
    has one (the next word, unless that is a flag itself)."""
    out, skip = [], False
    for word in words:
        if word == flag:
            skip = True
            continue
        if skip and not word.startswith("--"):
            skip = False
            continue
        skip = False
        out.append(word)
    return out


@contextlib.contextmanager
def _entry_script_run(script, argv, step):
    """Runs `script` as __main__ with `argv`, its `pretrain` being `step`."""
    import megatron.training
    import megatron.training.training as training
    real = training.pretrain
    step.real_pretrain = real
    saved_argv, saved_pretrain = sys.argv, (megatron.training.__dict__.get("pretrain"), real)
    sys.argv = [script] + argv
    megatron.training.pretrain = training.pretrain = step
    folder = os.path.dirname(script)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        spec = importlib.util.spec_from_file_location("__main__", script)
        module = importlib.util.module_from_spec(spec)
        main, sys.modules["__main__"] = sys.modules.get("__main__"), module
        try:
            spec.loader.exec_module(module)
        except _StepDone:
            pass
        finally:
            sys.modules["__main__"] = main
        yield
    finally:
        sys.argv = saved_argv
        megatron.training.pretrain, training.pretrain = saved_pretrain


class _TrainStep:
    """Stands in for megatron.training.pretrain: what pretrain does up to
    the training loop (initialize_megatron, setup_model_and_optimizer, the
    training config train() sets), then one train_step, by the tree's own
    functions."""

    def __init__(self, launch):
        self.launch = launch
        self.ran = False
        self.real_pretrain = None

    def __call__(self, *args, **kwargs):
        bound = inspect.signature(self.real_pretrain).bind(*args, **kwargs)
        given = bound.arguments
        from megatron.training import training
        from megatron.training.initialize import initialize_megatron
        init = inspect.signature(initialize_megatron).parameters
        init_args = {name: given[name] for name in
                     ("extra_args_provider", "args_defaults", "get_embedding_ranks",
                      "get_position_embedding_ranks")
                     if name in init and given.get(name) is not None}
        from megatron.training import initialize
        # Builds the dataset index helpers (make) and fused kernels (nvcc):
        # the step reads generated batches and runs the unfused code.
        initialize._compile_dependencies = lambda: None
        initialize_megatron(**init_args)
        args = training.get_args()
        setup = inspect.signature(training.setup_model_and_optimizer).parameters
        setup_args = {"model_provider_func": given.get("model_provider")}
        if "cfg_container" in setup and "cfg_container" in given:
            setup_args["cfg_container"] = given["cfg_container"]
        if "checkpointing_context" in setup:
            setup_args["checkpointing_context"] = {}
        if "pg_collection" in setup:  # as pretrain passes it
            setup_args["pg_collection"] = given.get("pg_collection") or \
                _mpu_process_groups()
        model_type = given.get("model_type")
        model, optimizer, scheduler = training.setup_model_and_optimizer(
            model_type, **{k: v for k, v in setup_args.items() if k in setup})
        self._configure(training, args, model, optimizer)
        self.model, self.optimizer = model, optimizer
        self.forward_step = given["forward_step_func"]
        self.scheduler, self.args, self.training = scheduler, args, training
        self.ran = True
        raise _StepDone()

    def _configure(self, training, args, model, optimizer):
        """The training config train() sets before its loop."""
        from megatron.core.utils import get_model_config
        config = get_model_config(model[0])
        config.grad_scale_func = optimizer.scale_loss
        config.timers = training.get_timers()
        if getattr(args, "overlap_grad_reduce", False):
            config.no_sync_func = _per_chunk(model, "no_sync")
            if getattr(args, "align_grad_reduce", False):
                config.grad_sync_func = _per_chunk(model, "start_grad_sync")
        if getattr(args, "overlap_param_gather", False) and \
                getattr(args, "align_param_gather", False):
            config.param_sync_func = _per_chunk(model, "start_param_sync")
        if getattr(config, "finalize_model_grads_func", None) is None:
            from megatron.core.distributed import finalize_model_grads
            config.finalize_model_grads_func = finalize_model_grads
        self.config = config

    def contract(self):
        """The entry contract's dict: the model is the step itself."""
        return {"model": _Step(self), "inputs": (),
                "loss": lambda out: out["lm loss"],
                "backward": lambda loss: None}


class _Step(torch.nn.Module):
    """One train_step of the launch over a generated global batch; returns
    the losses train_step reports and the gradient norm, the same on every
    rank (sent from the last pipeline stage)."""

    def __init__(self, step):
        super().__init__()
        self.step = step
        self.chunks = torch.nn.ModuleList(step.model)

    def forward(self):
        step = self.step
        args, training = step.args, step.training
        from megatron.core import parallel_state
        from megatron.core.pipeline_parallel import get_forward_backward_func
        iterator = _data_iterator(args) if len(step.model) == 1 else [
            _data_iterator(args) for _ in step.model]
        run = inspect.signature(training.train_step).parameters
        call = dict(forward_step_func=step.forward_step, data_iterator=iterator,
                    model=step.model, optimizer=step.optimizer,
                    opt_param_scheduler=step.scheduler, config=step.config)
        if "forward_backward_func" in run:
            call["forward_backward_func"] = get_forward_backward_func()
        if "iteration" in run:
            call["iteration"] = 0
        result = training.train_step(**{k: v for k, v in call.items() if k in run})
        losses = result[0]
        grad_norm = result[5] if len(result) > 5 else result[2]
        if getattr(args, "use_distributed_optimizer", False):
            _mark_owned_gradients(step.optimizer, step.model)
        out = {}
        last = parallel_state.get_pipeline_model_parallel_last_rank()
        group = parallel_state.get_pipeline_model_parallel_group()
        # What train_step reports; MoE auxiliary losses go to the MoE tracker,
        # not here (not compared yet).
        for key in ("lm loss",):
            value = losses.get(key) if losses else None
            value = torch.empty(()) if value is None else value.float().reshape(())
            torch.distributed.broadcast(value, src=last, group=group)
            out[key] = value
        if grad_norm is not None:
            out["grad norm"] = torch.as_tensor(grad_norm, dtype=torch.float32)
        return out


def _mark_owned_gradients(optimizer, model):
    """After the distributed optimizer's reduce-scatter a rank's main_grad
    holds the reduced gradient only in the elements its shard owns (the
    rest is its own partial sum, never read): each parameter is marked with
    those elements (docs/entry-contract.md, `shardproof_grad_ranges`), so
    that they are checked, and only they. The ranges are the optimizer's own
    (its gbuf_ranges' "param" range of each parameter, in the parameter's
    flat elements); a parameter the shard does not reach owns none."""
    owned = {}
    for inner in getattr(optimizer, "chained_optimizers", None) or [optimizer]:
        for buffer_ranges in getattr(inner, "gbuf_ranges", None) or []:
            for buckets in buffer_ranges.values():
                for bucket in buckets:
                    for param, ranges in bucket["param_map"].items():
                        owned.setdefault(id(param), []).append(
                            (int(ranges["param"].start), int(ranges["param"].end)))
    for chunk in model:
        for p in chunk.parameters():
            if getattr(p, "main_grad", None) is not None:
                p.shardproof_grad_ranges = owned.get(id(p), [])


def _per_chunk(model, method):
    """A model chunk's bound method, or the list of every chunk's, as
    train() hands the schedule its sync functions."""
    bound = [getattr(chunk, method) for chunk in model]
    return bound[0] if len(bound) == 1 else bound


def _mpu_process_groups():
    from megatron.core.process_groups_config import ProcessGroupCollection
    return ProcessGroupCollection.use_mpu_process_groups()


def _data_iterator(args):
    """This rank's micro-batches of a generated global batch, as Megatron's
    pretraining sampler hands them out: micro-batch i of data-parallel rank
    r holds samples (i * dp + r) * mbs ... of the global batch, so the
    reference (dp 1) sees every sample in the same order. Token ids are
    concrete (they index embeddings), the loss mask all ones."""
    from megatron.core import parallel_state
    dp = parallel_state.get_data_parallel_world_size()
    rank = parallel_state.get_data_parallel_rank()
    mbs, seq = args.micro_batch_size, args.seq_length
    count = args.global_batch_size // (mbs * dp)
    vocab = args.padded_vocab_size if getattr(args, "padded_vocab_size", None) else 2
    batches = []
    for i in range(count):
        first = (i * dp + rank) * mbs
        index = torch.arange(first * (seq + 1), (first + mbs) * (seq + 1)).view(mbs, seq + 1)
        text = (index * 7 + 3) % vocab
        batches.append({"tokens": text[:, :-1].contiguous(),
                        "labels": text[:, 1:].contiguous(),
                        "loss_mask": torch.ones(mbs, seq),
                        "attention_mask": torch.tril(torch.ones(1, 1, seq, seq)) < 0.5,
                        "position_ids": torch.arange(seq).expand(mbs, seq).contiguous()})
    try:  # as build_train_valid_test_data_iterators wraps them (2024-10 on)
        from megatron.core.rerun_state_machine import RerunDataIterator
    except ImportError:
        return iter(batches)
    return RerunDataIterator(iter(batches))
