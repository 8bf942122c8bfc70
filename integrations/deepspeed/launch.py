"""The DeepSpeed training step a user launches:

    build/shardproof check DEEPSPEED_ROOT --launch ds_config.json --entry model.py::build [--world N]

runs the user's model builder and DeepSpeed JSON config through the tree's
own `deepspeed.initialize` and one training step (the engine's forward on a
generated global batch, `engine.backward(loss)`, `engine.step()`; under a
pipeline, `engine.train_batch`), on every simulated rank of a world of N and
once at world 1: the same launch with every parallel size 1 and the same
global batch (`train_batch_size` kept, `gradient_accumulation_steps`
adjusted). Compared: the loss, every gradient, the gradient norm where the
engine clips by one, every parameter after the step.

The command line's seam is plan() (the layout and the world, and a line for
the report) and entry() (docs/entry-contract.md), which reads the launch
from SHARDPROOF_LAUNCH (the config's path), SHARDPROOF_LAUNCH_MODEL
("model.py::build") and DEEPSPEED_ROOT; the layout from SHARDPROOF_PARALLEL.
Without the command line's seam, the same run is

    SHARDPROOF_LAUNCH=ds_config.json SHARDPROOF_LAUNCH_MODEL=model.py::build \\
    SHARDPROOF_PARALLEL=tp=1,cp=1,ep=1,dp=2,pp=1,sp=0 DEEPSPEED_ROOT=TREE \\
        build/shardproof check integrations/deepspeed/launch.py::entry --world 2

The builder's contract, every config key this reads and what it does with
it, and what stops as "could not prove": docs/launch.md ("DeepSpeed")."""
import ast
import importlib.util
import inspect
import json
import math
import os
import sys

import torch

import shardproof_recipes
from shardproof_recipes import LaunchError, RecipeError

BUILDER_SIZES = ("num_stages", "ep_size")  # builder parameters the launch fills

# Buffers DeepSpeed sizes by these counts of elements (5e8 by default) would
# hold that many symbolic values; a bucket groups the same sums whatever its
# size, so every run uses this one.
BUCKET = 64
BUCKET_KEYS = ("reduce_bucket_size", "allgather_bucket_size", "stage3_prefetch_bucket_size",
               "prefetch_bucket_size")
# Batch sizes past these are cut to them (every run alike): a larger batch
# repeats the same per-sample computation over more symbolic values.
MAX_MICRO_BATCH = 2
MAX_ACCUMULATION = 2


# ---- Reading the config: its values and the line of each key ----


class Config:
    """A ds_config JSON: `data` as json reads it, `file`, and the line of
    every key (`line(("zero_optimization", "stage"))`)."""

    def __init__(self, file):
        self.file = file
        try:
            with open(file) as f:
                self.text = f.read()
        except OSError as e:
            raise LaunchError(file, 0, f"cannot read the DeepSpeed config: {e.strerror}") from None
        try:
            self.data = json.loads(self.text)
        except json.JSONDecodeError as e:
            raise LaunchError(file, e.lineno, f"the DeepSpeed config is not JSON: {e.msg} "
                              f"(line {e.lineno}, column {e.colno})") from None
        if not isinstance(self.data, dict):
            raise LaunchError(file, 1, "the DeepSpeed config must be a JSON object")
        self.lines = _key_lines(self.text)

    def line(self, path):
        """The line of the key at `path` (a tuple of keys), else of the
        nearest enclosing key, else 1."""
        path = tuple(path)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return 1

    def get(self, *path, default=None):
        value = self.data
        for key in path:
            if not isinstance(value, dict) or key not in value:
                return default
            value = value[key]
        return value

    def error(self, path, message):
        return LaunchError(self.file, self.line(path), message)

    def unmodelled(self, path, message):
        """"could not prove" at the key's line, naming it."""
        from torch import _tracing
        key = ".".join(map(str, path))
        return _tracing.Unsupported(f"DeepSpeed config key '{key}': {message}",
                                    loc=(self.file, self.line(path)))


def _key_lines(text):
    """{(key, subkey, ...): line} of every key of a JSON text json.loads
    accepted (list elements by index)."""
    lines, decoder = {}, json.JSONDecoder()

    def skip(i):
        while i < len(text) and text[i] in " \t\r\n":
            i += 1
        return i

    def value(i, path):
        i = skip(i)
        if text[i] in "{[":
            closing, i, k = "}" if text[i] == "{" else "]", skip(i + 1), 0
            while text[i] != closing:
                if closing == "}":
                    key, end = json.decoder.scanstring(text, i + 1)
                    lines[path + (key,)] = text.count("\n", 0, i) + 1
                    i = value(skip(end) + 1, path + (key,))
                else:
                    i = value(i, path + (k,))
                    k += 1
                i = skip(i)
                if text[i] == ",":
                    i = skip(i + 1)
            return i + 1
        return decoder.raw_decode(text, i)[1]

    value(0, ())
    return lines


# ---- What each key does (docs/launch.md, "DeepSpeed") ----

