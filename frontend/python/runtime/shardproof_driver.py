"""Runs one simulated rank of a harness: FILE::FUNC called with
torch.distributed set to (world, rank), the model's forward on the inputs it
returns, and every parameter, input and output recorded for the linker.

run_rank returns None on success, or (kind, file, line, message) where kind
is "bad-input" (the harness is wrong) or "unsupported" (we cannot model it)."""
import contextlib
import dataclasses
import importlib.util
import inspect
import os
import sys
import traceback
import warnings

import _shardproof as _sp
import torch
import torch.distributed as dist
from torch import _tracing
from torch._tensor import Tensor

import import_policy
import shardproof_recipes

_tracing.RUNTIME_DIRS.append(os.path.dirname(os.path.abspath(__file__)))
import_policy.install()


def _newer_python_names():
    """The embedded interpreter is Debian's Python 3.11; frameworks written
    for 3.12 import names it lacks that are pure declarations with no effect
    on what runs (typing.override marks a method, nothing more)."""
    import typing
    if not hasattr(typing, "override"):
        def override(method):
            try:
                method.__override__ = True
            except (AttributeError, TypeError):
                pass
            return method
        typing.override = override


_newer_python_names()
_BASELINE_MODULES = None


class HarnessError(Exception):
    def __init__(self, file, line, message):
        super().__init__(message)
        self.file, self.line = file, line


def _purge_user_modules():
    """Each rank starts from freshly imported user code: module-level state
    (parallel-state globals, caches) must not leak from one rank to the next."""
    for name in list(sys.modules):
        if name not in _BASELINE_MODULES:
            module = sys.modules.pop(name)
            # `import torch.x` also set torch.x: a kept parent must not hand
            # the last rank's module to the next one.
            parent, _, child = name.rpartition(".")
            if parent in _BASELINE_MODULES and \
                    getattr(sys.modules.get(parent), child, None) is module:
                delattr(sys.modules[parent], child)


def executed_files():
    """The files of the user modules the last run imported (those loaded
    after shardproof's own, at the first run): --diff selects by them."""
    files = set()
    for name, module in list(sys.modules.items()):
        if _BASELINE_MODULES is not None and name in _BASELINE_MODULES:
            continue
        # Read from the namespace: a stand-in module (a loaded extension)
        # fails closed on attributes it does not model, __file__ among them.
        file = getattr(module, "__dict__", {}).get("__file__")
        if isinstance(file, str) and file.endswith(".py"):
            files.add(os.path.abspath(file))
    return sorted(files)


