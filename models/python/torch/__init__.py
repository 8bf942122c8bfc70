"""shardproof's stand-in for torch: the user's real code runs on it, every
tensor is symbolic or exact, and every op is recorded in the tensor IR."""
import builtins
import contextlib
import math

import numpy as np

import _shardproof as _sp

from ._dtypes import (  # noqa: F401
    dtype, float64, float32, float16, bfloat16, int64, int32, int16, int8,
    uint8, uint16, uint32, uint64, bool, double, float, half, long, int, short,
    float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu,
    complex32, complex64, complex128, chalf, cfloat, cdouble,
)
from . import _dtypes
from ._tensor import (  # noqa: F401
    Tensor, Size, device, matmul, split, chunk, maximum, minimum, record, fresh,
    apply_fn, _raw, _result_dtype, _where_array, _movement, _unbroadcast,
)
from ._autograd import GradMode as _GradMode
from ._tracing import Unsupported  # noqa: F401

__version__ = "2.4.0+shardproof"
FloatTensor = HalfTensor = BFloat16Tensor = LongTensor = Tensor
DoubleTensor = IntTensor = ShortTensor = CharTensor = ByteTensor = BoolTensor = Tensor


class memory_format:
    """A memory format: a layout hint only, stand-in tensors have values, not
    memory."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


contiguous_format, preserve_format, channels_last, channels_last_3d = (
    memory_format(n) for n in ("contiguous_format", "preserve_format",
                               "channels_last", "channels_last_3d"))


class layout:
    """A tensor memory layout; every stand-in tensor is strided."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


strided, sparse_coo, sparse_csr, _mkldnn = (
    layout(n) for n in ("strided", "sparse_coo", "sparse_csr", "_mkldnn"))


