"""torch.nn.Module and the common layers, in plain Python over the stand-in."""
from collections import OrderedDict

import _shardproof as _sp

from .. import _autograd, _dtypes, _tracing
from .. import random as _random
from .._tensor import Tensor
from . import functional as F
from . import init
from .parameter import Parameter


def _symbolic_tensors(value):
    """The symbolic float tensors in a (nested) argument or result."""
    if isinstance(value, Tensor):
        if value._a.dtype == object and value.dtype.is_floating_point:
            yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _symbolic_tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _symbolic_tensors(v)


def _record_module_call(module, name, args, kwargs, out):
    """A module boundary, for modular proofs: the checker relates what crosses
    it on every rank to the reference, and proves each module on its own."""
    forward = getattr(type(module).forward, "__code__", None)
    file, line = (forward.co_filename, forward.co_firstlineno) if forward else ("", 0)

    def values(tensors):
        return [(t._node or 0, list(t._a.shape), t._a.ravel().tolist()) for t in tensors]

    outputs = list(_symbolic_tensors(out))
    call = _sp.record_module_call(name=name, type_name=type(module).__qualname__,
                                  file=file, line=line,
                                  inputs=values(_symbolic_tensors((args, kwargs))),
                                  outputs=values(outputs))
    # The backward records the whole gradient each output receives.
    for k, t in enumerate(outputs):
        if t.grad_fn is not None:
            t.grad_fn.module_outputs += ((call, k, getattr(t, "_output_nr", 0)),)


def _global_hooks():
    """The global module hooks (torch.nn.modules.module.register_module_*),
    kept per run: a hook one rank's code registers must not run in the next."""
    hooks = _tracing.state.per_run.get("nn.global_hooks")
    if hooks is None:
        hooks = _tracing.state.per_run["nn.global_hooks"] = {
            name: OrderedDict() for name in (
                "forward_pre", "forward", "forward_with_kwargs", "forward_always_called",
                "backward_pre", "backward", "buffer_registration",
                "module_registration", "parameter_registration")}
    return hooks


class _Handle:
    """torch.utils.hooks.RemovableHandle: a unique id; remove() takes the hook
    out of its dict and out of the dicts that mark it (with_kwargs, ...)."""

    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict = hooks_dict
        self.id = _Handle.next_id
        _Handle.next_id += 1
        self.extra_dicts = tuple(extra_dict) if isinstance(extra_dict, (list, tuple)) \
            else (() if extra_dict is None else (extra_dict,))

    def remove(self):
        for d in (self.hooks_dict,) + self.extra_dicts:
            if self.id in d:
                del d[self.id]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _add_hook(hooks, hook, prepend=False, marks=()):
    """Registers `hook` in `hooks` (first with prepend) and in every dict of
    `marks` (the with_kwargs / always_call sets, as dicts id -> True)."""
    handle = _Handle(hooks, extra_dict=list(marks))
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    for mark in marks:
        mark[handle.id] = True
    return handle


def register_module_forward_pre_hook(hook):
    return _add_hook(_global_hooks()["forward_pre"], hook)


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    g = _global_hooks()
    marks = ([g["forward_with_kwargs"]] if with_kwargs else []) + \
        ([g["forward_always_called"]] if always_call else [])
    return _add_hook(g["forward"], hook, marks=marks)


def register_module_full_backward_pre_hook(hook):
    return _add_hook(_global_hooks()["backward_pre"], hook)


def register_module_full_backward_hook(hook):
    return _add_hook(_global_hooks()["backward"], hook)


def register_module_backward_hook(hook):
    """The legacy (non-full) backward hook sees the gradients of the last op
    of the forward, not of the module: not modelled."""
    _tracing.unmodelled(f"register_module_backward_hook({getattr(hook, '__name__', hook)})"
                        " (the legacy module backward hook)")


def register_module_buffer_registration_hook(hook):
    return _add_hook(_global_hooks()["buffer_registration"], hook)


def register_module_module_registration_hook(hook):
    return _add_hook(_global_hooks()["module_registration"], hook)


def register_module_parameter_registration_hook(hook):
    return _add_hook(_global_hooks()["parameter_registration"], hook)


def _registered(kind, module, name, value):
    """Runs the global registration hooks of `kind`; each may replace the value."""
    for hook in list(_global_hooks()[kind].values()):
        result = hook(module, name, value)
        if result is not None:
            value = result
    return value


