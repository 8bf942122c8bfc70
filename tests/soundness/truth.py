#!/usr/bin/python3
"""Ground truth of one program on real PyTorch (Debian's python3-torch), in
one process: every rank runs in its own thread with real tensors, and the
torch.distributed calls the programs make are replaced by an in-process
implementation that performs the collectives on those tensors (a barrier per
group). Much faster than gloo with one process per rank, and it supports the
collectives gloo lacks (all_gather_into_tensor, reduce_scatter_tensor).

Each rank runs tests/groundtruth/check_pairs.py's _rank_main itself (the
same entry unpacking, weight sharding by partition_dim / partition_stride,
inputs and saved record), and the verdict is check_pairs.step_reconciles'.
What matches c10d: collectives write their results into the caller's
tensors without touching autograd or the version counter (as c10d does: an
in-place collective on a tensor saved for backward goes unnoticed by
autograd), a reduction runs in the payload's dtype, a group of one is the
identity, mismatched collectives across a group are a hang. Point-to-point
messages (send, recv, isend, irecv, batch_isend_irecv) move when both sides
are posted, as gloo's do, matched in the order posted; a message nobody
receives, a receive nobody sends, or stages that each send first, are a hang. The entry's `backward`
callable is honoured, and a loss that needs no gradient (a pipeline schedule
that ran backward inside the model's forward) is not backpropagated again
(see _StepLoss).

verdict(path, world) -> ("reconciles" | "mismatch" | "error", detail)
"""
import contextlib
import os
import sys
import threading
import traceback

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "groundtruth"))
import check_pairs  # noqa: E402  (its comparison and entry logic)
import step_semantics  # noqa: E402

BARRIER_TIMEOUT_S = 5.0


class Hang(Exception):
    """Ranks disagree on their collectives, or one never joins: a real run hangs."""


class _Group:
    def __init__(self, ranks):
        self.ranks = list(ranks)
        self.barrier = threading.Barrier(len(self.ranks), timeout=BARRIER_TIMEOUT_S)
        self.slots = [None] * len(self.ranks)

    def exchange(self, rank, payload):
        """Every member's payload, in group order."""
        if len(self.ranks) == 1:
            return [payload[1]]
        self.slots[self.ranks.index(rank)] = payload
        self._wait()
        values = list(self.slots)
        self._wait()  # everyone has read before the next collective writes
        kinds = {v[0] for v in values}
        if len(kinds) != 1:
            raise Hang(f"ranks issue different collectives: {sorted(kinds)}")
        return [v[1] for v in values]

    def _wait(self):
        try:
            self.barrier.wait()
        except threading.BrokenBarrierError:
            raise Hang("a rank never joined the collective") from None


class _Work:
    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True


class World:
    """One run of a program at `size` ranks: the groups, each thread's rank
    and the turn lock (see init_process_group)."""

    def __init__(self, size):
        self.size = size
        self.world = _Group(range(size))
        self.groups = []        # new_group results in creation order
        self.calls = {}         # rank -> number of new_group calls so far
        self.local = threading.local()
        self.lock = threading.RLock()
        self.mail = {}          # (src, dst) -> (sends, receives) posted, not yet matched
        self.mail_cond = threading.Condition()

    @property
    def rank(self):
        return self.local.rank

    def group(self, group):
        return self.world if group is None or group is dist.group.WORLD else group

    def abort(self):
        for g in [self.world] + self.groups:
            g.barrier.abort()


_current = None  # the World of the run in progress


def _group(group):
    return _current.group(group)


def _write(tensor, value):
    # Through .data: the storage changes, autograd and the version counter
    # do not, as with c10d.
    tensor.data.copy_(value)