RUN = "run as written"  # the tree's own code does what it says, the same in every run
OUTPUT = "output only"  # logging, profiling, checkpoint files: no effect on the step
BATCH, PIPELINE, ZERO, OPTIMIZER, PRECISION = "batch", "pipeline", "zero", "optimizer", "precision"

# Top-level keys. A key named nowhere here is "could not prove": it may
# change the math, and nothing here says how.
KEYS = {
    "train_batch_size": BATCH, "train_micro_batch_size_per_gpu": BATCH,
    "gradient_accumulation_steps": BATCH,
    "optimizer": OPTIMIZER, "scheduler": RUN, "gradient_clipping": RUN,
    "fp16": PRECISION, "bf16": PRECISION, "bfloat16": PRECISION,
    "zero_optimization": ZERO, "pipeline": PIPELINE,
    "zero_allow_untested_optimizer": RUN, "zero_force_ds_cpu_optimizer": RUN,
    "prescale_gradients": RUN, "gradient_predivide_factor": RUN,
    "communication_data_type": RUN, "seq_parallel_communication_data_type": RUN,
    "data_types": RUN, "disable_allgather": RUN, "gradient_allreduce_op": RUN,
    "use_data_before_expert_parallelism": RUN, "activation_checkpointing": RUN,
    "dataloader_drop_last": OUTPUT,  # the launch makes its batch, no loader
    "steps_per_print": OUTPUT, "wall_clock_breakdown": OUTPUT, "memory_breakdown": OUTPUT,
    "dump_state": OUTPUT, "tensorboard": OUTPUT, "wandb": OUTPUT, "csv_monitor": OUTPUT,
    "comet": OUTPUT, "checkpoint": OUTPUT, "load_universal_checkpoint": OUTPUT,
    "log_level": OUTPUT, "timers": OUTPUT,
}
# Sections that change the step in ways not modelled: "could not prove" when
# they are there and not switched off ({"enabled": false}).
UNMODELLED = {
    "amp": "NVIDIA apex's mixed precision",
    "torch_autocast": "torch.autocast around the forward",
    "compression_training": "quantisation and pruning of the model",
    "sparse_attention": "block-sparse attention kernels",
    "data_efficiency": "curriculum learning and random layer-token drop",
    "curriculum_learning": "a curriculum that changes the sequence length",
    "quantize_training": "quantised weights",
    "weight_quantization": "quantised weights",
    "eigenvalue": "the eigenvalue computation",
    "progressive_layer_drop": "layers dropped at random",
    "sparse_gradients": "sparse embedding gradients",
    "compile": "torch.compile of the engine",
    "tensor_parallel": "AutoTP tensor-parallel training",
    "sequence_parallel_size": "Ulysses sequence parallelism over the engine's groups",
    "hybrid_engine": "the RLHF hybrid engine",
    "elasticity": "elastic batch sizes",
    "autotuning": "the autotuner",
    "nebula": "Nebula checkpointing",
    "flops_profiler": "the flops profiler's patching of torch.nn.functional",
    "comms_logger": "the communication logger's timing of every collective",
    "aio": "NVMe offload",
    "fp8": "FP8 training",
    "zenflow": "ZenFlow's asynchronous optimizer",
    "graph_harvesting": "CUDA graphs",
    "mesh_param": "a device mesh",
}
# The keys of sections whose keys are read one by one.
ZERO_KEYS = {
    "stage": ZERO, "contiguous_gradients": RUN, "reduce_scatter": RUN, "overlap_comm": RUN,
    "reduce_bucket_size": BATCH, "allgather_bucket_size": BATCH, "allgather_partitions": RUN,
    "use_multi_rank_bucket_allreduce": RUN, "load_from_fp32_weights": RUN,
    "elastic_checkpoint": OUTPUT, "round_robin_gradients": RUN, "ignore_unused_parameters": RUN,
    "legacy_stage1": RUN, "sub_group_size": RUN,
    "stage3_prefetch_bucket_size": BATCH, "prefetch_bucket_size": BATCH,
    "stage3_param_persistence_threshold": RUN, "param_persistence_threshold": RUN,
    "stage3_model_persistence_threshold": RUN, "model_persistence_threshold": RUN,
    "stage3_max_live_parameters": RUN, "max_live_parameters": RUN,
    "stage3_max_reuse_distance": RUN, "max_reuse_distance": RUN,
    "stage3_gather_16bit_weights_on_model_save": OUTPUT,
    "gather_16bit_weights_on_model_save": OUTPUT,
    "stage3_gather_fp16_weights_on_model_save": OUTPUT,
    "stage3_module_granularity_threshold": RUN, "module_granularity_threshold": RUN,
    "stage3_use_all_reduce_for_fetch_params": RUN, "use_all_reduce_for_fetch_params": RUN,
    "stage3_allgather_sequential": RUN, "allgather_sequential": RUN,
    "memory_efficient_linear": RUN, "pipeline_loading_checkpoint": OUTPUT,
    "override_module_apply": RUN, "log_trace_cache_warnings": OUTPUT,
    "enable_sanity_checks": RUN, "cpu_offload_use_pin_memory": RUN,
    # Switched off at their defaults only (checked in _refuse_unmodelled).
    "offload_optimizer": ZERO, "offload_param": ZERO, "cpu_offload": ZERO,
    "cpu_offload_param": ZERO, "zero_hpz_partition_size": ZERO,
    "zero_quantized_weights": ZERO, "zero_quantized_nontrainable_weights": ZERO,
    "zero_quantized_gradients": ZERO, "mics_shard_size": ZERO,
    "mics_hierarchical_params_gather": ZERO, "zenflow": ZERO, "zeropp_loco_param": ZERO,
}
ZERO_OFF = {  # key: its value that changes nothing
    "cpu_offload": False, "cpu_offload_param": False, "zero_hpz_partition_size": 1,
    "zero_quantized_weights": False, "zero_quantized_nontrainable_weights": False,
    "zero_quantized_gradients": False, "mics_shard_size": -1,
    "mics_hierarchical_params_gather": False, "zenflow": None, "zeropp_loco_param": None,
}
FP16_KEYS = {"enabled", "auto_cast", "loss_scale", "initial_scale_power", "loss_scale_window",
             "hysteresis", "consecutive_hysteresis", "min_loss_scale", "type"}
