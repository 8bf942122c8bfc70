# A top-2 router scattering its probabilities to the experts it picked, as
# Megatron's router does: the result depends on which two experts were
# picked, not on their order, so one token over four experts takes one of
# C(4, 2) = 6 paths. Reading the picked values themselves depends on their
# order too: 4 * 3 = 12 paths.
import torch


class Top2Router(torch.nn.Module):
    def __init__(self, read_order):
        super().__init__()
        self.read_order = read_order
        self.weight = torch.nn.Parameter(torch.empty(4, 2))

    def forward(self, hidden_states):
        scores = torch.softmax(torch.matmul(hidden_states, self.weight.t()), dim=-1)
        probs, top_indices = torch.topk(scores, 2, dim=-1)
        routing_probs = torch.zeros_like(scores).scatter(1, top_indices, probs)
        routing_map = torch.zeros_like(scores).int().scatter(1, top_indices, 1)
        if self.read_order:
            return routing_probs * routing_map, probs[:, :1]
        return routing_probs * routing_map


def entry():
    return Top2Router(read_order=False), (torch.randn(1, 2),)


def entry_reading_the_order():
    return Top2Router(read_order=True), (torch.randn(1, 2),)


class ScatterAcross(torch.nn.Module):
    """The picked values scattered along the other dim: where a value lands
    depends on its place in the order."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(4, 2))

    def forward(self, hidden_states):
        scores = torch.matmul(hidden_states, self.weight.t())
        probs, top_indices = torch.topk(scores, 2, dim=-1)
        return torch.zeros(4, 2).scatter(0, top_indices, probs)


def entry_scatter_across():
    return ScatterAcross(), (torch.randn(1, 2),)
