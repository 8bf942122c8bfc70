"""torch.nn.functional over the stand-in tensor."""
import builtins
import math

import numpy as np

import _shardproof as _sp

from .. import _autograd, _dtypes, _tracing
from .._tensor import Tensor, apply_fn, matmul, record, relabel, _index, _movement


def linear(input, weight, bias=None):
    out = relabel(matmul(input, weight.t()), "linear", "matmul", (input, weight))
    return out if bias is None else out + bias


def gelu(input, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh, not {approximate!r}")
    return apply_fn("gelu_tanh" if approximate == "tanh" else "gelu", input, "gelu")


def _result_of(x, out, inplace):
    """An activation's result, written into x when inplace (every view of x
    sees it, and x takes over its autograd history), as PyTorch's relu_."""
    return x.copy_(out) if inplace else out


def relu(input, inplace=False):
    return _result_of(input, apply_fn("relu", input), inplace)


def silu(input, inplace=False):
    return _result_of(input, apply_fn("silu", input), inplace)


def tanh(input):
    return input.tanh()


def sigmoid(input):
    return input.sigmoid()


def logsigmoid(input):
    """log(sigmoid(x)); its gradient, through both, is PyTorch's
    1 - sigmoid(x)."""
    return relabel(apply_fn("log", apply_fn("sigmoid", input)), "logsigmoid", "activation",
                   (input,))


def _softmax_parts(x, dim):
    """x - max(x), exp of it and its sum, as PyTorch's kernels compute them
    (h6). The shift cancels over the reals, but it is what makes a row of
    only -inf NaN (max is -inf, and -inf - -inf is NaN), and its exp is
    bounded (checkers/exp_overflow.cpp). The max takes no gradient: the
    softmax's own does not depend on it."""
    shifted = x - x.detach().amax(dim, keepdim=True)
    e = apply_fn("exp", shifted, "exp", "softmax")
    return shifted, e, e.sum(dim, keepdim=True)


def _softmax_input(x, dim, dtype):
    """PyTorch's implicit dim (0 for 0-, 1- and 3-d inputs, else 1) and the
    dtype the input is cast to first."""
    if dim is None:
        dim = 0 if x.ndim in (0, 1, 3) else 1
    return (x if dtype is None else x.to(dtype)), dim


@_tracing.no_effect(_stacklevel="only where the implicit-dim warning points")
def softmax(input, dim=None, _stacklevel=3, dtype=None):
    x, dim = _softmax_input(input, dim, dtype)
    _, e, total = _softmax_parts(x, dim)
    return relabel(e / total, "softmax", "softmax", (x,))


@_tracing.no_effect(_stacklevel="only where the implicit-dim warning points")
def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    x, dim = _softmax_input(input, dim, dtype)
    shifted, _, total = _softmax_parts(x, dim)
    return relabel(shifted - total.log(), "log_softmax", "softmax", (x,))


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of weight by concrete ids; the padding row gets no gradient."""
    ids = input
    if max_norm is not None:
        _tracing.unmodelled(f"embedding(max_norm={max_norm}, norm_type={norm_type}) "
                            "(renormalises the weight in place)")
    _tracing.only("embedding", "scale_grad_by_freq", scale_grad_by_freq, False)
    _tracing.only("embedding", "sparse", sparse, False)  # a sparse .grad
    key = _index(ids)
    rows = _movement("embedding", "index", lambda i, w: w[key], (ids, weight),
                     differentiable=(weight,), indices=(ids,))
    if padding_idx is None:
        return rows
    n = weight.shape[0]
    if not -n <= padding_idx < n:
        raise AssertionError("Padding_idx must be within num_embeddings")
    padded = np.asarray(key) == padding_idx % n
    if not padded.any():
        return rows
    from .. import where
    mask = Tensor(np.broadcast_to(padded[..., None], rows.shape).copy(), _dtypes.bool)
    return relabel(where(mask, rows.detach(), rows), "embedding", "index", (ids, weight))


# ---- dropout (h5: the masks are keyed random draws, torch/random.py) ----
def _dropped(op, input, p, training, inplace, noise_shape):
    """input * mask / (1 - p), the mask a keyed Bernoulli(1 - p) draw of
    `noise_shape` (broadcast over the rest); p = 0 or eval mode is input
    itself and p = 1 zeros, neither drawing anything (as ATen)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        return input.mul_(0.0) if inplace else input * 0.0
    from .. import random as _random
    keep, scale = 1.0 - p, 1.0 / (1.0 - p)
    noise = _random.values(op, noise_shape, input.dtype,
                           lambda u: _random.bernoulli_value(u, keep) * scale)
    return input.mul_(noise) if inplace else input * noise


def dropout(input, p=0.5, training=True, inplace=False):
    return _dropped("dropout", input, p, training, inplace, input.shape)


def _feature_dropout(name, spatial):
    """Whole channels dropped: one draw per (batch, channel); an input
    without a batch dimension is one batch."""
    def drop(input, p=0.5, training=True, inplace=False):
        if input.ndim not in (spatial + 1, spatial + 2):
            raise RuntimeError(f"{name}: Expected {spatial + 1}D or {spatial + 2}D "
                               f"input, but received a {input.ndim}D input")
        batched = input.ndim == spatial + 2
        shape = tuple(input.shape[:2]) if batched else (1, input.shape[0])
        noise_shape = (shape if batched else shape[1:]) + (1,) * spatial
        return _dropped("feature_dropout", input, p, training, inplace, noise_shape)
    drop.__name__ = name
    return drop


dropout1d, dropout2d, dropout3d = (_feature_dropout(f"dropout{k}d", k) for k in (1, 2, 3))


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    if not training or p == 0:
        return input
    _tracing.unmodelled(f"alpha_dropout in training (inplace={inplace})")


feature_alpha_dropout = alpha_dropout


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    x = input
    if isinstance(normalized_shape, int):
        raise TypeError("layer_norm(): argument 'normalized_shape' (position 2) must be "
                        "tuple of ints, not int")
    if tuple(x.shape[x.ndim - len(normalized_shape):]) != tuple(normalized_shape):
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input "
                           f"with shape [*, {', '.join(map(str, normalized_shape))}], but got "
                           f"input of size{list(x.shape)}")
    dims = tuple(range(-len(normalized_shape), 0))

    def compute(x, weight, bias):
        mean = x.mean(dims, keepdim=True)
        centered = x - mean
        var = (centered * centered).mean(dims, keepdim=True)
        out = centered * (var + eps).rsqrt()
        if weight is not None:
            out = out * weight
        if bias is not None:
            out = out + bias
        return out
    # One autograd node, as PyTorch's: its weight's gradient is ready with its
    # bias's, before it (the order the engine's hooks see).
    out = _autograd.one_node("layer_norm", compute, (x, weight, bias))
    return relabel(out, "layer_norm", "elementwise", (x,))