BF16_KEYS = {"enabled", "immediate_grad_update", "check_grad_overflow"}
PIPELINE_KEYS = {"stages", "partition", "seed_layers", "activation_checkpoint_interval",
                 "pipe_partitioned", "grad_partitioned", "use_reentrant"}
OPTIMIZERS = {"sgd": "torch.optim.SGD", "adam": "torch.optim.Adam", "adamw": "torch.optim.AdamW"}


def _enabled(section):
    """Whether a config section is on: a dict without "enabled": false, or true."""
    if isinstance(section, dict):
        return section.get("enabled", True) is not False
    return section not in (False, None, 0)


def _refuse_unmodelled(config):
    """"could not prove", naming the first key whose effect on the step is
    not modelled (docs/launch.md)."""
    for key, value in config.data.items():
        if key in UNMODELLED:
            if _enabled(value):
                raise config.unmodelled((key,), f"{UNMODELLED[key]} is not modelled")
            continue
        if key not in KEYS:
            raise config.unmodelled((key,), "not a key this launch knows; it may change the "
                                    "training step, and nothing here says how")
    zero = config.get("zero_optimization", default={})
    if not isinstance(zero, dict):
        raise config.error(("zero_optimization",), "zero_optimization must be an object")
    for key, value in zero.items():
        if key not in ZERO_KEYS:
            raise config.unmodelled(("zero_optimization", key), "not a ZeRO key this launch knows")
        if key in ("offload_optimizer", "offload_param"):
            device = value.get("device", "none") if isinstance(value, dict) else value
            if device not in (None, "none"):
                raise config.unmodelled(("zero_optimization", key),
                                        f"offload to {device} (DeepSpeed's CPU or NVMe optimizer "
                                        "and parameter swapping) is not modelled")
        elif key in ZERO_OFF and value != ZERO_OFF[key]:
            raise config.unmodelled(("zero_optimization", key),
                                    f"{value!r} (ZeRO++, MiCS, offload or ZenFlow) is not modelled")
    if zero.get("stage", 0) not in (0, 1, 2, 3):
        raise config.error(("zero_optimization", "stage"), "ZeRO stages are 0, 1, 2 and 3")
    for section, known in (("fp16", FP16_KEYS), ("bf16", BF16_KEYS), ("bfloat16", BF16_KEYS),
                           ("pipeline", PIPELINE_KEYS)):
        value = config.get(section, default={})
        if not isinstance(value, dict):
            raise config.error((section,), f"{section} must be an object")
        for key in value:
            if key not in known:
                raise config.unmodelled((section, key), f"not a {section} key this launch knows")
    if _enabled(config.get("fp16", default={"enabled": False})) and \
            config.get("fp16", "auto_cast", default=False):
        raise config.unmodelled(("fp16", "auto_cast"), "casting the inputs to fp16 is not modelled")
    optimizer = config.get("optimizer")
    if optimizer is not None:
        kind = str(optimizer.get("type", "")) if isinstance(optimizer, dict) else ""
        if kind.lower() not in OPTIMIZERS:
            raise config.unmodelled(("optimizer", "type"),
                                    f"optimizer {kind!r}: the launch models "
                                    f"{', '.join(sorted(OPTIMIZERS))}")


# ---- The launch: sizes, batches, and the config of each run ----


