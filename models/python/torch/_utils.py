"""torch._utils: the flatten/unflatten helpers frameworks use to coalesce
gradients into one buffer for a collective. Built from cat, view and narrow,
so they are differentiable and recorded like those ops, as in PyTorch."""


def _flatten_dense_tensors(tensors):
    from . import cat
    flat = [t.contiguous().view(-1) for t in tensors]
    return flat[0] if len(flat) == 1 else cat(flat, dim=0)


def _unflatten_dense_tensors(flat, tensors):
    outputs, offset = [], 0
    for t in tensors:
        n = t.numel()
        outputs.append(flat.narrow(0, offset, n).view_as(t))
        offset += n
    return tuple(outputs)
