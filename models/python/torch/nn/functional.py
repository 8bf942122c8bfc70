"""torch.nn.functional over the stand-in tensor."""
import numpy as np

from .._tensor import Tensor, apply_fn, matmul, relabel, _index, _movement


def linear(x, weight, bias=None):
    out = relabel(matmul(x, weight.t()), "linear", "matmul", (x, weight))
    return out if bias is None else out + bias


def gelu(x, approximate="none"):
    return apply_fn("gelu_tanh" if approximate == "tanh" else "gelu", x, "gelu")


def relu(x, inplace=False):
    return apply_fn("relu", x)


def silu(x, inplace=False):
    return apply_fn("silu", x)


def tanh(x):
    return x.tanh()


def sigmoid(x):
    return x.sigmoid()


def _softmax_parts(x, dim):
    e = apply_fn("exp", x, "exp", "softmax")
    return e, e.sum(dim, keepdim=True)


def softmax(x, dim=-1, dtype=None, _stacklevel=3):
    # exp(x - max) / sum equals exp(x) / sum over the reals: the shift is a
    # floating-point device, not part of the meaning.
    e, total = _softmax_parts(x, dim)
    return relabel(e / total, "softmax", "softmax", (x,))


def log_softmax(x, dim=-1, dtype=None, _stacklevel=3):
    _, total = _softmax_parts(x, dim)
    return relabel(x - total.log(), "log_softmax", "softmax", (x,))


def embedding(ids, weight, padding_idx=None, max_norm=None, **kwargs):
    key = _index(ids)
    return _movement("embedding", "index", lambda i, w: w[key], (ids, weight),
                     differentiable=(weight,), indices=(ids,))


def dropout(x, p=0.5, training=True, inplace=False):
    # Modelled as the identity: the same mask on every rank and in the
    # reference, which is what a correct RNG tracker guarantees.
    return x


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    dims = tuple(range(-len(normalized_shape), 0))
    mean = x.mean(dims, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(dims, keepdim=True)
    out = centered * (var + eps).rsqrt()
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return relabel(out, "layer_norm", "elementwise", (x,))


def pad(x, pad, mode="constant", value=0.0):
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        widths[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    return _movement("pad", "view",
                     lambda a, c: np.pad(a, widths, constant_values=c), (x, value),
                     differentiable=(x,))


__all__ = ["linear", "gelu", "relu", "silu", "tanh", "sigmoid", "softmax",
           "log_softmax", "embedding", "dropout", "layer_norm", "pad", "Tensor"]
