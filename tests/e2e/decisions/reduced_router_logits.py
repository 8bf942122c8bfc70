# Top-1 routing on logits that are a partial sum over ranks (each rank holds
# a slice of the hidden dimension and of the router's weight): the logits are
# all-reduced before the decision, so every rank routes as the reference does.
# The decision reads a collective's result.
import torch
import torch.distributed as dist

TOKENS, HIDDEN, EXPERTS = 2, 4, 3


class RowParallelRouter(torch.nn.Module):
    def __init__(self, reduce_op):
        super().__init__()
        self.reduce_op = reduce_op
        self.weight = torch.nn.Parameter(
            torch.empty(EXPERTS, HIDDEN // dist.get_world_size()))
        self.weight.tensor_model_parallel = True
        self.weight.partition_dim = 1

    def forward(self, hidden_states):
        local = hidden_states.chunk(dist.get_world_size(), dim=-1)[dist.get_rank()]
        logits = torch.matmul(local, self.weight.t())
        dist.all_reduce(logits, op=self.reduce_op)
        expert = logits.argmax(dim=-1, keepdim=True)
        return torch.softmax(logits, dim=-1).gather(-1, expert)


def entry():
    return RowParallelRouter(dist.ReduceOp.SUM), (torch.randn(TOKENS, HIDDEN),)


def entry_max_instead_of_sum():
    """The logits are reduced with MAX: every rank routes by the largest
    partial logit, not by the logit."""
    return RowParallelRouter(dist.ReduceOp.MAX), (torch.randn(TOKENS, HIDDEN),)