_PAD_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def pad(input, pad, mode="constant", value=None):
    """Constant padding of any trailing dims; reflect / replicate / circular
    of the last 1-3 dims of a batched or unbatched input, as PyTorch."""
    x = input
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise RuntimeError("Padding length must be divisible by 2 and at most twice the "
                           "number of dimensions of the input")
    pad = [builtins.int(p) for p in pad]
    if any(p < 0 for p in pad):
        _tracing.unmodelled(f"pad with negative widths {pad} (cropping)")
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        widths[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    if mode == "constant":
        fill = 0 if value is None else value
        return _movement("pad", "view",
                         lambda a, c: np.pad(a, widths, constant_values=c), (x, fill),
                         differentiable=(x,))
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    k = len(pad) // 2
    if not k + 1 <= x.ndim <= k + 2:
        _tracing.unmodelled(f"pad(mode={mode!r}) of {len(pad)} widths on a {x.ndim}-d input")
    for d in range(k):
        size, (lo, hi) = x.shape[x.ndim - 1 - d], widths[x.ndim - 1 - d]
        if (mode == "reflect" and max(lo, hi) >= size) or \
                (mode == "circular" and max(lo, hi) > size):
            raise RuntimeError(f"Padding size should be less than the corresponding input "
                               f"dimension, but got: padding ({lo}, {hi}) at dimension "
                               f"{x.ndim - 1 - d} of input {list(x.shape)}")
    np_mode = _PAD_MODES[mode]
    return _movement("pad", "view", lambda a: np.pad(a, widths, mode=np_mode), (x,))


__all__ = ["linear", "gelu", "relu", "silu", "tanh", "sigmoid", "logsigmoid", "softmax",
           "log_softmax", "embedding", "dropout", "dropout1d", "dropout2d",
           "dropout3d", "layer_norm", "pad", "Tensor"]


# ---- losses ------------------------------------------------------------------
_REDUCTIONS = ("none", "mean", "sum")


def _legacy_reduction(size_average, reduce):
    """PyTorch's _Reduction.legacy_get_string: the deprecated flags."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return "mean" if size_average and reduce else ("sum" if reduce else "none")


def _reduction(size_average, reduce, reduction):
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduced(losses, reduction):
    return losses if reduction == "none" else (
        losses.mean() if reduction == "mean" else losses.sum())


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    diff = input - target
    return relabel(_reduced(diff * diff, reduction), "mse_loss", "reduction", (input, target))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    from .. import maximum
    reduction = _reduction(size_average, reduce, reduction)
    diff = input - target
    # |d| as max(d, -d): its gradient at d = 0 is 0, as PyTorch's sign(0).
    return relabel(_reduced(maximum(diff, -diff), reduction), "l1_loss", "reduction",
                   (input, target))


def _class_index_loss(log_p, target, weight, ignore_index, reduction, label_smoothing, op):
    """nll_loss of log-probabilities (N, C, d...) or (C,) at concrete class
    indices, with PyTorch's weights, ignored targets, label smoothing
    (cross_entropy_loss_label_smoothing) and reductions."""
    from .._tensor import _concrete_index
    t = _concrete_index(target, op)
    unbatched = log_p.ndim == 1
    if unbatched:
        if t.ndim != 0:
            raise RuntimeError(f"{op}: an unbatched input of shape {list(log_p.shape)} "
                               f"needs a 0-d target, got {list(t.shape)}")
        log_p, t = log_p.unsqueeze(0), t.reshape(1)
    n_classes = log_p.shape[1]
    expected = (log_p.shape[0],) + tuple(log_p.shape[2:])
    if tuple(t.shape) != expected:
        raise ValueError(f"Expected target size {list(expected)}, got {list(t.shape)}")
    if weight is not None and tuple(weight.shape) != (n_classes,):
        raise RuntimeError(f"weight tensor should be defined either for all {n_classes} "
                           f"classes or no classes but got weight tensor of shape: "
                           f"{list(weight.shape)}")
    ignored = t == ignore_index
    wrong = ~ignored & ((t < 0) | (t >= n_classes))
    if wrong.any():
        raise IndexError(f"Target {int(t[wrong].ravel()[0])} is out of bounds.")
    safe = np.where(ignored, 0, t)
    keep = np.where(ignored, 0.0, 1.0)
    picked = log_p.gather(1, np.expand_dims(safe, 1)).squeeze(1)
    target_weight = keep if weight is None else weight[safe] * keep
    losses = -(picked * target_weight)
    if reduction == "mean":
        denominator = target_weight.sum()
        if not isinstance(denominator, Tensor) and denominator == 0:
            _tracing.unmodelled(f"{op}(reduction='mean') where every target is ignored "
                                "(PyTorch's 0/0 is nan)")
    out = losses if reduction == "none" else losses.sum()
    if reduction == "mean":
        out = out / denominator
    if label_smoothing > 0:
        if weight is None:
            smooth = -log_p.sum(1)
        else:
            smooth = -(log_p * weight.reshape((1, n_classes) + (1,) * (log_p.ndim - 2))).sum(1)
        smooth = smooth * keep
        if reduction != "none":
            smooth = smooth.sum()
        if reduction == "mean":
            smooth = smooth / denominator
        out = out * (1 - label_smoothing) + smooth * (label_smoothing / n_classes)
    return out.squeeze(0) if unbatched and reduction == "none" else out


def _check_smoothing(label_smoothing):
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    out = _class_index_loss(input, target, weight, ignore_index, reduction, 0.0, "nll_loss")
    return relabel(out, "nll_loss", "reduction", (input,))


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """log_softmax over the class dim (1, or 0 for an unbatched input), then
    nll_loss at class indices, or -sum(target * log_p) for class
    probabilities (ignore_index does not apply to those, as in PyTorch)."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_smoothing(label_smoothing)
    class_dim = 0 if input.ndim == 1 else 1
    log_p = log_softmax(input, class_dim)
    if not target.dtype.is_floating_point:
        out = _class_index_loss(log_p, target, weight, ignore_index, reduction,
                                label_smoothing, "cross_entropy")
        return relabel(out, "cross_entropy", "reduction", (input,))
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"cross_entropy: class-probability targets of shape "
                           f"{list(target.shape)} for an input of shape {list(input.shape)}")
    n_classes = input.shape[class_dim]
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    terms = log_p * target
    if weight is not None:
        terms = terms * weight.reshape((n_classes,) + (1,) * (input.ndim - 1 - class_dim))
    losses = -terms.sum(class_dim)
    out = losses if reduction == "none" else losses.sum()
    if reduction == "mean":
        out = out / (input.numel() // n_classes)
    return relabel(out, "cross_entropy", "reduction", (input, target))


def one_hot(tensor, num_classes=-1):
    from .._tensor import _concrete_index
    if tensor.dtype is not _dtypes.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    idx = _concrete_index(tensor, "one_hot")
    if idx.size and idx.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        if not idx.size:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(idx.max()) + 1
    elif idx.size and idx.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = (idx[..., None] == np.arange(num_classes)).astype(np.int64)
    return record(out, _dtypes.int64, "one_hot", "index", (tensor,))


# ---- attention ----------------------------------------------------------------
def _concrete_floats(t):
    """The values of a tensor as doubles, or None if any is symbolic."""
    a = t._a
    if a.dtype != object:
        return a.astype(np.float64)
    flat = a.ravel()
    if any(isinstance(v, _sp.Term) and not v.is_const for v in flat):
        return None
    return np.asarray([builtins.float(v) for v in flat], dtype=np.float64).reshape(a.shape)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None):
    """PyTorch's math reference: softmax(q k^T * scale + bias) v. A bool mask
    (True takes part), the causal mask and the -inf entries of a float mask
    leave their positions out of the softmax exactly as exp(-inf) = 0 does;
    a row with no position left is nan in PyTorch and not modelled here."""
    if dropout_p != 0.0:
        _tracing.unmodelled(f"scaled_dot_product_attention(dropout_p={dropout_p}) "
                            "(its dropout mask)")
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not "
                           "be set when is_causal=True")
    L, S = query.shape[-2], key.shape[-2]
    factor = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = matmul(query, key.transpose(-2, -1)) * factor
    keep = np.tril(np.ones((L, S), dtype=bool)) if is_causal else None
    if attn_mask is not None:
        if attn_mask.dtype is _dtypes.bool:
            mask = _concrete_floats(attn_mask)
            if mask is None:
                _tracing.unmodelled("scaled_dot_product_attention with a mask of symbolic values")
            keep = mask.astype(bool)
        else:
            values = _concrete_floats(attn_mask)
            if values is None:
                scores = scores + attn_mask
            else:
                if np.isnan(values).any() or np.isposinf(values).any():
                    _tracing.unmodelled("scaled_dot_product_attention with a nan or +inf mask")
                excluded = np.isneginf(values)
                if excluded.any():
                    keep = ~excluded
                    values = np.where(excluded, 0.0, values)
                bias = Tensor(np.asarray(values, dtype=object), attn_mask.dtype)
                scores = scores + bias
    if keep is None:
        weights = softmax(scores, -1)
    else:
        keep = np.broadcast_to(keep, scores.shape)
        if (~keep).all(axis=-1).any():
            _tracing.unmodelled("scaled_dot_product_attention with a fully masked row "
                                "(PyTorch's softmax of only -inf is nan)")
        # shifted by the row's max, as PyTorch's softmax (and ours) does
        shifted = scores - scores.detach().amax(-1, keepdim=True)
        e = apply_fn("exp", shifted, "exp", "softmax") * np.asarray(keep, dtype=np.float64)
        weights = relabel(e / e.sum(-1, keepdim=True), "softmax", "softmax", (scores,))
    return relabel(matmul(weights, value), "scaled_dot_product_attention", "matmul",
                   (query, key, value))


