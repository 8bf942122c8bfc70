"""Runs one simulated rank of a harness: FILE::FUNC called with
torch.distributed set to (world, rank), the model's forward on the inputs it
returns, and every parameter, input and output recorded for the linker.

run_rank returns None on success, or (kind, file, line, message) where kind
is "bad-input" (the harness is wrong) or "unsupported" (we cannot model it)."""
import importlib.util
import os
import sys
import traceback

import _shardproof as _sp
import torch
import torch.distributed as dist
from torch import _tracing
from torch._tensor import Tensor

_tracing.RUNTIME_DIRS.append(os.path.dirname(os.path.abspath(__file__)))
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
            del sys.modules[name]


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


def _unpack(result, path, line):
    if isinstance(result, dict):
        if "model" not in result or "inputs" not in result:
            raise HarnessError(path, line, "the entry's dict needs 'model' and 'inputs'")
        return result["model"], result["inputs"]
    if isinstance(result, (tuple, list)) and len(result) == 2:
        return result
    raise HarnessError(path, line, "the entry must return (model, inputs) or a dict "
                       f"with 'model' and 'inputs', not {type(result).__name__}")


def _record_parameters(model):
    rank = dist.get_rank()
    world = dist.get_world_size()
    for name, p in model.named_parameters():
        dim = getattr(p, "partition_dim", -1)
        if not getattr(p, "tensor_model_parallel", dim >= 0):
            dim = -1
        flat = p._a.ravel().tolist()
        for i, term in enumerate(flat):
            _sp.rename(term, f"{name}{_index(p._a.shape, i)}")
        file, line = getattr(p, "_origin", ("", 0))
        _sp.record_leaf("param", name, p._a.shape, flat, dim,
                        int(getattr(p, "partition_stride", 1)), rank, world,
                        file, line)


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


def _record_outputs(out, path="out"):
    if isinstance(out, Tensor):
        _sp.record_output(path, out._node if out._node is not None else 0,
                          out._a.shape, out.dtype.name, out._a.ravel().tolist())
    elif isinstance(out, (tuple, list)):
        for i, o in enumerate(out):
            _record_outputs(o, f"{path}[{i}]")
    elif isinstance(out, dict):
        for k, o in out.items():
            _record_outputs(o, f"{path}[{k!r}]")


def _user_frame(tb, path):
    """The innermost traceback frame in the analysed tree, else in the harness."""
    root = os.path.dirname(path)
    best = None
    for frame, line in traceback.walk_tb(tb):
        filename = frame.f_code.co_filename
        if filename.startswith(root) and not _tracing._is_runtime(filename):
            best = (filename, line)
    return best or (path, 0)


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
    entry = getattr(module, func, None)
    if entry is None or not callable(entry):
        defined = sorted(n for n, v in vars(module).items()
                         if callable(v) and getattr(v, "__module__", None) == module.__name__
                         and not isinstance(v, type))
        hint = f" (it defines: {', '.join(defined)})" if defined else ""
        raise HarnessError(path, 1, f"no function '{func}' in this file{hint}")
    line = entry.__code__.co_firstlineno if hasattr(entry, "__code__") else 0
    dist.init_process_group("nccl")
    _Phase.current = f"{func}()"
    model, inputs = _unpack(entry(), path, line)
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    inputs = tuple(inputs)
    if not callable(model):
        raise HarnessError(path, line, f"the entry's model is a {type(model).__name__}, "
                           "not a module or callable")
    if hasattr(model, "named_parameters"):
        _record_parameters(model)
    _name_inputs(inputs)
    _Phase.current = f"the forward of {type(model).__name__}"
    _record_outputs(model(*inputs))


def run_rank(path, func, world, rank):
    path = os.path.abspath(path)
    stdout = sys.stdout
    sys.stdout = sys.stderr  # the user's prints must not mix with our reports
    try:
        _run(path, func, world, rank)
        return None
    except HarnessError as e:
        return ("bad-input", e.file, e.line, str(e))
    except SyntaxError as e:
        return ("bad-input", e.filename or path, e.lineno or 0,
                f"syntax error: {e.msg}")
    except (_tracing.Unsupported, _tracing.SymbolicControlFlow, NotImplementedError) as e:
        file, line = _user_frame(e.__traceback__, path)
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
        file, line = _user_frame(e.__traceback__, path)
        what = f"{_Phase.current} raised {type(e).__name__}"
        return ("bad-input", file, line, f"{what}: {e}" if str(e) else what)
    finally:
        sys.stdout = stdout
