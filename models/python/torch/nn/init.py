"""torch.nn.init. While the entry builds the model, a random initialiser
leaves a Parameter symbolic (a proof covers every value of the weights) and
makes a plain tensor symbolic, moving its generator on as the draw would;
later it is not modelled (torch.random). The distribution's parameters cannot
change a symbolic value, but PyTorch's argument checks are made. A constant
initialiser writes its value, except into a Parameter while the model is
built."""
import math

from .. import _tracing
from .parameter import Parameter

_SYMBOLIC = "the initialised values are symbolic: a proof covers every value"


def _random(tensor, generator):
    return tensor._reinit(generator)


@_tracing.no_effect(a=_SYMBOLIC, b=_SYMBOLIC)
def uniform_(tensor, a=0.0, b=1.0, generator=None):
    return _random(tensor, generator)


@_tracing.no_effect(mean=_SYMBOLIC, std=_SYMBOLIC)
def normal_(tensor, mean=0.0, std=1.0, generator=None):
    return _random(tensor, generator)


@_tracing.no_effect(mean=_SYMBOLIC, std=_SYMBOLIC, a=_SYMBOLIC, b=_SYMBOLIC)
def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    return _random(tensor, generator)


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer "
                         "than 2 dimensions")
    receptive_field = math.prod(tensor.shape[2:])
    return tensor.size(1) * receptive_field, tensor.size(0) * receptive_field


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


@_tracing.no_effect(gain=_SYMBOLIC)
def xavier_uniform_(tensor, gain=1.0, generator=None):
    _calculate_fan_in_and_fan_out(tensor)
    return _random(tensor, generator)


@_tracing.no_effect(gain=_SYMBOLIC)
def xavier_normal_(tensor, gain=1.0, generator=None):
    _calculate_fan_in_and_fan_out(tensor)
    return _random(tensor, generator)


def _kaiming(tensor, a, mode, nonlinearity, generator):
    if 0 in tuple(tensor.shape):
        return tensor  # PyTorch warns and leaves an empty tensor as it is
    _calculate_correct_fan(tensor, mode)
    calculate_gain(nonlinearity, a)
    return _random(tensor, generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    return _kaiming(tensor, a, mode, nonlinearity, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    return _kaiming(tensor, a, mode, nonlinearity, generator)


@_tracing.no_effect(gain=_SYMBOLIC)
def orthogonal_(tensor, gain=1, generator=None):
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    return _random(tensor, generator)


def constant_(tensor, val):
    from .. import no_grad
    if _tracing.state.building and isinstance(tensor, Parameter):
        return tensor  # a proof covers every value of the weights
    with no_grad():
        return tensor.fill_(val)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def ones_(tensor):
    return constant_(tensor, 1.0)


_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
           "conv_transpose2d", "conv_transpose3d", "sigmoid")


def calculate_gain(nonlinearity, param=None):
    """PyTorch's recommended gain for a nonlinearity."""
    if nonlinearity in _LINEAR:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")