def _reduce(values, op):
    acc = values[0].clone()
    for v in values[1:]:
        if op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG):
            acc += v
        elif op == dist.ReduceOp.PRODUCT:
            acc *= v
        elif op == dist.ReduceOp.MAX:
            acc = torch.maximum(acc, v)
        elif op == dist.ReduceOp.MIN:
            acc = torch.minimum(acc, v)
        else:
            raise NotImplementedError(f"reduce op {op}")
    if op == dist.ReduceOp.AVG:
        acc = acc / len(values) if acc.is_floating_point() else acc // len(values)
    return acc


def _payload(kind, tensor):
    return (f"{kind}{tuple(tensor.shape)}{tensor.dtype}", tensor.detach().clone())


def _async(async_op):
    return _Work() if async_op else None


def all_reduce(tensor, op=dist.ReduceOp.SUM, group=None, async_op=False):
    g = _group(group)
    _write(tensor, _reduce(g.exchange(_current.rank, _payload(f"all_reduce{op}", tensor)), op))
    return _async(async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    g = _group(group)
    values = g.exchange(_current.rank, _payload("all_gather", tensor))
    if len(tensor_list) != len(values):
        raise RuntimeError("all_gather: output list size differs from the group's")
    for out, v in zip(tensor_list, values):
        _write(out, v)
    return _async(async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    g = _group(group)
    values = g.exchange(_current.rank, _payload("all_gather_into_tensor", input_tensor))
    _write(output_tensor, torch.cat(values, dim=0).view_as(output_tensor))
    return _async(async_op)


def reduce_scatter_tensor(output, input, op=dist.ReduceOp.SUM, group=None, async_op=False):
    g = _group(group)
    values = g.exchange(_current.rank, _payload(f"reduce_scatter_tensor{op}", input))
    index = g.ranks.index(_current.rank)
    chunks = [v.chunk(len(g.ranks), dim=0)[index] for v in values]
    _write(output, _reduce(chunks, op).view_as(output))
    return _async(async_op)


def reduce_scatter(output, input_list, op=dist.ReduceOp.SUM, group=None, async_op=False):
    g = _group(group)
    index = g.ranks.index(_current.rank)
    values = g.exchange(_current.rank, ("reduce_scatter", [t.detach().clone() for t in input_list]))
    _write(output, _reduce([v[index] for v in values], op))
    return _async(async_op)


def broadcast(tensor, src, group=None, async_op=False):
    g = _group(group)
    values = g.exchange(_current.rank, _payload(f"broadcast{src}", tensor))
    _write(tensor, values[g.ranks.index(src)])
    return _async(async_op)


def reduce(tensor, dst, op=dist.ReduceOp.SUM, group=None, async_op=False):
    g = _group(group)
    result = _reduce(g.exchange(_current.rank, _payload(f"reduce{dst}{op}", tensor)), op)
    if _current.rank == dst:
        _write(tensor, result)
    return _async(async_op)


def barrier(group=None, async_op=False, device_ids=None):
    _group(group).exchange(_current.rank, ("barrier", None))
    return _async(async_op)


# Point-to-point messages between pipeline stages, as gloo delivers them: a
# message moves when its send and its receive are both posted (gloo's send
# waits for the receiver; an isend or irecv posts at once, its wait() waits),
# sends and receives of a pair of ranks matched in the order posted (as
# shardproof links them). A send and a receive that wait for each other
# crosswise (two stages each sending first) are a deadlock, as on gloo; a
# receive buffer of another size or dtype, a message that never comes, or
# one posted and never received by the end of the run is a hang (shardproof's
# SP003).
class _Message:
    def __init__(self, tensor):
        self.tensor, self.done, self.error = tensor, threading.Event(), None


def _pending(src, dst):
    return _current.mail.setdefault((src, dst), ([], []))  # (sends, receives) posted


def _global_peer(peer, group):
    g = _group(group)
    if peer is None:
        raise NotImplementedError("truth.py does not match receives from any source")
    if peer not in g.ranks:
        raise ValueError(f"peer {peer} is not in the group")
    if peer == _current.rank:
        raise ValueError("Invalid destination rank: destination rank should not be the same "
                         "as the rank of the current process.")
    return peer


def _post(tensor, src, dst, sending):
    """Posts one side of a message; delivers it if the other side is there."""
    w = _current
    mine = _Message(tensor.detach().clone() if sending else tensor)
    with w.mail_cond:
        sends, receives = _pending(src, dst)
        other = (receives if sending else sends)
        if not other:
            (sends if sending else receives).append(mine)
            return mine
        peer = other.pop(0)
    send, receive = (mine, peer) if sending else (peer, mine)
    # gloo moves as many elements as the buffers hold, whatever their shapes
    # (a [3, 4] tensor into a [12] buffer arrives in flat order).
    if send.tensor.numel() != receive.tensor.numel() or \
            send.tensor.dtype != receive.tensor.dtype:
        send.error = receive.error = (
            f"rank {dst} receives {tuple(send.tensor.shape)} {send.tensor.dtype} from rank "
            f"{src} into a {tuple(receive.tensor.shape)} {receive.tensor.dtype} buffer")
    else:
        _write(receive.tensor, send.tensor.reshape(receive.tensor.shape))
    send.done.set()
    receive.done.set()
    return mine


def _wait_message(message):
    if not message.done.wait(BARRIER_TIMEOUT_S):
        raise Hang(f"rank {_current.rank} waits for a point-to-point message that never "
                   "comes (or a send nobody receives)")
    if message.error:
        raise Hang(message.error)


class _MessageWork(_Work):
    def __init__(self, message):
        self.message = message

    def wait(self, timeout=None):
        PATCHED["_wait_message"](self.message)
        return True

    def is_completed(self):
        return self.message.done.is_set()


def send(tensor, dst=None, group=None, tag=0):
    PATCHED["_wait_message"](_post(tensor, _current.rank, _global_peer(dst, group), True))


def recv(tensor, src=None, group=None, tag=0):
    src = _global_peer(src, group)
    PATCHED["_wait_message"](_post(tensor, src, _current.rank, False))
    return src


def isend(tensor, dst=None, group=None, tag=0):
    return _MessageWork(_post(tensor, _current.rank, _global_peer(dst, group), True))


def irecv(tensor, src=None, group=None, tag=0):
    return _MessageWork(_post(tensor, _global_peer(src, group), _current.rank, False))


class P2POp:
    def __init__(self, op, tensor, peer=None, group=None, tag=0):
        if op not in (PATCHED["isend"], PATCHED["irecv"]):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type "
                             "``torch.distributed.isend`` or ``torch.distributed.irecv``.")
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag


def batch_isend_irecv(p2p_op_list):
    if not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to be of type "
                         "``torch.distributed.P2POp``.")
    return [p.op(p.tensor, p.peer, p.group, p.tag) for p in p2p_op_list]