class Launch:
    """What a launch runs at a layout: the parallel sizes, the global batch
    and its split, and the notes for the report (what was reduced or
    substituted)."""

    def __init__(self, config, pp, ep, dp):
        self.config = config
        self.pp, self.ep, self.dp = pp, ep, dp
        self.notes = []
        self.stage = config.get("zero_optimization", "stage", default=0)
        self._batch()

    @property
    def data_parallel(self):
        """DeepSpeed's data-parallel world: expert parallelism lies inside it."""
        return self.ep * self.dp

    def _batch(self):
        """DeepSpeed's three batch sizes at the ranks' data-parallel world:
        the global batch (train_batch_size) the ranks' layout gives, each
        rank's micro-batch and accumulation steps; micro-batches past
        MAX_MICRO_BATCH and accumulation past MAX_ACCUMULATION cut to them.
        The reference keeps the global batch and the micro-batch and takes
        as many accumulation steps as it needs."""
        config, world = self.config, self.data_parallel
        total = config.get("train_batch_size")
        micro = config.get("train_micro_batch_size_per_gpu")
        steps = config.get("gradient_accumulation_steps")
        for key, value in (("train_batch_size", total),
                           ("train_micro_batch_size_per_gpu", micro),
                           ("gradient_accumulation_steps", steps)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                      or value < 1):
                raise config.error((key,), f"{key} must be a positive integer, not {value!r}")
        if total is None and micro is None:
            raise config.error(("train_batch_size",), "the config sets neither train_batch_size "
                               "nor train_micro_batch_size_per_gpu")
        if total is not None:
            if micro is None:
                steps = steps or 1
                if total % (steps * world):
                    raise config.error(("train_batch_size",),
                                       f"train_batch_size {total} does not split over "
                                       f"{world} data-parallel ranks x {steps} accumulation steps")
                micro = total // (steps * world)
            elif total % (micro * world):
                raise config.error(("train_batch_size",),
                                   f"train_batch_size {total} is not a multiple of "
                                   f"train_micro_batch_size_per_gpu {micro} x {world} "
                                   "data-parallel ranks")
            else:
                wanted = total // (micro * world)
                if steps is not None and steps != wanted:
                    self.notes.append(f"gradient_accumulation_steps {steps} -> {wanted} for "
                                      f"{world} data-parallel ranks (train_batch_size {total} kept)")
                steps = wanted
        else:
            steps = steps or 1
            total = micro * steps * world
        if micro > MAX_MICRO_BATCH:
            self.notes.append(f"micro-batch {micro} -> {MAX_MICRO_BATCH}")
            micro = MAX_MICRO_BATCH
        if steps > MAX_ACCUMULATION:
            self.notes.append(f"accumulation steps {steps} -> {MAX_ACCUMULATION}")
            steps = MAX_ACCUMULATION
        self.micro, self.steps = micro, steps
        self.samples = micro * steps * world  # the global batch every run draws
        if self.samples != total:
            self.notes.append(f"global batch {total} -> {self.samples}")

    def run_config(self, run_world, notes=None):
        """The config one run passes to deepspeed.initialize: its batch sizes
        (the same global batch at the run's data-parallel world), the
        buckets at BUCKET elements, Adam as torch's, the logs off. `notes`
        gets what was reduced or substituted."""
        notes = self.notes if notes is None else notes
        run = json.loads(json.dumps(self.config.data))
        data_parallel = run_world // (self.pp if run_world > 1 else 1)
        run["train_batch_size"] = self.samples
        run["train_micro_batch_size_per_gpu"] = self.micro
        run["gradient_accumulation_steps"] = self.samples // (self.micro * data_parallel)
        zero = run.setdefault("zero_optimization", {})
        reduced = []
        for key in BUCKET_KEYS:
            if key in zero or key in BUCKET_KEYS[:2]:
                if zero.get(key, 5e8) > BUCKET:
                    reduced.append(f"{key} {zero.get(key, 'default')}")
                    zero[key] = BUCKET
        if reduced:
            notes.append(f"ZeRO buckets ({', '.join(reduced)}) -> {BUCKET} elements")
        optimizer = run.get("optimizer")
        if isinstance(optimizer, dict) and str(optimizer.get("type")).lower() in ("adam", "adamw"):
            params = optimizer.setdefault("params", {})
            if not params.get("torch_adam"):
                notes.append(f"optimizer {optimizer['type']}: DeepSpeed's FusedAdam (a CUDA "
                             "kernel) as torch's (torch_adam), the same update")
                params["torch_adam"] = True
        # Logging only; a None steps_per_print made train_batch raise on trees
        # from f74ea69ab to 20f988ead.
        run["steps_per_print"] = 10 ** 9
        run["wall_clock_breakdown"] = False
        for key in ("tensorboard", "wandb", "csv_monitor", "comet"):
            if isinstance(run.get(key), dict):
                run[key]["enabled"] = False
        return run

    def summary(self, model_entry):
        config = self.config
        what = [f"ZeRO {self.stage}"]
        if _enabled(config.get("bf16", default=config.get("bfloat16", default={"enabled": False}))):
            what.append("bf16")
        if _enabled(config.get("fp16", default={"enabled": False})):
            what.append("fp16")
        clip = config.get("gradient_clipping")
        if clip is None:
            what.append("DeepSpeed's default gradient clipping")
        elif clip:
            what.append(f"gradient clipping {clip}")
        if self.pp > 1:
            what.append(f"{self.pp} pipeline stages")
        if self.ep > 1:
            what.append(f"{self.ep}-way expert parallelism")
        optimizer = config.get("optimizer", "type")
        if optimizer:
            what.append(f"optimizer {optimizer}")
        notes = list(self.notes)
        self.run_config(self.pp * self.ep * self.dp, notes)
        line = (f"DeepSpeed launch of {model_entry} with {os.path.basename(config.file)} "
                f"({', '.join(what)}): {self.pp * self.ep * self.dp} ranks, "
                f"{self.dp * self.ep} data-parallel, each {_count(self.steps, 'micro-batch')} "
                f"of {self.micro} (global batch {self.samples}); reference: world 1, "
                f"{_count(self.samples // self.micro, 'micro-batch')}")
        if notes:
            line += "; reduced or substituted: " + "; ".join(dict.fromkeys(notes))
        return line


