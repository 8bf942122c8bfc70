"""The stand-in Tensor: a numpy array whose elements are exact numbers or
symbolic terms (_shardproof.Term), plus the IR node that produced it."""
import builtins
import contextlib
import copy
import itertools
import math
import operator
import weakref

import numpy as np

import _shardproof as _sp

from . import _autograd
from . import _choices
from . import _dtypes
from . import _tracing
from ._tracing import Unsupported

_py_bool = builtins.bool


class Size(tuple):
    def numel(self):
        return math.prod(self)

    def __repr__(self):
        return "torch.Size([" + ", ".join(str(d) for d in self) + "])"


class device:
    def __init__(self, kind="cpu", index=None):
        if isinstance(kind, device):
            kind, index = kind.type, kind.index
        elif isinstance(kind, int):  # torch.device(0) is cuda:0
            kind, index = "cuda", kind
        kind, _, number = str(kind).partition(":")
        self.type = kind
        self.index = int(number) if number and index is None else index

    # `with torch.device(d):` makes d the default device of factory
    # functions. Every tensor here is symbolic and devices hold no values,
    # so the block runs unchanged.
    @_tracing.no_effect(function="devices hold no values: the block runs unchanged")
    def __enter__(self):
        return self

    @_tracing.no_effect(exc="an exception in the block propagates, as in PyTorch")
    def __exit__(self, *exc):
        return False

    def __repr__(self):
        return f"device(type='{self.type}')"

    # Equal devices are equal (and hash alike), as torch.device: ZeRO 3
    # asserts its partitions share one (`len(set(t.device ...)) == 1`).
    def __eq__(self, other):
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))


_Device = device  # `device` is also a parameter name of Tensor.to


def _expanded(a, shape):
    """numpy's broadcast view of `a`, writable (as PyTorch's expand is) where
    no element repeats: only size-1 dimensions added or kept. One that
    repeats elements stays read-only: PyTorch refuses writes into it too."""
    view = np.broadcast_to(a, shape)
    if a.flags.writeable and all(n == 1 or stride != 0
                                 for n, stride in zip(view.shape, view.strides)):
        return np.lib.stride_tricks.as_strided(a, view.shape, view.strides, writeable=True)
    return view


def _as_array(x, dtype):
    return np.asarray(x, dtype=dtype.numpy)


def _node_of(x):
    return x._node if isinstance(x, Tensor) and x._node is not None else None


def record(array, dtype, op, category, inputs=(), vjp=None, loc=None, saved=()):
    """Wraps a result array as a Tensor and records its IR node; with `vjp`,
    the op is differentiable and joins the autograd graph. `saved` names the
    tensors PyTorch's op saves for its backward (SAVED_RESULT for its own
    result): writing into one in place before the backward is an error there,
    and so here."""
    if not isinstance(array, np.ndarray):
        array = np.asarray(array, dtype=dtype.numpy)
    if dtype.is_floating_point and array.dtype != object:
        array = array.astype(object)
    elif not dtype.is_floating_point and array.dtype == object and \
            not any(isinstance(v, _sp.Term) for v in array.flat):
        # Exact integers or bools (a clamp or where of concrete values) are
        # concrete, as in PyTorch: they can index and size things.
        array = array.astype(dtype.numpy)
    loc = loc or _tracing.location()
    if loc[0] in _tracing.state.harness or loc[0] == "<unknown>":
        # A recipe's own arithmetic on the tree's values (its loss, its
        # wrapper around a component), or the backward summing the gradients
        # of a tensor's uses with no user frame on the stack: the value is
        # the tree's, so is its place.
        loc = next((i._loc for i in inputs if isinstance(i, Tensor) and i._loc), loc)
    file, line, func, col = loc
    parents = tuple(n for n in (_node_of(i) for i in inputs) if n is not None)
    node = _sp.record_node(op=op, category=category, file=file, line=line, column=col,
                           function=func, shape=array.shape, dtype=dtype.name,
                           elements=array.ravel().tolist(), parents=parents)
    out = _autograd.attach(Tensor(array, dtype, node), op, vjp, inputs, loc)
    if all(_row_major(i) for i in inputs if isinstance(i, Tensor)):
        out._row_major_result = True  # see Tensor._known_strides
    if file not in _tracing.state.harness and file != "<unknown>":
        out._loc = loc
    if saved and out.grad_fn is not None:
        out.grad_fn.save(tuple(out if t is SAVED_RESULT else t for t in saved))
    return out


SAVED_RESULT = object()  # in `record(saved=...)`: the op's own result


def _contiguous_strides(shape):
    """PyTorch's row-major strides of `shape`, in elements."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _element_strides(array):
    return tuple(s // array.itemsize for s in array.strides)


def _same_layout(shape, a, b):
    """Equal strides where they matter: a dim of size 1 has no step."""
    return all(n == 1 or x == y for n, x, y in zip(shape, a, b))


def _storage_array(t):
    """t's values without reading them (a decision deferred until its
    values are read, _Decided, stays deferred)."""
    a = t.__dict__.get("_a")
    return t._a if a is None else a


def _row_major(t):
    """Whether PyTorch's `t.is_contiguous()` is known to be True: as
    Tensor._known_strides says, read from numpy's flag (which, as
    is_contiguous, ignores the step of a dim of size 1); every op asks
    this of its inputs, so it is kept cheap."""
    base = t.__dict__.get("_base")
    root = t if base is None else base
    return root._row_major_result and _storage_array(root).flags.c_contiguous and \
        (base is None or _storage_array(t).flags.c_contiguous)


def _saves(a, b):
    """What PyTorch's mul and matmul save: each operand when the other one
    needs its gradient."""
    needs = _autograd.requires_grad
    return tuple(x for x, other in ((a, b), (b, a))
                 if isinstance(x, Tensor) and needs((other,)))


def relabel(t, op, category, inputs):
    """Records a composite's result under the composite's name (linear,
    softmax, ...) while keeping the autograd graph of its parts."""
    out = record(t._a, t.dtype, op, category, inputs)
    if t._row_major_result:  # the same values, laid out as the composite's part made them
        out._row_major_result = True
    out.requires_grad, out.grad_fn = t.requires_grad, t.grad_fn
    if t.grad_fn is not None:
        t.grad_fn.name = op  # its gradient is reported as the composite's
    out._output_nr = getattr(t, "_output_nr", 0)
    return out


def _unbroadcast(g, shape):
    """Sums a gradient over the dimensions broadcasting added to `shape`."""
    g = np.asarray(g, dtype=object)
    while g.ndim > len(shape):
        g = np.asarray(g.sum(axis=0), dtype=object)  # a full sum is a scalar
    for axis, size in enumerate(shape):
        if size == 1 and g.shape[axis] != 1:
            g = g.sum(axis=axis, keepdims=True)
    return g


def _shape_of(x):
    return tuple(x.shape) if isinstance(x, Tensor) else np.shape(_raw(x))


def _movement(op, category, fn, sources, differentiable=None, indices=(), dtype=None):
    """A pure data-movement op (view, index, cat, embedding, ...): `fn` maps
    the source arrays to the result. Its gradient scatters back along the
    same map, learned by applying `fn` to arrays of element positions:
    position 0 stands for "no source" (a constant written by the op), the
    elements of differentiable sources are numbered from 1, and `indices`
    (such as embedding ids) keep their values."""
    differentiable = sources if differentiable is None else differentiable
    result = fn(*[_raw(x) for x in sources])
    tensors = [x for x in sources if isinstance(x, Tensor) and
               not any(x is i for i in indices)]
    if dtype is None:
        dtype = _result_dtype(*tensors) if len(tensors) > 1 else tensors[0].dtype

    def vjp(grads):
        offsets, positions, start = [], [], 1
        for x in sources:
            shape = _shape_of(x)
            if any(x is d for d in differentiable):
                n = int(np.prod(shape))
                positions.append(np.arange(start, start + n).reshape(shape))
                offsets.append(start)
                start += n
            else:
                positions.append(_raw(x) if any(x is i for i in indices)
                                 else np.zeros(shape, dtype=np.int64))
                offsets.append(None)
        where = np.asarray(fn(*positions)).ravel()
        total = np.zeros(start, dtype=object)
        np.add.at(total, where, np.asarray(grads[0], dtype=object).ravel())
        return [None if off is None else
                total[off:off + int(np.prod(_shape_of(x)))].reshape(_shape_of(x))
                for x, off in zip(sources, offsets)]

    return record(result, dtype, op, category, sources, vjp)


def fresh(shape, dtype, what, register=True, index=None, uninitialised=False):
    """A tensor of fresh symbolic leaves (randn, empty, parameters). A
    registered leaf is named by its op and creation order among that op's
    leaves, which matches it to the reference's; a parameter passes its own `index` (it is matched by its
    qualified name), so the parameters a run creates (one expert per rank,
    every expert in the reference) do not shift the other leaves' order.
    `uninitialised`: memory the running code never wrote, any value at all
    and never the reference's (quantified as an input of its own)."""
    shape = tuple(int(d) for d in shape)
    index = _tracing.next_leaf_index(what) if index is None else index
    origin = _tracing.origin()
    make = _sp.uninitialised if uninitialised else _sp.var
    flat = [make(f"{what}#{index}{_index_str(shape, i)}", origin)
            for i in range(math.prod(shape))]
    if uninitialised:
        _tracing.state.uninitialised_elements.update(term.id for term in flat)
    array = np.empty(len(flat), dtype=object)
    array[:] = flat
    array = array.reshape(shape)
    t = record(array, dtype, what, "leaf")
    if register:
        if _tracing.state.building:
            # An entry's input: a Parameter later re-pointed at part of it
            # knows which part (see Tensor._storage_while_built).
            for i, term in enumerate(flat):
                _tracing.state.entry_elements[term.id] = (f"{what}#{index}", shape, i)
        file, line, _, _ = _tracing.location()
        _sp.record_leaf(role="input", name=f"{what}#{index}", shape=shape, elements=flat,
                        partition_dim=-1, partition_stride=1, shard=0, shards=1,
                        file=file, line=line)
    return t


def _part_of_entry_input(value):
    """(shape of the whole, flat positions of value's elements in it) where
    value holds distinct elements of one symbolic input the entry made (a
    weight's slice of a master weight it initialised whole, picotron's
    `weight.data = torch.split(master, n, dim)[rank].contiguous()`); else
    None."""
    whole, positions = None, []
    for term in np.ravel(value._a):
        at = _tracing.state.entry_elements.get(getattr(term, "id", None)) \
            if isinstance(term, _sp.Term) else None
        if at is None or (whole is not None and at[:2] != whole):
            return None
        whole = at[:2]
        positions.append(at[2])
    if whole is None or len(set(positions)) != len(positions):
        return None
    return whole[1], positions


def _index_str(shape, flat):
    if not shape:
        return ""
    idx = []
    for d in reversed(shape):
        idx.append(flat % d)
        flat //= d
    return "[" + ",".join(str(i) for i in reversed(idx)) + "]"


def _category(d):
    """PyTorch's promotion categories: bool < integer < floating point."""
    return 2 if d.is_floating_point else 0 if d is _dtypes.bool else 1


def _scalar_dtype(x):
    """The dtype a Python scalar stands for (floats and terms: the default)."""
    if isinstance(x, _py_bool):
        return _dtypes.bool
    if isinstance(x, builtins.int):
        return _dtypes.int64
    if isinstance(x, (float, _sp.Term)):
        return _dtypes.default_float()
    return None


def _result_dtype(*xs):
    """PyTorch's type promotion: dimensioned tensors decide, unless a
    zero-dim tensor of a higher category does, unless a Python scalar of a
    higher category does still (bf16 x * 0.5 is bf16; an int32 tensor + 1
    is int32; an int tensor * 0.5 is the default float)."""
    result = None
    for group in ([x.dtype for x in xs if isinstance(x, Tensor) and x.ndim > 0],
                  [x.dtype for x in xs if isinstance(x, Tensor) and x.ndim == 0],
                  [d for d in map(_scalar_dtype, xs) if d is not None]):
        if not group:
            continue
        if result is None:
            result = _dtypes.promote(*group)
            continue
        above = [d for d in group if _category(d) > _category(result)]
        if above:
            best = max(_category(d) for d in above)
            result = _dtypes.promote(*[d for d in above if _category(d) == best])
    return result or _dtypes.default_float()


def _raw(x):
    if isinstance(x, Tensor):
        return x._a
    if hasattr(x, "_shardproof_term"):  # an unmodelled value: its opaque term
        return x._shardproof_term
    if isinstance(x, (list, tuple)):
        return np.asarray(x)
    return x