def _shape(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = shape[0]
    return tuple(builtins.int(s) for s in shape)


def _concrete(array, dtype, op):
    return record(np.asarray(array, dtype=dtype.numpy), dtype, op, "leaf")


# ---- creation -------------------------------------------------------------
def tensor(data, dtype=None, device=None, requires_grad=False, **kwargs):
    if isinstance(data, Tensor):
        return data.clone()
    array = np.asarray(data)
    if dtype is None:
        dtype = (_dtypes.bool if array.dtype == np.bool_ else
                 _dtypes.int64 if np.issubdtype(array.dtype, np.integer) else
                 _dtypes.default_float())
    t = _concrete(array, dtype, "tensor")
    t.requires_grad = requires_grad
    return t


as_tensor = tensor


def zeros(*shape, dtype=None, **kwargs):
    dtype = dtype or _dtypes.default_float()
    return _concrete(np.zeros(_shape(shape)), dtype, "zeros")


def ones(*shape, dtype=None, **kwargs):
    dtype = dtype or _dtypes.default_float()
    return _concrete(np.ones(_shape(shape)), dtype, "ones")


def full(shape, fill_value, dtype=None, **kwargs):
    dtype = dtype or _result_dtype(fill_value)
    return _concrete(np.full(_shape((shape,)), fill_value), dtype, "full")


def arange(start, end=None, step=1, dtype=None, **kwargs):
    if end is None:
        start, end = 0, start
    array = np.arange(start, end, step)
    if dtype is None:
        dtype = _dtypes.int64 if np.issubdtype(array.dtype, np.integer) \
            else _dtypes.default_float()
    return _concrete(array, dtype, "arange")


def eye(n, m=None, dtype=None, **kwargs):
    return _concrete(np.eye(n, m), dtype or _dtypes.default_float(), "eye")


def empty(*shape, dtype=None, **kwargs):
    return fresh(_shape(shape), dtype or _dtypes.default_float(), "empty")


def randn(*shape, dtype=None, generator=None, **kwargs):
    return fresh(_shape(shape), dtype or _dtypes.default_float(), "randn")


rand = randn


def randint(low, high=None, size=None, dtype=None, **kwargs):
    if high is None:
        low, high = 0, low
    rng = np.random.default_rng(12345)
    return _concrete(rng.integers(low, high, size=_shape((size,))),
                     dtype or _dtypes.int64, "randint")


def _like(fn):
    def like(t, dtype=None, **kwargs):
        return fn(*t.shape, dtype=dtype or t.dtype)
    return like


zeros_like, ones_like, empty_like, randn_like = map(_like, (zeros, ones, empty, randn))


def full_like(t, value, dtype=None, **kwargs):
    return full(t.shape, value, dtype=dtype or t.dtype)


# ---- functions ---------------------------------------------------------------
def _unary(name):
    def fn(x, *args, out=None, **kwargs):
        result = getattr(x, name)(*args, **kwargs)
        return result if out is None else _write_out(out, result)
    fn.__name__ = name
    return fn


def _write_out(out, result):
    """`torch.f(..., out=t)`: the result is written into t (which may be an
    input: an in-place op), t is returned."""
    if tuple(out.shape) != tuple(result.shape):
        raise Unsupported("out= with a tensor of another shape (a resize)")
    return out.copy_(result)


for _name in ("exp", "log", "tanh", "sigmoid", "sqrt", "rsqrt", "sin", "cos",
              "abs", "neg", "sum", "mean", "var", "amax", "amin", "norm", "square",
              "reciprocal", "clamp", "clip", "flatten", "transpose", "permute",
              "reshape", "squeeze", "unsqueeze", "t", "narrow", "softmax",
              "log_softmax", "unbind", "select", "clone", "detach", "all", "any",
              "triu", "tril", "topk", "gather", "scatter", "argsort", "index_select",
              "scatter_add", "index_add", "masked_select"):
    globals()[_name] = _unary(_name)


def add(a, b, alpha=1):
    return a + (b * alpha if alpha != 1 else b)


def sub(a, b, alpha=1):
    return a - (b * alpha if alpha != 1 else b)


def mul(a, b):
    return a * b if isinstance(a, Tensor) else b * a


def div(a, b):
    return a / b


def pow(a, e):
    return a ** e


def max(x, dim=None, keepdim=False):
    return x.max(dim, keepdim)


def min(x, dim=None, keepdim=False):
    return x.min(dim, keepdim)


def bmm(a, b):
    return matmul(a, b)


mm = bmm


def outer(a, b):
    """a[i] * b[j] (rotary embeddings' frequency table)."""
    return a.reshape(-1, 1) * b.reshape(1, -1)


ger = outer


def baddbmm(inp, a, b, beta=1.0, alpha=1.0):
    out = matmul(a, b) * alpha
    return out if beta == 0 else out + inp * beta


def einsum(eq, *ops):
    """Built from differentiable ops: every operand laid out over all the
    equation's letters, multiplied, and summed over the letters not kept."""
    if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
        ops = ops[0]
    eq = eq.replace(" ", "")
    if "..." in eq:
        raise Unsupported("einsum with ellipsis")
    lhs, _, out = eq.partition("->")
    terms = lhs.split(",")
    if not _:
        out = "".join(sorted(c for c in set(lhs) - {","} if lhs.count(c) == 1))
    letters = list(dict.fromkeys(lhs.replace(",", "") + out))
    product = None
    for spec, t in zip(terms, ops):
        if len(set(spec)) != len(spec):
            raise Unsupported("einsum with a repeated index in one operand")
        order = sorted(range(len(spec)), key=lambda i: letters.index(spec[i]))
        t = t.permute(*order) if order != list(range(len(spec))) else t
        shape = [t.shape[sorted(spec, key=letters.index).index(c)] if c in spec else 1
                 for c in letters]
        t = t.reshape(*shape)
        product = t if product is None else product * t
    summed = [i for i, c in enumerate(letters) if c not in out]
    if summed:
        product = product.sum(dim=tuple(summed))
    kept = [c for c in letters if c in out]
    return product.permute(*[kept.index(c) for c in out]) if len(out) > 1 else product


def where(cond, a=None, b=None):
    if a is None:
        raise Unsupported("torch.where with one argument (data-dependent shape)")
    shape = np.broadcast(_raw(cond), _raw(a), _raw(b)).shape
    c = np.broadcast_to(_raw(cond), shape)
    A, B = _raw(a), _raw(b)

    def vjp(grads):
        g = np.asarray(grads[0], dtype=object)
        return [None,
                _unbroadcast(_where_array(c, g, 0), np.shape(A)),
                _unbroadcast(_where_array(c, 0, g), np.shape(B))]

    return record(_where_array(c, A, B), _result_dtype(a, b), "where",
                  "elementwise", (cond, a, b), vjp)


def _joined(op, tensors, fn):
    return _movement(op, "index", lambda *arrays: fn(list(arrays)), tuple(tensors))


def cat(tensors, dim=0):
    tensors = [t for t in tensors if t.numel() > 0 or t.ndim > 1]
    d = dim + tensors[0].ndim if dim < 0 else dim
    return _joined("cat", tensors, lambda arrays: np.concatenate(arrays, axis=d))


concat = concatenate = cat


def stack(tensors, dim=0):
    tensors = list(tensors)
    d = dim + tensors[0].ndim + 1 if dim < 0 else dim
    return _joined("stack", tensors, lambda arrays: np.stack(arrays, axis=d))


def tensor_split(t, sections, dim=0):
    n = t.shape[dim]
    if isinstance(sections, builtins.int):
        q, r = divmod(n, sections)
        sizes = [q + 1] * r + [q] * (sections - r)
    else:
        bounds = [0] + list(sections) + [n]
        sizes = [b - a for a, b in zip(bounds, bounds[1:])]
    return split(t, sizes, dim)


def numel(t):
    return t.numel()


def is_tensor(x):
    return isinstance(x, Tensor)


def is_floating_point(x):
    return x.dtype.is_floating_point


def manual_seed(seed):
    return None


def seed():
    return 0


def initial_seed():
    return 0


def get_rng_state():
    """The CPU RNG state: bookkeeping only, random tensors are symbolic
    whatever it is (see torch.cuda.random)."""
    return cuda.random.get_rng_state()


def set_rng_state(state):
    return None


_deterministic = [False]


def use_deterministic_algorithms(mode, warn_only=False):
    _deterministic[0] = builtins.bool(mode)


def are_deterministic_algorithms_enabled():
    return _deterministic[0]


def is_deterministic_algorithms_warn_only_enabled():
    return False


def get_default_dtype():
    return _dtypes.default_float()


def set_default_dtype(d):
    _dtypes._default[0] = d


def is_grad_enabled():
    return _GradMode.enabled


@contextlib.contextmanager
def _grad_mode(flag):
    old = _GradMode.enabled
    _GradMode.enabled = flag
    try:
        yield
    finally:
        _GradMode.enabled = old


class _GradContext(contextlib.ContextDecorator):
    def __init__(self, flag=False):
        self.flag = flag

    def __enter__(self):
        self._cm = _grad_mode(_GradMode.enabled if self.flag is None else self.flag)
        self._cm.__enter__()

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)