def _count(n, what):
    return f"{n} {what}" + ("" if n == 1 else "es" if what.endswith("h") else "s")


# ---- The user's builder ----


def _split_entry(model_entry, config):
    """(absolute file, function) of "path/model.py::build"."""
    if not model_entry:
        raise LaunchError(config.file, 1, "a DeepSpeed launch needs the model's builder: "
                          "--entry MODEL.py::FUNCTION")
    path, _, function = model_entry.partition("::")
    function = function or "build"
    path = os.path.abspath(path)
    if not os.path.exists(path):
        raise LaunchError(path, 0, "no such file (the model builder of the launch)")
    return path, function


def _builder_sizes(path, function):
    """The parallel sizes the builder asks for: the defaults of its
    `num_stages` and `ep_size` parameters (BUILDER_SIZES), read from its
    source without running it. {name: int} and the builder's line."""
    with open(path) as f:
        source = f.read()
    try:
        tree = ast.parse(source, path)
    except SyntaxError as e:
        raise LaunchError(path, e.lineno or 0, f"syntax error: {e.msg}") from None
    found = [node for node in tree.body
             if isinstance(node, ast.FunctionDef) and node.name == function]
    if not found:
        raise LaunchError(path, 0, f"{os.path.basename(path)} defines no function {function}() "
                          "at its top level (the model builder of the launch)")
    node = found[-1]
    arguments = node.args.args + node.args.kwonlyargs
    defaults = [None] * (len(node.args.args) - len(node.args.defaults)) + \
        list(node.args.defaults) + list(node.args.kw_defaults)
    sizes = {}
    for argument, default in zip(arguments, defaults):
        if argument.arg not in BUILDER_SIZES:
            if default is None:
                raise LaunchError(path, node.lineno, f"{function}() takes '{argument.arg}', "
                                  "which the launch cannot give (it gives "
                                  f"{', '.join(BUILDER_SIZES)})")
            continue
        try:
            value = ast.literal_eval(default) if default is not None else 1
        except ValueError:
            value = None
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise LaunchError(path, node.lineno, f"the default of {function}()'s "
                              f"'{argument.arg}' must be a positive integer literal: the size "
                              "the launch asks for")
        sizes[argument.arg] = value
    return sizes, node.lineno


def _sizes(config, path, function):
    """(pp, ep) the launch asks for: the pipeline's stages (the config's
    pipeline.stages, else the default of the builder's num_stages) and the
    expert parallelism (the default of the builder's ep_size)."""
    sizes, _ = _builder_sizes(path, function)
    pp = sizes.get("num_stages", 1)
    stages = config.get("pipeline", "stages", default="auto")
    if stages != "auto":
        if not isinstance(stages, int) or isinstance(stages, bool) or stages < 1:
            raise config.error(("pipeline", "stages"), f"pipeline.stages must be a positive "
                               f"integer or \"auto\", not {stages!r}")
        if "num_stages" in sizes and sizes["num_stages"] != stages:
            raise config.error(("pipeline", "stages"),
                               f"pipeline.stages {stages} and the builder's num_stages default "
                               f"{sizes['num_stages']} disagree")
        if stages > 1 and "num_stages" not in sizes:
            raise config.error(("pipeline", "stages"),
                               f"pipeline.stages is {stages} but {function}() takes no "
                               "num_stages to build its PipelineModule with")
        pp = stages
    return pp, sizes.get("ep_size", 1)


def configurations(root):
    """The launch configurations the tree ships: none. A DeepSpeed config
    is the user's own, with their model (check TREE --launch CONFIG --entry
    MODEL.py::FUNC); a scan of the tree runs the recipes."""
    return []