def new_group(ranks=None, timeout=None, backend=None, pg_options=None):
    """Every rank creates every group in the same order (as c10d requires):
    the k-th call returns the same group object on every rank."""
    w = _current
    with w.lock:
        k = w.calls.get(w.rank, 0)
        w.calls[w.rank] = k + 1
        if k == len(w.groups):
            w.groups.append(_Group(sorted(ranks) if ranks is not None else range(w.size)))
        g = w.groups[k]
    if ranks is not None and sorted(ranks) != g.ranks:
        raise RuntimeError("new_group called with different ranks on different ranks")
    # A rank outside the group gets a handle it cannot use, as in c10d.
    return g if w.rank in g.ranks else dist.GroupMember.NON_GROUP_MEMBER


def get_rank(group=None):
    g = _group(group)
    return g.ranks.index(_current.rank) if _current.rank in g.ranks else -1


def get_world_size(group=None):
    return len(_group(group).ranks)


def get_process_group_ranks(group):
    return list(_group(group).ranks)


def get_global_rank(group, group_rank):
    return _group(group).ranks[group_rank]


def _unsupported(name):
    def fail(*args, **kwargs):
        raise NotImplementedError(f"truth.py does not implement torch.distributed.{name}")
    return fail


PATCHED = dict(
    all_reduce=all_reduce, all_gather=all_gather, all_gather_into_tensor=all_gather_into_tensor,
    _all_gather_base=all_gather_into_tensor, reduce_scatter_tensor=reduce_scatter_tensor,
    _reduce_scatter_base=reduce_scatter_tensor, reduce_scatter=reduce_scatter, broadcast=broadcast,
    reduce=reduce, barrier=barrier, new_group=new_group, get_rank=get_rank,
    get_world_size=get_world_size, get_process_group_ranks=get_process_group_ranks,
    get_global_rank=get_global_rank, is_initialized=lambda: True, is_available=lambda: True,
    get_backend=lambda group=None: "gloo",
    init_process_group=_unsupported("init_process_group"),
    all_to_all_single=_unsupported("all_to_all_single"), all_to_all=_unsupported("all_to_all"),
    send=send, recv=recv, isend=isend, irecv=irecv, P2POp=P2POp, _wait_message=_wait_message,
    batch_isend_irecv=batch_isend_irecv, gather=_unsupported("gather"),
    scatter=_unsupported("scatter"),
    all_gather_object=_unsupported("all_gather_object"),
    broadcast_object_list=_unsupported("broadcast_object_list"))


