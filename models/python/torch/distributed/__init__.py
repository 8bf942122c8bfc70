"""torch.distributed on a simulated world: this process plays one rank at a
time. A collective records its inputs and returns placeholders that the linker
resolves once every rank has run. As in PyTorch, raw collectives are invisible
to autograd.

What PyTorch leaves unspecified is never invented: an async collective's
output holds opaque values until its Work is waited on (a read before wait()
races with the collective), and so does the buffer of every rank but dst after
dist.reduce (gloo leaves partial sums there). Reading one stops the proof
("could not prove"), naming the call."""
import contextlib
import operator
import pickle

import numpy as np

import _shardproof as _sp

from .. import _tracing
from .._tensor import Tensor, record


class _World:
    def __init__(self):
        self.size = 1
        self.rank = 0
        self.initialized = False
        self.backend = None
        self.generation = 0  # bumped by destroy_process_group(): older groups are gone
        self.sequence = {}  # group ranks -> calls issued so far
        self.coalescing = []  # open _coalescing_manager blocks, innermost last
        self.call_site = None  # where a backward's collectives are reported (_called_at)


world = _World()


def configure(size, rank):
    """Called by the driver before each rank's run."""
    world.size, world.rank = size, rank
    if rank == 0:  # a new tracing pass (the ranks run in order)
        _sent_this_pass.clear()
    world.initialized = False
    world.backend = None
    world.generation += 1
    world.sequence = {}
    world.coalescing = []
    world.call_site = None


def _site():
    """(file, line, function, column) a collective is reported at."""
    return world.call_site or _tracing.location()


@contextlib.contextmanager
def _called_at(site):
    """Collectives issued inside (a differentiable collective's backward, run
    by autograd with no user frame on the stack) are reported at `site`."""
    outer, world.call_site = world.call_site, site
    try:
        yield
    finally:
        world.call_site = outer


# ---- process groups -----------------------------------------------------

class ProcessGroup:
    """A group this rank belongs to: new_group gives the other ranks
    GroupMember.NON_GROUP_MEMBER, as PyTorch does. Ranks are global, sorted;
    a member's group rank is its index."""

    def __init__(self, ranks, backend=None):
        self.ranks = tuple(sorted(ranks))
        self._backend = backend
        self._generation = world.generation
        self._destroyed = False

    def size(self):
        return len(self.ranks)

    def rank(self):
        return self.ranks.index(world.rank)

    def __repr__(self):
        return f"ProcessGroup(ranks={list(self.ranks)})"


class _WorldGroup:
    """group.WORLD: always the current world, whatever its size."""

    @property
    def ranks(self):
        return tuple(range(world.size))

    @property
    def _backend(self):
        return world.backend

    def size(self):
        return world.size

    def rank(self):
        return world.rank

    def __repr__(self):
        return "group.WORLD"


class _NonGroupMember:
    """What new_group returns to a rank outside the group: collectives on it
    do nothing (PyTorch warns and returns), get_rank and get_world_size
    answer -1, and asking for its ranks or backend is an error."""
    ranks = ()  # the driver asks whether this rank is in the entry's groups

    def __repr__(self):
        return "GroupMember.NON_GROUP_MEMBER"


class group:
    WORLD = _WorldGroup()
    NON_GROUP_MEMBER = _NonGroupMember()


GroupMember = group
_WORLD = group.WORLD
_NON_MEMBER = group.NON_GROUP_MEMBER


class Backend(str):
    NCCL = "nccl"
    GLOO = "gloo"

    def __new__(cls, name):
        """The backend's name, as the constant itself (PyTorch code compares
        get_backend() with `is`)."""
        return getattr(Backend, _backend_name(name).upper())


_BACKENDS = ("nccl", "gloo")


def _backend_name(backend):
    """The backends whose collectives are modelled (the values of NCCL's and
    gloo's are the same where both run them; gloo rejects AVG)."""
    name = str(backend).lower()
    _tracing.only("init_process_group/new_group", "backend", name, *_BACKENDS)
    return name


def _require_init():
    if not world.initialized:
        raise ValueError("Default process group has not been initialized, please "
                         "make sure to call init_process_group.")


def _group(g):
    """The group a call names (the world when None), checked to be alive."""
    _require_init()
    if g is None or g is _WORLD:
        return _WORLD
    if g is _NON_MEMBER:
        return g
    if not isinstance(g, ProcessGroup):
        _tracing.unmodelled(f"a process group given as {type(g).__name__}")
    if g._destroyed or g._generation != world.generation:
        raise ValueError(f"{g!r} has been destroyed (destroy_process_group)")
    return g


def _outside(g):
    """True when this rank is not in `g`: the collective does nothing."""
    return g is _NON_MEMBER


def is_available():
    return True


def is_nccl_available():
    return True


def is_gloo_available():
    return True


def is_initialized():
    return world.initialized


@_tracing.no_effect(init_method="rendezvous: the simulated ranks need none",
                    timeout="a time limit changes no value",
                    store="rendezvous: the simulated ranks need none",
                    group_name="a name only",
                    pg_options="backend tuning (NCCL options) changes no value",
                    device_id="which device a rank binds changes no value")
def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1,
                       rank=-1, store=None, group_name="", pg_options=None,
                       device_id=None):
    """The driver initialises the simulated world before the entry runs; a
    second call is PyTorch's error."""
    if world.initialized:
        raise ValueError("trying to initialize the default process group twice!")
    _tracing.only("init_process_group", "world_size", world_size, -1, world.size)
    _tracing.only("init_process_group", "rank", rank, -1, world.rank)
    world.backend = "nccl" if backend is None else _backend_name(backend)
    world.initialized = True


