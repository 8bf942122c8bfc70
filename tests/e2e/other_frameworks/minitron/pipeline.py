# Point-to-point messages as nanotron's P2P sends them (our code, in its
# style): first a header of the tensor's storage (its size in bytes, its
# offset, shape and strides), then the data, received into a byte buffer
# viewed as the sent dtype and laid out at the sent shape with as_strided.
import torch
import torch.distributed as dist
import torch.nn as nn

HEADER = 6  # storage bytes, offset, ndim, shape (2), ...


def send(tensor, to_rank):
    assert tensor.is_contiguous() and not tensor.is_complex()
    header = torch.tensor([tensor.untyped_storage().size(), tensor.storage_offset(),
                           tensor.dim(), *tensor.shape, 0], dtype=torch.long)
    dist.send(header, dst=to_rank)
    dist.send(torch.tensor(tensor.stride(), dtype=torch.long), dst=to_rank)
    dist.send(tensor, dst=to_rank)


def recv(from_rank, dtype=torch.float32):
    header = torch.empty(HEADER, dtype=torch.long)
    dist.recv(header, src=from_rank)
    nbytes, offset, ndim = header[0], header[1], header[2]
    shape = header[3:3 + ndim]
    stride = torch.empty(ndim, dtype=torch.long)
    dist.recv(stride, src=from_rank)
    buffer = torch.empty(size=(nbytes,), dtype=torch.int8).view(dtype=dtype)
    dist.recv(buffer, src=from_rank)
    return buffer.as_strided(size=tuple(shape), stride=tuple(stride), storage_offset=offset)


class TwoStages(nn.Module):
    """Layer i on rank i of a world of two; both layers on one rank."""

    def __init__(self):
        super().__init__()
        world, self.rank = dist.get_world_size(), dist.get_rank()
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(2))
        self.mine = [0, 1] if world == 1 else [self.rank]
        self.world = world

    @torch.no_grad()
    def forward(self, x):
        if self.world == 1:
            return torch.tanh(self.layers[1](torch.tanh(self.layers[0](x))))
        if self.rank == 0:
            send(torch.tanh(self.layers[0](x)), to_rank=1)
            out = torch.empty(x.shape[0], 4)
        else:
            out = torch.tanh(self.layers[1](recv(from_rank=0)))
        dist.broadcast(out, src=1)
        return out


class SizeChain(nn.Module):
    """Two ranks trading headers: each message's size is the size the
    previous one announced plus one, read from it as a Python number (as
    nanotron reads a tensor's metadata before its data). Each hop is learned
    one tracing pass after the one before: more hops than the 8 passes a
    run has by default, so the passes must go on while they learn."""

    HOPS = 12

    def forward(self, x):
        if dist.get_world_size() == 1:
            return x * self.HOPS
        rank, size, total = dist.get_rank(), 1, x * 0
        for hop in range(self.HOPS):
            if hop % 2 == rank:
                dist.send(torch.tensor([size + 1]), dst=1 - rank)
                dist.send(x.new_ones(size) * x.sum(), dst=1 - rank)
            else:
                header = torch.empty(1, dtype=torch.long)
                dist.recv(header, src=1 - rank)
                size = int(header[0])
                body = torch.empty(size - 1)
                dist.recv(body, src=1 - rank)
            total = total + x
        dist.broadcast(total, src=0)
        return total