class _BackwardHook:
    """PyTorch's torch.utils.hooks.BackwardHook: the tensors a module takes
    and returns pass through identity autograd nodes. The output node's
    backward sees the gradients of the outputs (the backward pre-hooks may
    replace them); the input node's backward sees the gradients of the
    inputs and runs the full backward hooks, which may replace those."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks, self.user_pre_hooks = user_hooks, user_pre_hooks
        self.grad_outputs = None
        self.n_outputs = self.n_inputs = -1
        self.output_tensors_index = self.input_tensors_index = None

    @staticmethod
    def _pack_with_none(indices, values, size):
        res = [None] * size
        for idx, val in zip(indices, values):
            res[idx] = val
        return tuple(res)

    def _identity(self, args, on_backward):
        """(args with their tensors passed through one identity node whose
        backward is `on_backward`, tensor positions), or (args, None) when
        no tensor needs a gradient."""
        index = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in index]
        if not (any(t.requires_grad for t in tensors) and _autograd.GradMode.enabled):
            return args, None
        node = _autograd.GradNode("BackwardHookFunctionBackward",
                                  lambda grads: list(on_backward(tuple(grads))),
                                  tuple(tensors), _tracing.location(), len(tensors),
                                  takes_tensors=True)
        out = list(args)
        for nr, (i, t) in enumerate(zip(index, tensors)):
            if t.requires_grad:
                alias = t._view("backward_hook", lambda a: a)
                alias.requires_grad, alias.grad_fn, alias._output_nr = True, node, nr
                out[i] = alias
        return (tuple(out) if type(args) is tuple else type(args)(*out)), index

    def _input_grads(self, grads):
        if self.grad_outputs is None:
            return grads  # reached without passing through the module's output
        res = self._pack_with_none(self.input_tensors_index, grads, self.n_inputs)
        for hook in self.user_hooks:
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                   f"got {len(out)}, but expected {len(res)}")
            res = out
        self.grad_outputs = None
        return tuple(res[i] for i in self.input_tensors_index)

    def _output_grads(self, grads):
        self.grad_outputs = self._pack_with_none(self.output_tensors_index, grads,
                                                 self.n_outputs)
        for hook in self.user_pre_hooks:
            out = hook(self.module, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(self.grad_outputs):
                raise RuntimeError("Backward pre hook returned an invalid number of "
                                   f"grad_output, got {len(out)}, but expected "
                                   f"{len(self.grad_outputs)}")
            self.grad_outputs = out
        local = self.grad_outputs
        if self.input_tensors_index is None:
            # No input needs a gradient: the full hooks run here, with None.
            grad_inputs = (None,) * self.n_inputs
            for hook in self.user_hooks:
                res = hook(self.module, grad_inputs, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple) and
                                            all(e is None for e in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for "
                                       "all gradients.")
            self.grad_outputs = None
        return tuple(local[i] for i in self.output_tensors_index)

    def setup_input_hook(self, args):
        res, self.input_tensors_index = self._identity(args, self._input_grads)
        self.n_inputs = len(args)
        return res

    def setup_output_hook(self, result):
        is_tuple = isinstance(result, tuple)
        args = result if is_tuple else (result,)
        res, self.output_tensors_index = self._identity(args, self._output_grads)
        self.n_outputs = len(args)
        return res if is_tuple else res[0]


_HOOK_DICTS = ("_forward_hooks", "_forward_hooks_with_kwargs", "_forward_hooks_always_called",
               "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_backward_hooks",
               "_backward_pre_hooks", "_state_dict_hooks", "_state_dict_pre_hooks",
               "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks")


def _floating(t):
    return t.dtype.is_floating_point or getattr(t.dtype, "is_complex", False)


class Module:
    _version = 1
    training = True

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments "
                            f"{args!r} {kwargs!r} (Module.__init__ takes none)")
        for store in ("_parameters", "_buffers", "_modules") + _HOOK_DICTS:
            object.__setattr__(self, store, OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        # As PyTorch's: a Parameter or Module replaces whatever held the name
        # before (a plain attribute `self.router = None` set earlier, say).
        def remove_from(*stores):
            for store in stores:
                if name in store:
                    if isinstance(store, set):
                        store.discard(name)
                    else:
                        del store[name]

        d = self.__dict__
        if isinstance(value, Parameter):
            if "_parameters" not in d:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(d, d["_buffers"], d["_modules"], d["_non_persistent_buffers_set"])
            self.register_parameter(name, value)
        elif name in d.get("_parameters", {}):
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter "
                                f"'{name}' (torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if "_modules" not in d:
                raise AttributeError("cannot assign module before Module.__init__() call")
            remove_from(d, d["_parameters"], d["_buffers"], d["_non_persistent_buffers_set"])
            d["_modules"][name] = _registered("module_registration", self, name, value)
        elif name in d.get("_modules", {}):
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module "
                                f"'{name}' (torch.nn.Module or None expected)")
            d["_modules"][name] = _registered("module_registration", self, name, value)
        elif name in d.get("_buffers", {}):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer "
                                f"'{name}' (torch.Tensor or None expected)")
            d["_buffers"][name] = _registered("buffer_registration", self, name, value)
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        for store in ("_parameters", "_buffers", "_modules"):
            d = self.__dict__.get(store)
            if d is not None and name in d:
                return d[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for store in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(store, {}):
                del self.__dict__[store][name]
                self.__dict__["_non_persistent_buffers_set"].discard(name)
                return
        object.__delattr__(self, name)

    def _call_impl(self, *args, **kwargs):
        """PyTorch's Module._call_impl: forward pre-hooks (global first), the
        backward hooks' identity around the inputs, forward, forward hooks
        (the always_call ones even when forward raises), the identity
        around the outputs."""
        g = _global_hooks()
        full_backward = list(g["backward"].values()) + list(self._backward_hooks.values())
        backward_pre = list(g["backward_pre"].values()) + \
            list(self._backward_pre_hooks.values())
        result, called_always = None, set()
        try:
            for hook_id, hook in (*g["forward_pre"].items(), *self._forward_pre_hooks.items()):
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    r = hook(self, args, kwargs)
                    if r is not None:
                        if not (isinstance(r, tuple) and len(r) == 2):
                            raise RuntimeError("forward pre-hook must return None or a tuple "
                                               f"of (new_args, new_kwargs), but got {r}.")
                        args, kwargs = r
                else:
                    r = hook(self, args)
                    if r is not None:
                        args = r if isinstance(r, tuple) else (r,)
            bw_hook = None
            if full_backward or backward_pre:
                bw_hook = _BackwardHook(self, full_backward, backward_pre)
                args = bw_hook.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            for hook_id, hook in (*g["forward"].items(), *self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called or \
                        hook_id in g["forward_always_called"]:
                    called_always.add(hook_id)
                if hook_id in self._forward_hooks_with_kwargs or \
                        hook_id in g["forward_with_kwargs"]:
                    r = hook(self, args, kwargs, result)
                else:
                    r = hook(self, args, result)
                if r is not None:
                    result = r
            if bw_hook is not None:
                result = bw_hook.setup_output_hook(result)
        except Exception:
            for hooks, always, with_kwargs in (
                    (g["forward"], g["forward_always_called"], g["forward_with_kwargs"]),
                    (self._forward_hooks, self._forward_hooks_always_called,
                     self._forward_hooks_with_kwargs)):
                for hook_id, hook in list(hooks.items()):
                    if hook_id in always and hook_id not in called_always:
                        try:
                            r = hook(self, args, kwargs, result) if hook_id in with_kwargs \
                                else hook(self, args, result)
                            if r is not None:
                                result = r
                        except Exception:
                            continue  # PyTorch warns and goes on
            raise
        name = self.__dict__.get("_shardproof_name")
        if name is not None and _tracing.state.module_boundaries:
            _record_module_call(self, name, args, kwargs, result)
        return result

    __call__ = _wrapped_call_impl = _call_impl

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  f'"forward" function (called with {len(args)} arguments '
                                  f'and keywords {sorted(kwargs)})')

    # ---- registration ---------------------------------------------------
    def _check_new_name(self, name, kind, store):
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in self.__dict__[store]:
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name, param):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_new_name(name, "parameter", "_parameters")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (torch.nn.Parameter or None required)")
        self._parameters[name] = _registered("parameter_registration", self, name, param)

    def register_buffer(self, name, tensor, persistent=True):
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_new_name(name, "buffer", "_buffers")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer "
                            f"'{name}' (torch Tensor or None required)")
        self._buffers[name] = _registered("buffer_registration", self, name, tensor)
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_new_name(name, "module", "_modules")
        self._modules[name] = _registered("module_registration", self, name, module)

    register_module = add_module

    # ---- hooks ------------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        marks = [self._forward_pre_hooks_with_kwargs] if with_kwargs else []
        return _add_hook(self._forward_pre_hooks, hook, prepend, marks)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                              always_call=False):
        marks = ([self._forward_hooks_with_kwargs] if with_kwargs else []) + \
            ([self._forward_hooks_always_called] if always_call else [])
        return _add_hook(self._forward_hooks, hook, prepend, marks)

    def register_full_backward_pre_hook(self, hook, prepend=False):
        return _add_hook(self._backward_pre_hooks, hook, prepend)

    def register_full_backward_hook(self, hook, prepend=False):
        return _add_hook(self._backward_hooks, hook, prepend)

    def register_backward_hook(self, hook):
        """The legacy (non-full) hook sees the gradients of the forward's
        last op, not of the module: not modelled."""
        _tracing.unmodelled(f"Module.register_backward_hook({getattr(hook, '__name__', hook)})"
                            " (the legacy module backward hook)")

    def register_state_dict_pre_hook(self, hook):
        """hook(module, prefix, keep_vars), before state_dict() saves."""
        return _add_hook(self._state_dict_pre_hooks, hook)

    def _register_state_dict_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata), after; it may
        return a state dict that replaces the one being built."""
        return _add_hook(self._state_dict_hooks, hook)

    def register_state_dict_post_hook(self, hook):
        def post(module, state_dict, prefix, local_metadata):
            if hook(module, state_dict, prefix, local_metadata) is not None:
                raise RuntimeError("state_dict post-hook must return None")
        return _add_hook(self._state_dict_hooks, post)

    # load_state_dict stops the trace (below), so a load hook is never due;
    # it is kept so that its handle removes it as in PyTorch.
    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        return _add_hook(self._load_state_dict_pre_hooks, (hook, with_module))

    def register_load_state_dict_pre_hook(self, hook):
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook):
        return _add_hook(self._load_state_dict_post_hooks, hook)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        _tracing.unmodelled(f"Module.load_state_dict(strict={strict}, assign={assign}) of "
                            f"{len(state_dict)} entries (loading values into symbolic "
                            "parameters)")

    # ---- traversal ----------------------------------------------------------
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        memo = set() if memo is None else memo
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, f"{prefix}.{name}" if prefix else name,
                                           remove_duplicate)

    def modules(self):
        return (m for _, m in self.named_modules())

    def named_children(self):
        seen = set()
        for n, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield n, m

    def children(self):
        return (m for _, m in self.named_children())

    def _named_members(self, store, prefix, recurse, remove_duplicate):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for mprefix, m in modules:
            for name, v in m.__dict__[store].items():
                if v is None or id(v) in seen:
                    continue
                if remove_duplicate:
                    seen.add(id(v))
                yield (f"{mprefix}.{name}" if mprefix else name), v

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        return (p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        return (b for _, b in self.named_buffers(recurse=recurse))

    def get_submodule(self, target):
        module = self
        for item in target.split(".") if target else ():
            if item not in module._modules:
                raise AttributeError(f"{type(module).__name__} has no attribute `{item}`")
            module = module._modules[item]
        return module

    def get_parameter(self, target):
        path, _, name = target.rpartition(".")
        module = self.get_submodule(path)
        if name not in module._parameters:
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return module._parameters[name]

    def get_buffer(self, target):
        path, _, name = target.rpartition(".")
        module = self.get_submodule(path)
        if name not in module._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return module._buffers[name]

    # ---- modes and gradients -----------------------------------------------------
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        object.__setattr__(self, "training", mode)
        for m in self.children():
            m.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=_autograd._DEFAULT):
        _autograd.zero_grads(self.parameters(), set_to_none, "Module")

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ---- dtype and device ----------------------------------------------------------
    def _apply(self, fn, recurse=True):
        """fn on every parameter (in place, through .data, as PyTorch does by
        default), its gradient, and every buffer (replaced)."""
        if recurse:
            for m in self.children():
                m._apply(fn)
        with _autograd._no_grad():
            for p in self._parameters.values():
                if p is None:
                    continue
                p.data = fn(p)
                if p.grad is not None:
                    p.grad.data = fn(p.grad)
            for name, b in self._buffers.items():
                if b is not None:
                    self._buffers[name] = fn(b)
        return self

    @_tracing.no_effect(device="device placement")
    def to_empty(self, *, device, recurse=True):
        """Parameters and buffers get fresh uninitialised storage: fresh
        symbolic values (a Parameter built in the entry keeps its own)."""
        from .. import empty_like
        return self._apply(lambda t: empty_like(t), recurse=recurse)

    def _cast(self, dtype):
        return self._apply(lambda t: t.to(dtype) if _floating(t) else t)

    def to(self, *args, **kwargs):
        """Module.to(device, dtype, non_blocking, memory_format): devices,
        non_blocking and memory formats leave values as they are; a dtype
        casts every floating-point parameter and buffer."""
        allowed = {"device", "dtype", "non_blocking", "memory_format"}
        unknown = set(kwargs) - allowed
        if unknown:
            raise TypeError(f"to() received an invalid combination of arguments: {sorted(unknown)}")
        dtype = kwargs.get("dtype")
        for a in args:
            if isinstance(a, _dtypes.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                dtype = a.dtype
        if dtype is None:
            return self
        if not dtype.is_floating_point and not getattr(dtype, "is_complex", False):
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, "
                            f"but got desired dtype={dtype}")
        return self._cast(dtype)

    @_tracing.no_effect(function="device placement: values are the same on every device",
                        device="device placement")
    def cuda(self, device=None):
        return self

    @_tracing.no_effect(function="device placement: values are the same on every device")
    def cpu(self):
        return self

    def float(self):
        return self._cast(_dtypes.float32)

    def double(self):
        return self._cast(_dtypes.float64)

    def half(self):
        return self._cast(_dtypes.float16)

    def bfloat16(self):
        return self._cast(_dtypes.bfloat16)

    # ---- state dict -------------------------------------------------------------
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        if args:  # PyTorch's deprecated positional form
            destination, prefix, keep_vars = (list(args) + [destination, prefix, keep_vars][len(args):])[:3]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in list(self._state_dict_pre_hooks.values()):
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".",
                             keep_vars=keep_vars)
        for hook in list(self._state_dict_hooks.values()):
            result = hook(self, destination, prefix, local_metadata)
            if result is not None:
                destination = result
        return destination

    def extra_repr(self):
        return ""


