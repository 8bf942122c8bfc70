# Point-to-point messages, as a pipeline passes activations between stages:
# every rank is a stage that applies its own step to what the stage before
# sent, and the last stage's result is broadcast so that every rank returns
# the whole model's output. Messages are matched in order, per pair of ranks.
import os

import torch
import torch.distributed as dist


def _stage_step(x, stage):
    return x * (stage + 2) + 1


def _reference(x):
    """The single-device run: every stage's step in turn."""
    for stage in range(4):
        x = _stage_step(x, stage)
    return x


class Pipeline(torch.nn.Module):
    """Stage r (of 4 stages spread over the ranks) runs on rank r * world // 4."""

    def __init__(self, send, recv, receive_shape=None, skip_receive_on=None):
        super().__init__()
        self.send, self.recv = send, recv
        self.receive_shape, self.skip_receive_on = receive_shape, skip_receive_on

    def forward(self, x):
        world, rank = dist.get_world_size(), dist.get_rank()
        if world == 1:
            return _reference(x)
        owner = [stage * world // 4 for stage in range(4)]
        h = x
        for stage in range(4):
            previous = owner[stage - 1] if stage else owner[0]
            if owner[stage] == rank:
                if previous != rank and rank != self.skip_receive_on:
                    h = torch.empty(self.receive_shape or x.shape)
                    self.recv(h, previous)
                h = _stage_step(h, stage)
            elif previous == rank:
                self.send(h, owner[stage])
        dist.broadcast(h, src=owner[-1])
        return h


def _blocking_send(tensor, dst):
    dist.send(tensor, dst)


def _blocking_recv(tensor, src):
    dist.recv(tensor, src)


def _isend(tensor, dst):
    dist.isend(tensor, dst).wait()


def _irecv(tensor, src):
    dist.irecv(tensor, src).wait()


def _batched_send(tensor, dst):
    for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, dst)]):
        work.wait()


def _batched_recv(tensor, src):
    for work in dist.batch_isend_irecv([dist.P2POp(dist.irecv, tensor, src)]):
        work.wait()


def _irecv_read_before_wait(tensor, src):
    work = dist.irecv(tensor, src)
    early = tensor.clone()  # reads the buffer while the message may still be arriving
    work.wait()
    tensor.copy_(early)


def _header_send(tensor, dst):
    """The tensor's shape first, as DeepSpeed's pipeline engine sends it: an
    int32 buffer of 8 holding [ndim, *shape], its tail never written."""
    header = torch.empty(8, dtype=torch.int32)
    meta = [tensor.dim(), *tensor.shape]
    header[:len(meta)].copy_(torch.tensor(meta, dtype=torch.int32))
    dist.send(header, dst)
    dist.send(tensor, dst)


def _header_recv_into(tensor, src, misread=False):
    """Allocates the buffer from the header (Python numbers of the received
    values), receives into it, and copies it to `tensor`."""
    header = torch.empty(8, dtype=torch.int32)
    dist.recv(header, src)
    ndim = header[0].item()
    shape = header[:ndim].tolist() if misread else header[1:1 + ndim].tolist()
    buffer = torch.empty(shape)
    dist.recv(buffer, src)
    tensor.copy_(buffer)


def _header_recv(tensor, src):
    _header_recv_into(tensor, src)


def _header_misread_recv(tensor, src):
    _header_recv_into(tensor, src, misread=True)


def blocking():
    return Pipeline(_blocking_send, _blocking_recv), (torch.randn(3),)


def nonblocking():
    return Pipeline(_isend, _irecv), (torch.randn(3),)


def batched():
    return Pipeline(_batched_send, _batched_recv), (torch.randn(3),)


def receive_missing():
    """The last stage's rank never receives: its sender would wait forever."""
    return Pipeline(_blocking_send, _blocking_recv,
                    skip_receive_on=dist.get_world_size() - 1), (torch.randn(3),)


def receive_buffer_of_another_shape():
    return Pipeline(_blocking_send, _blocking_recv, receive_shape=(4,)), (torch.randn(3),)


def read_before_wait():
    return Pipeline(_isend, _irecv_read_before_wait), (torch.randn(3),)


class _SendToSelf(torch.nn.Module):
    def forward(self, x):
        dist.send(x, dist.get_rank())
        return x


def send_to_self():
    return _SendToSelf(), (torch.randn(3),)


def shape_sent_first():
    """The receiver sizes its buffer from a header of Python numbers."""
    return Pipeline(_header_send, _header_recv), (torch.randn(3),)


def shape_sent_first_misread():
    """The receiver takes the header's ndim for the first size: a buffer of
    1 element for a message of 3."""
    return Pipeline(_header_send, _header_misread_recv), (torch.randn(3),)