def destroy_process_group(group=None):
    g = _group(group)
    if g is _WORLD:
        world.initialized = False
        world.generation += 1
    elif g is not _NON_MEMBER:
        g._destroyed = True


def get_backend(group=None):
    g = _group(group)
    if g is _NON_MEMBER:
        raise ValueError("Invalid process group specified")
    return Backend(g._backend or world.backend)


@_tracing.no_effect(timeout="a time limit changes no value",
                    pg_options="backend tuning (NCCL options) changes no value",
                    use_local_synchronization="only which ranks wait at creation",
                    group_desc="a name only",
                    device_id="which device a rank binds changes no value")
def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None, device_id=None):
    _require_init()
    ranks = list(range(world.size)) if ranks is None else \
        [operator.index(r) for r in ranks]
    for r in ranks:
        if not 0 <= r < world.size:
            raise ValueError(f"new_group: rank {r} is outside the world of {world.size}")
    if len(set(ranks)) != len(ranks):
        _tracing.unmodelled(f"new_group() with a rank named twice ({sorted(ranks)})")
    if world.rank not in ranks:
        return _NON_MEMBER
    return ProcessGroup(ranks, None if backend is None else _backend_name(backend))


@_tracing.no_effect(timeout="a time limit changes no value",
                    pg_options="backend tuning (NCCL options) changes no value",
                    group_desc="a name only")
def new_subgroups_by_enumeration(ranks_per_subgroup_list, timeout=None, backend=None,
                                 pg_options=None, group_desc=None):
    if not ranks_per_subgroup_list:
        raise ValueError("The arg 'ranks_per_subgroup_list' cannot be empty")
    seen, mine, groups = set(), None, []
    for ranks in ranks_per_subgroup_list:
        for r in ranks:
            if r in seen:
                raise ValueError(f"Rank {r} has appeared in more than one subgroup")
            seen.add(r)
        g = new_group(ranks, backend=backend)
        groups.append(g)
        if world.rank in ranks:
            mine = g
    return mine, groups


@_tracing.no_effect(timeout="a time limit changes no value",
                    pg_options="backend tuning (NCCL options) changes no value",
                    group_desc="a name only")
def new_subgroups(group_size=None, group=None, timeout=None, backend=None,
                  pg_options=None, group_desc=None):
    """Consecutive runs of `group_size` ranks of `group` (the world)."""
    if group_size is None:
        _tracing.unmodelled("new_subgroups() without group_size (GPUs per node)")
    parent = _group(group)
    if parent is _NON_MEMBER:
        raise ValueError("new_subgroups: this rank is not in the parent group")
    ranks = list(parent.ranks)
    if group_size <= 0:
        raise ValueError(f"The arg 'group_size' ({group_size}) must be positive")
    if len(ranks) % group_size:
        raise ValueError(f"The world size ({len(ranks)}) must be divisible by "
                         f"'group_size={group_size}'")
    return new_subgroups_by_enumeration(
        [ranks[i:i + group_size] for i in range(0, len(ranks), group_size)],
        backend=backend)


def get_rank(group=None):
    g = _group(group)
    return -1 if g is _NON_MEMBER else g.rank()


def get_world_size(group=None):
    g = _group(group)
    return -1 if g is _NON_MEMBER else g.size()


def _member_group(g, what):
    g = _group(g)
    if g is _NON_MEMBER:
        raise ValueError(f"{what}: this rank is not in the group")
    return g


def get_global_rank(group, group_rank):
    g = _member_group(group, "get_global_rank")
    if not 0 <= group_rank < g.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {g!r}")
    return g.ranks[group_rank]


_get_global_rank = get_global_rank


def get_group_rank(group, global_rank):
    g = _member_group(group, "get_group_rank")
    if global_rank not in g.ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {g!r}")
    return g.ranks.index(global_rank)


def get_process_group_ranks(group):
    return list(_member_group(group, "get_process_group_ranks").ranks)


# ---- reduction ops ------------------------------------------------------

class _RedOp:
    def __init__(self, name, factor=None):
        self.name = name
        self.factor = factor  # PREMUL_SUM's factor

    def __repr__(self):
        return f"<RedOpType.{self.name}>"


class _RedOpType:
    SUM, AVG, PRODUCT, MIN, MAX = (_RedOp(n) for n in ("SUM", "AVG", "PRODUCT", "MIN", "MAX"))
    BAND, BOR, BXOR, PREMUL_SUM, UNUSED = (_RedOp(n) for n in ("BAND", "BOR", "BXOR",
                                                              "PREMUL_SUM", "UNUSED"))


class ReduceOp(_RedOpType):
    RedOpType = _RedOpType


# The ops the linker reduces with; BAND/BOR/BXOR and a PREMUL_SUM without a
# factor are not modelled.
_LINKED_OPS = {id(ReduceOp.SUM): "sum", id(ReduceOp.AVG): "avg",
               id(ReduceOp.PRODUCT): "product", id(ReduceOp.MIN): "min",
               id(ReduceOp.MAX): "max"}


def _make_nccl_premul_sum(factor):
    """NCCL's PREMUL_SUM: every rank's input times `factor`, then summed."""
    return _RedOp("PREMUL_SUM", factor)