def _bool_array(array):
    """Comparisons of concrete floats give python bools in an object array;
    keep them concrete so they can index."""
    if array.dtype == object:
        flat = array.ravel()
        if all(isinstance(v, (_py_bool, np.bool_)) or
               (isinstance(v, _sp.Term) and v.is_const) for v in flat):
            return np.asarray([_py_bool(v) for v in flat],
                              dtype=np.bool_).reshape(array.shape)
    return array


def binary(op, a, b, fn, out_dtype=None, vjp=None, saved=()):
    """An elementwise op; `vjp(g, A, B)` gives the gradients before the
    broadcasting of A and B is undone."""
    dtype = out_dtype or _result_dtype(a, b)
    A, B = _raw(a), _raw(b)
    _check_broadcast(np.shape(A), np.shape(B))
    result = fn(A, B)
    # Saved for backward as they are now: a later in-place write must not
    # change the gradient (PyTorch refuses such graphs; we keep the values).
    A, B = _saved(A), _saved(B)

    def grads(g):
        ga, gb = vjp(np.asarray(g[0], dtype=object), A, B)
        return [None if ga is None else _unbroadcast(ga, np.shape(A)),
                None if gb is None else _unbroadcast(gb, np.shape(B))]

    return record(result, dtype, op, "elementwise", (a, b),
                  grads if vjp else None, saved=saved)


def _check_broadcast(a, b):
    """PyTorch's refusal of shapes that do not broadcast (numpy's would be a
    ValueError), at the first dimension from the right that differs."""
    n = builtins.max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    for i in reversed(range(n)):
        if a[i] != b[i] and a[i] != 1 and b[i] != 1:
            raise RuntimeError(f"The size of tensor a ({a[i]}) must match the size of "
                               f"tensor b ({b[i]}) at non-singleton dimension {i}")


def _exact_integer(v, dtype):
    """An element cast to an integer or bool dtype: exact numbers as they
    are; a symbolic value only where the cast cannot depend on it (a value
    provably > 0, such as a softmax probability, is True as a bool)."""
    if not isinstance(v, _sp.Term) or v.is_const:
        return builtins.int(v)
    if dtype is _dtypes.bool and _sp.provably_positive(v):
        return 1
    raise Unsupported("casting a symbolic tensor to an integer type")


def _concrete_only(op, fn):
    """A piecewise op (floor, remainder) over exact numbers only: over
    symbolic values it is not modelled."""
    def run(A, B):
        for v in (A, B):
            if any(isinstance(e, _sp.Term) and not e.is_const
                   for e in np.asarray(v, dtype=object).ravel()):
                _tracing.unmodelled(f"{op} of symbolic values")
        return fn(A, B)
    return run


def _saved(x):
    return np.array(x, copy=True) if isinstance(x, np.ndarray) else x


def _vjp_add(g, A, B):
    return g, g


def _vjp_sub(g, A, B):
    return g, -g


def _vjp_mul(g, A, B):
    return g * B, g * A


def _div_saves(a, b):
    """PyTorch's div saves the divisor for the dividend's gradient, and both
    for the divisor's."""
    needs = _autograd.requires_grad
    keep = []
    if isinstance(a, Tensor) and needs((b,)):
        keep.append(a)
    if isinstance(b, Tensor) and needs((a, b)):
        keep.append(b)
    return tuple(keep)


def _vjp_div(g, A, B):
    B = np.asarray(B, dtype=object)
    return _true_divide(g, B), _true_divide(-g * A, B * B)


# numpy's own comparisons of object arrays ask each result for a Python bool,
# which a symbolic comparison cannot give; these keep the comparison terms.
_LESS = np.frompyfunc(operator.lt, 2, 1)
_LESS_EQUAL = np.frompyfunc(operator.le, 2, 1)
_GREATER = np.frompyfunc(operator.gt, 2, 1)
_GREATER_EQUAL = np.frompyfunc(operator.ge, 2, 1)
_SYMBOLIC_COMPARISON = {np.less: _LESS, np.less_equal: _LESS_EQUAL,
                        np.greater: _GREATER, np.greater_equal: _GREATER_EQUAL}


def compare(op, a, b, fn):
    A, B = _raw(a), _raw(b)
    if np.asarray(A).dtype == object or np.asarray(B).dtype == object:
        fn = _SYMBOLIC_COMPARISON.get(fn, fn)
    return record(_bool_array(np.asarray(fn(A, B))), _dtypes.bool,
                  op, "elementwise", (a, b))


# Keys of a base tensor's `_views`, in the order the views were taken.
_VIEW_SERIALS = itertools.count()

_FN_CACHE = {}


def _fn(name):
    f = _FN_CACHE.get(name)
    if f is None:
        f = _FN_CACHE[name] = np.frompyfunc(lambda v: _sp.apply(name, v), 1, 1)
    return f


def _positive(A):
    return np.asarray(_where_array(_LESS(0, np.asarray(A, dtype=object)), 1, 0),
                      dtype=object)


# d/dx of each function, from its argument A and its value Y.
_DERIVATIVES = {
    "exp": lambda A, Y: Y,
    "log": lambda A, Y: 1 / A,
    "tanh": lambda A, Y: 1 - Y * Y,
    "sigmoid": lambda A, Y: Y * (1 - Y),
    "sqrt": lambda A, Y: 0.5 / Y,
    "rsqrt": lambda A, Y: -0.5 * Y * Y * Y,
    "sin": lambda A, Y: _fn("cos")(A),
    "cos": lambda A, Y: -_fn("sin")(A),
    "gelu": lambda A, Y: _fn("gelu_grad")(A),
    "gelu_tanh": lambda A, Y: _fn("gelu_tanh_grad")(A),
    "silu": lambda A, Y: _fn("sigmoid")(A) * (1 + A * (1 - _fn("sigmoid")(A))),
    "relu": lambda A, Y: _positive(A),
    "erf": lambda A, Y: (2 / math.sqrt(math.pi)) * _fn("exp")(-(A * A)),
}
# Functions whose PyTorch backward reads their result, not their input.
_SAVES_RESULT = {"exp", "tanh", "sigmoid", "sqrt", "rsqrt", "relu"}


def apply_fn(name, x, op=None, category="activation"):
    dtype = x.dtype if x.dtype.is_floating_point else _dtypes.default_float()
    A = _saved(x._a)
    Y = np.asarray(_fn(name)(A), dtype=object)

    def vjp(g):
        return [np.asarray(g[0], dtype=object) * _DERIVATIVES[name](A, Y)]

    return record(Y, dtype, op or name, category, (x,),
                  vjp if name in _DERIVATIVES else None,
                  saved=(SAVED_RESULT if name in _SAVES_RESULT else x,))


def _where_array(c, a, b):
    c = np.asarray(c)
    if c.dtype != object:
        return np.where(c, a, b)
    f = np.frompyfunc(_sp.where, 3, 1)
    return np.asarray(f(c, a, b), dtype=object)


def _dim(d, ndim):
    d = int(d)
    return d + ndim if d < 0 else d


def _index(key):
    if isinstance(key, tuple):
        return tuple(_index(k) for k in key)
    if isinstance(key, Tensor):
        if key._a.dtype == object:
            if key.dtype is not _dtypes.bool:
                raise Unsupported("indexing with a symbolic tensor")
            return _concrete_mask(key._a, "indexing with a mask of symbolic values")
        return key._a
    if isinstance(key, list):
        return np.asarray([_index(k) for k in key])
    return key


def _concrete_mask(array, what):
    """A boolean array, its symbolic comparisons decided at the path's
    witness (torch/_choices.py)."""
    truth = _bool_array(array)
    if truth.dtype == object:
        return _choices.truth(truth, what)
    return truth


def _concrete_index(index, op):
    a = index._a if isinstance(index, Tensor) else np.asarray(index)
    if a.dtype == object:
        raise Unsupported(f"{op} with symbolic indices")
    return a.astype(np.int64)


class _VersionCounter:
    __slots__ = ("value",)

    def __init__(self):
        self.value = 0


def _cast(dtype):
    """Tensor.float() and its kin: to(dtype), with PyTorch's memory_format."""
    def cast(self, memory_format=None):
        return self.to(dtype, memory_format=memory_format)
    return cast


class _TensorType(type):
    """`torch.Tensor(...)` called by user code is PyTorch's legacy
    constructor, which shares the name with the stand-in's own
    Tensor(array, dtype, ...)."""

    def __call__(cls, *args, **kwargs):
        if cls is Tensor and not (args and isinstance(args[0], np.ndarray)):
            return _legacy_tensor(*args, **kwargs)
        return super().__call__(*args, **kwargs)


def _legacy_tensor(*args, device=None):
    """torch.Tensor(*sizes) / torch.Tensor(size) is uninitialised float32
    memory of that shape; torch.Tensor(data) copies `data` as float32."""
    import torch
    if not args:
        return torch.empty(0)
    sizes = args[0] if len(args) == 1 and isinstance(args[0], (tuple, torch.Size)) else args
    if all(isinstance(n, int) and not isinstance(n, bool) for n in sizes):
        return torch.empty(*sizes)
    if len(args) == 1 and not isinstance(args[0], Tensor):
        return torch.tensor(args[0], dtype=_dtypes.float32)
    _tracing.unmodelled(f"torch.Tensor({', '.join(type(a).__name__ for a in args)}) "
                        "as a constructor")