class Sequential(Module):
    def __init__(self, *mods):
        super().__init__()
        if len(mods) == 1 and isinstance(mods[0], OrderedDict):
            mods = mods[0].items()
        else:
            mods = ((str(i), m) for i, m in enumerate(mods))
        for name, m in mods:
            self.add_module(name, m)

    def forward(self, input):
        for m in self._modules.values():
            input = m(input)
        return input

    def __getitem__(self, i):
        if isinstance(i, slice):
            return Sequential(OrderedDict(list(self._modules.items())[i]))
        return list(self._modules.values())[i]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self


class ModuleList(Module):
    def __init__(self, mods=()):
        super().__init__()
        for m in mods:
            self.append(m)

    def append(self, m):
        self.add_module(str(len(self._modules)), m)
        return self

    def extend(self, mods):
        for m in mods:
            self.append(m)
        return self

    def __getitem__(self, i):
        mods = list(self._modules.values())
        return ModuleList(mods[i]) if isinstance(i, slice) else mods[i]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())


class ModuleDict(Module):
    def __init__(self, mods=None):
        super().__init__()
        for k, m in (mods or {}).items():
            self.add_module(k, m)

    def __getitem__(self, k):
        return self._modules[k]

    def __setitem__(self, k, m):
        self.add_module(k, m)

    def __iter__(self):
        return iter(self._modules)

    def items(self):
        return self._modules.items()

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def __len__(self):
        return len(self._modules)