def _install():
    for name, fn in PATCHED.items():
        setattr(dist, name, fn)


_install()


# check_pairs._rank_main runs as it is in each rank's thread. The global RNG
# is shared by the threads, so the ranks take turns between collectives
# (from init_process_group to the first, from each to the next), and each
# turn starts from the generator state the rank's previous turn left: every
# rank draws what its own process would, before and after its collectives.
def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       **kwargs):
    if world_size != _current.size:
        raise RuntimeError(f"init_process_group: world size {world_size}, run at {_current.size}")
    _current.local.rank, _current.local.rng = rank, None
    _begin_turn()


def _begin_turn():
    _current.turn.acquire()
    _current.local.turn = True
    if _current.local.rng is not None:
        torch.set_rng_state(_current.local.rng)


def _end_turn():
    if getattr(_current.local, "turn", False):
        _current.local.rng = torch.get_rng_state()
        _current.local.turn = False
        _current.turn.release()


def _collective(fn):
    def wrapper(*args, **kwargs):
        _end_turn()
        try:
            return fn(*args, **kwargs)
        finally:
            _begin_turn()
    wrapper.__name__ = fn.__name__
    return wrapper


for _name in ("all_reduce", "all_gather", "all_gather_into_tensor", "_all_gather_base",
              "reduce_scatter_tensor", "_reduce_scatter_base", "reduce_scatter", "broadcast",
              "reduce", "barrier", "_wait_message"):
    PATCHED[_name] = _collective(PATCHED[_name])
PATCHED.update(init_process_group=init_process_group,
               destroy_process_group=lambda group=None: None)
_install()


# The training step's backward half as shardproof runs it: the entry's
# `backward` callable, and no second backward of a loss that needs no gradient.
step_semantics.install()