class _GradModeDecorator(_GradContext):
    """Used as `with no_grad()`, `@no_grad()` or, as in PyTorch, `@no_grad`."""

    _enabled = False

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)

    def __init__(self, orig_func=None):
        super().__init__(self._enabled)


class no_grad(_GradModeDecorator):
    _enabled = False


class enable_grad(_GradModeDecorator):
    _enabled = True


def set_grad_enabled(flag):
    return _GradContext(flag)


class inference_mode(_GradContext):
    """inference_mode(True) disables grad like no_grad; inference_mode(False)
    leaves the grad mode as it is."""

    def __new__(cls, mode=True):
        if callable(mode):
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode=True):
        super().__init__(None if mode is False else False)


def is_inference_mode_enabled():
    return False


def is_autocast_enabled(*a):
    return False


def compile(fn=None, **kwargs):  # noqa: A001
    return fn if fn is not None else (lambda f: f)


class Generator:
    """A seed holder: random tensors are fresh symbolic values whatever the
    generator's state, so the state is bookkeeping only."""

    def __init__(self, device=None):
        self.device = device
        self._seed = 0

    def manual_seed(self, seed):
        self._seed = builtins.int(seed)
        return self

    def seed(self):
        return self._seed

    def initial_seed(self):
        return self._seed

    def get_state(self):
        return cuda.random.get_rng_state()

    def set_state(self, state):
        return self

    def graphsafe_get_state(self):
        return self

    def graphsafe_set_state(self, state):
        return self

    def clone_state(self):
        return self


from . import cuda, jit, autograd, nn, distributed, version, storage, serialization, _C  # noqa: E402,F401,E501
from . import compiler, library, optim  # noqa: E402,F401
from .library import ops  # noqa: E402,F401
from .autograd import Function  # noqa: E402,F401


# ---- ops (h2) ---------------------------------------------------------------
def logsumexp(input, dim, keepdim=False, *, out=None):
    result = input.logsumexp(dim, keepdim)
    return result if out is None else _write_out(out, result)


def cumsum(input, dim, *, dtype=None, out=None):
    result = input.cumsum(dim, dtype=dtype)
    return result if out is None else _write_out(out, result)


def sort(input, dim=-1, descending=False, stable=False, *, out=None):
    if out is not None:
        _tracing.unmodelled("torch.sort(out=...)")
    return input.sort(dim, descending, stable)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """torch.repeat_interleave(input, repeats, dim) or, with one argument,
    the indices 0..n-1 each repeated repeats[i] times."""
    if repeats is None:
        from ._tensor import _concrete_index
        counts = _concrete_index(input, "repeat_interleave")
        if counts.ndim != 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        if output_size is not None and output_size != int(counts.sum()):
            raise RuntimeError("allocated size does not match required size")
        return _concrete(np.repeat(np.arange(len(counts)), counts), _dtypes.int64,
                         "repeat_interleave")
    return input.repeat_interleave(repeats, dim, output_size=output_size)