class Tensor(metaclass=_TensorType):
    __array_priority__ = 1000  # numpy defers to our operators
    _base = None  # a view's base tensor (see _view)
    _loc = None  # where the analysed tree made this value (see record)

    _overrides_torch = None  # a subclass's __torch_function__ or __torch_dispatch__

    def __init__(self, array, dtype, node=None, requires_grad=False):
        if type(self)._overrides_torch:
            _tracing.unmodelled(f"a Tensor subclass with {type(self)._overrides_torch} "
                                f"({type(self).__name__})")
        if not isinstance(array, np.ndarray) or not isinstance(dtype, _dtypes.dtype):
            _tracing.unmodelled("torch.Tensor(...) as a constructor (use torch.tensor, "
                                "torch.empty, ...)")
        self._a = array
        self.dtype = dtype
        self._node = node
        self.requires_grad = requires_grad
        self.grad = None
        self.grad_fn = None

    @property
    def grad(self):
        return self.__dict__.get("_grad")

    @grad.setter
    def grad(self, value):
        """PyTorch's checks of an assigned .grad (python_variable.cpp):
        a gradient of another dtype or size would be a bug that real
        training stops at, not a value to prove things about."""
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError("assigned grad expected to be a Tensor or None but got "
                                f"grad of type {type(value).__name__}")
            if value.dtype != self.dtype:
                raise RuntimeError("assigned grad has data of a different type")
            if value._a.shape != self._a.shape:
                raise RuntimeError("assigned grad has data of a different size")
        self.__dict__["_grad"] = value

    def __init_subclass__(cls, **kwargs):
        """A Tensor subclass that overrides torch functions or dispatch
        changes what every op computes: not modelled once one is made (a
        framework may define such classes it never uses)."""
        super().__init_subclass__(**kwargs)
        for hook in ("__torch_function__", "__torch_dispatch__"):
            if hook in vars(cls):
                cls._overrides_torch = hook

    @classmethod
    def _make_subclass(cls, subclass, data, require_grad=False, **kwargs):
        _tracing.unmodelled(f"torch.Tensor._make_subclass({subclass.__name__}, ...)")

    def __getattr__(self, name):
        """Only reached when `name` is not found: a Tensor attribute of real
        PyTorch that we do not model, or no attribute at all (Megatron's
        `getattr(param, "main_grad", None)`)."""
        if name.startswith("_"):  # ours and Python's probes: the common, fast case
            raise AttributeError(f"'Tensor' object has no attribute '{name}'")
        from ._real_surface import NAMES
        raise _tracing.missing_attribute("Tensor", name, NAMES["Tensor"])

    # ---- metadata -----------------------------------------------------
    @property
    def shape(self):
        return Size(self._a.shape)

    def size(self, dim=None):
        return self.shape if dim is None else self._a.shape[_dim(dim, self.ndim)]

    def dim(self):
        return self._a.ndim

    ndim = property(dim)

    def numel(self):
        return int(self._a.size)

    nelement = numel

    def __len__(self):
        return self._a.shape[0]

    def element_size(self):
        return self.dtype.itemsize

    device = property(lambda self: device("cuda"))
    is_cuda = property(lambda self: True)
    is_leaf = property(lambda self: self.grad_fn is None)
    def _set_data(self, value):
        """`t.data = v`: t takes v's values, shape and dtype, keeping its
        identity (and, as a Parameter, its place in the model). While the
        entry builds the model a Parameter stays symbolic (a proof covers
        every value of the weights): see _storage_while_built."""
        if getattr(self, "_is_parameter", False) and _tracing.state.building:
            self._a, self._node = self._storage_while_built(value)
        else:
            self._a, self._node = value._a, value._node
        self.dtype = value.dtype
        # Its own storage (new or kept values) is row-major; value's is laid out as value is.
        self._row_major_result = _row_major(value) if self._a is value._a else True

    def _storage_while_built(self, value):
        """What a Parameter re-pointed while the model is built holds: the
        value itself where it holds the Parameter's own symbolic values
        (ZeRO moves each weight to a CPU copy, parks `.data` on a 1-element
        tensor, then points it at its view of the flat buffer built from the
        copies); new symbolic values for a value of another shape (a weight
        resized or parked, whatever the data); otherwise its own values,
        written into the value's storage, which it lives in from then on:
        the write is an initialisation, not taken, but the storage is the
        Parameter's, as in PyTorch (Megatron's DDP points every weight at
        its view of a flat parameter buffer, copies the weight in, and the
        distributed optimizer's all-gather later writes the buffer)."""
        own = self.__dict__.setdefault("_own_values", (self._a, self._node))
        # Which part of a tensor the entry made it now holds, if any: that
        # says which shard of the reference's parameter it is.
        self.__dict__["_shardproof_source"] = _part_of_entry_input(value)
        if tuple(value.shape) != own[0].shape:
            resized = fresh(value.shape, value.dtype, "param", register=False,
                            index=_tracing.next_param_index())
            return resized._a, resized._node
        if all(isinstance(a, _sp.Term) and isinstance(b, _sp.Term) and a.id == b.id
               for a, b in zip(np.ravel(value._a), own[0].ravel())):
            return value._a, value._node
        if value._a.dtype != object or own[0].dtype != object:
            return own
        value._a[...] = own[0]
        return value._a, own[1]

    def _get_data(self):
        """`t.data`: the same storage (a write through it changes t), outside
        autograd (no history, no grad) and with its own version counter, so
        autograd does not see writes through it, as in PyTorch."""
        alias = Tensor(self._a, self.dtype, self._node)
        alias._data_of = self
        alias._row_major_result = _row_major(self)
        return alias

    data = property(_get_data, _set_data)

    def _version_counter(self):
        """Shared by a tensor, its views and its detach()ed aliases; every
        in-place write bumps it, and a saved tensor whose version moved
        before the backward read it is PyTorch's in-place error."""
        counter = self.__dict__.get("_vc")
        if counter is None:
            counter = self._vc = _VersionCounter()
        return counter

    _version = property(lambda self: self._version_counter().value)

    def _bump_version(self):
        self._version_counter().value += 1

    @property
    def layout(self):
        from torch import strided
        return strided

    def is_contiguous(self, memory_format=None):
        """Row-major with no gaps, as numpy's view structure says: views
        (transpose, narrow along an inner dim, expand) are not, as in
        PyTorch. Only the default (row-major) memory format is modelled."""
        from . import contiguous_format
        _tracing.only("is_contiguous", "memory_format", memory_format,
                      None, contiguous_format)
        return _py_bool(self._a.flags.c_contiguous)

    _row_major_result = False  # PyTorch lays this tensor out row-major (see below)

    def _known_strides(self):
        """PyTorch's strides of this tensor in elements, or None where the
        stand-in does not know them. An op's result is row-major where its
        tensor inputs are (PyTorch's elementwise ops lay their result out as
        their inputs are, other ops allocate it row-major): `record` marks
        it so. A view's strides are the ones numpy's view of a row-major
        base has, which are PyTorch's for the view ops modelled (transpose,
        permute, expand, narrow, select, slicing, unsqueeze, squeeze, view;
        tests/differential checks them), except a new axis numpy gives the
        step 0 (`x[None]`), which is not known. Values never depend on this."""
        base = self.__dict__.get("_base")
        root = self if base is None else base
        ra = _storage_array(root)
        if not root._row_major_result or \
                not _same_layout(ra.shape, _element_strides(ra), _contiguous_strides(ra.shape)):
            return None
        a = _storage_array(self)
        if base is None:
            return _contiguous_strides(a.shape)
        strides = _element_strides(a)
        if a.size == 0 or any(n == 1 and s == 0 for n, s in zip(a.shape, strides)):
            return None
        return strides

    def stride(self, dim=None):
        """PyTorch's strides (see _known_strides); where they are not known
        the trace stops, as code may branch on them."""
        if dim is not None:
            ndim = self.ndim
            if ndim == 0:
                raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
            if not -ndim <= operator.index(dim) < ndim:
                raise IndexError(f"Dimension out of range (expected to be in range of "
                                 f"[{-ndim}, {ndim - 1}], but got {dim})")
        strides = self._known_strides()
        if strides is None:
            _tracing.unmodelled("Tensor.stride() of a tensor laid out after non-contiguous "
                                "inputs, or of a view the stand-in does not lay out as PyTorch")
        return strides if dim is None else strides[_dim(dim, self.ndim)]

    def is_floating_point(self):
        return self.dtype.is_floating_point

    def is_complex(self):
        return self.dtype.is_complex

    def data_ptr(self):
        return id(self._a.base if self._a.base is not None else self._a)

    def __repr__(self):
        return f"tensor(shape={list(self.shape)}, dtype={self.dtype})"

    def __format__(self, spec):
        """PyTorch's: a 0-dim tensor formats as its item()."""
        if self._a.ndim == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __bool__(self):
        if self._a.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one "
                               "value is ambiguous")
        return _py_bool(self._a.ravel()[0])

    def item(self):
        """The value as a Python number; a symbolic one stays symbolic
        (_shardproof.SymbolicFloat: Python arithmetic, comparisons and float()
        follow it; C code that needs its double stops the trace)."""
        if self._a.size != 1:
            raise RuntimeError(f"a Tensor with {self._a.size} elements cannot be "
                               "converted to Scalar")
        v = self._a.ravel()[0]
        if isinstance(v, _sp.Term):
            if v.is_const or v.is_unmodelled:
                return float(v)  # an unmodelled value stops the trace here
            # Where the value left the tensors: a number Python computes
            # from it (a norm's root) has no IR node of its own.
            _tracing.state.per_run["symbolic_item"] = _tracing.location()
            return _sp.number(v)
        return v.item() if isinstance(v, np.generic) else v

    def tolist(self):
        """Nested lists, as PyTorch's (one level per dimension)."""
        if not self.ndim:
            return self.item()

        def nest(a):
            if a.ndim == 1:
                return [v.item() if isinstance(v, np.generic) else v for v in a]
            return [nest(row) for row in a]
        return nest(self._a)

    def __float__(self):
        """A C double (math.log(t), numpy): of a symbolic value there is
        none, and the trace stops."""
        return self.__shardproof_float__().__float__()

    def __shardproof_float__(self):
        """float(t) in Python code (_shardproof's float): a symbolic value
        stays symbolic, a Python number as .item() gives it."""
        v = self.item()
        return v if isinstance(v, _sp.Term) else builtins.float(v)

    __int__ = lambda self: builtins.int(self.item())  # noqa: E731

    def __index__(self):
        return builtins.int(self.item())

    # ---- conversions ----------------------------------------------------
    @_tracing.no_effect(device="every stand-in tensor is on the one device",
                        non_blocking="copies are synchronous here")
    def to(self, *args, dtype=None, device=None, non_blocking=False, copy=False,
           memory_format=None):
        """to(dtype), to(device, dtype), to(other): itself when nothing
        changes and copy is False, else a new tensor."""
        flags = []
        for a in args:
            if isinstance(a, _dtypes.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                dtype = a.dtype
            elif isinstance(a, _py_bool):
                flags.append(a)  # to(dtype, non_blocking, copy)
            elif not isinstance(a, (str, builtins.int, _Device)):
                raise TypeError(f"to() received an invalid combination of arguments: {a!r}")
        if len(flags) > 1:
            copy = flags[1]
        out = self if dtype is None or dtype is self.dtype else self.type(dtype)
        if memory_format is not None:
            from . import contiguous_format, preserve_format
            _tracing.only("to", "memory_format", memory_format, contiguous_format,
                          preserve_format)
            if memory_format is contiguous_format and not out.is_contiguous():
                return out._copy("to", contiguous_format)
        return out._copy("to", None) if copy and out is self else out

    _TYPE_NAMES = {"torch.cuda.FloatTensor": "float32", "torch.cuda.HalfTensor": "float16",
                   "torch.cuda.BFloat16Tensor": "bfloat16", "torch.cuda.DoubleTensor": "float64",
                   "torch.cuda.LongTensor": "int64", "torch.cuda.IntTensor": "int32",
                   "torch.cuda.BoolTensor": "bool", "torch.FloatTensor": "float32",
                   "torch.HalfTensor": "float16", "torch.LongTensor": "int64"}

    @_tracing.no_effect(non_blocking="copies are synchronous here")
    def type(self, dtype=None, non_blocking=False, **kwargs):
        _tracing.no_kwargs("Tensor.type", kwargs)
        if dtype is None:
            names = {v: k for k, v in Tensor._TYPE_NAMES.items() if "cuda" in k}
            return names.get(self.dtype.name, f"torch.cuda.{self.dtype.name}")
        if isinstance(dtype, str):
            if dtype not in Tensor._TYPE_NAMES:
                _tracing.unmodelled(f"Tensor.type({dtype!r})")
            dtype = getattr(_dtypes, Tensor._TYPE_NAMES[dtype])
        if isinstance(dtype, type):  # a typed class: t.type(torch.cuda.HalfTensor)
            dtype = dtype.dtype
        if dtype is self.dtype:
            return self
        if dtype.is_floating_point:
            return record(self._a.astype(object), dtype, "to", "elementwise",
                          (self,), lambda g: [g[0]] if self.dtype.is_floating_point
                          else [None])
        elif self._a.dtype == object:
            array = np.asarray([_exact_integer(v, dtype) for v in self._a.ravel()],
                               dtype=dtype.numpy).reshape(self._a.shape)
        else:
            array = self._a.astype(dtype.numpy)
        return record(array, dtype, "to", "elementwise", (self,))

    def type_as(self, other):
        return self.to(other.dtype)

    float = _cast(_dtypes.float32)
    half = _cast(_dtypes.float16)
    bfloat16 = _cast(_dtypes.bfloat16)
    double = _cast(_dtypes.float64)
    long = _cast(_dtypes.int64)
    int = _cast(_dtypes.int32)
    bool = _cast(_dtypes.bool)
    short = _cast(_dtypes.int16)
    char = _cast(_dtypes.int8)
    byte = _cast(_dtypes.uint8)

    @_tracing.no_effect(device="every stand-in tensor is on the one device",
                        non_blocking="copies are synchronous here",
                        memory_format="a CUDA tensor moved to CUDA is itself",
                        function="every stand-in tensor is already a CUDA tensor")
    def cuda(self, device=None, non_blocking=False, memory_format=None):
        """Every stand-in tensor is a CUDA tensor: moving one there is itself."""
        return self

    @_tracing.no_effect(non_blocking="copies are synchronous here",
                        device="pinned memory has no device of its own here")
    def cpu(self, memory_format=None, non_blocking=False, device=None):
        """A CUDA tensor brought to the host is a copy: writing into it
        leaves the original as it is."""
        return self._copy("cpu", memory_format)

    pin_memory = cpu

    def contiguous(self, memory_format=None):
        """Itself when already contiguous, else a contiguous copy (writing
        into the copy leaves the original and its saved values alone)."""
        from . import contiguous_format
        _tracing.only("contiguous", "memory_format", memory_format,
                      None, contiguous_format)
        return self if self.is_contiguous() else self._copy("contiguous", contiguous_format)

    def _copy(self, op, memory_format):
        """A differentiable copy in new storage; `preserve_format` keeps the
        strides of a dense tensor (so a transposed copy stays transposed)."""
        from . import contiguous_format, preserve_format
        _tracing.only(op, "memory_format", memory_format,
                      None, contiguous_format, preserve_format)
        order = "C" if memory_format is contiguous_format else "K"
        out = record(np.array(self._a, copy=True, order=order), self.dtype, op, "view",
                     (self,), lambda g: [g[0]])
        if order == "C":
            out._row_major_result = True
        return out

    def detach(self):
        """The same storage and version counter, outside autograd."""
        alias = Tensor(self._a, self.dtype, self._node)
        alias._vc = self._version_counter()
        alias._row_major_result = _row_major(self)
        return alias

    def detach_(self):
        if getattr(self, "_base", None) is not None:
            _tracing.unmodelled("detach_() of a view")
        self.requires_grad, self.grad_fn = False, None
        return self

    def clone(self, memory_format=None):
        return self._copy("clone", memory_format)

    _CORE = frozenset(("_a", "dtype", "_node", "requires_grad", "_grad", "grad_fn", "_vc",
                       "_own_values",
                       "_base", "_loc"))

    def __deepcopy__(self, memo):
        """PyTorch's: a leaf's copy holds the same values in new storage,
        with the same requires_grad, a copy of its .grad and of the Python
        attributes a framework set on it (a Parameter's own copy is a new
        Parameter: see nn.Parameter)."""
        if self.grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.")
        copied = self._deepcopy_values()
        memo[id(self)] = copied
        copied.requires_grad = self.requires_grad
        if self.grad is not None:
            copied.grad = copy.deepcopy(self.grad, memo)
        for name, value in self.__dict__.items():
            if name not in Tensor._CORE:
                copied.__dict__[name] = copy.deepcopy(value, memo)
        return copied

    def _deepcopy_values(self):
        return self.detach().clone()

    def requires_grad_(self, requires_grad=True):
        if not requires_grad and self.grad_fn is not None:
            raise RuntimeError("you can only change requires_grad flags of leaf "
                               "variables. If you want to use a computed variable in "
                               "a subgraph that doesn't require differentiation use "
                               "var_no_grad = var.detach().")
        if requires_grad and not self.dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require "
                               "gradients")
        self.requires_grad = _py_bool(requires_grad)
        return self

    def numpy(self, force=False):
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        return self._a

    # ---- arithmetic -------------------------------------------------------
    def __add__(self, o):
        return binary("add", self, o, np.add, vjp=_vjp_add)

    def __radd__(self, o):
        return binary("add", o, self, np.add, vjp=_vjp_add)

    def __sub__(self, o):
        return binary("sub", self, o, np.subtract, vjp=_vjp_sub)

    def __rsub__(self, o):
        return binary("sub", o, self, np.subtract, vjp=_vjp_sub)

    def __mul__(self, o):
        return binary("mul", self, o, np.multiply, vjp=_vjp_mul, saved=_saves(self, o))

    def __rmul__(self, o):
        return binary("mul", o, self, np.multiply, vjp=_vjp_mul, saved=_saves(o, self))

    def __truediv__(self, o):
        return binary("div", self, o, _true_divide,
                      _result_dtype(self, o, 1.0), vjp=_vjp_div, saved=_div_saves(self, o))

    def __rtruediv__(self, o):
        return binary("div", o, self, _true_divide,
                      _result_dtype(self, o, 1.0), vjp=_vjp_div, saved=_div_saves(o, self))

    def __floordiv__(self, o):
        return binary("floor_divide", self, o, _concrete_only("floor_divide", np.floor_divide))

    def __mod__(self, o):
        return binary("remainder", self, o, _concrete_only("remainder", np.mod))

    def __neg__(self):
        return record(-self._a, self.dtype, "neg", "elementwise", (self,),
                      lambda g: [-np.asarray(g[0], dtype=object)])

    neg = __neg__

    def __pos__(self):
        """+t is a new tensor with t's values (PyTorch's positive())."""
        return record(self._a, self.dtype, "positive", "elementwise", (self,),
                      lambda g: [g[0]])

    def __abs__(self):
        A = _saved(self._a)
        return record(np.abs(A), self.dtype, "abs", "elementwise", (self,),
                      lambda g: [np.asarray(g[0], dtype=object) *
                                 (2 * _positive(A) - 1)], saved=(self,))

    abs = __abs__

    def _rounded(self, op, rule):
        """ceil/floor/round/trunc of exact numbers (a capacity computed from
        token counts); of symbolic values they are piecewise: not modelled.
        The gradient is zero, as PyTorch's."""
        if any(isinstance(v, _sp.Term) and not v.is_const for v in self._a.ravel()):
            _tracing.unmodelled(f"{op} of symbolic values")
        cast = float if self.dtype.is_floating_point else int
        values = np.asarray([cast(rule(float(v))) for v in self._a.ravel()],
                            dtype=object).reshape(self._a.shape)
        return record(values, self.dtype, op, "elementwise", (self,),
                      lambda g: [np.zeros(self._a.shape, dtype=object)])

    def ceil(self):
        return self._rounded("ceil", math.ceil)

    def floor(self):
        return self._rounded("floor", math.floor)

    def trunc(self):
        return self._rounded("trunc", math.trunc)

    def round(self, decimals=0):
        _tracing.only("round", "decimals", decimals, 0)
        return self._rounded("round", builtins.round)

    def __pow__(self, exponent):
        if isinstance(exponent, Tensor):
            raise Unsupported("a tensor exponent")
        A = _saved(self._a)
        return record(A ** exponent, self.dtype, "pow", "elementwise", (self,),
                      lambda g: [np.asarray(g[0], dtype=object) * exponent *
                                 np.asarray(A, dtype=object) ** (exponent - 1)], saved=(self,))

    pow = __pow__

    def __rpow__(self, base):
        """`number ** tensor` (rotary frequencies): concrete exponents only."""
        if isinstance(base, Tensor):
            raise Unsupported("a tensor exponent")
        if isinstance(base, _sp.Term) and not base.is_const:
            raise Unsupported("a symbolic number raised to a tensor")
        A = self._a
        if A.dtype == object and any(isinstance(v, _sp.Term) and not v.is_const
                                     for v in A.ravel()):
            raise Unsupported("a number raised to a symbolic tensor")
        exps = np.vectorize(builtins.float, otypes=[np.float64])(A) if A.dtype == object \
            else A.astype(np.float64)
        Y = np.asarray(np.power(builtins.float(base), exps), dtype=object)
        dtype = self.dtype if self.dtype.is_floating_point else _dtypes.default_float()
        log_base = math.log(base) if base > 0 else None
        return record(Y, dtype, "pow", "elementwise", (self,),
                      None if log_base is None else
                      (lambda g: [np.asarray(g[0], dtype=object) * Y * log_base]))

    def __matmul__(self, o):
        return matmul(self, o)

    def __rmatmul__(self, o):
        return matmul(o, self)

    def __lt__(self, other):
        return compare("lt", self, other, np.less)

    def __le__(self, other):
        return compare("le", self, other, np.less_equal)

    def __gt__(self, other):
        return compare("gt", self, other, np.greater)

    def __ge__(self, other):
        return compare("ge", self, other, np.greater_equal)

    def __eq__(self, other):
        return compare("eq", self, other, _equal)

    def __ne__(self, other):
        return compare("ne", self, other, lambda a, b: ~_as_bool(_equal(a, b)))

    __hash__ = object.__hash__

    def __and__(self, other):
        return compare("logical_and", self, other, np.logical_and)

    def __or__(self, other):
        return compare("logical_or", self, other, np.logical_or)

    def __xor__(self, other):
        return compare("logical_xor", self, other, np.logical_xor)

    def __invert__(self):
        return compare("logical_not", self, self, lambda a, _: np.logical_not(a))

    eq, ne, lt, le, gt, ge = __eq__, __ne__, __lt__, __le__, __gt__, __ge__
    logical_and, logical_or, logical_xor = __and__, __or__, __xor__

    def logical_not(self):
        return ~self

    def _float_class(self, op, holds):
        """isinf/isnan/isfinite, decided per element: a symbolic value is a
        finite real (variables are, and so is every term of them that is
        not an extended value: models/terms/term_store.h); an extended
        value is decided by what it is; one outside what shardproof models
        decides nothing; one that reads a collective's result not linked yet
        (any value until then, inf included) stops the trace, and the next
        tracing pass gives the linked result."""
        _choices.stop_unlinked(f"Tensor.{op}()", [
            v for v in self._a.ravel() if isinstance(v, _sp.Term) and not v.is_const])

        def decide(v):
            if isinstance(v, _sp.Term):
                if v.is_unmodelled:
                    _tracing.unmodelled(f"Tensor.{op}() of a value outside the modelled reals")
                v = builtins.float(v) if v.is_const else 0.0
            return holds(builtins.float(v))
        flags = np.asarray([decide(v) for v in self._a.ravel()], dtype=bool)
        return record(_bool_array(flags.reshape(self._a.shape)), _dtypes.bool,
                      op, "elementwise", (self,))

    def isinf(self):
        return self._float_class("isinf", math.isinf)

    def isnan(self):
        return self._float_class("isnan", math.isnan)

    def isfinite(self):
        return self._float_class("isfinite", math.isfinite)

    add = lambda self, other, *, alpha=1: self + (other * alpha if alpha != 1 else other)  # noqa: E731,E501
    sub = lambda self, other, *, alpha=1: self - (other * alpha if alpha != 1 else other)  # noqa: E731,E501

    def mul(self, other):
        return self * other

    def div(self, other, *, rounding_mode=None):
        from . import div
        return div(self, other, rounding_mode=rounding_mode)

    def matmul(self, other):
        return matmul(self, other)

    def addcmul(self, tensor1, tensor2, *, value=1):
        return addcmul(self, tensor1, tensor2, value)

    def addcdiv(self, tensor1, tensor2, *, value=1):
        return addcdiv(self, tensor1, tensor2, value)

    def lerp(self, end, weight):
        return lerp(self, end, weight)

    def mm(self, mat2):
        from . import mm
        return mm(self, mat2)

    def bmm(self, batch2):
        from . import bmm
        return bmm(self, batch2)

    def exp(self):
        return apply_fn("exp", self)

    def log(self):
        return apply_fn("log", self)

    def tanh(self):
        return apply_fn("tanh", self)

    def sigmoid(self):
        return apply_fn("sigmoid", self)

    def relu(self):
        return apply_fn("relu", self)

    def sqrt(self):
        return apply_fn("sqrt", self)

    def rsqrt(self):
        return apply_fn("rsqrt", self)

    def sin(self):
        return apply_fn("sin", self)

    def cos(self):
        return apply_fn("cos", self)

    def square(self):
        return self * self

    def reciprocal(self):
        return 1.0 / self

    def clamp(self, min=None, max=None):
        return clamp(self, min, max)

    clip = clamp

    def clamp_min(self, min):
        return clamp(self, min, None, "clamp_min")

    def clamp_max(self, max):
        return clamp(self, None, max, "clamp_max")

    def clamp_(self, min=None, max=None):
        return self._overwrite(clamp(self._old(), min, max))

    clip_ = clamp_

    def clamp_min_(self, min):
        return self._overwrite(clamp(self._old(), min, None, "clamp_min"))

    def clamp_max_(self, max):
        return self._overwrite(clamp(self._old(), None, max, "clamp_max"))

    # ---- reductions ---------------------------------------------------------
    def _axes(self, dim):
        if dim is None:
            return None
        if isinstance(dim, (tuple, list)):
            return tuple(_dim(d, self.ndim) for d in dim)
        return _dim(dim, self.ndim)

    def _reduce(self, op, fn, dim, keepdim, dtype=None, vjp=None):
        out = fn(self._a, axis=self._axes(dim), keepdims=keepdim)
        return record(np.asarray(out, dtype=(dtype or self.dtype).numpy),
                      dtype or self.dtype, op, "reduction", (self,), vjp)

    def sum(self, dim=None, keepdim=False, dtype=None, axis=None):
        dim = axis if dim is None else dim  # numpy's name, which torch accepts
        axes, shape = self._axes(dim), self._a.shape
        if dtype is None and not self.dtype.is_floating_point:
            dtype = _dtypes.int64  # PyTorch sums bool and integer tensors as int64

        def vjp(g):
            g = np.asarray(g[0], dtype=object)
            if not keepdim and axes is not None:
                g = np.expand_dims(g, axes)
            elif not keepdim:
                g = g.reshape((1,) * len(shape))
            return [np.array(np.broadcast_to(g, shape))]

        return self._reduce("sum", np.sum, dim, keepdim, dtype, vjp)

    def mean(self, dim=None, keepdim=False, dtype=None):
        total = self.sum(dim, keepdim, dtype)
        count = self.numel() // max(total.numel(), 1)
        return total / count

    def var(self, dim=None, unbiased=True, keepdim=False, correction=None):
        centered = self - self.mean(dim, keepdim=True)
        n = self.numel() // max(self.mean(dim, keepdim=keepdim).numel(), 1)
        ddof = (1 if unbiased else 0) if correction is None else correction
        return (centered * centered).sum(dim, keepdim) / (n - ddof)

    def all(self, dim=None, keepdim=False):
        return self._logical("all", np.all, dim, keepdim)

    def any(self, dim=None, keepdim=False):
        return self._logical("any", np.any, dim, keepdim)

    def _logical(self, op, fn, dim, keepdim):
        truth = _concrete_mask(self._a, f"{op}() of a condition on symbolic values")
        out = fn(truth.astype(np.bool_), axis=self._axes(dim), keepdims=keepdim)
        return record(np.asarray(out, dtype=np.bool_), _dtypes.bool, op,
                      "reduction", (self,))

    def amax(self, dim=None, keepdim=False):
        return self._extreme("amax", dim, keepdim, largest=True)

    def amin(self, dim=None, keepdim=False):
        return self._extreme("amin", dim, keepdim, largest=False)

    def max(self, dim=None, keepdim=False):
        if isinstance(dim, Tensor):
            return maximum(self, dim)
        if dim is None:
            return self.amax()
        return _ValuesIndices(self._extreme("max", dim, keepdim, largest=True, first=True),
                              self._arg(np.argmax, dim, keepdim))

    def min(self, dim=None, keepdim=False):
        if isinstance(dim, Tensor):
            return minimum(self, dim)
        if dim is None:
            return self.amin()
        return _ValuesIndices(self._extreme("min", dim, keepdim, largest=False, first=True),
                              self._arg(np.argmin, dim, keepdim))

    def _extreme(self, op, dim, keepdim, largest, first=False):
        """max/min values. Their gradient goes, as PyTorch's, to the elements
        equal to the extreme: split evenly among ties (amax, amin, a full
        max), or to the first of them (max/min along a dim, with its index).
        A gradient that is identically zero (the extreme used only as a
        softmax shift) stays zero."""
        fold = _object_max if largest else _object_min
        axes, A = self._axes(dim), _saved(self._a)

        def vjp(grads):
            g = np.asarray(grads[0], dtype=object)
            if _all_zero(g):
                return [np.zeros(A.shape, dtype=object)]
            M = np.asarray(fold(A, axis=axes, keepdims=True), dtype=object)
            g = g.reshape(M.shape)
            at = _bool_array(np.asarray((_GREATER_EQUAL if largest else _LESS_EQUAL)(
                np.asarray(A, dtype=object), M)))
            hit = np.asarray(_where_array(at, 1, 0), dtype=object)
            if first:
                hit = _first_along(hit, axes)
            else:
                hit = hit / np.asarray(hit.sum(axis=axes, keepdims=True), dtype=object)
            return [g * hit]

        return self._reduce(op, fold, dim, keepdim, vjp=vjp)

    def argmax(self, dim=None, keepdim=False):
        return self._arg(np.argmax, dim, keepdim)

    def argmin(self, dim=None, keepdim=False):
        return self._arg(np.argmin, dim, keepdim)

    def _arg(self, fn, dim, keepdim):
        """argmax/argmin (the first of equal extremes, as PyTorch); over
        symbolic values, where it is at the path's witness, a decision
        recorded only once the indices are read (max(dim).values alone
        decides nothing)."""
        source = self.reshape(-1) if dim is None else self
        d = 0 if dim is None else _dim(dim, self.ndim)
        what = f"{fn.__name__} of a symbolic tensor"
        # Unread indices must not stop the run: where no witness can decide,
        # only a use of them does.
        keys, symbolic = source._decision_keys(fn.__name__, lazy=True)
        if keys is None:
            return _SymbolicIndices(f"{what} with no value at the path's witness")
        largest = fn is np.argmax
        if symbolic is not None and _ties_in_first(keys, d, 2, largest):
            return _SymbolicIndices(f"{what} with values equal at the path's witness")
        out = fn(keys, axis=d)
        if keepdim and dim is not None:
            out = np.expand_dims(out, d)
        indices = record(np.asarray(out, dtype=np.int64), _dtypes.int64, fn.__name__,
                         "reduction", (self,))
        if symbolic is not None:
            order = np.argsort(-keys if largest else keys, axis=d, kind="stable")
            loc = _tracing.location()
            _Decided.defer(indices, lambda: _choices.record_order(
                symbolic, order, d, 1, largest, fn.__name__, loc))
        return indices

    @_tracing.no_effect(sparse_grad="the gradient's storage format, not its values")
    def gather(self, dim, index, sparse_grad=False):
        """out[i][j] = self[i][index[i][j]] (dim 1): data movement by
        concrete indices."""
        d, idx = _dim(dim, self.ndim), _concrete_index(index, "gather")
        head = tuple(slice(None) if k == d else slice(0, n) for k, n in enumerate(idx.shape))
        return _movement("gather", "view",
                         lambda a: np.take_along_axis(a[head], idx, axis=d), (self,))

    def index_select(self, dim, index):
        d, idx = _dim(dim, self.ndim), _concrete_index(index, "index_select")
        return _movement("index_select", "view", lambda a: np.take(a, idx, axis=d), (self,))

    def scatter(self, dim, index, src=None, value=None, reduce=None):
        """A copy of self with out[i][index[i][j]] = src[i][j] (dim 1), or
        the scalar `value`; concrete indices (a topk's scattered with its
        own values decide only which keys it picked)."""
        if reduce is not None:
            raise Unsupported("scatter with reduce=")
        src = value if src is None else src
        d = _dim(dim, self.ndim)
        with _Decided.reading_picked(index, src, d):
            return self._scatter(d, _concrete_index(index, "scatter"), src)

    def _scatter(self, d, idx, src):
        def put(old, new):
            out = np.array(old, copy=True)
            new = np.asarray(new)
            for pos in np.ndindex(*idx.shape):
                target = list(pos)
                target[d] = idx[pos]
                out[tuple(target)] = new[pos] if new.ndim else new
            return out

        sources = (self, src)
        return _movement("scatter", "elementwise", put, sources,
                         differentiable=tuple(x for x in sources if isinstance(x, Tensor)))

    def scatter_add(self, dim, index, src):
        """A copy of self with out[i][index[i][j]] += src[i][j] (dim 1);
        concrete indices. Linear: the gradient of src gathers the output's."""
        d, idx = _dim(dim, self.ndim), _concrete_index(index, "scatter_add")
        targets = []
        for pos in np.ndindex(*idx.shape):
            target = list(pos)
            target[d] = idx[pos]
            targets.append((pos, tuple(target)))
        out = np.array(self._a, dtype=object, copy=True)
        S = _raw(src)
        for pos, target in targets:
            out[target] = out[target] + S[pos]
        src_shape = _shape_of(src)

        def vjp(grads):
            g = np.asarray(grads[0], dtype=object)
            gs = np.zeros(src_shape, dtype=object)
            for pos, target in targets:
                gs[pos] = g[target]
            return [g, gs]

        return record(out, _result_dtype(self, src), "scatter_add", "elementwise",
                      (self, src), vjp)

    def scatter_add_(self, dim, index, src):
        return self._overwrite(self._old().scatter_add(dim, index, src))

    def index_add(self, dim, index, source, alpha=1):
        """out.select(dim, index[k]) += alpha * source.select(dim, k)."""
        d, idx = _dim(dim, self.ndim), _concrete_index(index, "index_add")
        full = np.broadcast_to(np.expand_dims(
            idx, tuple(k for k in range(self.ndim) if k != d)),
            tuple(_shape_of(source)))
        return self.scatter_add(d, Tensor(np.array(full), _dtypes.int64),
                                source * alpha if alpha != 1 else source)

    def index_add_(self, dim, index, source, alpha=1):
        return self._overwrite(self._old().index_add(dim, index, source, alpha))

    def masked_select(self, mask):
        """The elements where the (concrete) mask is True, as a 1-D tensor."""
        m = np.asarray(_raw(mask))
        if m.dtype == object:
            m = _concrete_mask(m, "masked_select with a mask of symbolic values")
        m = np.broadcast_to(m.astype(np.bool_), self._a.shape)
        return _movement("masked_select", "view", lambda a: np.broadcast_to(a, m.shape)[m],
                         (self,))

    def scatter_(self, dim, index, src=None, value=None, reduce=None):
        return self._overwrite(self._old().scatter(dim, index, src, value, reduce))

    def nonzero(self, *, as_tuple=False):
        """Indices of the nonzero elements, [n, ndim] int64 in row-major
        order (a tuple of 1-d index tensors with as_tuple). Which elements
        are nonzero must be known: over symbolic values tracing stops."""
        values = self._a
        if values.dtype == object:
            if _choices.is_symbolic(values):
                values = _concrete_mask(values, "nonzero of symbolic values")
            values = np.vectorize(builtins.float, otypes=[np.float64])(values)
        found = np.nonzero(np.asarray(values).reshape(self.shape) if self.ndim else
                           np.asarray(values).reshape(1))
        from . import _concrete
        if as_tuple:
            return tuple(_concrete(i, _dtypes.int64, "nonzero") for i in found)
        return _concrete(np.stack(found, axis=1) if found else np.zeros((0, 0)),
                         _dtypes.int64, "nonzero")

    def argsort(self, dim=-1, descending=False, stable=False):
        """Indices that sort `dim`; over symbolic values, the order at the
        path's witness (torch/_choices.py)."""
        d = _dim(dim, self.ndim)
        keys, symbolic = self._decision_keys("argsort")
        if symbolic is not None and _ties_in_first(keys, d, keys.shape[d], descending):
            _tracing.unmodelled("argsort of symbolic values equal at the path's witness")
        if not stable and _has_ties(keys, d):
            _tracing.unmodelled("argsort(stable=False) of equal keys (PyTorch may "
                                "order them either way)")
        order = np.argsort(-keys if descending else keys, axis=d, kind="stable")
        if symbolic is not None:
            _choices.record_order(symbolic, order, d, keys.shape[d], descending, "argsort")
        return record(order.astype(np.int64), _dtypes.int64, "argsort", "reduction", (self,))

    def _decision_keys(self, what, lazy=False):
        """(keys as float64, the symbolic keys or None): the keys a decision
        is made from; symbolic ones are read at the path's witness. Where
        they have no value there, a gap; with `lazy`, keys None instead."""
        keys = self._a
        if keys.dtype != object:
            return keys.astype(np.float64), None  # bool and integer keys sort as numbers
        if _choices.is_symbolic(keys):
            at = _choices.values_at_witness(keys) if lazy else _choices.witness(keys, what)
            return at, keys
        return np.vectorize(builtins.float, otypes=[np.float64])(keys), None

    @_tracing.no_effect(function="a memory-allocator hint", stream="see function")
    def record_stream(self, stream):
        pass

    def topk(self, k, dim=-1, largest=True, sorted=True):
        """The k largest (smallest) elements along `dim` and their indices;
        over symbolic values, those at the path's witness (torch/_choices.py)."""
        d = _dim(dim, self.ndim)
        keys, symbolic = self._decision_keys("topk")
        order = np.argsort(-keys if largest else keys, axis=d, kind="stable")
        if not sorted and int(k) > 1:
            _tracing.unmodelled("topk(sorted=False) (the order of the picked elements "
                                "is unspecified)")
        if symbolic is not None and _ties_in_first(keys, d, int(k) + 1, largest):
            _tracing.unmodelled("topk over symbolic values equal at the path's witness")
        if _tie_at(np.take_along_axis(keys, order, axis=d), d, int(k)):
            _tracing.unmodelled("topk where equal keys straddle the k-th place "
                                "(PyTorch may pick either)")
        picked = np.take(order, np.arange(int(k)), axis=d)
        values = _movement("topk", "view",
                           lambda a: np.take_along_axis(a, picked, axis=d), (self,))
        indices = record(picked.astype(np.int64), _dtypes.int64, "topk", "reduction", (self,))
        if symbolic is not None:
            choice = _choices.TopkChoice(symbolic, order, d, int(k), largest, "topk",
                                         _tracing.location())
            for t in (values, indices):
                _Decided.defer(t, choice.record_order, choice)
        return _ValuesIndices(values, indices)

    def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
        """The 2-norm (Frobenius); other orders are not modelled."""
        _tracing.only("norm", "p", p, "fro", 2, 2.0)
        x = self if dtype is None else self.to(dtype)
        return (x * x).sum(dim, keepdim).sqrt()

    def softmax(self, dim, dtype=None):
        from .nn import functional as F
        return F.softmax(self if dtype is None else self.to(dtype), dim)

    def log_softmax(self, dim, dtype=None):
        from .nn import functional as F
        return F.log_softmax(self if dtype is None else self.to(dtype), dim)

    # ---- views and shapes ------------------------------------------------------
    def _view(self, op, fn):
        """A view op given as a function of the array: differentiable, and
        the result shares storage with self where numpy's does."""
        out = _movement(op, "view", fn, (self,))
        if np.shares_memory(out._a, self._a):
            base = getattr(self, "_base", None)
            out._base = self if base is None else base
            # How to take this view of its base (an in-place write through
            # it rewrites the base's history, as PyTorch's CopySlices does).
            inner = getattr(self, "_view_fn", None)
            out._view_fn = fn if base is None else \
                (None if inner is None else (lambda a: fn(inner(a))))
            # Keyed by creation order, not id(): a dead view's id is reused,
            # and a reused key keeps its old place, which would make the
            # order views are re-taken in (their IR node ids) vary by run.
            out._base.__dict__.setdefault("_views", {})[next(_VIEW_SERIALS)] = \
                weakref.ref(out)
        return out

    def view(self, *shape, dtype=None):
        if dtype is not None and not shape:
            shape = (dtype,)
        if len(shape) == 1 and isinstance(shape[0], _dtypes.dtype):
            if shape[0] is not self.dtype:
                return self._view_uninitialised_as(shape[0])
            return self._view("view", lambda a: a)
        shape = _shape_args(shape)
        out = self._view("view", lambda a: a.reshape(shape))
        if out._base is None and self._a.size > 1:
            raise RuntimeError("view size is not compatible with input tensor's size "
                               "and stride (at least one dimension spans across two "
                               "contiguous subspaces). Use .reshape(...) instead.")
        return out

    def _view_uninitialised_as(self, dtype):
        """`view(dtype)` of another element size, where it reinterprets
        memory nothing wrote (nanotron's receive buffer: `torch.empty(n,
        dtype=torch.int8).view(dtype=torch.float32)`): memory nothing wrote,
        any value at all, read as other elements is still any value at all,
        so the view is new uninitialised memory of its shape. A write
        through one of the two is not seen through the other, whose
        elements stay any value at all: a proof covers what the bytes would
        be. Bits of values are not modelled."""
        elements = np.ravel(self._a)
        if self.__dict__.get("_base") is not None or self.ndim == 0 or \
                self._known_strides() != _contiguous_strides(self._a.shape) or \
                not all(isinstance(t, _sp.Term) and
                        t.id in _tracing.state.uninitialised_elements for t in elements):
            _tracing.unmodelled(f"view({dtype}) of a {self.dtype} tensor "
                                "(a reinterpretation of its bits)")
        old, new = self.dtype.itemsize, dtype.itemsize
        if (self.shape[-1] * old) % new:
            raise RuntimeError("self.size(-1) must be divisible by "
                               f"{new // old} to view {self.dtype} as {dtype} "
                               "(different element sizes)")
        shape = tuple(self.shape[:-1]) + (self.shape[-1] * old // new,)
        out = fresh(shape, dtype, "view_dtype", register=False, uninitialised=True)
        out._row_major_result = True
        return out

    def untyped_storage(self):
        return UntypedStorage(self)

    def storage_offset(self):
        """Elements between the start of the storage and the first
        element: 0 for a tensor that is not a view; a view's from where
        numpy's view of its base starts."""
        base = self.__dict__.get("_base")
        if base is None:
            return 0
        if self._known_strides() is None or base._known_strides() is None:
            _tracing.unmodelled("Tensor.storage_offset() of a view the stand-in does not "
                                "lay out as PyTorch")
        a, b = _storage_array(self), _storage_array(base)
        start = a.__array_interface__["data"][0] - b.__array_interface__["data"][0]
        return start // b.itemsize

    def as_strided(self, size, stride, storage_offset=None):
        """Only the row-major layout of `size` over a row-major tensor's
        own storage (nanotron's receive buffer: its contiguous view at the
        sent shape): a view of those elements. Any other layout is not
        modelled."""
        size = tuple(builtins.int(n) for n in size)
        stride = tuple(builtins.int(n) for n in stride)
        offset = self.storage_offset() if storage_offset is None else builtins.int(storage_offset)
        n = math.prod(size)
        if self.__dict__.get("_base") is not None or \
                self._known_strides() != _contiguous_strides(self._a.shape) or \
                not _same_layout(size, stride, _contiguous_strides(size)) or \
                offset < 0 or offset + n > self.numel():
            _tracing.unmodelled(f"Tensor.as_strided(size={list(size)}, stride={list(stride)}, "
                                f"storage_offset={offset}) of a tensor of shape "
                                f"{list(self.shape)} (only its row-major layout over a "
                                "row-major tensor's own storage is modelled)")
        return self.reshape(-1)[offset:offset + n].view(size)

    def reshape(self, *shape):
        shape = _shape_args(shape)
        return self._view("reshape", lambda a: a.reshape(shape))

    def ravel(self):
        return self.reshape(-1)

    def view_as(self, other):
        return self.view(other.shape)

    reshape_as = view_as

    def flatten(self, start_dim=0, end_dim=-1):
        s = list(self.shape)
        a, b = _dim(start_dim, self.ndim), _dim(end_dim, self.ndim)
        if self.ndim == 0:
            return self.reshape(1)
        new = s[:a] + [math.prod(s[a:b + 1])] + s[b + 1:]
        return self._view("flatten", lambda x: x.reshape(new))

    def transpose(self, dim0, dim1):
        d0, d1 = _dim(dim0, self.ndim), _dim(dim1, self.ndim)
        return self._view("transpose", lambda a: np.swapaxes(a, d0, d1))

    swapaxes = transpose

    def t(self):
        return self if self.ndim < 2 else self.transpose(0, 1)

    T = property(lambda self: self._view("permute", lambda a: a.T))

    def permute(self, *dims):
        dims = [_dim(d, self.ndim) for d in _shape_args(dims)]
        return self._view("permute", lambda a: np.transpose(a, dims))

    def unsqueeze(self, dim):
        d = _dim(dim, self.ndim + 1)
        return self._view("unsqueeze", lambda a: np.expand_dims(a, d))

    def squeeze(self, dim=None):
        if dim is None:
            return self._view("squeeze", np.squeeze)
        d = _dim(dim, self.ndim)
        if self._a.shape[d] != 1:
            return self
        return self._view("squeeze", lambda a: np.squeeze(a, d))

    def expand(self, *shape):
        shape = list(_shape_args(shape))
        lead = len(shape) - self.ndim
        for i, s in enumerate(shape):
            if s == -1:
                shape[i] = self._a.shape[i - lead]
        return self._view("expand", lambda a: _expanded(a, shape))

    def expand_as(self, other):
        return self.expand(other.shape)

    def repeat(self, *reps):
        reps = _shape_args(reps)
        return self._view("repeat", lambda a: np.tile(a, reps))

    def triu(self, diagonal=0):
        """The upper triangle of the last two dimensions; the rest is 0."""
        k = builtins.int(diagonal)
        return _movement("triu", "index", lambda a: np.triu(a, k), (self,))

    def tril(self, diagonal=0):
        k = builtins.int(diagonal)
        return _movement("tril", "index", lambda a: np.tril(a, k), (self,))

    def narrow(self, dim, start, length):
        d = _dim(dim, self.ndim)
        start = _narrow_start(self._a.shape[d], start, length)
        index = [slice(None)] * self.ndim
        index[d] = slice(start, start + length)
        index = tuple(index)
        return self._view("narrow", lambda a: a[index])

    def split(self, split_size, dim=0):
        return split(self, split_size, dim)

    def chunk(self, chunks, dim=0):
        return chunk(self, chunks, dim)

    def unbind(self, dim=0):
        d = _dim(dim, self.ndim)
        return tuple(self.select(d, i) for i in range(self._a.shape[d]))

    def select(self, dim, index):
        key = [slice(None)] * self.ndim
        key[_dim(dim, self.ndim)] = index
        key = tuple(key)
        return self._view("select", lambda a: a[key])

    def __getitem__(self, key):
        key = _index(key)
        return self._view("index", lambda a: a[key])

    def __setitem__(self, key, value):
        array = _raw(value)
        if isinstance(array, np.ndarray) and array.dtype == object and \
                self._a.dtype != object:
            raise Unsupported("writing symbolic values into an integer tensor")
        key = _index(key)

        def put(old, new):
            out = np.array(old, copy=True)
            out[key] = new
            return out

        self._overwrite(_movement("index_put", "elementwise", put, (self._old(), value)))

    # ---- in place --------------------------------------------------------------
    # An in-place op is its out-of-place twin computed from a snapshot of the
    # old value, written back into this tensor's storage (so every view sees
    # it) and taking over its IR node and autograd history.
    def _old(self):
        if getattr(self, "_base", None) is not None and self._base.requires_grad \
                and _autograd.GradMode.enabled and \
                getattr(self, "_view_fn", None) is None:
            raise Unsupported("an in-place write into a view of a tensor that "
                              "requires grad")
        old = Tensor(self._a.copy(), self.dtype, self._node, self.requires_grad)
        old.grad_fn = self.grad_fn
        old._output_nr = getattr(self, "_output_nr", 0)
        return old

    def _overwrite(self, result):
        if result._a.shape != self._a.shape:
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the "
                               f"broadcast shape {list(result.shape)}")
        base = getattr(self, "_base", None)
        target = self if base is None else base
        owner = getattr(target, "_data_of", None)  # t.data's storage is t's
        if (getattr(target, "_is_parameter", False) or
                getattr(owner, "_is_parameter", False)) and _tracing.state.building:
            # Initialising a Parameter while the entry builds the model
            # (zero_, fill_, copy_): a proof covers every value of the
            # weights, so it keeps its own. Writes in the forward are real.
            return self
        if _autograd.GradMode.enabled and target.requires_grad and target.grad_fn is None:
            raise RuntimeError(("a view of a leaf Variable" if base is not None else
                                "a leaf Variable") + " that requires grad is being used "
                               "in an in-place operation.")
        result = self._as_own_dtype(result)
        self._bump_version()
        tracked = _autograd.GradMode.enabled and (
            result.requires_grad or target.requires_grad)
        if tracked and base is not None and getattr(self, "_view_fn", None) is not None:
            # The base gets the new value where this view lies, its old one
            # elsewhere; the view (and every other view of it) is re-taken.
            view_fn = self._view_fn

            def put(old, new):
                out = np.array(old, copy=True)
                region = view_fn(out)
                if not np.shares_memory(region, out):
                    raise Unsupported("an in-place write through a view numpy "
                                      "cannot take again")
                region[...] = new
                return out

            base._overwrite(_movement("copy_slices", "elementwise", put,
                                      (base._old(), result)))
            return self
        self._a[...] = result._a
        self._node = result._node
        if base is not None:
            # The base's own value changed too: its IR node says where from
            # (a bucket filled slice by slice, then reduced).
            base._inplace("copy_slices", result, writer=self)
        else:
            self._retake_view_nodes()
        if not _autograd.GradMode.enabled:
            # As in PyTorch, a write under no_grad (an optimizer step, a
            # custom Function's forward editing its input) leaves the
            # tensor's autograd identity as it was.
            return self
        self.requires_grad = result.requires_grad
        self.grad_fn = result.grad_fn
        self._output_nr = getattr(result, "_output_nr", 0)
        if tracked:
            self._retake_views()
        return self

    def _retake_views(self):
        """After an in-place write that autograd sees, every live view of
        this tensor is a view of its new value (PyTorch regenerates a view's
        grad_fn when its base's version changes)."""
        views = self.__dict__.get("_views", {})
        for key, ref in list(views.items()):
            view = ref()
            if view is None:
                del views[key]
                continue
            fn = getattr(view, "_view_fn", None)
            if fn is None:
                continue
            fresh_view = _movement("view", "view", fn, (self,))
            view._node = fresh_view._node
            view.requires_grad = fresh_view.requires_grad
            view.grad_fn = fresh_view.grad_fn
            view._output_nr = 0

    def _as_own_dtype(self, result):
        """An in-place result is stored in this tensor's format, as PyTorch
        casts it (a float written into a bf16 buffer is a bf16 value); a
        float result cannot be written into an integer tensor."""
        if result.dtype is self.dtype:
            return result
        if result.dtype.is_floating_point and not self.dtype.is_floating_point:
            raise RuntimeError(f"result type {result.dtype} can't be cast to the "
                               f"desired output type {self.dtype}")
        return result.to(self.dtype)

    def _written_by(self, node):
        """After a collective wrote this tensor's storage in place: its new
        IR node, its base's and every other view's. c10d writes do not bump
        the version counter (PyTorch's ProcessGroup ops have no
        ADInplaceOrView kernel): a saved tensor a collective overwrote is
        read, overwritten, by the backward, silently, as in PyTorch."""
        self._node = node
        base = getattr(self, "_base", None)
        if base is not None:
            base._inplace("copy_slices", self, writer=self, bump=False)
        else:
            self._retake_view_nodes()

    def _inplace(self, op, *inputs, writer=None, bump=True):
        """Records the current storage as a new value of this tensor (used
        after a write autograd does not see, through `writer`, a view)."""
        if bump:
            self._bump_version()
        self._node = record(self._a, self.dtype, op, "elementwise", (self,) + inputs)._node
        self._retake_view_nodes(skip=writer)
        return self

    def _retake_view_nodes(self, skip=None):
        """After a write into this tensor's storage that autograd does not
        see: every live view (but the one written through) reads the new
        value, so its IR node is re-taken from this tensor's."""
        views = self.__dict__.get("_views", {})
        for key, ref in list(views.items()):
            view = ref()
            if view is None:
                del views[key]
            elif view is not skip and getattr(view, "_view_fn", None) is not None:
                view._node = record(view._a, view.dtype, "view", "view", (self,))._node

    @_tracing.no_effect(non_blocking="copies are synchronous here")
    def copy_(self, other, non_blocking=False):
        """Writes other's values in this tensor's format: a copy into a
        narrower buffer is a narrowing (the comm-dtype rule sees it).
        (PyTorch's Python binding names the source `other`.)"""
        shape = self._a.shape
        return self._overwrite(_movement(
            "copy_", "elementwise", lambda old, new: np.array(np.broadcast_to(new, shape)),
            (self._old(), other), dtype=self.dtype))

    def add_(self, other, *, alpha=1):
        return self._overwrite(self._old().add(other, alpha=alpha))

    def sub_(self, other, *, alpha=1):
        return self._overwrite(self._old().sub(other, alpha=alpha))

    def mul_(self, other):
        return self._overwrite(self._old() * other)

    def div_(self, other, *, rounding_mode=None):
        return self._overwrite(self._old().div(other, rounding_mode=rounding_mode))

    def addcmul_(self, tensor1, tensor2, *, value=1):
        return self._overwrite(self._old().addcmul(tensor1, tensor2, value=value))

    def addcdiv_(self, tensor1, tensor2, *, value=1):
        return self._overwrite(self._old().addcdiv(tensor1, tensor2, value=value))

    def lerp_(self, end, weight):
        return self._overwrite(self._old().lerp(end, weight))

    # `t += x` and friends write into t's storage (every view sees it), as in
    # PyTorch; without these Python would rebind the name to a new tensor.
    def __iadd__(self, o):
        return self.add_(o)

    def __isub__(self, o):
        return self.sub_(o)

    def __imul__(self, o):
        return self.mul_(o)

    def __itruediv__(self, o):
        return self.div_(o)

    def fill_(self, value):
        return self._overwrite(_movement(
            "fill_", "elementwise", lambda old, v: np.full(old.shape, v, dtype=old.dtype),
            (self._old(), value), differentiable=()))

    def zero_(self):
        return self.fill_(0.0 if self.dtype.is_floating_point else 0)

    def masked_fill_(self, mask, value):
        return self._overwrite(self._old().masked_fill(mask, value))

    def masked_fill(self, mask, value):
        if mask._a.dtype != object:  # a concrete mask moves data
            m = np.broadcast_to(mask._a, self._a.shape)

            def fill(a, v):
                out = np.array(a, copy=True)
                out[m] = v
                return out

            return _movement("masked_fill", "elementwise", fill, (self, value),
                             differentiable=(self,) + ((value,) if isinstance(value, Tensor) else ()))
        from . import where
        return where(mask, value, self)

    # ---- random fills (h5): keyed draws, see torch/random.py ----------------
    def uniform_(self, low=0.0, to=1.0, *, generator=None, **kwargs):
        low = kwargs.pop("from", low)  # PyTorch's name, a keyword in Python
        _tracing.no_kwargs("Tensor.uniform_", kwargs)
        if low > to:
            raise RuntimeError(f"uniform_ expects to return a [from, to) range, but "
                               f"found from={low} > to={to}")
        from . import random
        return random.fill_(self, "uniform_",
                            lambda u: low + (to - low) * random.unit_uniform(u), generator)

    def normal_(self, mean=0.0, std=1.0, *, generator=None):
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        from . import random
        return random.fill_(self, "normal_", lambda u: mean + std * u, generator)

    def exponential_(self, lambd=1.0, *, generator=None):
        if not lambd > 0:
            raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
        from . import random
        return random.fill_(
            self, "exponential_",
            lambda u: _sp.apply("log", 1 - random.unit_uniform(u)) * (-1.0 / lambd),
            generator)

    def bernoulli_(self, p=0.5, *, generator=None):
        from . import random
        return self._overwrite(random.bernoulli_probabilities(self, p, "bernoulli_",
                                                              generator))

    def bernoulli(self, p=None, *, generator=None):
        from . import random
        return random.bernoulli(self, p, generator=generator)

    def random_(self, *args, **kwargs):
        raise Unsupported("Tensor.random_ (random integers) is not modelled")

    def cauchy_(self, *args, **kwargs):
        raise Unsupported("Tensor.cauchy_ is not modelled")

    def log_normal_(self, *args, **kwargs):
        raise Unsupported("Tensor.log_normal_ is not modelled")

    def geometric_(self, *args, **kwargs):
        raise Unsupported("Tensor.geometric_ is not modelled")

    def _reinit(self, generator=None):
        """A torch.nn.init initialiser: in the entry, see _reinit_symbolic (the
        generator moves on as the draw would move it); later, not modelled."""
        from . import random
        return random.fill_(self, "init", None, generator)

    def _reinit_symbolic(self):
        """Initialisation makes a plain tensor symbolic; a Parameter already is."""
        from .nn.parameter import Parameter
        if not isinstance(self, Parameter):
            self._a[...] = fresh(self.shape, self.dtype, "init")._a
            self._inplace("init")
            self.grad_fn = None  # a fresh leaf
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph=False,
                 inputs=None):
        if create_graph:
            _tracing.unmodelled("backward(create_graph=True) (higher-order gradients)")
        if not self.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and "
                               "does not have a grad_fn")
        if gradient is None:
            if self.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for "
                                   "scalar outputs")
            from . import ones_like
            gradient = ones_like(self)
        _autograd.backward(self, gradient, retain_graph=_py_bool(retain_graph),
                           inputs=inputs)

    def register_hook(self, hook):
        """A leaf's hook runs on its whole gradient before it is accumulated;
        another tensor's runs on its whole gradient before the backward of
        the op that made it (PyTorch's tensor pre-hook on its grad_fn)."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't "
                               "require gradient")
        if self.grad_fn is None:
            hooks = self.__dict__.setdefault("_grad_hooks", [])
        else:
            hooks = self.grad_fn.tensor_hooks.setdefault(self._output_nr, [])
        hooks.append(hook)
        return _RemovableHook(hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """hook(leaf), after the leaf's AccumulateGrad updated .grad."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't "
                               "require gradient")
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on "
                               "non-leaf tensors")
        self.__dict__.setdefault("_post_accumulate_hooks", []).append(hook)
        return _RemovableHook(self._post_accumulate_hooks, hook)

    def retain_grad(self):
        """A non-leaf's .grad is filled by the backward, after its hooks."""
        if self.grad_fn is None:
            return  # a leaf keeps its gradient anyway
        if getattr(self, "_retains_grad", False):
            return
        self._retains_grad = True
        target = weakref.ref(self)

        def keep(grad):
            t = target()
            if t is not None and grad is not None:
                t.grad = grad if t.grad is None else t.grad + grad
        keep._retains_grad = True
        self.grad_fn.tensor_hooks.setdefault(self._output_nr, []).append(keep)

    retains_grad = property(lambda self: getattr(self, "_retains_grad", False))

    def new_zeros(self, *shape, size=None, dtype=None, **kwargs):
        from . import zeros
        return zeros(*(shape or (size,)), dtype=dtype or self.dtype, **kwargs)

    def new_ones(self, *shape, size=None, dtype=None, **kwargs):
        from . import ones
        return ones(*(shape or (size,)), dtype=dtype or self.dtype, **kwargs)

    def new_empty(self, *shape, size=None, dtype=None, **kwargs):
        from . import empty
        return empty(*(shape or (size,)), dtype=dtype or self.dtype, **kwargs)

    def outer(self, vec2):
        from . import outer
        return outer(self, vec2)

    def new_tensor(self, data, dtype=None, **kwargs):
        from . import tensor
        return tensor(data, dtype=dtype or self.dtype, **kwargs)

    # ---- ops for independent modules (h2) -------------------------------------
    # Implemented in torch.nn.functional's shared helpers (torch.logsumexp
    # and friends call the same ones).
    def logsumexp(self, dim, keepdim=False):
        from .nn import functional as F
        return F._logsumexp(self, dim, keepdim)

    def cumsum(self, dim, dtype=None):
        from .nn import functional as F
        return F._cumsum(self, dim, dtype)

    def sort(self, dim=-1, descending=False, stable=False):
        from .nn import functional as F
        return F._sort(self, dim, descending, stable)

    def repeat_interleave(self, repeats, dim=None, output_size=None):
        from .nn import functional as F
        return F._repeat_interleave(self, repeats, dim, output_size)