def _as_parameter(value):
    """ParameterList/ParameterDict wrap a plain tensor into a Parameter."""
    return value if isinstance(value, Parameter) or not isinstance(value, Tensor) \
        else Parameter(value)


class ParameterList(Module):
    def __init__(self, values=None):
        super().__init__()
        for p in values or ():
            self.append(p)

    def append(self, value):
        self.register_parameter(str(len(self._parameters)), _as_parameter(value))
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self

    def __getitem__(self, i):
        return list(self._parameters.values())[i]

    def __iter__(self):
        return iter(self._parameters.values())

    def __len__(self):
        return len(self._parameters)


class ParameterDict(Module):
    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __setitem__(self, key, value):
        self.register_parameter(key, _as_parameter(value))

    def __getitem__(self, key):
        return self._parameters[key]

    def __delitem__(self, key):
        del self._parameters[key]

    def __contains__(self, key):
        return key in self._parameters

    def __iter__(self):
        return iter(self._parameters)

    def __len__(self):
        return len(self._parameters)

    def keys(self):
        return self._parameters.keys()

    def items(self):
        return self._parameters.items()

    def values(self):
        return self._parameters.values()

    def update(self, parameters):
        pairs = parameters.items() if hasattr(parameters, "items") else parameters
        for key, value in pairs:
            self[key] = value