# ---- ops the tensor methods and torch functions share (h2) -------------------
def _axes(dim, ndim):
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    return tuple(sorted({builtins.int(d) % max(ndim, 1) for d in dims}))


def _logsumexp(x, dim, keepdim=False):
    """log(sum(exp(x - m))) + m with m the max over `dim`, as PyTorch
    computes it; the gradient is PyTorch's: g * exp(x - result)."""
    from .._tensor import _fn, maximum_scalar
    if not x.dtype.is_floating_point:
        x = x.to(_dtypes.default_float())
    if isinstance(dim, (tuple, list)) and not dim:
        _tracing.unmodelled("logsumexp over an empty list of dims")
    if x.ndim == 0:
        return x * 1.0
    axes = _axes(dim, x.ndim)
    A = np.array(x._a, dtype=object, copy=True)
    fold = np.frompyfunc(maximum_scalar, 2, 1)
    m = A
    for axis in axes:  # object ufuncs reduce one axis at a time
        m = np.asarray(fold.reduce(m, axis=axis, keepdims=True), dtype=object)
    total = np.sum(np.asarray(_fn("exp")(A - m), dtype=object), axis=axes, keepdims=True)
    Y = np.asarray(_fn("log")(total), dtype=object) + m  # keepdim shape

    def vjp(grads):
        g = np.asarray(grads[0], dtype=object).reshape(Y.shape)
        return [g * np.asarray(_fn("exp")(A - Y), dtype=object)]

    out = Y if keepdim else Y.reshape(tuple(s for i, s in enumerate(Y.shape) if i not in axes))
    return record(np.asarray(out, dtype=object), x.dtype, "logsumexp", "reduction", (x,), vjp)


