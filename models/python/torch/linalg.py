"""torch.linalg: the vector 2-norm that gradient-norm code takes
(DeepSpeed's ZeRO get_grad_norm_direct, clip_grad_norm_ variants)."""
from . import _tracing


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """The 2-norm of `x` over `dim` (all of it when None), computed in
    `dtype` when given; other orders are not modelled."""
    _tracing.only("torch.linalg.vector_norm", "ord", ord, 2, 2.0)
    _tracing.only("torch.linalg.vector_norm", "out", out, None)
    x = x if dtype is None else x.to(dtype)
    return (x * x).sum(dim, keepdim).sqrt()