def _empty(*shape, dtype=None):
    from .. import empty
    return empty(*shape, dtype=dtype)


def _reset(module, *draws):
    """A standard layer's reset_parameters called by the analysed code: as
    torch.nn.init's initialisers are modelled (see nn/init.py), inside the
    entry the Parameters keep their symbols (a proof covers every value of
    the weights) and the generator of the layer's device moves on by its
    random `draws`, as the layer's own initialisation does; later a random
    initialiser is not modelled."""
    if not _tracing.state.building and any(t is not None for _, t in draws):
        _tracing.unmodelled(f"{type(module).__name__}.reset_parameters() outside the "
                            "entry (a torch.nn.init initialiser)")
    _random.initialised(module.__dict__.get("_init_device"), *draws)


class Linear(Module):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(_empty(out_features, in_features, dtype=dtype))
        self.bias = Parameter(_empty(out_features, dtype=dtype)) if bias else None
        # reset_parameters' draws move the generator of `device` on (h5).
        self._init_device = device
        _random.initialised(device, *self._init_draws())

    def _init_draws(self):
        return ("kaiming_uniform_", self.weight), ("uniform_", self.bias)

    def reset_parameters(self):
        _reset(self, *self._init_draws())

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)


class Embedding(Module):
    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 _freeze=False, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = padding_idx % num_embeddings
        self.padding_idx = padding_idx
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        self._init_device = device
        if _weight is None:
            _weight = _empty(num_embeddings, embedding_dim, dtype=dtype)
            _random.initialised(device, ("normal_", _weight))  # reset_parameters (h5)
        elif tuple(_weight.shape) != (num_embeddings, embedding_dim):
            raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
        self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self):
        """normal_ of the weight, then its padding row zeroed: while the
        entry builds the model the weight keeps its symbols, as nn.init's."""
        _reset(self, ("normal_", self.weight))

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm,
                           self.norm_type, self.scale_grad_by_freq, self.sparse)