def _reduction(fn, op, tensor, g):
    """(linker op name, the values this rank contributes) for reducing
    `tensor` with `op` over `g`."""
    values = np.asarray(tensor._a).ravel()
    if isinstance(op, _RedOp) and op.name == "PREMUL_SUM" and op.factor is not None:
        if not tensor.dtype.is_floating_point:
            _tracing.unmodelled(f"{fn}() with PREMUL_SUM of a {tensor.dtype} tensor")
        factor = op.factor
        if isinstance(factor, Tensor):
            if factor.numel() != 1:
                raise ValueError("PREMUL_SUM's factor must be a scalar")
            factor = factor._a.ravel()[0]
        return "sum", np.asarray(values, dtype=object) * factor
    name = _LINKED_OPS.get(id(op))
    if name is None:
        _tracing.unmodelled(f"{fn}() with op={op!r}")
    if tensor.dtype.name == "bool" and name in ("sum", "avg", "product"):
        _tracing.unmodelled(f"{fn}() of a bool tensor with op={op!r}")
    if name == "avg":
        if (g._backend or world.backend) == "gloo":
            raise RuntimeError("Cannot use ReduceOp.AVG with Gloo")
        if not tensor.dtype.is_floating_point:
            _tracing.unmodelled(f"{fn}() with op=AVG of a {tensor.dtype} tensor")
    return name, values


# ---- issuing a collective and delivering its results --------------------

def _dense(fn, *tensors):
    """NCCL rejects non-contiguous tensors (gloo copes with some): which one
    the run would get is not modelled."""
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"{fn}(): expected a Tensor, got {type(t).__name__}")
        if not t._a.flags.c_contiguous:
            _tracing.unmodelled(f"{fn}() of a non-contiguous tensor")


def _same_dtype(fn, tensors, dtype):
    for t in tensors:
        if t.dtype != dtype:
            raise ValueError(f"{fn}(): tensors of {t.dtype} and {dtype} in one call")


def _listed(fn, what, tensors, g):
    tensors = list(tensors)
    if len(tensors) != g.size():
        raise ValueError(f"{fn}(): {what} has {len(tensors)} tensors for a group of "
                         f"{g.size()}")
    _dense(fn, *tensors)
    return tensors


def _issue(kind, op, g, parents, inputs, out_shape, dtype, root=-1, splits=None,
           local=None, has_outputs=True, in_shape=None, blocking=False):
    """Records the call; returns its result (a flat object array of
    placeholders, or the constants an earlier pass linked them to) and the IR
    node that produced it. Over a group of one the result is `local`, with no
    call to link (the reference run has a node for each collective).
    `in_shape`: the shape the call sends, where its input tensor's is not.
    `blocking`: a message call that returns only once matched (send, recv)."""
    inputs = np.asarray(inputs).ravel()
    count = int(np.prod(out_shape)) if has_outputs else 0
    site = _site()
    if g.size() == 1:
        values = np.array(np.asarray(local).ravel())  # a copy: the output may be the input
        return values, record(values.reshape(out_shape), dtype, kind, "collective",
                              parents, loc=site)._node
    ranks = tuple(g.ranks)
    channel = ("send_recv",) + ranks if kind == "send_recv" else ranks  # see _Pair
    seq = world.sequence.get(channel, 0)
    world.sequence[channel] = seq + 1
    file, line, func, col = site
    where = f"{_tracing.display(file)}:{line}"
    outputs = [_sp.placeholder(f"{kind}#{seq}@rank{world.rank}[{i}]", where)
               for i in range(count)]
    values = _known_result(ranks, seq, inputs, outputs if kind == "send_recv" else None) \
        if count else None
    if kind == "broadcast" and count:
        sent = _broadcast_this_pass(ranks, seq, root, inputs, guess=values is None)
        if world.rank == root:
            # The source keeps what it sends. (Given its result as known, a
            # source that computes with it records those terms as its own
            # parameter's, and its input then links to other ones each pass.)
            values = np.array(inputs)
        elif values is None:
            values = sent
    elif values is None and kind == "all_reduce":
        values = _all_reduce_guess(op, ranks, seq, inputs)
    if values is None:
        values = np.asarray(outputs, dtype=object)
    node = record(values.reshape(out_shape if count else (0,)), dtype, kind, "collective",
                  parents, loc=site)._node
    uneven = {} if splits is None else dict(zip(("input_splits", "output_splits"), splits))
    global _last_call  # its index among the rank's calls: an isend's or irecv's Work waits on it
    _last_call = _sp.record_collective(
        kind=kind, op=op, group=ranks, sequence=seq, src=root,
        input_shape=in_shape if in_shape is not None else
        inputs.shape if not parents else _in_shape(parents, inputs),
        output_shape=out_shape if count else (0,), dtype=dtype.name,
        inputs=inputs.tolist(), outputs=outputs, file=file, line=line, column=col,
        function=func, node=node, blocking=blocking, **uneven)
    return values, node


_last_call = -1

# What each broadcast's source sent in this tracing pass, where it was
# concrete: {(world size, group, sequence): values}. Ranks are traced in
# order, so a receiver traced after its source (Megatron's batch, broadcast
# from tensor-parallel rank 0) takes those values at once instead of
# stopping on a placeholder and waiting a pass for each broadcast. It is a
# guess (_sp.record_guess): the pass after links every call, learns the
# constants and gives them as known (_known_result); a pass that ran with a
# guess is never the last (python_frontend.cpp trace_ranks), so no verdict
# rests on one.
_sent_this_pass = {}


def _concrete(values):
    return values.dtype != object or all(getattr(v, "is_const", False) for v in values)