def _cumsum(x, dim, dtype=None):
    if dtype is None and not x.dtype.is_floating_point:
        dtype = _dtypes.int64  # PyTorch accumulates bool and integers as int64
    if dtype is not None and dtype is not x.dtype:
        x = x.to(dtype)
    if x.ndim == 0:
        return x * 1
    d = builtins.int(dim) % x.ndim
    out = np.cumsum(x._a, axis=d)

    def vjp(grads):
        g = np.asarray(grads[0], dtype=object)
        return [np.flip(np.cumsum(np.flip(g, d), axis=d), d)]

    return record(np.asarray(out, dtype=x._a.dtype), x.dtype, "cumsum", "reduction", (x,),
                  vjp if x.dtype.is_floating_point else None)


def _sort(x, dim=-1, descending=False, stable=False):
    """Values and indices along `dim`; symbolic keys in their order at the
    path's witness (torch/_choices.py). Concrete ties keep their order under
    stable=True; without it PyTorch may order them otherwise, so the indices
    of tied keys are not modelled."""
    from .. import _choices
    from .._tensor import _SymbolicIndices, _ValuesIndices, _ties_in_first
    if x.ndim == 0:
        return _ValuesIndices(x * 1, record(np.asarray(0, dtype=np.int64), _dtypes.int64,
                                            "sort", "reduction", (x,)))
    keys, symbolic = x._decision_keys("sort")
    d = builtins.int(dim) % x.ndim
    if symbolic is not None and _ties_in_first(keys, d, keys.shape[d], descending):
        _tracing.unmodelled("sort of symbolic values equal at the path's witness")
    order = np.argsort(-keys if descending else keys, axis=d, kind="stable")
    if symbolic is not None:
        _choices.record_order(symbolic, order, d, keys.shape[d], descending, "sort")
    values = _movement("sort", "view", lambda a: np.take_along_axis(a, order, axis=d), (x,))
    ordered = np.take_along_axis(keys, order, axis=d)
    tied = (np.diff(ordered, axis=d) == 0).any()
    if tied and not stable:
        return _ValuesIndices(values, _SymbolicIndices(
            "the indices of tied keys of sort(stable=False)"))
    return _ValuesIndices(values, record(order.astype(np.int64), _dtypes.int64, "sort",
                                         "reduction", (x,)))