class LayerNorm(Module):
    @_tracing.no_effect(device="device placement")
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True,
                 bias=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        if elementwise_affine:
            self.weight = Parameter(_empty(*self.normalized_shape, dtype=dtype))
            self.bias = Parameter(_empty(*self.normalized_shape, dtype=dtype)) if bias else None
        else:
            self.weight = self.bias = None

    def reset_parameters(self):
        """PyTorch's ones_ and zeros_, as nn.init's constant initialisers are
        modelled (a Parameter keeps its symbols while the entry builds the
        model; later the values are written)."""
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)


class Dropout(Module):
    """nn.Dropout and its channel-wise kin (h5): F's dropout with the
    module's p, inplace and training mode."""
    _function = staticmethod(F.dropout)

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return self._function(input, self.p, self.training, self.inplace)


class Dropout1d(Dropout):
    _function = staticmethod(F.dropout1d)


class Dropout2d(Dropout):
    _function = staticmethod(F.dropout2d)


class Dropout3d(Dropout):
    _function = staticmethod(F.dropout3d)


class AlphaDropout(Dropout):
    _function = staticmethod(F.alpha_dropout)


FeatureAlphaDropout = AlphaDropout


def _activation(name, fn):
    """A layer that applies `fn` with the arguments it was built with
    (GELU('tanh'), ReLU(inplace=True)): `fn` models or rejects each."""
    class Act(Module):
        def __init__(self, *a, **k):
            super().__init__()
            self.args, self.kwargs = a, k

        def forward(self, input):
            return fn(input, *self.args, **self.kwargs)
    Act.__name__ = Act.__qualname__ = name
    return Act