class HeaderChain(torch.nn.Module):
    """As many stages as the checked world has ranks (SHARDPROOF_WORLD: the
    single-device reference runs them all), one per rank: each receives its
    input's shape and then its input from the rank before, applies its step
    and sends both on; the last rank's result is broadcast. A rank learns
    its header only once the rank before has received its own: one more
    tracing pass per rank."""

    def forward(self, x):
        stages, world, rank = int(os.environ["SHARDPROOF_WORLD"]), \
            dist.get_world_size(), dist.get_rank()
        if world == 1:
            for stage in range(stages):
                x = _stage_step(x, stage)
            return x
        h = x
        if rank > 0:
            header = torch.empty(8, dtype=torch.int32)
            dist.recv(header, rank - 1)
            h = torch.empty(header[1:1 + header[0].item()].tolist())
            dist.recv(h, rank - 1)
        h = _stage_step(h, rank)
        if rank + 1 < world:
            _header_send(h, rank + 1)
        dist.broadcast(h, src=world - 1)
        return h


def shape_sent_first_every_rank():
    return HeaderChain(), (torch.randn(3),)


# ---- blocking messages that wait on each other ---------------------------
# Neighbouring ranks exchange values, as 1F1B's steady state exchanges an
# activation for a gradient. dist.send and dist.recv return only once the
# peer has posted the matching call (PyTorch documents them as synchronous),
# so two ranks that both send first with dist.send wait on each other.

def _send_first(mine, other, peer):
    dist.send(mine, peer)
    dist.recv(other, peer)


def _recv_first(mine, other, peer):
    dist.recv(other, peer)
    dist.send(mine, peer)


def _odd_even(mine, other, peer):
    """The even rank sends first, the odd one receives first."""
    if dist.get_rank() % 2 == 0:
        _send_first(mine, other, peer)
    else:
        _recv_first(mine, other, peer)


def _isend_waited_first(mine, other, peer):
    """isend(...).wait() before the receive: the wait blocks as send does."""
    dist.isend(mine, peer).wait()
    dist.irecv(other, peer).wait()


def _posted_exchange(mine, other, peer):
    for work in [dist.isend(mine, peer), dist.irecv(other, peer)]:
        work.wait()


def _batched_exchange(mine, other, peer):
    ops = [dist.P2POp(dist.isend, mine, peer), dist.P2POp(dist.irecv, other, peer)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()


class PairExchange(torch.nn.Module):
    """Ranks 2i and 2i+1 each apply stage (rank % 2)'s step and exchange the
    results: both return the sum of the two stages' steps."""

    def __init__(self, exchange):
        super().__init__()
        self.exchange = exchange

    def forward(self, x):
        world, rank = dist.get_world_size(), dist.get_rank()
        if world == 1:
            return _stage_step(x, 0) + _stage_step(x, 1)
        mine, other = _stage_step(x, rank % 2), torch.empty(x.shape)
        self.exchange(mine, other, rank ^ 1)
        return mine + other


def exchange_send_first():
    """Both ranks of a pair block in dist.send: a hang."""
    return PairExchange(_send_first), (torch.randn(3),)


def exchange_recv_first():
    """Both ranks of a pair block in dist.recv: a hang."""
    return PairExchange(_recv_first), (torch.randn(3),)


def exchange_isend_waited_first():
    """Both ranks of a pair wait on their isend before posting the receive."""
    return PairExchange(_isend_waited_first), (torch.randn(3),)


def exchange_odd_even():
    return PairExchange(_odd_even), (torch.randn(3),)


def exchange_posted():
    return PairExchange(_posted_exchange), (torch.randn(3),)


def exchange_batched():
    return PairExchange(_batched_exchange), (torch.randn(3),)


class RingShift(torch.nn.Module):
    """Every rank sends its step to the next rank round a ring and receives
    the previous rank's; `receives_first`: the rank that receives before it
    sends (None: every rank sends first, and every rank waits in its send)."""

    def __init__(self, receives_first=None):
        super().__init__()
        self.receives_first = receives_first

    def forward(self, x):
        world, rank = dist.get_world_size(), dist.get_rank()
        mine = _stage_step(x, 0)
        if world == 1:
            return mine + mine
        other = torch.empty(x.shape)
        if rank == self.receives_first:
            dist.recv(other, (rank - 1) % world)
            dist.send(mine, (rank + 1) % world)
        else:
            dist.send(mine, (rank + 1) % world)
            dist.recv(other, (rank - 1) % world)
        return mine + other


def ring_send_first():
    return RingShift(), (torch.randn(3),)


def ring_one_receives_first():
    """Rank 0 receives first: the sends drain round the ring."""
    return RingShift(receives_first=0), (torch.randn(3),)