def plan(launch_file, world, model_entry):
    """The layout, world and report line of a launch (the C++ seam)."""
    config = Config(launch_file)
    path, function = _split_entry(model_entry, config)
    pp, ep = _sizes(config, path, function)
    if world:
        if world % (pp * ep):
            raise config.error(("pipeline", "stages") if pp > 1 else (),
                               f"a world of {world} does not split into {pp} pipeline "
                               f"stage(s) x {ep} expert-parallel rank(s)")
        dp = world // (pp * ep)
    else:
        dp = 2
        world = pp * ep * dp
    launch = Launch(config, pp, ep, dp)
    return {"layout": f"tp=1,cp=1,ep={ep},dp={dp},pp={pp},sp=0", "world": world,
            "summary": launch.summary(f"{os.path.basename(path)}::{function}")}


def _load_builder(path, function):
    """The user's builder, its file imported afresh (as user code: its
    findings are located in it)."""
    directory = os.path.dirname(path)
    if directory not in sys.path:
        sys.path.append(directory)
    spec = importlib.util.spec_from_file_location("shardproof_launch_model", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    builder = getattr(module, function, None)
    if not callable(builder):
        raise LaunchError(path, 0, f"{os.path.basename(path)} has no function {function}()")
    return builder


BUILT_KEYS = ("model", "batch", "loss", "optimizer", "lr_scheduler")


class Built:
    """What the builder returned: a module, or a dict with `model` and
    optionally `batch(samples)` (the inputs, or (inputs, labels), with the
    samples along dim 0), `loss(output[, labels])`, `optimizer` (a torch
    optimizer or a callable of the parameters, as deepspeed.initialize
    takes) and `lr_scheduler`."""

    def __init__(self, result, path, line):
        if isinstance(result, torch.nn.Module):
            result = {"model": result}
        if not isinstance(result, dict) or not isinstance(result.get("model"), torch.nn.Module):
            raise LaunchError(path, line, "the builder must return a torch.nn.Module or a dict "
                              "with 'model' (a torch.nn.Module)")
        unknown = sorted(set(result) - set(BUILT_KEYS))
        if unknown:
            raise LaunchError(path, line, f"the builder's dict has unknown keys {unknown}; it "
                              f"may have {list(BUILT_KEYS)}")
        for key in ("batch", "loss"):
            if result.get(key) is not None and not callable(result[key]):
                raise LaunchError(path, line, f"the builder's '{key}' is not callable")
        self.model = result["model"]
        self.batch, self.loss = result.get("batch"), result.get("loss")
        self.optimizer, self.lr_scheduler = result.get("optimizer"), result.get("lr_scheduler")
        self.path, self.line = path, line

    def global_batch(self, samples, pipeline):
        """(inputs tuple, labels or None) of `samples` samples."""
        if self.batch is None:
            first = next((m for m in self.model.modules() if isinstance(m, torch.nn.Linear)), None)
            if pipeline or first is None:
                raise LaunchError(self.path, self.line, "the builder must return a dict with "
                                  "'batch': a function of the sample count that returns the "
                                  "inputs, or (inputs, labels)" +
                                  (" (a pipeline's loss_fn takes the labels)" if pipeline else ""))
            return (torch.randn(samples, first.in_features),), None
        batch = self.batch(samples)
        if isinstance(batch, torch.Tensor):
            return (batch,), None
        if isinstance(batch, (tuple, list)) and len(batch) == 2:
            inputs, labels = batch
            inputs = (inputs,) if isinstance(inputs, torch.Tensor) else tuple(inputs)
            tensors = list(inputs) + ([] if labels is None else [labels])
            if all(isinstance(t, torch.Tensor) and t.dim() and t.shape[0] == samples
                   for t in tensors):
                return inputs, labels
        raise LaunchError(self.path, self.line, f"the builder's batch({samples}) must return a "
                          f"tensor or (inputs, labels) of {samples} samples along dim 0")


def _default_loss(output):
    """The loss where the builder gives none (and its batch no labels): the
    output if the model returns its loss (a scalar), else the mean of its
    squares."""
    if isinstance(output, (tuple, list)):
        output = output[0]
    if output.dim() == 0:
        return output
    return (output * output).mean()


# ---- The run ----


def _recipes():
    """integrations/deepspeed/recipes.py (the engine helpers the recipes
    and the launch share), imported under a name of its own."""
    name = "shardproof_deepspeed_recipes"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, os.path.join(os.path.dirname(os.path.abspath(__file__)), "recipes.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _analysed(path):
    """The user's model file is analysed code as the tree is (findings are
    located in it); this file is harness."""
    from torch import _tracing
    roots = _tracing.state.root
    roots = roots if isinstance(roots, tuple) else (roots,)
    _tracing.state.root = tuple(r for r in roots if r) + (path,)
    _tracing.state.harness.add(os.path.abspath(__file__))


def _cast(tensor, dtype):
    """A floating batch tensor in the engine's dtype, as a user's loop does
    (`.half()`, `.to(torch.bfloat16)`)."""
    return tensor.to(dtype) if dtype is not None and tensor.is_floating_point() else tensor


def _engine_dtype(config):
    if _enabled(config.get("bf16", default=config.get("bfloat16", default={"enabled": False}))):
        return torch.bfloat16
    if _enabled(config.get("fp16", default={"enabled": False})):
        return torch.float16
    return None


class EngineStep(torch.nn.Module):
    """One training step of a DeepSpeedEngine as a user's loop runs it:
    for each of this rank's micro-batches `loss = loss_fn(engine(inputs),
    labels)`, `engine.backward(loss)`, `engine.step()` (a step only at the
    accumulation boundary). The forward runs every micro-batch but the
    last whole and the last one's forward; the entry's backward, gradient
    norm and step are the last one's. Returns the loss the launch compares:
    the mean over the micro-batches, averaged over the data-parallel ranks
    (as a user's logging reduces it; DeepSpeed's engine does not)."""

    def __init__(self, engine, launch, built, dtype, group):
        super().__init__()
        self.engine, self.launch, self.built = engine, launch, built
        self.dtype, self.group = dtype, group
        self.last = None

    def micro_batches(self, inputs, labels):
        """This rank's micro-batches of the global batch: micro-batch k of
        data-parallel rank d is samples [(k D + d) m, (k D + d + 1) m)."""
        group = self.group
        ranks = torch.distributed.get_world_size(group=group) if group is not None else 1
        rank = torch.distributed.get_rank(group=group) if group is not None else 0
        micro = self.launch.micro
        steps = inputs[0].shape[0] // (micro * ranks)
        for k in range(steps):
            first = (k * ranks + rank) * micro
            yield (tuple(_cast(x[first:first + micro], self.dtype) for x in inputs),
                   None if labels is None else _cast(labels[first:first + micro], self.dtype))

    def forward(self, *batch):
        labels = batch[-1] if self.has_labels else None
        inputs = batch[:-1] if self.has_labels else batch
        micro = list(self.micro_batches([x.detach() for x in inputs],
                                        None if labels is None else labels.detach()))
        losses = []
        for k, (x, y) in enumerate(micro):
            out = self.engine(*x)
            if self.built.loss is None:
                loss = _default_loss(out)
            else:
                loss = self.built.loss(out) if y is None else self.built.loss(out, y)
            if k + 1 < len(micro):
                self.engine.backward(loss)
                self.engine.step()
            else:
                self.last = loss
            losses.append(loss.detach().float())
        reported = sum(losses[1:], losses[0]) / len(losses)
        if self.group is not None and torch.distributed.get_world_size(group=self.group) > 1:
            torch.distributed.all_reduce(reported, group=self.group)
            reported = reported / torch.distributed.get_world_size(group=self.group)
        return reported


class ZeroThreeStep:
    """ZeRO 3 leaves every parameter empty between uses, its values and its
    gradient partitioned over the data-parallel ranks. After the backward
    (`finalize_grads`) each gradient is gathered whole (DeepSpeed's
    safe_get_full_grad), the step runs (recording the norm it clipped by),
    and the parameters are gathered whole (ZeRO's own all-gather) with the
    gradients as `.grad`: what the check reads. Their initial values are
    recorded as made (`made_with`, before deepspeed.initialize emptied them)."""

    def __init__(self, engine, made_with):
        self.engine, self.norms = engine, []
        for p, values in made_with:
            if hasattr(p, "ds_id") and "_shardproof_initial" not in p.__dict__:
                p._shardproof_initial = values

    def finalize_grads(self):
        from deepspeed.utils import safe_get_full_grad
        gradients = [(p, safe_get_full_grad(p)) for p in self.engine.module.parameters()]
        with _recipes()._clip_norms_recorded(self.norms):
            self.engine.step()
        for p, gradient in gradients:
            if hasattr(p, "ds_id"):
                p.all_gather()
            if gradient is not None:
                p.grad = gradient.to(p.dtype).view(p.shape)

    def grad_norm(self):
        return _recipes()._clipping_norm(self.engine, self.norms)


def entry():
    """docs/entry-contract.md's entry for the launch named by SHARDPROOF_LAUNCH
    and SHARDPROOF_LAUNCH_MODEL."""
    launch_file = os.environ.get("SHARDPROOF_LAUNCH")
    if not launch_file:
        raise RecipeError("set SHARDPROOF_LAUNCH to the DeepSpeed config of the launch")
    config = Config(launch_file)
    path, function = _split_entry(os.environ.get("SHARDPROOF_LAUNCH_MODEL", ""), config)
    pp, ep = _sizes(config, path, function)
    asked, layout = shardproof_recipes.asked(), shardproof_recipes.parallel()
    if (asked.pp, asked.ep) != (pp, ep) or asked.tp != 1 or asked.cp != 1:
        raise config.error((), f"the layout {os.environ.get('SHARDPROOF_PARALLEL')} is not "
                           f"this launch's (pp={pp}, ep={ep}): plan() gives it")
    launch = Launch(config, pp, ep, asked.dp)
    _refuse_unmodelled(config)
    recipes = _recipes()
    deepspeed, dist, _ = recipes._engine_with("deepspeed.runtime.engine")
    _analysed(path)
    world = torch.distributed.get_world_size()
    builder = _load_builder(path, function)
    sizes, line = _builder_sizes(path, function)
    given = {"num_stages": layout.pp, "ep_size": layout.ep}
    built = Built(builder(**{k: given[k] for k in sizes}), path, line)
    pipeline = _pipeline_module(built, layout, path, line)
    dtype = _engine_dtype(config)
    inputs, labels = built.global_batch(launch.samples, pipeline)
    if labels is not None and built.loss is None and not pipeline:
        raise LaunchError(path, line, "the builder's batch gives labels but it gives no "
                          "'loss' to take them")
    run = launch.run_config(world, [])
    optimizer = built.optimizer
    # The values each parameter was made with (the stand-in's; real PyTorch,
    # which tests/groundtruth/launch_deepspeed.py runs this with, has none).
    made_with = [(p, p._a.copy()) for p in built.model.parameters() if hasattr(p, "_a")]
    engine, _, _, _ = deepspeed.initialize(
        model=built.model, config=run, optimizer=optimizer, lr_scheduler=built.lr_scheduler,
        model_parameters=[p for p in built.model.parameters() if p.requires_grad])
    if hasattr(engine, "monitor"):
        engine.monitor.enabled = False
    batch = inputs + (() if labels is None else (labels,))
    entry = {"inputs": tuple(t.detach() for t in batch), "loss": lambda loss: loss,
             "parameter_names": _parameter_names(engine)}
    # DeepSpeed's own default (1.0 in current trees) where the config is silent.
    clip = engine.gradient_clipping() > 0
    if pipeline:
        return _pipeline_entry(entry, engine, launch, run, dtype, clip, dist, inputs, labels)
    step = EngineStep(engine, launch, built, dtype, engine.data_parallel_group)
    step.has_labels = labels is not None
    entry["model"] = step
    if launch.stage == 3:
        zero3 = ZeroThreeStep(engine, made_with)
        entry.update(backward=lambda loss: engine.backward(step.last),
                     finalize_grads=zero3.finalize_grads, step=lambda: None)
        if clip:
            entry["grad_norm"] = zero3.grad_norm
        return entry
    backward, finalize_grads = recipes._engine_step(engine, launch.stage, dist)
    entry.update(backward=lambda loss: backward(step.last), finalize_grads=finalize_grads)
    if clip:  # the engine's step computes the norm it clips by (and steps)
        entry["grad_norm"], entry["step"] = recipes._engine_norm_and_step(engine)
    else:
        entry["step"] = engine.step
    return entry


def _pipeline_module(built, layout, path, line):
    """Whether the builder built a PipelineModule, and with the stages the
    run asks for."""
    from deepspeed.pipe import PipelineModule
    if not isinstance(built.model, PipelineModule):
        if layout.pp > 1:
            raise LaunchError(path, line, f"the launch asks for {layout.pp} pipeline stages "
                              "but the builder returned no deepspeed.pipe.PipelineModule")
        return False
    stages = built.model.num_stages
    if stages != layout.pp:
        raise LaunchError(path, line, f"the builder's PipelineModule has {stages} stages where "
                          f"this run asks for {layout.pp}: build it with num_stages=num_stages")
    return True


def _pipeline_entry(entry, engine, launch, run, dtype, clip, dist, inputs, labels):
    """A PipelineModule's step: engine.train_batch over this data-parallel
    rank's micro-batches (recipes.PipelineTrainBatch), the loss it returns
    (averaged over the micro-batches and the data-parallel ranks by the
    engine), the gradients it reduced, the norm it clipped by, the
    parameters after its step."""
    recipes = _recipes()
    if len(inputs) != 1 or labels is None:
        raise RecipeError("a pipeline's batch is (inputs, labels), one input tensor")
    # This run's micro-batches per data-parallel rank (the reference's: all).
    step = recipes.PipelineTrainBatch(engine, run["gradient_accumulation_steps"], launch.stage,
                                      dist, micro_batch=launch.micro)
    engine_inputs = _cast(entry["inputs"][0], dtype), _cast(entry["inputs"][1], dtype)
    entry.update(model=step, inputs=engine_inputs, backward=lambda loss: None,
                 finalize_grads=step.finalize_grads, step=lambda: None)
    if clip:
        entry["grad_norm"] = step.grad_norm
    return entry


def _parameter_names(engine):
    """A rank's parameter name as the reference's: local expert i of an
    expert-parallel rank e is global expert e * local + i (the launch's
    layers hold the same count of local experts each)."""
    from deepspeed.moe.layer import MoE
    from deepspeed.utils import groups
    layers = [m for m in engine.module.modules() if isinstance(m, MoE)]
    if not layers:
        return lambda name: name
    local = {m.num_local_experts for m in layers}
    if len(local) != 1 or len({m.ep_size for m in layers}) != 1:
        from torch import _tracing
        raise _tracing.Unsupported("MoE layers with different expert counts or ep_size in one "
                                   "model are not modelled")
    rank = groups._get_expert_parallel_rank(layers[0].expert_group_name)
    return _recipes()._expert_names(local.pop(), rank)