GELU = _activation("GELU", F.gelu)
ReLU = _activation("ReLU", F.relu)
SiLU = _activation("SiLU", F.silu)
Tanh = _activation("Tanh", lambda x: x.tanh())
Sigmoid = _activation("Sigmoid", lambda x: x.sigmoid())
LogSigmoid = _activation("LogSigmoid", F.logsigmoid)
Identity = _activation("Identity", lambda x, *a, **k: x)


class Softmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmax(input, self.dim, _stacklevel=5)


class LeakyReLU(Module):
    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)


class Flatten(Module):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)


class Unflatten(Module):
    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):
        d = self.dim % input.ndim
        shape = tuple(input.shape)
        return input.reshape(shape[:d] + self.unflattened_size + shape[d + 1:])


class LogSoftmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.log_softmax(input, self.dim, _stacklevel=5)


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        self.reduction = F._legacy_reduction(size_average, reduce) \
            if size_average is not None or reduce is not None else reduction


class MSELoss(_Loss):
    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class NLLLoss(_Loss):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_Loss):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean", label_smoothing=0.0):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight,
                               ignore_index=self.ignore_index, reduction=self.reduction,
                               label_smoothing=self.label_smoothing)


def _unmodelled(name):
    """A layer the stand-in does not model: code may name the class (tables
    of layer types, isinstance checks); building one stops tracing there."""
    class Unmodelled(Module):
        def __init__(self, *a, **k):
            from .. import _tracing
            raise _tracing.Unsupported(f"torch.nn.{name} is not modelled")
    Unmodelled.__name__ = Unmodelled.__qualname__ = name
    return Unmodelled


# The rest of PyTorch's torch.nn layers: named (isinstance checks, tables of
# layer types) they are fine; building one stops the trace.
_UNMODELLED_LAYERS = """
AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveLogSoftmaxWithLoss
AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveMaxPool3d AvgPool1d AvgPool2d AvgPool3d
BCELoss BCEWithLogitsLoss BatchNorm1d BatchNorm2d BatchNorm3d Bilinear CELU CTCLoss
ChannelShuffle CircularPad1d CircularPad2d CircularPad3d ConstantPad1d ConstantPad2d
ConstantPad3d Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d
CosineEmbeddingLoss CosineSimilarity CrossMapLRN2d ELU EmbeddingBag Fold
FractionalMaxPool2d FractionalMaxPool3d GLU GRU GRUCell GaussianNLLLoss GroupNorm
Hardshrink Hardsigmoid Hardswish Hardtanh HingeEmbeddingLoss HuberLoss InstanceNorm1d
InstanceNorm2d InstanceNorm3d KLDivLoss LPPool1d LPPool2d LPPool3d LSTM LSTMCell
LazyBatchNorm1d LazyBatchNorm2d LazyBatchNorm3d LazyConv1d LazyConv2d LazyConv3d
LazyConvTranspose1d LazyConvTranspose2d LazyConvTranspose3d LazyInstanceNorm1d
LazyInstanceNorm2d LazyInstanceNorm3d LazyLinear LocalResponseNorm
MarginRankingLoss MaxPool1d MaxPool2d MaxPool3d MaxUnpool1d MaxUnpool2d MaxUnpool3d Mish
MultiLabelMarginLoss MultiLabelSoftMarginLoss MultiMarginLoss MultiheadAttention
NLLLoss2d PReLU PairwiseDistance PixelShuffle PixelUnshuffle
PoissonNLLLoss RMSNorm RNN RNNBase RNNCell RNNCellBase RReLU ReLU6 ReflectionPad1d
ReflectionPad2d ReflectionPad3d ReplicationPad1d ReplicationPad2d ReplicationPad3d SELU
SmoothL1Loss SoftMarginLoss Softmax2d Softmin Softplus Softshrink Softsign SyncBatchNorm
Tanhshrink Threshold Transformer TransformerDecoder TransformerDecoderLayer
TransformerEncoder TransformerEncoderLayer TripletMarginLoss
TripletMarginWithDistanceLoss Unfold Upsample UpsamplingBilinear2d
UpsamplingNearest2d ZeroPad1d ZeroPad2d ZeroPad3d
""".split()
globals().update({name: _unmodelled(name) for name in _UNMODELLED_LAYERS})


__all__ = [n for n in dir() if not n.startswith("_")] + ["Tensor", "init", "_dtypes"]