def _broadcast_this_pass(ranks, seq, root, inputs, guess):
    """What the source sent, on a receiver that may `guess` it (its result
    not known from an earlier pass); the source records what it sends."""
    key = (world.size, ranks, seq)
    if world.rank == root:
        if _concrete(inputs):
            _sent_this_pass[key] = np.array(inputs)
        return None
    sent = _sent_this_pass.get(key) if guess else None
    if sent is None or sent.shape != inputs.shape or not _sp.record_guess(ranks, seq):
        return None
    return _as_inputs(sent, inputs)


def _all_reduce_guess(op, ranks, seq, inputs):
    """An all-reduce of concrete values (flags, counts: Megatron's rerun
    state machine all-reduces whether any rank wants to stop) guessed as if
    every rank sent this one's; the next pass confirms or corrects it."""
    if inputs.size == 0 or not _concrete(inputs) or op not in ("sum", "max", "min") \
            or not _sp.record_guess(ranks, seq):
        return None
    numbers = np.asarray([float(v) for v in inputs])
    return _as_inputs(numbers * len(ranks) if op == "sum" else numbers, inputs)


def _as_inputs(values, inputs):
    """`values` in the dtype of the call's input (object: constant terms)."""
    if inputs.dtype == object:
        return np.asarray(list(values), dtype=object)
    if values.dtype == object:
        values = np.asarray([float(v) for v in values])
    return values.astype(inputs.dtype)


def _in_shape(parents, inputs):
    """The shape the call sends: its one input tensor's, else flat."""
    if len(parents) == 1 and parents[0]._a.size == inputs.size:
        return parents[0]._a.shape
    return inputs.shape


def _known_result(ranks, seq, inputs, message=None):
    """The result of this call when an earlier tracing pass linked it to
    constants (token counts all-gathered before they become Python sizes), in
    the input's numeric dtype where the input is concrete; None otherwise.
    Of a point-to-point message (`message`: this call's placeholders), the
    elements linked to constants are known (a header of sizes the receiver
    turns into Python numbers), the others are these placeholders.
    The call is still recorded with its placeholders, and the session checks
    that linking them gives these constants again."""
    known = _sp.known_collective(ranks, seq, message is not None)
    if known is None:
        return None
    if message is not None:
        known = [k if k.is_const else own for k, own in zip(known, message)]
    if inputs.dtype == object or not all(t.is_const for t in known):
        return np.asarray(known, dtype=object)
    return np.asarray([float(t) for t in known]).astype(inputs.dtype)


def _write(tensor, flat, node):
    """Collectives write in place: every view of the tensor sees the result."""
    flat = np.asarray(flat)
    tensor._a[...] = np.asarray(flat, dtype=object).reshape(tensor._a.shape) \
        if tensor._a.dtype == object else flat.reshape(tensor._a.shape)
    tensor._written_by(node)


def _opaque(tensor, what):
    """Values no rank can rely on: any proof that reads them is blocked."""
    if tensor._a.dtype != object:
        _tracing.unmodelled(f"{what} in a {tensor.dtype} tensor")
    file, line, _, _ = _site()
    where = f"{_tracing.display(file)}:{line}"
    return np.asarray([_sp.opaque(what, where) for _ in range(tensor._a.size)],
                      dtype=object)


def _opaque_write(tensor, what, kind):
    values = _opaque(tensor, what)
    _write(tensor, values, record(values.reshape(tensor._a.shape), tensor.dtype,
                                  kind, "other", (tensor,))._node)


class Work:
    """The handle of an async collective. Its outputs hold opaque values
    until wait(), which writes the results (in PyTorch a read before wait()
    races with the collective)."""

    def __init__(self, writes=(), message=None):
        self._writes = list(writes)
        self._message = message  # an isend's or irecv's call: wait() blocks on its peer

    def _complete(self):
        writes, self._writes = self._writes, []
        for tensor, flat, node in writes:
            _write(tensor, flat, node)

    @_tracing.no_effect(timeout="a time limit changes no value")
    def wait(self, timeout=None):
        if self._message is not None:
            _sp.record_wait(self._message)
            self._message = None
        self._complete()
        return True

    def is_completed(self):
        if self._writes:
            _tracing.unmodelled("Work.is_completed() before wait() (it depends on timing)")
        return True

    def result(self):
        _tracing.unmodelled("Work.result()")

    def get_future(self):
        _tracing.unmodelled("Work.get_future()")


_Work = Work


class _IllegalWork(Work):
    """What an async collective inside a coalescing block returns: the block
    owns its completion."""

    @_tracing.no_effect(timeout="it is an error whatever the limit")
    def wait(self, timeout=None):
        raise ValueError("Illegal to call wait on IllegalWork object")


# Collectives PyTorch coalesces inside _coalescing_manager; others there are
# not modelled.
_COALESCED = ("all_reduce", "all_gather", "reduce_scatter")


def _deliver(kind, g, writes, async_op):
    """Writes the results now (a synchronous call), or leaves opaque values
    until the Work (or the coalescing block) completes."""
    block = next((b for b in reversed(world.coalescing) if b.ranks == g.ranks), None)
    if block is not None and kind not in _COALESCED:
        _tracing.unmodelled(f"{kind} inside _coalescing_manager")
    if not async_op and block is None:
        Work(writes)._complete()
        return None
    what = f"the output of an async {kind} read before its wait()" if block is None \
        else f"the output of {kind} read inside its _coalescing_manager block"
    for tensor, _, _ in writes:
        _opaque_write(tensor, what, kind)
    work = Work(writes)
    if block is not None:
        block.works.append(work)
        return _IllegalWork() if async_op else None
    return work