def _repeat_interleave(x, repeats, dim=None, output_size=None):
    from .._tensor import _concrete_index
    if isinstance(repeats, Tensor):
        reps = _concrete_index(repeats, "repeat_interleave")
        reps = builtins.int(reps) if reps.ndim == 0 else reps
    else:
        reps = builtins.int(repeats)
    if dim is None:
        x, d = x.reshape(-1), 0
    else:
        d = builtins.int(dim) % max(x.ndim, 1)
    if np.any(np.asarray(reps) < 0):
        raise RuntimeError("repeats can not be negative")
    size = x.shape[d] if x.ndim else 1
    if isinstance(reps, np.ndarray):
        if reps.ndim != 1 or len(reps) not in (1, size):
            raise RuntimeError("repeats must have the same size as input along dim")
        total = builtins.int(reps.sum()) * (size if len(reps) == 1 else 1)
    else:
        total = reps * size
    if output_size is not None and output_size != total:
        raise RuntimeError("allocated size does not match required size")
    return _movement("repeat_interleave", "view", lambda a: np.repeat(a, reps, axis=d), (x,))


__all__ += ["mse_loss", "l1_loss", "nll_loss", "cross_entropy", "one_hot",
            "scaled_dot_product_attention"]


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x where x > 0, else negative_slope * x; the gradient at 0 is the
    slope's, as PyTorch's."""
    from .. import where
    out = where(input > 0, input, input * negative_slope)
    return _result_of(input, relabel(out, "leaky_relu", "activation", (input,)), inplace)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p over dim, eps), for the Euclidean norm."""
    from .. import maximum
    _tracing.only("normalize", "p", p, 2, 2.0)
    norm = (input * input).sum(dim, keepdim=True).sqrt()
    result = relabel(input / maximum(norm, eps), "normalize", "elementwise", (input,))
    return result if out is None else out.copy_(result)


