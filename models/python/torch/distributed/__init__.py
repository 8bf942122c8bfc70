"""torch.distributed on a simulated world: this process plays one rank at a
time. A collective records its inputs and returns placeholders that the linker
resolves once every rank has run. As in PyTorch, raw collectives are invisible
to autograd."""
import contextlib

import numpy as np

import _shardproof as _sp

from .. import _tracing
from .._tensor import Tensor, record


class _World:
    def __init__(self):
        self.size = 1
        self.rank = 0
        self.initialized = False
        self.sequence = {}  # group ranks -> calls issued so far


world = _World()


def configure(size, rank):
    """Called by the driver before each rank's run."""
    world.size, world.rank = size, rank
    world.initialized = False
    world.sequence = {}


class ProcessGroup:
    def __init__(self, ranks):
        self.ranks = tuple(sorted(ranks))

    def size(self):
        return len(self.ranks)

    def rank(self):
        return self.ranks.index(world.rank) if world.rank in self.ranks else -1

    def __repr__(self):
        return f"ProcessGroup(ranks={list(self.ranks)})"


class _WorldGroup:
    """group.WORLD: always the current world, whatever its size."""

    @property
    def ranks(self):
        return tuple(range(world.size))

    def size(self):
        return world.size

    def rank(self):
        return world.rank


class group:
    WORLD = _WorldGroup()


GroupMember = group


class ReduceOp:
    SUM = "sum"
    AVG = "avg"
    MAX = "max"
    MIN = "min"
    PRODUCT = "product"

    class RedOpType:
        SUM, AVG, MAX, MIN, PRODUCT = "sum", "avg", "max", "min", "product"


class Backend:
    NCCL = "nccl"
    GLOO = "gloo"


def is_available():
    return True


def is_initialized():
    return world.initialized


def init_process_group(backend=None, init_method=None, timeout=None,
                       world_size=-1, rank=-1, **kwargs):
    world.initialized = True


def destroy_process_group(group=None):
    world.initialized = False


def get_backend(group=None):
    return "nccl"


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, **kwargs):
    return ProcessGroup(range(world.size) if ranks is None else ranks)


def new_subgroups_by_enumeration(ranks_per_subgroup_list, **kwargs):
    groups = [new_group(r) for r in ranks_per_subgroup_list]
    mine = next((g for g in groups if world.rank in g.ranks), None)
    return mine, groups


def _group(g):
    return group.WORLD if g is None else g


def get_rank(group=None):
    return _group(group).rank()


def get_world_size(group=None):
    return _group(group).size()


def get_global_rank(group, group_rank):
    return _group(group).ranks[group_rank]


def get_process_group_ranks(group):
    return list(_group(group).ranks)


def barrier(group=None, async_op=False, device_ids=None):
    return _Work() if async_op else None


class _Work:
    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True


def _collective(kind, op, g, source, out_shape, src=-1, splits=None):
    """Records the call on the tensor `source`; returns the placeholder result
    as a flat object array and the IR node that produced it."""
    inputs, dtype = source._a, source.dtype
    g = _group(g)
    ranks = tuple(g.ranks)
    if world.rank not in ranks:
        raise ValueError(f"rank {world.rank} is not a member of {g!r}")
    seq = world.sequence.get(ranks, 0)
    world.sequence[ranks] = seq + 1
    flat_in = np.asarray(inputs).ravel().tolist()
    file, line, func, col = _tracing.location()
    count = int(np.prod(out_shape))
    where = f"{_tracing.display(file)}:{line}"
    outputs = [_sp.placeholder(f"{kind}#{seq}@rank{world.rank}[{i}]", where)
               for i in range(count)]
    values = _known_result(ranks, seq, np.asarray(inputs))
    if values is None:
        values = np.asarray(outputs, dtype=object)
    node = record(values.reshape(out_shape), dtype, kind, "collective", (source,))._node
    _sp.record_collective(kind, op, ranks, seq, src, np.shape(inputs), out_shape,
                          dtype.name, flat_in, outputs, file, line, col, func, node,
                          *(splits or ()))
    return values, node


def _known_result(ranks, seq, inputs):
    """The result of this call when an earlier tracing pass linked it to
    constants (token counts all-gathered before they become Python sizes), in
    the input's numeric dtype where the input is concrete; None otherwise.
    The call is still recorded with its placeholders, and the session checks
    that linking them gives these constants again."""
    known = _sp.known_collective(ranks, seq)
    if known is None:
        return None
    if inputs.dtype == object:
        return np.asarray(known, dtype=object)
    return np.asarray([float(t) for t in known]).astype(inputs.dtype)


def _write(tensor, flat, node):
    """Collectives write in place: every view of the tensor sees the result."""
    tensor._a[...] = np.asarray(flat, dtype=object).reshape(tensor._a.shape) \
        if tensor._a.dtype == object else flat.reshape(tensor._a.shape)
    tensor._node = node


def _alone(kind, output, values, source):
    """A collective over a group of one is the identity; it is still recorded
    so the reference run has a node for each collective of the ranks."""
    output._a[...] = values.reshape(output._a.shape)
    output._node = record(output._a, output.dtype, kind, "collective", (source,))._node


