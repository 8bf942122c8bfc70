"""torch.nn.Module and the common layers, in plain Python over the stand-in."""
from collections import OrderedDict

import _shardproof as _sp

from .. import _dtypes, _tracing
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
    call = _sp.record_module_call(name, type(module).__qualname__, file, line,
                                  values(_symbolic_tensors((args, kwargs))),
                                  values(outputs))
    # The backward records the whole gradient each output receives.
    for k, t in enumerate(outputs):
        if t.grad_fn is not None:
            t.grad_fn.module_outputs += ((call, k, getattr(t, "_output_nr", 0)),)


class Module:
    def __init__(self, *args, **kwargs):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        # As PyTorch's: a Parameter or Module replaces whatever held the name
        # before (a plain attribute `self.router = None` set earlier, say).
        def remove_from(*stores):
            for store in stores:
                if name in store:
                    del store[name]

        d = self.__dict__
        if isinstance(value, Parameter):
            remove_from(d, d.get("_buffers", {}), d.get("_modules", {}))
            self._parameters[name] = value
        elif name in d.get("_parameters", {}):
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} to parameter {name}")
            self._parameters[name] = None
        elif isinstance(value, Module):
            remove_from(d, d.get("_parameters", {}), d.get("_buffers", {}))
            self._modules[name] = value
        elif name in d.get("_modules", {}):
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} as child module {name}")
            self._modules[name] = None
        elif name in d.get("_buffers", {}):
            self._buffers[name] = value
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
                return
        object.__delattr__(self, name)

    def __call__(self, *args, **kwargs):
        for hook in list(self._forward_pre_hooks.values()):
            r = hook(self, args)
            if r is not None:
                args = r if isinstance(r, tuple) else (r,)
        out = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            r = hook(self, args, out)
            if r is not None:
                out = r
        name = self.__dict__.get("_shardproof_name")
        if name is not None and _tracing.state.module_boundaries:
            _record_module_call(self, name, args, kwargs, out)
        return out

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}.forward")

    def register_parameter(self, name, param):
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        self._buffers[name] = tensor

    def add_module(self, name, module):
        self._modules[name] = module

    register_module = add_module

    def register_forward_hook(self, hook, **k):
        key = len(self._forward_hooks)
        self._forward_hooks[key] = hook
        return _Handle(self._forward_hooks, key)

    def register_forward_pre_hook(self, hook, **k):
        key = len(self._forward_pre_hooks)
        self._forward_pre_hooks[key] = hook
        return _Handle(self._forward_pre_hooks, key)

    def register_full_backward_hook(self, hook):
        return _Handle({}, 0)

    register_backward_hook = register_full_backward_hook

    # Checkpoint (state-dict) hooks: a trace never saves or loads one.
    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        return _Handle({}, 0)

    register_load_state_dict_pre_hook = register_load_state_dict_post_hook = \
        _register_state_dict_hook = register_state_dict_pre_hook = \
        register_state_dict_post_hook = _register_load_state_dict_pre_hook

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        memo = set() if memo is None else memo
        if self in memo:
            return
        memo.add(self)
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, f"{prefix}.{name}" if prefix else name)

    def modules(self):
        return (m for _, m in self.named_modules())

    def named_children(self):
        return ((n, m) for n, m in self._modules.items() if m is not None)

    def children(self):
        return (m for _, m in self.named_children())

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        seen = set()
        modules = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mprefix, m in modules:
            for name, p in m._parameters.items():
                if p is None or id(p) in seen:
                    continue
                seen.add(id(p))
                yield (f"{mprefix}.{name}" if mprefix else name), p

    def parameters(self, recurse=True):
        return (p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix="", recurse=True):
        for mprefix, m in self.named_modules(prefix=prefix):
            for name, b in m._buffers.items():
                if b is not None:
                    yield (f"{mprefix}.{name}" if mprefix else name), b

    def buffers(self, recurse=True):
        return (b for _, b in self.named_buffers())

    def train(self, mode=True):
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, flag=True):
        for p in self.parameters():
            p.requires_grad = flag
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            p.grad = None

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs):
        return self

    cuda = cpu = float = half = bfloat16 = _noop = to

    def state_dict(self, *a, **k):
        out = OrderedDict(self.named_parameters())
        out.update(self.named_buffers())
        return out

    def extra_repr(self):
        return ""


class _Handle:
    def __init__(self, d, key):
        self.d, self.key = d, key

    def remove(self):
        self.d.pop(self.key, None)


class Sequential(Module):
    def __init__(self, *mods):
        super().__init__()
        if len(mods) == 1 and isinstance(mods[0], OrderedDict):
            mods = mods[0].items()
        else:
            mods = ((str(i), m) for i, m in enumerate(mods))
        for name, m in mods:
            self.add_module(name, m)

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x

    def __getitem__(self, i):
        return list(self._modules.values())[i]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())


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


class ParameterList(Module):
    def __init__(self, params=()):
        super().__init__()
        for p in params:
            self.register_parameter(str(len(self._parameters)), p)

    def __getitem__(self, i):
        return list(self._parameters.values())[i]

    def __iter__(self):
        return iter(self._parameters.values())

    def __len__(self):
        return len(self._parameters)


def _empty(*shape, dtype=None):
    from .. import empty
    return empty(*shape, dtype=dtype)


class Linear(Module):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(_empty(out_features, in_features, dtype=dtype))
        self.bias = Parameter(_empty(out_features, dtype=dtype)) if bias else None

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)


class Embedding(Module):
    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, dtype=None, **k):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = padding_idx
        self.weight = Parameter(_empty(num_embeddings, embedding_dim, dtype=dtype))

    def forward(self, ids):
        return F.embedding(ids, self.weight)


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True,
                 bias=True, dtype=None, **k):
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

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class Dropout(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        self.p = p

    def forward(self, x):
        return F.dropout(x, self.p, self.training)


def _activation(name, fn):
    class Act(Module):
        def __init__(self, *a, **k):
            super().__init__()
            self.kwargs = k

        def forward(self, x):
            return fn(x, **self.kwargs)
    Act.__name__ = Act.__qualname__ = name
    return Act


GELU = _activation("GELU", F.gelu)
ReLU = _activation("ReLU", F.relu)
SiLU = _activation("SiLU", F.silu)
Tanh = _activation("Tanh", lambda x: x.tanh())
Sigmoid = _activation("Sigmoid", lambda x: x.sigmoid())
Identity = _activation("Identity", lambda x, *a, **k: x)


class Softmax(Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.softmax(x, self.dim)


def _unmodelled(name):
    """A layer the stand-in does not model: code may name the class (tables
    of layer types, isinstance checks); building one stops tracing there."""
    class Unmodelled(Module):
        def __init__(self, *a, **k):
            from .. import _tracing
            raise _tracing.Unsupported(f"torch.nn.{name} is not modelled")
    Unmodelled.__name__ = Unmodelled.__qualname__ = name
    return Unmodelled


(Conv1d, Conv2d, Conv3d, BatchNorm1d, BatchNorm2d, EmbeddingBag, LeakyReLU,
 RNN, GRU, LSTM, RNNCell, GRUCell, LSTMCell) = map(
    _unmodelled, ("Conv1d", "Conv2d", "Conv3d", "BatchNorm1d", "BatchNorm2d",
                  "EmbeddingBag", "LeakyReLU", "RNN", "GRU", "LSTM", "RNNCell",
                  "GRUCell", "LSTMCell"))


__all__ = [n for n in dir() if not n.startswith("_")] + ["Tensor", "init", "_dtypes"]
