# Bug: a two-stage (or deeper) pipeline whose stages pass activations forward
# and gradients back with point-to-point messages; every stage after the
# first scales the gradient it sends back by 1/2: the wrong value crosses a
# message, and the first stage's gradients are the ones that are wrong.
import torch
import torch.distributed as dist

HIDDEN, TOKENS, NUM_LAYERS = 2, 2, 4


class SendForward(torch.autograd.Function):
    """Sends the activation on; its gradient comes back from the next stage.
    The output is a zero the step's output adds, so backward reaches here."""

    @staticmethod
    def forward(ctx, activation, dst):
        ctx.dst, ctx.shape = dst, activation.shape
        dist.send(activation.detach().contiguous(), dst)
        return activation.new_zeros(())

    @staticmethod
    def backward(ctx, _):
        grad = torch.empty(ctx.shape)
        dist.recv(grad, ctx.dst)
        return grad, None


class RecvForward(torch.autograd.Function):
    """Receives the activation; sends its gradient back to the stage before."""

    @staticmethod
    def forward(ctx, anchor, src, shape):
        ctx.src = src
        activation = torch.empty(shape)
        dist.recv(activation, src)
        return activation

    @staticmethod
    def backward(ctx, grad):
        grad = grad * 0.5  # expect: SP005
        dist.send(grad.contiguous(), ctx.src)
        return torch.zeros(()), None, None


class BroadcastFromLastStage(torch.autograd.Function):
    @staticmethod
    def forward(ctx, loss, last):
        ctx.last = last
        loss = loss.clone()
        dist.broadcast(loss, src=last)
        return loss

    @staticmethod
    def backward(ctx, grad):
        return (grad if dist.get_rank() == ctx.last else torch.zeros_like(grad)), None


class Pipeline(torch.nn.Module):
    """Stage r holds layers r*L/world ... of the NUM_LAYERS layers."""

    def __init__(self):
        super().__init__()
        world, rank = dist.get_world_size(), dist.get_rank()
        per_stage = NUM_LAYERS // world
        self.mine = range(rank * per_stage, (rank + 1) * per_stage)
        self.layers = torch.nn.ModuleDict(
            {str(k): torch.nn.Linear(HIDDEN, HIDDEN, bias=False) for k in self.mine})

    def forward(self, x):
        world, rank = dist.get_world_size(), dist.get_rank()
        if rank > 0:
            anchor = torch.zeros((), requires_grad=True)
            x = RecvForward.apply(anchor, rank - 1, (TOKENS, HIDDEN))
        for k in self.mine:
            x = torch.tanh(self.layers[str(k)](x))
        if rank < world - 1:
            return SendForward.apply(x, rank + 1) + BroadcastFromLastStage.apply(
                torch.zeros(()), world - 1)
        return BroadcastFromLastStage.apply((x * x).sum(), world - 1)


def entry():
    return {"model": Pipeline(), "inputs": (torch.randn(TOKENS, HIDDEN),),
            "loss": lambda loss: loss}