def _all_zero(a):
    return all((isinstance(v, _sp.Term) and v.is_const and float(v) == 0) or
               (not isinstance(v, _sp.Term) and v == 0) for v in a.ravel())


def _first_along(hit, axis):
    """0/1 marks kept only where no earlier mark precedes along `axis`."""
    hit = np.moveaxis(np.array(hit, dtype=object, copy=True), axis, 0)
    none_before = np.ones(hit.shape[1:], dtype=object)
    for i in range(hit.shape[0]):
        mark = hit[i]
        hit[i] = mark * none_before
        none_before = none_before * (1 - mark)
    return np.moveaxis(hit, 0, axis)


def _has_ties(keys, dim):
    """Whether two keys along `dim` are equal."""
    return _py_bool(np.any(np.diff(np.sort(keys, axis=dim), axis=dim) == 0))


def _ties_in_first(keys, dim, count, largest):
    """Whether two of the `count` largest (smallest) keys along `dim` are
    equal: where a decision over them is not made by the values alone."""
    ordered = np.sort(keys, axis=dim)
    if largest:
        ordered = np.flip(ordered, axis=dim)
    head = np.take(ordered, np.arange(min(count, keys.shape[dim])), axis=dim)
    return _py_bool(np.any(np.diff(head, axis=dim) == 0))