def run(path, world, workdir, reference_file=None):
    """Per-rank records of `path` at `world` ranks (check_pairs' files), or
    raises Hang / the first rank's error."""
    global _current
    _current = World(world)
    _current.turn = threading.Lock()
    outs = [os.path.join(workdir, f"{os.getpid()}-{world}-{r}.pt") for r in range(world)]
    error = [None] * world

    def thread_main(rank):
        try:
            check_pairs._rank_main(path, rank, world, 0, reference_file, outs[rank])
        except BaseException as e:  # noqa: B902 (reported to the caller)
            where = traceback.extract_tb(e.__traceback__)[-1]
            error[rank] = e if isinstance(e, Hang) else RuntimeError(
                f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''} "
                f"({os.path.basename(where.filename)}:{where.lineno})")
            _current.abort()  # the other ranks must not wait for this one
        finally:
            _end_turn()

    threads = [threading.Thread(target=thread_main, args=(r,), daemon=True) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
        if t.is_alive():
            _current.abort()
            raise Hang("a rank did not finish within 60 s")
    real = [e for e in error if e is not None and not isinstance(e, Hang)]
    if real:
        raise real[0]
    hangs = [e for e in error if e is not None]
    if hangs:
        raise hangs[0]
    unmatched = sorted(pair for pair, (sends, receives) in _current.mail.items()
                       if sends or receives)
    if unmatched:
        raise Hang(f"point-to-point messages posted and never matched (from, to): {unmatched}")
    return [torch.load(o) for o in outs], outs


def verdict(path, world=2, workdir=None):
    """("reconciles" | "mismatch" | "error", detail), as check_pairs judges a
    run against the program's own world-1 reference. A bf16 program that
    does not reconcile is judged again over (nearly) the reals: where it
    reconciles with bf16 computed in float64, its distributed and
    single-device runs differ by bf16 rounding only (another summation
    order), which a proof over the reals rightly ignores. fp16 stays fp16:
    a bf16 value narrowed to fp16 still overflows there."""
    torch.set_num_threads(1)
    workdir = workdir or os.path.dirname(os.path.abspath(path))
    native = _judge(path, world, workdir)
    if native[0] != "mismatch" or native[1].startswith("hang") or \
            "bfloat16" not in open(path).read():
        return native
    with _bf16_as_float64():
        exact = _judge(path, world, workdir, compare=False)
    if exact[0] == "runs" and check_pairs.step_reconciles(*exact[1]):
        return "reconciles", f"over the reals (the bf16 run differs by rounding: {native[1]})"
    return native


def _judge(path, world, workdir, compare=True):
    """verdict() of the program as it is; with compare=False, ("runs",
    (reference, ranks)) for the caller to compare."""
    try:
        reference, reference_files = run(path, 1, workdir)
    except BaseException as e:  # noqa: B902 (a hang at world 1 is an error too)
        return "error", f"world 1: {e}"
    try:
        ranks, _ = run(path, world, workdir, reference_files[0])
    except Hang as e:
        return "mismatch", f"hang: {e}"
    except BaseException as e:  # noqa: B902
        return "error", f"world {world}: {e}"
    if not compare:
        return "runs", (reference[0], ranks)
    if check_pairs.step_reconciles(reference[0], ranks):
        return "reconciles", ""
    return "mismatch", _first_difference(reference[0], ranks)


@contextlib.contextmanager
def _bf16_as_float64():
    """torch.bfloat16 (the dtype and the Tensor method) and Tensor.float()
    are float64 while the program runs; compared afterwards, at float32's
    tolerance."""
    saved = torch.bfloat16, torch.Tensor.bfloat16, torch.Tensor.float
    torch.bfloat16 = torch.float64
    torch.Tensor.bfloat16 = torch.Tensor.float = torch.Tensor.double
    try:
        yield
    finally:
        torch.bfloat16, torch.Tensor.bfloat16, torch.Tensor.float = saved


def _first_difference(reference, ranks):
    """What does not reconcile (for the report), in check_pairs' terms."""
    for k, ref_out in enumerate(reference["out"]):
        if not check_pairs.reconciles(ref_out, [r["out"][k] for r in ranks],
                                      [r["shard"] for r in ranks]):
            return f"output {k}"
    for name, ref_grad in reference["param_grads"].items():
        if not check_pairs.step_reconciles(
                dict(reference, out=[], input_grads=[], param_grads={name: ref_grad}),
                [dict(r, param_grads={name: r["param_grads"].get(name)}) for r in ranks]):
            return f"gradient of {name}"
    return "input gradient"


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(p, *verdict(p))