def _done(async_op):
    return _Work() if async_op else None


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    if _group(group).size() == 1:
        _alone("all_reduce", tensor, tensor._a, tensor)
    else:
        flat, node = _collective("all_reduce", op, group, tensor, tensor._a.shape)
        _write(tensor, flat, node)
    return _done(async_op)


def broadcast(tensor, src, group=None, async_op=False):
    if _group(group).size() == 1:
        _alone("broadcast", tensor, tensor._a, tensor)
    else:
        flat, node = _collective("broadcast", "sum", group, tensor, tensor._a.shape,
                                 src=src)
        _write(tensor, flat, node)
    return _done(async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    g = _group(group)
    if g.size() == 1:
        _alone("all_gather", output_tensor, input_tensor._a, input_tensor)
        return _done(async_op)
    out_shape = (g.size() * input_tensor._a.shape[0],) + input_tensor._a.shape[1:]
    flat, node = _collective("all_gather", "sum", group, input_tensor, out_shape)
    _write(output_tensor, flat, node)
    return _done(async_op)


_all_gather_base = all_gather_into_tensor


def all_gather(tensor_list, tensor, group=None, async_op=False):
    g = _group(group)
    if g.size() == 1:
        _alone("all_gather", tensor_list[0], tensor._a, tensor)
        return _done(async_op)
    flat, node = _collective("all_gather", "sum", group, tensor,
                             (g.size(),) + tensor._a.shape)
    n = tensor._a.size
    for i, t in enumerate(tensor_list):
        _write(t, flat[i * n:(i + 1) * n], node)
    return _done(async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    g = _group(group)
    if g.size() == 1:
        _alone("reduce_scatter", output, input._a, input)
        return _done(async_op)
    out_shape = (input._a.shape[0] // g.size(),) + input._a.shape[1:]
    flat, node = _collective("reduce_scatter", op, group, input, out_shape)
    _write(output, flat, node)
    return _done(async_op)


_reduce_scatter_base = reduce_scatter_tensor


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    from .. import cat
    return reduce_scatter_tensor(output, cat([t.reshape(-1) for t in input_list]),
                                 op, group, async_op)


def _split_sizes(sizes, rows, g, what):
    """Rows (along dim 0) per member of `g`, as Python ints: even when not
    given. Sizes must be concrete (a symbolic size stops tracing)."""
    if sizes is None or len(sizes) == 0:
        if rows % g.size():
            raise ValueError(f"all_to_all_single: {rows} rows do not split evenly "
                             f"over {g.size()} ranks")
        return [rows // g.size()] * g.size()
    sizes = sizes.tolist() if isinstance(sizes, Tensor) else list(sizes)
    sizes = [int(s) for s in sizes]
    if len(sizes) != g.size():
        raise ValueError(f"all_to_all_single: {what} has {len(sizes)} entries for a "
                         f"group of {g.size()}")
    return sizes


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    g = _group(group)
    rows_in = input._a.shape[0] if input._a.ndim else 0
    sends = _split_sizes(input_split_sizes, rows_in, g, "input_split_sizes")
    receives = _split_sizes(output_split_sizes, output._a.shape[0], g,
                            "output_split_sizes")
    if sum(sends) != rows_in or sum(receives) != output._a.shape[0]:
        raise ValueError("all_to_all_single: split sizes do not add up to the "
                         "tensors' first dimension")
    if g.size() == 1:
        _alone("all_to_all", output, input._a, input)
        return _done(async_op)
    even = len(set(sends)) == 1 and sends == receives
    out_shape = (sum(receives),) + input._a.shape[1:]
    flat, node = _collective("all_to_all", "sum", group, input, out_shape,
                             splits=None if even else (sends, receives))
    _write(output, flat, node)
    return _done(async_op)


class _CoalescingManager:
    """What `with _coalescing_manager(...) as cm` yields: the collectives
    issued inside are already complete here, so wait() has nothing to do."""

    def __init__(self):
        self.works = []

    def append(self, work):
        if work:
            self.works.append(work)

    def wait(self):
        for work in self.works:
            work.wait()


@contextlib.contextmanager
def _coalescing_manager(group=None, device=None, async_ops=False):
    """Coalescing only fuses the kernels of the collectives issued inside;
    each is recorded on its own, in order, with the same result."""
    yield _CoalescingManager()


def _point_to_point(*a, **k):
    raise _tracing.Unsupported("point-to-point send/recv (pipeline parallelism)")


send = recv = isend = irecv = batch_isend_irecv = _point_to_point


class P2POp:
    def __init__(self, *a, **k):
        _point_to_point()


from . import nn  # noqa: E402,F401  (torch.distributed.nn.functional)

__all__ = ["all_reduce", "broadcast", "all_gather", "all_gather_into_tensor",
           "reduce_scatter_tensor", "all_to_all_single", "get_rank",
           "get_world_size", "new_group", "ReduceOp", "group", "barrier",
           "init_process_group", "is_initialized", "Tensor"]