class _CoalescingManager:
    """What `with _coalescing_manager(...) as cm` yields: the collectives on
    its group issued inside run when the block ends (async_ops=False) or when
    cm.wait() is called; their outputs hold opaque values until then."""

    def __init__(self, ranks):
        self.ranks = ranks
        self.works = []

    def append(self, work):
        if work is not None:
            self.works.append(work)

    def wait(self):
        for work in self.works:
            work._complete()


@contextlib.contextmanager
@_tracing.no_effect(device="which device the kernels run on changes no value")
def _coalescing_manager(group=None, device=None, async_ops=False):
    g = _group(group)
    cm = _CoalescingManager(g.ranks)
    world.coalescing.append(cm)
    try:
        yield cm
    finally:
        world.coalescing.remove(cm)
    if not async_ops:
        cm.wait()


# ---- collectives --------------------------------------------------------

def _root(fn, g, rank, group_rank, name):
    """The global rank of a collective's root, given as a global rank (`src`,
    `dst`) or as a rank in the group (`group_src`, `group_dst`)."""
    if group_rank is not None:
        if rank is not None:
            raise ValueError(f"{fn}(): can not specify both {name} and group_{name}")
        group_rank = operator.index(group_rank)
        if not 0 <= group_rank < g.size():
            raise ValueError(f"{fn}(): group rank {group_rank} is not part of {g!r}")
        return g.ranks[group_rank]
    if rank is None:
        raise ValueError(f"{fn}(): either {name} or group_{name} must be given")
    rank = operator.index(rank)
    if rank not in g.ranks:
        raise ValueError(f"{fn}(): global rank {rank} is not part of {g!r}")
    return rank


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    g = _group(group)
    if _outside(g):
        return None
    _dense("all_reduce", tensor)
    name, values = _reduction("all_reduce", op, tensor, g)
    flat, node = _issue("all_reduce", name, g, (tensor,), values, tensor._a.shape,
                        tensor.dtype, local=values)
    return _deliver("all_reduce", g, [(tensor, flat, node)], async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False,
           group_dst=None):
    """dst gets the reduction; the other ranks' buffers become opaque (gloo
    leaves partial sums there, NCCL does not specify them)."""
    g = _group(group)
    if _outside(g):
        return None
    root = _root("reduce", g, dst, group_dst, "dst")
    _dense("reduce", tensor)
    name, values = _reduction("reduce", op, tensor, g)
    mine = world.rank == root
    flat, node = _issue("reduce", name, g, (tensor,), values, tensor._a.shape,
                        tensor.dtype, root=root, local=values, has_outputs=mine)
    if not mine:
        flat = _opaque(tensor, f"dist.reduce's buffer on rank {world.rank}, not dst "
                       f"{root} (unspecified)")
        node = record(flat.reshape(tensor._a.shape), tensor.dtype, "reduce", "other",
                      (tensor,))._node
    return _deliver("reduce", g, [(tensor, flat, node)], async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    g = _group(group)
    if _outside(g):
        return None
    root = _root("broadcast", g, src, group_src, "src")
    _dense("broadcast", tensor)
    flat, node = _issue("broadcast", "sum", g, (tensor,), tensor._a, tensor._a.shape,
                        tensor.dtype, root=root, local=tensor._a)
    return _deliver("broadcast", g, [(tensor, flat, node)], async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """The output, whatever its shape, holds the members' inputs one after
    another (flat, row-major)."""
    g = _group(group)
    if _outside(g):
        return None
    _dense("all_gather_into_tensor", output_tensor, input_tensor)
    _same_dtype("all_gather_into_tensor", (output_tensor,), input_tensor.dtype)
    if output_tensor.numel() != g.size() * input_tensor.numel():
        raise ValueError("all_gather_into_tensor: output tensor size must be equal to "
                         "world_size times input tensor size")
    rows = input_tensor._a.shape[0] if input_tensor._a.ndim else 1
    out_shape = (g.size() * rows,) + input_tensor._a.shape[1:]
    flat, node = _issue("all_gather", "sum", g, (input_tensor,), input_tensor._a,
                        out_shape, input_tensor.dtype, local=input_tensor._a)
    return _deliver("all_gather", g, [(output_tensor, flat, node)], async_op)


_all_gather_base = all_gather_into_tensor


def all_gather(tensor_list, tensor, group=None, async_op=False):
    g = _group(group)
    if _outside(g):
        return None
    _dense("all_gather", tensor)
    outputs = _listed("all_gather", "tensor_list", tensor_list, g)
    _same_dtype("all_gather", outputs, tensor.dtype)
    if any(t.shape != tensor.shape for t in outputs):
        return _uneven_all_gather(g, outputs, tensor, async_op)
    flat, node = _issue("all_gather", "sum", g, (tensor,), tensor._a,
                        (g.size(),) + tensor._a.shape, tensor.dtype, local=tensor._a)
    n = tensor._a.size
    return _deliver("all_gather", g, [(t, flat[i * n:(i + 1) * n], node)
                                      for i, t in enumerate(outputs)], async_op)


def _uneven_all_gather(g, outputs, tensor, async_op):
    """all_gather of inputs whose sizes differ by member (MoE dispatchers
    gather each rank's own number of tokens): an exchange in which every
    member sends its whole input to every member, member j's landing in
    outputs[j]; the exchange's sizes are checked against the senders'."""
    if tensor.dim() == 0 or any(t.dim() != tensor.dim() or t.shape[1:] != tensor.shape[1:]
                                for t in outputs):
        _tracing.unmodelled("all_gather() into tensors that differ from the input "
                            "beyond their first dimension")
    flat_in = np.concatenate([np.asarray(tensor._a).ravel()] * g.size()) \
        if tensor._a.size else np.asarray([], dtype=object)
    return _exchange(g, outputs, (tensor,), flat_in, [tensor.numel()] * g.size(),
                     [t.numel() for t in outputs], (), async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Member i gets the reduction of flat chunk i of the members' inputs."""
    g = _group(group)
    if _outside(g):
        return None
    _dense("reduce_scatter_tensor", output, input)
    _same_dtype("reduce_scatter_tensor", (output,), input.dtype)
    if input.numel() != g.size() * output.numel():
        raise ValueError("reduce_scatter_tensor: input tensor must be the same size as "
                         "output size times world size")
    name, values = _reduction("reduce_scatter_tensor", op, input, g)
    flat, node = _issue("reduce_scatter", name, g, (input,), values, output._a.shape,
                        input.dtype, local=values)
    return _deliver("reduce_scatter", g, [(output, flat, node)], async_op)


_reduce_scatter_base = reduce_scatter_tensor


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    g = _group(group)
    if _outside(g):
        return None
    _dense("reduce_scatter", output)
    inputs = _listed("reduce_scatter", "input_list", input_list, g)
    _same_dtype("reduce_scatter", inputs, output.dtype)
    from .. import cat
    source = cat([t.reshape(-1) for t in inputs]) if len(inputs) > 1 else inputs[0]
    name, values = _reduction("reduce_scatter", op, source, g)
    if any(t.shape != output.shape for t in inputs):
        return _uneven_reduce_scatter(g, output, inputs, name, values, async_op)
    flat, node = _issue("reduce_scatter", name, g, tuple(inputs), values,
                        output._a.shape, output.dtype, local=values)
    return _deliver("reduce_scatter", g, [(output, flat, node)], async_op)


def _uneven_reduce_scatter(g, output, inputs, name, values, async_op):
    """reduce_scatter of input lists whose j-th tensor has member j's output
    size, the sizes differing by member (MoE dispatchers return each rank's
    own number of tokens): an exchange of inputs[j] to member j, whose sizes
    are checked against the receivers', then the sum (or mean) of what each
    member sent, taken here."""
    if name not in ("sum", "avg") or async_op or any(
            b.ranks == g.ranks for b in world.coalescing):
        _tracing.unmodelled(f"uneven reduce_scatter() with op {name}"
                            + (" asynchronously or coalesced" if name in ("sum", "avg")
                               else ""))
    from .. import empty_like
    received = [empty_like(output) for _ in range(g.size())]
    _exchange(g, received, tuple(inputs), values, [t.numel() for t in inputs],
              [output.numel()] * g.size(), (), False)
    total = received[0]
    for part in received[1:]:
        total = total + part
    output.copy_(total / g.size() if name == "avg" else total)
    return None


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


def _exchange(g, output_tensors, source, flat_in, sends, receives, row_shape,
              async_op):
    """An all-to-all of rows: `sends[j]` rows of `flat_in` to member j,
    `receives[j]` rows from it, written into `output_tensors` in order. It
    is recorded as sending those rows, whatever the source tensors' shapes
    (an uneven all_gather sends its input to every member, or nothing)."""
    even = len(set(sends)) == 1 and sends == receives
    out_shape = (sum(receives),) + tuple(row_shape)
    flat, node = _issue("all_to_all", "sum", g, source, flat_in, out_shape,
                        source[0].dtype, splits=None if even else (sends, receives),
                        local=flat_in, in_shape=(sum(sends),) + tuple(row_shape))
    writes, start = [], 0
    for t in output_tensors:
        writes.append((t, flat[start:start + t._a.size], node))
        start += t._a.size
    return _deliver("all_to_all", g, writes, async_op)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    g = _group(group)
    if _outside(g):
        return None
    _dense("all_to_all_single", output, input)
    _same_dtype("all_to_all_single", (output,), input.dtype)
    rows_in = input._a.shape[0] if input._a.ndim else 0
    sends = _split_sizes(input_split_sizes, rows_in, g, "input_split_sizes")
    receives = _split_sizes(output_split_sizes, output._a.shape[0], g,
                            "output_split_sizes")
    if sum(sends) != rows_in or sum(receives) != output._a.shape[0]:
        raise ValueError("all_to_all_single: split sizes do not add up to the "
                         "tensors' first dimension")
    if output._a.shape[1:] != input._a.shape[1:]:
        raise ValueError("all_to_all_single: input and output rows differ in shape")
    return _exchange(g, [output], (input,), input._a, sends, receives,
                     input._a.shape[1:], async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Member i's input_tensor_list[j] becomes member j's
    output_tensor_list[i]; the tensors may differ in size."""
    g = _group(group)
    if _outside(g):
        return None
    if (g._backend or world.backend) == "gloo":
        raise RuntimeError("ProcessGroup gloo does not support alltoall")
    inputs = _listed("all_to_all", "input_tensor_list", input_tensor_list, g)
    outputs = _listed("all_to_all", "output_tensor_list", output_tensor_list, g)
    _same_dtype("all_to_all", inputs + outputs, inputs[0].dtype)
    flat_in = np.concatenate([np.asarray(t._a).ravel() for t in inputs]) \
        if any(t._a.size for t in inputs) else np.asarray([], dtype=object)
    return _exchange(g, outputs, tuple(inputs), flat_in, [t.numel() for t in inputs],
                     [t.numel() for t in outputs], (), async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False,
           group_dst=None):
    """dst's gather_list[i] gets member i's tensor (dst 0 when none given)."""
    g = _group(group)
    if _outside(g):
        return None
    root = _root("gather", g, 0 if dst is None and group_dst is None else dst,
                 group_dst, "dst")
    _dense("gather", tensor)
    mine = world.rank == root
    if mine and not gather_list:
        raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
    if not mine and gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on "
                         "non-destination ranks.")
    outputs = _listed("gather", "gather_list", gather_list, g) if mine else []
    _same_dtype("gather", outputs, tensor.dtype)
    if any(t.shape != tensor.shape for t in outputs):
        raise ValueError("gather: every tensor of gather_list must have the input's shape")
    flat, node = _issue("gather", "sum", g, (tensor,), tensor._a,
                        (g.size(),) + tensor._a.shape, tensor.dtype, root=root,
                        local=tensor._a, has_outputs=mine)
    n = tensor._a.size
    return _deliver("gather", g, [(t, flat[i * n:(i + 1) * n], node)
                                  for i, t in enumerate(outputs)], async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False,
            group_src=None):
    """Member i's tensor gets src's scatter_list[i] (src 0 when none given)."""
    g = _group(group)
    if _outside(g):
        return None
    root = _root("scatter", g, 0 if src is None and group_src is None else src,
                 group_src, "src")
    _dense("scatter", tensor)
    mine = world.rank == root
    if mine and not scatter_list:
        raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
    if not mine and scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on "
                         "non-source ranks.")
    inputs = _listed("scatter", "scatter_list", scatter_list, g) if mine else []
    _same_dtype("scatter", inputs, tensor.dtype)
    if any(t.shape != tensor.shape for t in inputs):
        raise ValueError("scatter: every tensor of scatter_list must have the output's "
                         "shape")
    flat_in = np.concatenate([np.asarray(t._a).ravel() for t in inputs]) if inputs \
        else np.asarray([], dtype=object)
    flat, node = _issue("scatter", "sum", g, tuple(inputs) or (tensor,), flat_in,
                        tensor._a.shape, tensor.dtype, root=root,
                        local=flat_in[:tensor._a.size])
    return _deliver("scatter", g, [(tensor, flat, node)], async_op)


@_tracing.no_effect(device_ids="the devices NCCL synchronises on change no value")
def barrier(group=None, async_op=False, device_ids=None):
    """Synchronises only: no value changes, nothing is recorded."""
    g = _group(group)
    if _outside(g):
        return None
    return Work() if async_op else None


@_tracing.no_effect(timeout="a time limit changes no value",
                    wait_all_ranks="which failures are reported changes no value")
def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """A barrier that reports ranks that do not reach it: no value changes."""
    _group(group)


# ---- Python objects (pickled, as PyTorch does) --------------------------

class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, (Tensor, _sp.Term)):
            _tracing.unmodelled("a collective of Python objects holding tensors or "
                                "symbolic values (only plain objects are modelled)")
        return None


def _pickled(obj):
    import io
    buffer = io.BytesIO()
    _Pickler(buffer).dump(obj)
    return list(buffer.getvalue())


def _int_tensor(values):
    from .. import int64, tensor
    return tensor(list(values), dtype=int64)


def _concrete_ints(t):
    """A collective's integer result as Python ints: known only once the
    ranks are linked, so the first tracing pass stops here and the next one
    runs with the values."""
    return [int(v) for v in t.tolist()]


def all_gather_object(object_list, obj, group=None):
    g = _group(group)
    if _outside(g):
        return None
    data = _pickled(obj)
    sizes = _int_tensor([0] * g.size())
    all_gather_into_tensor(sizes, _int_tensor([len(data)]), group=group)
    sizes = _concrete_ints(sizes)
    longest = max(sizes)
    gathered = _int_tensor([0] * (longest * g.size()))
    all_gather_into_tensor(gathered, _int_tensor(data + [0] * (longest - len(data))),
                           group=group)
    gathered = _concrete_ints(gathered)
    for i, n in enumerate(sizes):
        object_list[i] = pickle.loads(bytes(gathered[i * longest:i * longest + n]))
    return None


@_tracing.no_effect(device="where the bytes travel changes no value")
def broadcast_object_list(object_list, src=None, group=None, device=None,
                          group_src=None):
    g = _group(group)
    if _outside(g):
        return None
    root = _root("broadcast_object_list", g, 0 if src is None and group_src is None
                 else src, group_src, "src")
    mine = world.rank == root
    data = [_pickled(o) for o in object_list] if mine else [[] for _ in object_list]
    sizes = _int_tensor([len(d) for d in data])
    broadcast(sizes, src=root, group=group)
    sizes = _concrete_ints(sizes)
    payload = _int_tensor([b for d in data for b in d] if mine else [0] * sum(sizes))
    broadcast(payload, src=root, group=group)
    payload = _concrete_ints(payload)
    if not mine:
        start = 0
        for i, n in enumerate(sizes):
            object_list[i] = pickle.loads(bytes(payload[start:start + n]))
            start += n
    return None


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    raise _tracing.Unsupported("torch.distributed.gather_object is not modelled")


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None,
                        src=None, group=None, group_src=None):
    raise _tracing.Unsupported("torch.distributed.scatter_object_list is not modelled")


# ---- point to point -----------------------------------------------------

class _Pair:
    """The channel of the messages from `sender` to `receiver`: linked as one
    more kind of collective (send_recv), numbered per direction and apart
    from the collectives of a group of the same ranks."""

    def __init__(self, sender, receiver):
        self.ranks = (sender, receiver)

    def size(self):
        return 2


def _peer(fn, g, rank, group_rank, name):
    peer = _root(fn, g, rank, group_rank, name)
    if peer == world.rank:
        which = "destination" if name == "dst" else "source"
        raise ValueError(f"Invalid {which} rank: {which} rank should not be the same as "
                         "the rank of the current process.")
    return peer


def _tagged(fn, tag):
    if tag:
        _tracing.unmodelled(f"{fn}() with a tag (messages are matched in order, per "
                            "pair of ranks)")


def _send(fn, tensor, dst, group, tag, group_dst, blocking=False):
    """Records the message; the receiver's buffer is linked to its values.
    `blocking`: dist.send, which returns only once the receiver has posted
    the matching receive."""
    g = _group(group)
    if _outside(g):
        return False
    _tagged(fn, tag)
    peer = _peer(fn, g, dst, group_dst, "dst")
    _dense(fn, tensor)
    _issue("send_recv", "sum", _Pair(world.rank, peer), (tensor,), tensor._a,
           tensor._a.shape, tensor.dtype, root=world.rank, has_outputs=False,
           blocking=blocking)
    return True


def _recv(fn, tensor, src, group, tag, group_src, blocking=False):
    """The write of the message into `tensor`, as (tensor, values, node), and
    the sender's global rank. `blocking`: dist.recv, which returns only once
    the sender has posted the message."""
    g = _group(group)
    if _outside(g):
        return None, -1
    _tagged(fn, tag)
    if src is None and group_src is None:
        _tracing.unmodelled(f"{fn}() from any source (which message arrives first "
                            "depends on timing)")
    peer = _peer(fn, g, src, group_src, "src")
    _dense(fn, tensor)
    flat, node = _issue("send_recv", "sum", _Pair(peer, world.rank), (tensor,), tensor._a,
                        tensor._a.shape, tensor.dtype, root=peer, blocking=blocking)
    return (tensor, flat, node), peer


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    _send("send", tensor, dst, group, tag, group_dst, blocking=True)


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Blocks until the message is in `tensor`; returns the sender's rank."""
    write, peer = _recv("recv", tensor, src, group, tag, group_src, blocking=True)
    if write is not None:
        Work([write])._complete()
    return peer


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    return Work(message=_last_call) if _send("isend", tensor, dst, group, tag, group_dst) \
        else None


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """The buffer holds unspecified values until wait() (a read before it
    races with the transfer)."""
    write, _ = _recv("irecv", tensor, src, group, tag, group_src)
    if write is None:
        return None
    message = _last_call
    _opaque_write(tensor, "the buffer of an irecv read before its wait()", "irecv")
    return Work([write], message=message)


class P2POp:
    """One send or receive for batch_isend_irecv: `op` is dist.isend or
    dist.irecv."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type "
                             "``torch.distributed.isend`` or ``torch.distributed.irecv``.")
        self.op, self.tensor, self.peer, self.group = op, tensor, peer, group
        self.tag, self.group_peer = tag, group_peer


def batch_isend_irecv(p2p_op_list):
    """Every operation of the list, in order; one Work each."""
    if not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to be of type "
                         "``torch.distributed.P2POp``.")
    return [p.op(p.tensor, p.peer, p.group, p.tag, p.group_peer) for p in p2p_op_list]


from . import nn  # noqa: E402,F401  (torch.distributed.nn.functional)

__all__ = ["all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor",
           "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single",
           "gather", "scatter", "all_gather_object", "broadcast_object_list",
           "get_rank", "get_world_size", "get_global_rank", "get_group_rank",
           "get_process_group_ranks", "new_group", "new_subgroups",
           "new_subgroups_by_enumeration", "ReduceOp", "group", "GroupMember",
           "barrier", "monitored_barrier", "init_process_group",
           "destroy_process_group", "is_initialized", "is_available", "get_backend",
           "Backend", "ProcessGroup", "Work", "Tensor"]


def __getattr__(name):
    """A torch.distributed name that normal lookup did not find (see
    _tracing.unknown_attribute)."""
    from .._real_surface import NAMES
    return _tracing.unknown_attribute("torch.distributed", name, NAMES["torch.distributed"])


def _star_names():
    """`from torch.distributed import *` binds every public name real
    torch.distributed has (it defines no __all__): ours where modelled, an
    import-time placeholder (unknown_attribute) where not. The standard
    library's names it re-exports (os, sys, Enum, typing's) are left out:
    their importer has its own."""
    import enum
    import typing
    from .._real_surface import NAMES
    stdlib = {"os", "sys"} | set(dir(enum)) | set(dir(typing))
    # Real torch.distributed's modules (its subpackages, torch itself): an
    # importer names them by their own imports, never by this star.
    modules = {"torch", "algorithms", "autograd", "constants", "device_mesh",
               "distributed_c10d", "remote_device", "rpc", "tensor", "utils", "nn"}
    return sorted(set(__all__) | {n for n in NAMES["torch.distributed"]
                                  if not n.startswith("_") and n not in stdlib | modules})


__all__ = _star_names()
