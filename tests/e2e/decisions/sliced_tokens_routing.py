# A replicated top-1 router over each rank's own tokens: the entry creates the
# whole batch and gives every rank its slice (as data and expert parallelism
# do), so rank 1's first token is the reference's token 1 and must decide as
# the reference decides for that token, at every path's witness. Two tokens
# over two experts: 4 routings, each rank's output its slice of the
# reference's.
import torch
import torch.distributed as dist

TOKENS, HIDDEN, EXPERTS = 2, 2, 2


class Routed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.router = torch.nn.Linear(HIDDEN, EXPERTS, bias=False)

    def forward(self, tokens):
        probs, expert = torch.topk(torch.softmax(self.router(tokens), dim=-1), 1, dim=-1)
        return torch.where(expert == 0, tokens, -tokens) * probs


def entry():
    tokens = torch.randn(TOKENS, HIDDEN)
    world, rank = dist.get_world_size(), dist.get_rank()
    model = Routed()

    def finalize_grads():  # each rank's router gradient is its tokens' share
        dist.all_reduce(model.router.weight.grad)

    return {"model": model, "inputs": (tokens.chunk(world)[rank],),
            "finalize_grads": finalize_grads}