def _tie_at(ordered, dim, at):
    """Whether the keys at places at-1 and at of `ordered` (already in the
    order picked, largest or smallest first) are equal."""
    if at <= 0 or at >= ordered.shape[dim]:
        return False
    return _py_bool(np.any(np.take(ordered, at - 1, axis=dim) ==
                           np.take(ordered, at, axis=dim)))


class _ValuesIndices(tuple):
    """torch.return_types.max/min: (values, indices)."""

    def __new__(cls, values, indices):
        return super().__new__(cls, (values, indices))

    values = property(lambda self: self[0])
    indices = property(lambda self: self[1])


class _Decided(Tensor):
    """Indices decided at the path's witness whose decision is recorded when
    their values are first read: every read of a tensor's values goes
    through `_a`, so an unread decision cannot have mattered (its shape
    holds for every input and is read freely)."""

    @staticmethod
    def defer(tensor, commit, choice=None):
        tensor.__class__ = _Decided
        tensor.__dict__["_commit"] = commit
        tensor.__dict__["_choice"] = choice

    @property
    def _a(self):
        commit = self.__dict__.pop("_commit", None)
        if commit is not None:
            commit()
        return self.__dict__["_a"]

    @_a.setter
    def _a(self, value):
        self.__dict__["_a"] = value

    shape = property(lambda self: Size(self.__dict__["_a"].shape))
    ndim = property(lambda self: self.__dict__["_a"].ndim)

    def dim(self):
        return self.ndim

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[_dim(dim, self.ndim)]

    def numel(self):
        return int(self.__dict__["_a"].size)

    @staticmethod
    @contextlib.contextmanager
    def reading_picked(index, src, dim):
        """Reads of a topk's undecided indices, and of its values (or of one
        constant) scattered to them along the topk's own dim, which see which
        keys were picked and not their order: the choice records only the
        picked keys. (Along another dim a value's place moves with the order.)"""
        choice = index.__dict__.get("_choice") if isinstance(index, _Decided) else None
        if choice is not None and choice.dim != dim:
            choice = None
        readers = [index]
        if isinstance(src, _Decided) and src.__dict__.get("_choice") is choice:
            readers.append(src)
        elif isinstance(src, Tensor) and not _uniform(src):
            choice = None
        if choice is None or "_commit" not in index.__dict__:
            yield
            return
        choice.record_picked()
        commits = [(t, t.__dict__.pop("_commit", None)) for t in readers]
        try:
            yield
        finally:
            for t, commit in commits:
                if commit is not None:
                    t.__dict__["_commit"] = commit