def _load(path):
    if not os.path.exists(path):
        raise HarnessError(path, 0, "no such file")
    directory = os.path.dirname(path)
    if directory not in sys.path:
        sys.path.insert(len(_tracing.RUNTIME_DIRS), directory)
    spec = importlib.util.spec_from_file_location("__shardproof_harness__", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@dataclasses.dataclass
class _Entry:
    """What the entry returned (docs/entry-contract.md)."""
    model: object
    inputs: object
    loss: object = None
    # The framework's own backward pass, called with the loss in place of
    # loss.backward() (DeepSpeed's engine.backward: its hooks run only there).
    backward: object = None
    finalize_grads: object = None
    # The optimizer step after finalize_grads: every parameter is then
    # checked against the reference's updated parameter.
    step: object = None
    # Called after finalize_grads (and before step): the gradient norm the
    # framework computes for clipping, which every rank must agree on with
    # the reference (it may clip the gradients in place, as step would see).
    grad_norm: object = None
    tensor_parallel_group: object = None
    data_parallel_group: object = None  # each rank takes its slice of the batch
    parameter_names: object = None  # rank's qualified name -> the reference's

    def parameters(self):
        """(reference name, parameter) for every parameter of the model."""
        if not hasattr(self.model, "named_parameters"):
            return
        for name, p in self.model.named_parameters():
            yield (self.parameter_names(name) if self.parameter_names else name), p


_ENTRY_KEYS = tuple(f.name for f in dataclasses.fields(_Entry))


def _unpack(result, path, line):
    if isinstance(result, dict):
        if "model" not in result or "inputs" not in result:
            raise HarnessError(path, line, "the entry's dict needs 'model' and 'inputs'")
        unknown = sorted(set(result) - set(_ENTRY_KEYS))
        if unknown:
            raise HarnessError(path, line, f"the entry's dict has unknown keys {unknown}; "
                               f"it may have {list(_ENTRY_KEYS)}")
        for key in ("loss", "backward", "finalize_grads", "grad_norm", "step",
                    "parameter_names"):
            if result.get(key) is not None and not callable(result[key]):
                raise HarnessError(path, line, f"the entry's '{key}' is not callable")
        for key in ("tensor_parallel_group", "data_parallel_group"):
            group = result.get(key)
            if group is not None and not hasattr(group, "ranks"):
                raise HarnessError(path, line, f"the entry's '{key}' is a "
                                   f"{type(group).__name__}, not a process group")
        return _Entry(**result)
    if isinstance(result, (tuple, list)) and len(result) == 2:
        return _Entry(result[0], result[1])
    raise HarnessError(path, line, "the entry must return (model, inputs) or a dict "
                       f"with 'model' and 'inputs', not {type(result).__name__}")


def _record_parameters(entry):
    """A parameter carrying `partition_dim` is shard (rank in the
    tensor-parallel group) of (its size); the group is the world unless the
    entry names it. The entry's tensor- and data-parallel groups are recorded
    when smaller than the world: outputs may be laid out over them."""
    group = entry.tensor_parallel_group or dist.group.WORLD
    if dist.get_rank() not in group.ranks:
        raise _tracing.Unsupported("this rank is not in the entry's tensor_parallel_group")
    rank = group.ranks.index(dist.get_rank())
    world = len(group.ranks)
    if world != dist.get_world_size():
        _sp.record_parallel_group("tensor_parallel", list(group.ranks))
    data_group = entry.data_parallel_group
    if data_group is not None and len(data_group.ranks) != dist.get_world_size():
        if dist.get_rank() not in data_group.ranks:
            raise _tracing.Unsupported("this rank is not in the entry's data_parallel_group")
        _sp.record_parallel_group("data_parallel", list(data_group.ranks))
    for name, p in entry.parameters():
        dim = getattr(p, "partition_dim", -1)
        if not getattr(p, "tensor_model_parallel", dim >= 0):
            dim = -1
        stride = int(getattr(p, "partition_stride", 1))
        if dim < 0 and world > 1:
            dim, stride = _inferred_partition(p, rank, world)
        # A parameter DDP broadcast at construction holds rank 0's values; it
        # is recorded by the values it was made with (and their shape: ZeRO 3
        # leaves each parameter empty, its values in the partitions).
        made_with = getattr(p, "_shardproof_initial", p._a)
        flat = made_with.ravel().tolist()
        p.__dict__["_shardproof_recorded"] = [_term_key(v) for v in p._a.ravel().tolist()]
        for i, term in enumerate(flat):
            _sp.rename(term, f"{name}{_index(made_with.shape, i)}")
        file, line = getattr(p, "_origin", ("", 0))
        _sp.record_leaf(role="param", name=name, shape=made_with.shape, elements=flat,
                        partition_dim=dim, partition_stride=stride,
                        shard=rank, shards=world, file=file, line=line)


def _inferred_partition(p, rank, world):
    """(partition_dim, partition_stride) of a parameter that carries no
    Megatron attributes, from what the run knows of which part of the whole
    it holds: the framework's own metadata of the slices of the unsharded
    tensor it holds (nanotron's sharded-parameter info), else the part of a
    tensor the entry made whole that it was re-pointed at while built
    (`weight.data = torch.split(master, n, dim)[rank]`). Accepted only where
    those places are exactly shard `rank` of `world` along one dim with one
    stride, as the checks lay the parameter out; (-2, 1) where they are a
    part of the whole that is not this rank's shard (every rank keeping part
    0: no binding makes that initialisation the reference's); (-1, 1) where
    nothing says it (the analyzer then tries the shards its shape fits)."""
    part = _metadata_part(p) or p.__dict__.get("_shardproof_source")
    if not part:
        return -1, 1
    whole, positions = part
    local = tuple(p.shape)
    if len(whole) != len(local) or len(positions) != p.numel():
        return -1, 1
    differ = [d for d in range(len(local)) if local[d] != whole[d]]
    if len(differ) != 1 or local[differ[0]] * world != whole[differ[0]]:
        return -1, 1
    dim = differ[0]
    for stride in range(1, local[dim] + 1):
        if local[dim] % stride == 0 and \
                _shard_positions(local, dim, stride, rank, world) == list(positions):
            return dim, stride
    return -2, 1


def _shard_positions(local, dim, stride, shard, count):
    """Flat places in the whole of shard `shard` of `count` along `dim` with
    Megatron's partition stride (ir::shard_to_reference_index)."""
    import numpy as np
    index = np.indices(local).reshape(len(local), -1)
    piece = local[dim] // stride
    j = index[dim]
    index[dim] = ((j // piece) * count + shard) * piece + j % piece
    whole = tuple(n * count if d == dim else n for d, n in enumerate(local))
    return np.ravel_multi_index(tuple(index), whole).tolist()


def _metadata_part(p):
    """(unsharded shape, flat places of p's elements in it) from a
    framework's metadata on the parameter that maps slices of it to slices
    of the unsharded tensor (an object with `local_global_slices_pairs` and
    `unsharded_shape`, on the parameter or in a dict it carries); None where
    there is none or it does not cover p's elements once each."""
    import numpy as np
    infos = []
    for value in list(vars(p).values()):
        for v in (value.values() if isinstance(value, dict) else (value,)):
            if hasattr(v, "local_global_slices_pairs") and hasattr(v, "unsharded_shape"):
                infos.append(v)
    if len(infos) != 1:
        return None
    info = infos[0]
    try:
        whole = tuple(int(n) for n in info.unsharded_shape)
        local_places = np.arange(p.numel()).reshape(tuple(p.shape))
        global_places = np.arange(int(np.prod(whole))).reshape(whole)
        positions = np.full(p.numel(), -1)
        for pair in info.local_global_slices_pairs:
            here = local_places[tuple(pair.local_slices)].ravel()
            there = global_places[tuple(pair.global_slices)].ravel()
            if here.size != there.size or (positions[here] != -1).any():
                return None
            positions[here] = there
    except (TypeError, ValueError, IndexError, AttributeError):
        return None
    if (positions < 0).any():
        return None
    return whole, positions.tolist()


def _module_name(entry, name):
    """A module's qualified name as the reference names it, for the
    per-module checks: the entry's parameter_names applied to it where it
    maps module names too (a pipeline stage's layer i is the reference's
    layer offset + i, an expert-parallel rank's local expert a global one);
    a mapping written for parameter names alone leaves it as it is."""
    if not name or entry.parameter_names is None:
        return name
    try:
        mapped = entry.parameter_names(name)
    except Exception:
        return name
    return mapped if isinstance(mapped, str) and mapped else name


def _index(shape, flat):
    idx = []
    for d in reversed(shape):
        idx.append(flat % d)
        flat //= d
    return "[" + ",".join(str(i) for i in reversed(idx)) + "]" if shape else ""


def _name_inputs(inputs):
    """Leaves handed to the model directly take the name of their position."""
    for k, t in enumerate(inputs):
        if isinstance(t, Tensor) and t._a.dtype == object:
            for i, term in enumerate(t._a.ravel().tolist()):
                if isinstance(term, _sp.Term) and term.is_const is False:
                    _sp.rename(term, f"input{k}{_index(t._a.shape, i)}")


def _record(t, path, role="forward", subject="", owned=None):
    """Records an output; `owned`: the flat (start, end) element ranges this
    rank answers for (a distributed optimizer's shard of a gradient), None
    for every element."""
    extra = {} if owned is None else {"owned": [int(b) for r in owned for b in r]}
    _sp.record_output(path=path, node=t._node if t._node is not None else 0,
                      shape=t._a.shape, dtype=t.dtype.name,
                      elements=t._a.ravel().tolist(), role=role, subject=subject, **extra)


def _tensors(out, path="out"):
    """(path, tensor) for every tensor in a nested output."""
    if isinstance(out, Tensor):
        yield path, out
    elif isinstance(out, (tuple, list)):
        for i, o in enumerate(out):
            yield from _tensors(o, f"{path}[{i}]")
    elif isinstance(out, dict):
        for k, o in out.items():
            yield from _tensors(o, f"{path}[{k!r}]")




def _loss(out, entry):
    """The loss the step differentiates: the entry's `loss` of the output,
    else the sum of every output that needs a gradient (else of every
    output: a pipeline stage whose schedule ran backward inside forward
    returns a loss that needs none, and its step is still checked); None
    where the output holds no tensor."""
    if entry.loss is not None:
        return entry.loss(out)
    outputs = [t for _, t in _tensors(out)]
    parts = [t.sum() for t in outputs if t.requires_grad] or \
        [t.sum() for t in outputs if t.is_floating_point()]
    if not parts:
        return None
    loss = parts[0]
    for p in parts[1:]:
        loss = loss + p
    return loss


def _backward(out, entry, inputs, site):
    """Runs the training step's backward half and records every gradient
    and every updated parameter, whoever computed them: the entry's
    `backward` runs on every rank that has one (a pipeline stage whose local
    loss needs no gradient still receives its output's gradient there), and
    gradients a schedule made inside forward are checked as much as those
    of loss.backward(). `site` is the entry's (file, line)."""
    loss = _loss(out, entry)
    if entry.backward is not None:
        _Phase.current = "backward(loss)"
        entry.backward(loss)
    elif isinstance(loss, Tensor) and loss.requires_grad:
        _Phase.current = "backward"
        loss.backward()
    if entry.finalize_grads is not None:
        _Phase.current = "finalize_grads()"
        entry.finalize_grads()
    for name, p in entry.parameters():
        grad = _kept_gradient(p, entry)
        if grad is not None:
            _record(grad, f"grad({name})", "param-grad", name,
                    getattr(p, "shardproof_grad_ranges", None))
    for k, x in enumerate(inputs):
        if isinstance(x, Tensor) and x.grad is not None:
            _record(x.grad, f"grad(input{k})", "input-grad", f"input{k}")
    if entry.grad_norm is not None:
        _Phase.current = "grad_norm()"
        _record(_gradient_norm(entry, site), "grad_norm()", "grad-norm", "gradient norm")
    if entry.step is not None:
        _Phase.current = "step()"
        entry.step()
    else:
        _unchecked_gradients(entry)
    for name, p in entry.parameters():
        if entry.step is not None or _updated(p):
            _record(p, f"step({name})", "param-step", name)


def _kept_gradient(p, entry):
    """The gradient the framework keeps for `p`: its .grad, else its
    `main_grad` (Megatron's DDP accumulates there and leaves .grad None)
    where no step follows to check what it is used for (the distributed
    optimizer reads only its own shard of main_grad: its step is checked)."""
    if p.grad is not None or entry.step is not None:
        return p.grad
    main_grad = getattr(p, "main_grad", None)
    return main_grad if isinstance(main_grad, Tensor) else None


def _unchecked_gradients(entry):
    """A gradient the engine made that the entry then left nowhere the check
    reads (.grad None, no main_grad: moved into a buffer of the framework's
    own, with no step to check what it is used for, and the parameter not
    updated from it) would leave the proof vacuous: that is "could not
    prove", naming the parameter."""
    for name, p in entry.parameters():
        if p.requires_grad and p.__dict__.get("_shardproof_reached") and \
                _kept_gradient(p, entry) is None and not _updated(p):
            raise _tracing.Unsupported(
                f"backward computed the gradient of parameter '{name}' but the entry "
                "left it nowhere shardproof checks (its .grad is None and it has no "
                "main_grad); give the entry a 'step' that uses it, or keep it in .grad",
                loc=getattr(p, "_origin", None))


def _updated(p):
    """Whether the run wrote new values into a parameter after it was
    recorded (an optimizer step the schedule ran inside forward): its
    values are then checked as a step's are."""
    recorded = getattr(p, "_shardproof_recorded", None)
    if recorded is None or p._a.size != len(recorded):
        return False
    return any(_term_key(a) != b for a, b in zip(p._a.ravel().tolist(), recorded))


def _term_key(value):
    """What identifies an element: a term by its id (terms are hash-consed),
    a Python number by its value."""
    return ("term", value.id) if isinstance(value, _sp.Term) else ("number", value)


def _gradient_norm(entry, site):
    """What the entry's grad_norm returned, as a one-element tensor."""
    norm = entry.grad_norm()
    if isinstance(norm, _sp.Term):  # computed in Python from an .item()
        with _tracing.fallback_location(_tracing.state.per_run.get("symbolic_item")):
            norm = torch.tensor([norm])
    elif isinstance(norm, (int, float)):
        norm = torch.tensor(float(norm))
    if not isinstance(norm, Tensor) or norm._a.size != 1:
        what = f"a tensor of shape {tuple(norm.shape)}" if isinstance(norm, Tensor) \
            else type(norm).__name__
        raise HarnessError(*site, f"the entry's 'grad_norm' returned "
                           f"{what}, not the gradient norm (one number)")
    return norm.reshape(())


def _user_frame(tb, path):
    """The innermost traceback frame in the analysed tree, else the innermost
    one that is not ours (a framework a recipe builds: the line that stopped
    it), else the harness."""
    best = outside = None
    for frame, line in traceback.walk_tb(tb):
        filename = frame.f_code.co_filename
        if _tracing._is_runtime(filename):
            continue
        if _tracing.in_tree(filename):
            best = (filename, line)
        else:
            outside = (filename, line)
    return best or outside or (path, 0)


def _user_traceback(tb, limit=12):
    """The analysed code's frames of an exception (the user's, the
    framework's; never shardproof's, the standard library's or numpy's), most
    recent call last, as notes under the error: where in a framework the
    error was raised, and the calls from the entry that led there (the
    innermost `limit` of them)."""
    def shown_path(file):  # relative to the working folder where it is inside it
        relative = os.path.relpath(file) if os.path.isabs(file) else file
        return file if relative.startswith("..") else relative

    frames = [(shown_path(frame.f_code.co_filename), line, frame.f_code.co_name)
              for frame, line in traceback.walk_tb(tb)
              if not _tracing._is_runtime(frame.f_code.co_filename)]
    if not frames:
        return ""
    shown = frames[-limit:]
    notes = [f"{file}:{line}: note: in {function}()" for file, line, function in shown[:-1]]
    file, line, function = shown[-1]
    notes.append(f"{file}:{line}: note: in {function}(), raised here")
    return "\n" + "\n".join(notes)


def _rejects_configuration(error, file):
    """A framework tree that a recipe builds checks its configuration in its
    constructors ("MLA is not supported with Tensor Parallelism yet", "heads
    must be a multiple of tp"): such a refusal, while the component is being
    built, says that this tree has no such configuration, in its own words."""
    return (bool(_tracing.state.harness)
            and _tracing.state.root is not None and file.startswith(_tracing.state.root)
            and isinstance(error, (AssertionError, ValueError)))


class _Phase:
    """What the driver is doing, so an exception is reported in user terms."""
    current = "loading the file"


def _run(path, func, world, rank):
    global _BASELINE_MODULES
    if _BASELINE_MODULES is None:
        _BASELINE_MODULES = set(sys.modules)
    _purge_user_modules()
    dist.configure(world, rank)
    _tracing.reset(os.path.dirname(path))
    _Phase.current = "loading the file"
    module = _load(path)
    function = getattr(module, func, None)
    if function is None or not callable(function):
        defined = sorted(n for n, v in vars(module).items()
                         if callable(v) and getattr(v, "__module__", None) == module.__name__
                         and not isinstance(v, type) and not n.startswith("_"))
        hint = f" (it defines: {', '.join(defined)})" if defined else ""
        raise HarnessError(path, 1, f"no function '{func}' in this file{hint}")
    code = getattr(inspect.unwrap(function), "__code__", None)
    line = code.co_firstlineno if code else 0
    asked_options = shardproof_recipes.asked_options()
    if asked_options and not hasattr(function, "options"):
        raise HarnessError(path, line, f"{func} takes no options (asked for "
                           f"{', '.join(asked_options)})")
    dist.init_process_group("nccl")
    _Phase.current = f"{func}()"
    _tracing.state.building = True  # writes into Parameters are initialisation
    try:
        result = function()
    finally:
        _tracing.state.building = False
    entry = _unpack(result, path, line)
    model, inputs = entry.model, entry.inputs
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    inputs = tuple(inputs)
    if not callable(model):
        raise HarnessError(path, line, f"the entry's model is a {type(model).__name__}, "
                           "not a module or callable")
    _record_parameters(entry)
    _name_inputs(inputs)
    _Phase.current = f"the forward of {type(model).__name__}"
    if hasattr(model, "named_modules"):
        for name, module in model.named_modules():
            module.__dict__["_shardproof_name"] = _module_name(entry, name) \
                or type(model).__name__
    _tracing.state.module_boundaries = True
    try:
        out = model(*inputs)
    finally:
        _tracing.state.module_boundaries = False
    if isinstance(out, import_policy.OpaqueValue):
        raise _tracing.Unsupported(
            f"the model's output is the unmodelled value {out._name} from {out._origin}")
    for out_path, t in _tensors(out):
        _record(t, out_path)
    _backward(out, entry, inputs, (path, line))


@contextlib.contextmanager
def _environment(variables):
    """os.environ with `variables` set (a recipe's MEGATRON_ROOT, its
    SHARDPROOF_PARALLEL) for one run, restored after it: Python's environment
    is its own copy, and nothing a target sets is left for the next."""
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def _user_packages(folders):
    """sys.path with the user's import folders (their environment's
    packages: pydantic 2 for DeepSpeed, einops, their own modules) for one
    run: after shardproof's stand-ins, which must answer `import torch`, and
    before the system's packages, which the user's environment overrides as
    a virtual environment does."""
    folders = [f for f in folders if f not in sys.path]
    if not folders:
        yield
        return
    at = next((k for k, p in enumerate(sys.path) if p.endswith(("-packages", "-packages/"))),
              len(sys.path))
    sys.path[at:at] = folders
    try:
        yield
    finally:
        for folder in folders:
            if folder in sys.path:
                sys.path.remove(folder)


def scan_matrix(path, environment=None):
    """The recipe file's SCAN table, [(entry, layout)], or an error message
    naming the file and line."""
    path = os.path.abspath(path)
    try:
        with _environment(environment or {}), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = _load(path)
    except HarnessError as e:
        return f"{e.file}:{e.line}: {e}"
    except BaseException as e:
        file, line = _user_frame(e.__traceback__, path)
        return f"{file}:{line}: loading the recipes raised {type(e).__name__}: {e}"
    table = getattr(module, "SCAN", None)
    if not isinstance(table, (list, tuple)) or not all(
            isinstance(row, tuple) and len(row) == 2 and all(isinstance(x, str) for x in row)
            for row in table):
        return f"{path}:1: no SCAN table of (entry, layout) string pairs"
    return [tuple(row) for row in table]


def launch_plan(path, launch_file, world, model_entry, environment=None):
    """A framework launch module's plan for a user's launch (its plan()
    returns {"layout", "world", "summary"} and optionally "environment", the
    variables the launch sets for its processes) as (layout, world, summary,
    environment), or an error message naming the file and line."""
    try:
        with _environment(environment or {}), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = _load(path)
            planned = module.plan(launch_file, world, model_entry)
    except shardproof_recipes.LaunchError as e:
        return f"{e.file}:{e.line}: {e}"
    except shardproof_recipes.RecipeError as e:
        return f"{launch_file}:0: {e}"
    except HarnessError as e:
        return f"{e.file}:{e.line}: {e}"
    except BaseException as e:
        file, line = _user_frame(e.__traceback__, path)
        return f"{file}:{line}: planning the launch raised {type(e).__name__}: {e}"
    variables = {str(k): str(v) for k, v in (planned.get("environment") or {}).items()}
    return (str(planned["layout"]), int(planned["world"]), str(planned["summary"]),
            variables)


def launch_configurations(path, root, environment=None):
    """The launch configurations a framework tree ships, by its launch
    module's configurations(root): a list of paths, or an error message."""
    try:
        with _environment(environment or {}), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return [str(p) for p in _load(path).configurations(os.path.abspath(root))]
    except shardproof_recipes.RecipeError as e:
        return f"{root}: {e}"
    except BaseException as e:
        file, line = _user_frame(e.__traceback__, path)
        return f"{file}:{line}: listing the launches raised {type(e).__name__}: {e}"


def _swallowed_gap():
    """A run that finished although a gap of ours was raised in it (the
    analysed code caught it) is "could not prove", at the first gap."""
    if _tracing.state.gaps:
        what, file, line = _tracing.state.gaps[0]
        return ("unsupported", file, line,
                f"Unsupported: {what} (raised here and caught by the analysed code)")
    if _sp.take_symbolic_stops():
        return ("unsupported", "", 0, "SymbolicControlFlow: a branch on a symbolic "
                "value was caught by the analysed code")
    return None


def run_rank(path, func, world, rank, environment=None, python_path=()):
    with _environment({**(environment or {}), **_torchrun_variables(world, rank)}), \
            _user_packages(python_path):
        return _run_rank(path, func, world, rank)


def _torchrun_variables(world, rank):
    """The environment torchrun gives each process it starts (one node of
    `world` processes): frameworks read their rank and world from it."""
    return {"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank),
            "LOCAL_WORLD_SIZE": str(world), "GROUP_RANK": "0", "NODE_RANK": "0",
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}


def _run_rank(path, func, world, rank):
    path = os.path.abspath(path)
    stdout = sys.stdout
    sys.stdout = sys.stderr  # the user's prints must not mix with our reports
    try:
        # A framework's warnings (missing fused kernels, deprecations) would
        # repeat once per simulated rank and bury the report.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _sp.take_symbolic_stops()
            _run(path, func, world, rank)
        return _swallowed_gap()
    except HarnessError as e:
        return ("bad-input", e.file, e.line, str(e))
    except SyntaxError as e:
        return ("bad-input", e.filename or path, e.lineno or 0,
                f"syntax error: {e.msg}")
    except shardproof_recipes.ComponentAbsent as e:
        file, line = _user_frame(e.__traceback__, path)
        return ("absent", file, line, str(e))
    except (_tracing.Unsupported, _tracing.SymbolicControlFlow, NotImplementedError,
            _tracing.NotModelledAttribute) as e:
        if os.environ.get("SHARDPROOF_TRACEBACK"):  # where each pass's run stopped
            print(f"-- rank {rank} of {world} stopped:", file=sys.__stderr__)
            traceback.print_exception(e, file=sys.__stderr__)
        file, line = getattr(e, "loc", None) or _user_frame(e.__traceback__, path)
        return ("unsupported", file, line, f"{type(e).__name__}: {e}")
    except RecursionError as e:
        file, line = _user_frame(e.__traceback__, path)
        return ("bad-input", file, line, "recursion too deep")
    except _sp.TraceTimeout as e:
        file, line = _user_frame(e.__traceback__, path)
        return ("bad-input", file, line,
                f"{_Phase.current} did not finish within the time limit "
                "(stopped here; an endless loop?)")
    except BaseException as e:  # the user's code raised: report it, do not crash
        if os.environ.get("SHARDPROOF_TRACEBACK"):  # for shardproof's developers
            traceback.print_exception(e, file=sys.__stderr__)
        file, line = getattr(e, "loc", None) or _user_frame(e.__traceback__, path)
        if _tracing.signature_gap(e):  # a stand-in function called in a form it does not take
            return ("unsupported", file, line, f"{e} (this argument form of the stand-in "
                    "torch is not modelled)")
        if _Phase.current == f"{func}()" and _rejects_configuration(e, file):
            return ("absent", file, line, f"this tree does not build {func}() with this "
                    f"parallel configuration: {type(e).__name__}: {e}")
        what = f"{_Phase.current} raised {type(e).__name__}"
        return ("bad-input", file, line,
                (f"{what}: {e}" if str(e) else what) + _user_traceback(e.__traceback__))
    finally:
        sys.stdout = stdout
