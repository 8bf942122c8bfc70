"""torch.nn.init: a Parameter stays symbolic whatever the initialiser; a plain
tensor initialised at random becomes symbolic, one set to a constant gets it."""
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


def calculate_gain(*a, **k):
    return 1.0