def _uniform(tensor):
    """Whether every element of a concrete tensor is the same number."""
    a = np.asarray(tensor._a).ravel()
    return a.dtype != object and (a.size == 0 or _py_bool(np.all(a == a[0])))


class _SymbolicIndices:
    """Which element is largest depends on the values: one answer per input,
    not a proof for all of them. Any use stops tracing there."""

    def __init__(self, what):
        self.what = what

    def __getattr__(self, attr):
        raise Unsupported(self.what)

    def _stop(self, *a, **k):
        raise Unsupported(self.what)

    __index__ = __int__ = __bool__ = __iter__ = __len__ = __getitem__ = _stop
    __add__ = __radd__ = __sub__ = __mul__ = __eq__ = __lt__ = __gt__ = _stop
    __hash__ = object.__hash__


class _RemovableHook:
    def __init__(self, hooks, hook):
        self.hooks, self.hook = hooks, hook

    def remove(self):
        if self.hook in self.hooks:
            self.hooks.remove(self.hook)


def _equal(a, b):
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    if a.dtype != object and b.dtype != object:
        return np.equal(a, b)
    out = np.empty(a.shape, dtype=object)
    for i, (x, y) in enumerate(zip(a.ravel(), b.ravel())):
        if isinstance(x, _sp.Term) or isinstance(y, _sp.Term):
            raise Unsupported("comparing symbolic values for equality")
        out.ravel()[i] = x == y
    return out


