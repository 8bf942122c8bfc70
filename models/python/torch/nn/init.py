"""torch.nn.init: a Parameter stays symbolic whatever the initialiser; a plain
tensor initialised at random becomes symbolic, one set to a constant gets it."""
import math

from .parameter import Parameter


def _random(t, *a, **k):
    return t._reinit()


normal_ = uniform_ = xavier_normal_ = xavier_uniform_ = kaiming_normal_ = \
    kaiming_uniform_ = trunc_normal_ = orthogonal_ = _random


def constant_(t, value):
    return t if isinstance(t, Parameter) else t.fill_(value)


def zeros_(t):
    return constant_(t, 0.0)


def ones_(t):
    return constant_(t, 1.0)


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
