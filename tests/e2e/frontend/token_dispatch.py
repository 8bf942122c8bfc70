# MoE-style token dispatch with uneven all-to-alls: each rank counts the
# tokens it sends to every expert rank, exchanges the counts, turns the counts
# it receives into Python split sizes, sends the tokens, applies the expert
# (one linear shared by all experts, so the result must be the reference's
# linear of every token) and sends the results back. The received counts are
# a collective's result: tracing needs a second pass to know them.
import torch
import torch.distributed as dist

TOKENS = 8
ROUTING = [0, 1, 1, 1, 0, 1, 1, 0]  # expert rank of each token (mod world)


class _AllToAll(torch.autograd.Function):
    """Megatron's all-to-all: its backward sends the gradients back."""

    @staticmethod
    def forward(ctx, x, receive_sizes, send_sizes):
        ctx.receive_sizes, ctx.send_sizes = receive_sizes, send_sizes
        out = x.new_empty((sum(receive_sizes),) + tuple(x.shape[1:]))
        dist.all_to_all_single(out, x.contiguous(), receive_sizes, send_sizes)
        return out

    @staticmethod
    def backward(ctx, grad):
        return _AllToAll.apply(grad, ctx.send_sizes, ctx.receive_sizes), None, None


class Dispatch(torch.nn.Module):
    def __init__(self, unpermute_by_gather=False, assume_symmetric=False):
        super().__init__()
        self.expert = torch.nn.Linear(4, 4, bias=False)
        self.unpermute_by_gather = unpermute_by_gather
        self.assume_symmetric = assume_symmetric

    def forward(self, tokens, destination):
        world = dist.get_world_size()
        order = torch.argsort(destination, stable=True)
        sent = torch.stack([(destination == r).sum() for r in range(world)])
        received = torch.empty_like(sent)
        dist.all_to_all_single(received, sent)
        send_sizes = sent.tolist()
        receive_sizes = send_sizes if self.assume_symmetric else received.tolist()
        inbound = _AllToAll.apply(tokens[order], receive_sizes, send_sizes)
        back = _AllToAll.apply(self.expert(inbound), send_sizes, receive_sizes)
        if self.unpermute_by_gather:
            return back[order]  # the permutation, not its inverse
        out = torch.zeros_like(back)
        out[order] = back
        return out


def _finalize(model):
    def finalize_grads():
        for p in model.parameters():
            dist.all_reduce(p.grad)  # every rank's tokens reached the expert

    return finalize_grads


def _entry(**options):
    tokens = torch.randn(TOKENS, 4)
    world, rank = dist.get_world_size(), dist.get_rank()
    destination = torch.tensor(ROUTING) % world
    mine = slice(TOKENS // world * rank, TOKENS // world * (rank + 1))
    model = Dispatch(**options)
    return {"model": model, "inputs": (tokens[mine], destination[mine]),
            "finalize_grads": _finalize(model)}


def entry():
    return _entry()


def entry_unpermute_by_gather():
    return _entry(unpermute_by_gather=True)


def entry_assume_symmetric():
    return _entry(assume_symmetric=True)