def _as_bool(a):
    return np.asarray(a, dtype=np.bool_)


def _exact_quotient(x, y):
    """x / y over the reals. Two finite floats divide exactly (a rational
    term), as a symbolic value does once it links to the same numbers: a loss
    divided by an all-reduced token count is 1/3 on the ranks, and must not
    be 1/3 rounded to a double in the reference. Anything else divides as
    before (Term.__truediv__ keeps x / 3 exact; x / 0 is IEEE's)."""
    if (isinstance(x, float) and isinstance(y, (float, int)) and not isinstance(y, bool)
            and y != 0 and math.isfinite(x) and math.isfinite(y)):
        return _sp.exact(x) / y
    return x / y


_EXACT_QUOTIENT = np.frompyfunc(_exact_quotient, 2, 1)


def _true_divide(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != object and b.dtype != object:
        return np.true_divide(a, b)  # integers (and what record() widens after)
    # Python numbers, not numpy scalars: a numpy float divided by a term would
    # ask the term for a float first.
    return _EXACT_QUOTIENT(a.astype(object), b.astype(object))


def _object_max(a, axis=None, keepdims=False):
    return _fold(a, axis, keepdims, maximum_scalar)


def _object_min(a, axis=None, keepdims=False):
    return _fold(a, axis, keepdims, minimum_scalar)


def _fold(a, axis, keepdims, fn):
    if a.dtype != object:
        return (np.max if fn is maximum_scalar else np.min)(a, axis=axis,
                                                            keepdims=keepdims)
    ufunc = np.frompyfunc(fn, 2, 1)
    if axis is None:
        out = ufunc.reduce(a.ravel(), axis=0)
        return np.asarray(out, dtype=object).reshape((1,) * a.ndim if keepdims else ())
    return ufunc.reduce(a, axis=axis, keepdims=keepdims)


def maximum_scalar(x, y):
    if isinstance(x, _sp.Term) or isinstance(y, _sp.Term):
        return _sp.maximum(x, y)
    if x != x or y != y:  # NaN propagates (torch.maximum, max, clamp)
        return x if x != x else y
    return x if x >= y else y


def minimum_scalar(x, y):
    if isinstance(x, _sp.Term) or isinstance(y, _sp.Term):
        return _sp.minimum(x, y)
    if x != x or y != y:
        return x if x != x else y
    return x if x <= y else y


def _share_of_first(x, y):
    """How much of the gradient of max(x, y) goes to x: 1, 0, or half on a
    tie; none when either is NaN (PyTorch: where(x == y, 0.5, x > y))."""
    return _sp.where(y < x, 1, _sp.where(x < y, 0, _sp.where(x <= y, 0.5, 0)))


def _vjp_maximum(g, A, B):
    w = np.asarray(np.frompyfunc(_share_of_first, 2, 1)(A, B), dtype=object)
    return g * w, g * (1 - w)


def _vjp_minimum(g, A, B):
    w = np.asarray(np.frompyfunc(_share_of_first, 2, 1)(B, A), dtype=object)
    return g * w, g * (1 - w)


def maximum(input, other):
    f = np.frompyfunc(maximum_scalar, 2, 1)
    return binary("maximum", input, other, lambda x, y: np.asarray(f(x, y), dtype=object),
                  vjp=_vjp_maximum)


def minimum(input, other):
    f = np.frompyfunc(minimum_scalar, 2, 1)
    return binary("minimum", input, other, lambda x, y: np.asarray(f(x, y), dtype=object),
                  vjp=_vjp_minimum)


def _indicator(cond):
    """1 where a comparison holds, 0 elsewhere (a term where it is symbolic)."""
    return np.asarray(_where_array(np.asarray(cond, dtype=object), 1, 0), dtype=object)


def clamp(x, min=None, max=None, op="clamp"):
    """PyTorch's clamp: min(max(x, min), max), so max wins where min > max,
    and NaN propagates. Its gradient is PyTorch's clamp_backward: x's where
    min <= x <= max (both ends included; a tie with a bound passes the whole
    gradient, not half of it as torch.maximum's does); a tensor min's where
    x < min < max, a tensor max's where x > max or max < min."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    inputs = (x,) + tuple(b for b in (min, max) if b is not None)
    dtype = _result_dtype(*inputs)
    X = np.asarray(_raw(x), dtype=object)
    L = None if min is None else _raw(min)
    H = None if max is None else _raw(max)
    out = X
    if L is not None:
        out = np.asarray(np.frompyfunc(maximum_scalar, 2, 1)(out, L), dtype=object)
    if H is not None:
        out = np.asarray(np.frompyfunc(minimum_scalar, 2, 1)(out, H), dtype=object)
    X, L, H = _saved(X), _saved(L), _saved(H)

    def vjp(grads):
        with np.errstate(invalid="ignore"):  # NaN compares false, as in ATen
            return _clamp_grads(grads)

    def _clamp_grads(grads):
        g = np.asarray(grads[0], dtype=object)
        keep = 1
        if L is not None:
            keep = keep * _indicator(_GREATER_EQUAL(X, L))
        if H is not None:
            keep = keep * _indicator(_LESS_EQUAL(X, H))
        result = [_unbroadcast(g * keep, np.shape(X))]
        if L is not None:
            below = _indicator(_LESS(X, L))
            if H is not None:
                below = below * _indicator(_LESS(L, H))
            result.append(_unbroadcast(g * below, np.shape(L))
                          if isinstance(min, Tensor) else None)
        if H is not None:
            above = _indicator(_GREATER(X, H))
            if L is not None:
                inverted = _indicator(_LESS(H, L))
                above = above + inverted - above * inverted
            result.append(_unbroadcast(g * above, np.shape(H))
                          if isinstance(max, Tensor) else None)
        return result

    return record(out, dtype, op, "elementwise", inputs, vjp,
                  saved=tuple(t for t in inputs if isinstance(t, Tensor)))


def _scalar_argument(op, name, value):
    """A Scalar argument (addcmul's value=): a Python number, or a 0-dim
    tensor that needs no gradient, taken as its number, as PyTorch's
    argument parser takes it."""
    if isinstance(value, Tensor):
        if value.ndim != 0 or value.requires_grad:
            raise TypeError(f"{op}(): argument '{name}' must be Number, not Tensor")
        return value.item()
    return value


def _scaled(t, value):
    """value * t, leaving t itself for the literal 1."""
    return t if type(value) in (builtins.int, float) and value == 1 else t * value


def _pointwise(op, input, tensor1, tensor2, value, combine):
    """input + value * combine(tensor1, tensor2), broadcast together, as one
    op (its gradients are those of its parts: PyTorch's formulas)."""
    value = _scalar_argument(op, "value", value)
    tensors = (input, tensor1, tensor2)
    if not any(t.dtype.is_floating_point for t in tensors) and \
            not isinstance(value, (builtins.bool, builtins.int)):
        _tracing.unmodelled(f"{op} of integer tensors with value={value!r} (PyTorch casts "
                            "the value to their type)")
    return relabel(input + _scaled(combine(tensor1, tensor2), value), op, "elementwise",
                   tensors)


def addcmul(input, tensor1, tensor2, value=1):
    return _pointwise("addcmul", input, tensor1, tensor2, value, lambda a, b: a * b)


def addcdiv(input, tensor1, tensor2, value=1):
    if not (tensor1.dtype.is_floating_point or tensor2.dtype.is_floating_point):
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a "
                           "future release addcdiv will perform a true division of tensor1 "
                           "and tensor2.")
    return _pointwise("addcdiv", input, tensor1, tensor2, value, lambda a, b: a / b)


def lerp(input, end, weight):
    """input + weight * (end - input), weight a number or a tensor (all
    broadcast together); PyTorch's gradients: (1 - weight) to input, weight
    to end, end - input to a tensor weight. end and a tensor weight must
    have input's dtype, as PyTorch requires."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"\"lerp_kernel_scalar\" not implemented for "
                           f"'{input.dtype.name.capitalize()}'")
    for name, t in (("end", end), ("weight", weight)):
        if isinstance(t, Tensor) and t.dtype is not input.dtype:
            raise RuntimeError(f"expected dtype {input.dtype.name} for `{name}` but got "
                               f"dtype {t.dtype.name}")
    inputs = (input, end) + ((weight,) if isinstance(weight, Tensor) else ())
    return relabel(input + (end - input) * weight, "lerp", "elementwise", inputs)


def _shape_args(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = shape[0]
    return tuple(builtins.int(s) for s in shape)


def matmul(input, other):
    a, b = input, other
    x, y = _raw(a), _raw(b)
    if x.dtype == object or y.dtype == object:
        x, y = np.asarray(x, dtype=object), np.asarray(y, dtype=object)
    out = np.matmul(x, y)
    X, Y = _saved(x), _saved(y)

    def vjp(grads):
        g = np.asarray(grads[0], dtype=object)
        Xm = X if X.ndim > 1 else X[None, :]
        Ym = Y if Y.ndim > 1 else Y[:, None]
        if X.ndim == 1:
            g = np.expand_dims(g, -2)
        if Y.ndim == 1:
            g = np.expand_dims(g, -1)
        gx = np.matmul(g, np.swapaxes(Ym, -1, -2).astype(object))
        gy = np.matmul(np.swapaxes(Xm, -1, -2).astype(object), g)
        if X.ndim == 1:
            gx = gx[..., 0, :]
        if Y.ndim == 1:
            gy = gy[..., :, 0]
        return [_unbroadcast(gx, X.shape), _unbroadcast(gy, Y.shape)]

    result = record(out, _result_dtype(a, b), "matmul", "matmul", (a, b), vjp,
                    saved=_saves(a, b))
    result._row_major_result = True  # PyTorch allocates it so, whatever its inputs' layout
    return result


def _narrow_start(size, start, length):
    """narrow's start, checked as PyTorch checks it (a negative one counts
    from the end): numpy's slicing would silently clamp a range past the
    end, where PyTorch refuses it."""
    start, length = builtins.int(start), builtins.int(length)
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, "
                         f"{size}], but got {start})")
    start = start + size if start < 0 else start
    if length < 0 or start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension "
                           f"size ({size}).")
    return start


def split(tensor, split_size_or_sections, dim=0):  # torch.split's parameter names
    t, split_size = tensor, split_size_or_sections
    d = _dim(dim, t.ndim)
    n = t._a.shape[d]
    sizes = ([split_size] * (n // split_size) + ([n % split_size] if n % split_size else [])
             if isinstance(split_size, builtins.int) else list(split_size))
    if not isinstance(split_size, builtins.int) and sum(sizes) != n:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                           f"(input tensor's size at dimension {d}), but got "
                           f"split_sizes={sizes}")
    out, start = [], 0
    for s in sizes:
        out.append(t.narrow(d, start, s))
        start += s
    return tuple(out)


def chunk(input, chunks, dim=0):
    n = input._a.shape[_dim(dim, input.ndim)]
    return split(input, -(-n // chunks), dim)


class UntypedStorage:
    """`Tensor.untyped_storage()`: its size in bytes and the device are
    modelled; reading or building tensors from the bytes is not."""

    def __init__(self, tensor):
        base = tensor.__dict__.get("_base")
        self._root = tensor if base is None else base
        self.device = tensor.device

    def size(self):
        return self._root.numel() * self._root.dtype.itemsize

    nbytes = size

    def element_size(self):
        return 1

    def __len__(self):
        return self.size()

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        _tracing.unmodelled(f"UntypedStorage.{name}")