__all__ += ["leaky_relu", "normalize"]


# The rest of PyTorch's torch.nn.functional: a feature probe (hasattr) sees
# one missing and takes its fallback; a use stops the trace there (could not
# prove, not the user's error).
_UNMODELLED = frozenset("""
adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool1d
adaptive_max_pool1d_with_indices adaptive_max_pool2d adaptive_max_pool2d_with_indices
adaptive_max_pool3d adaptive_max_pool3d_with_indices affine_grid avg_pool1d avg_pool2d
avg_pool3d batch_norm bilinear binary_cross_entropy binary_cross_entropy_with_logits celu
celu_ channel_shuffle conv1d conv2d conv3d conv_tbc conv_transpose1d conv_transpose2d
conv_transpose3d cosine_embedding_loss cosine_similarity ctc_loss elu elu_ embedding_bag
fold fractional_max_pool2d fractional_max_pool2d_with_indices fractional_max_pool3d
fractional_max_pool3d_with_indices gaussian_nll_loss glu grid_sample group_norm
gumbel_softmax hardshrink hardsigmoid hardswish hardtanh hardtanh_ hinge_embedding_loss
huber_loss instance_norm interpolate kl_div leaky_relu_ local_response_norm
lp_pool1d lp_pool2d lp_pool3d margin_ranking_loss max_pool1d
max_pool1d_with_indices max_pool2d max_pool2d_with_indices max_pool3d
max_pool3d_with_indices max_unpool1d max_unpool2d max_unpool3d mish
multi_head_attention_forward multi_margin_loss multilabel_margin_loss
multilabel_soft_margin_loss native_channel_shuffle pairwise_distance pdist
pixel_shuffle pixel_unshuffle poisson_nll_loss prelu relu6 relu_ rms_norm rrelu rrelu_
selu selu_ smooth_l1_loss soft_margin_loss softmin softplus softshrink softsign
tanhshrink threshold threshold_ triplet_margin_loss triplet_margin_with_distance_loss
unfold upsample upsample_bilinear upsample_nearest
""".split())


def __getattr__(name):
    return _tracing.unknown_attribute("torch.nn.functional", name, _UNMODELLED)
