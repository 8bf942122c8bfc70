# A vocabulary-parallel softmax whose single-device path is torch.softmax
# (shifted by the row's maximum inside PyTorch) while the distributed path
# exponentiates the raw logits: equal over the reals, but exp overflows to
# inf for large logits in float32/float16 on the ranks only (SP010).
import torch
import torch.distributed as dist
import torch.distributed.nn.functional as dist_fn


class _CopyToModelParallelRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input_):
        return input_

    @staticmethod
    def backward(ctx, grad_output):
        if dist.get_world_size() > 1:
            dist.all_reduce(grad_output)
        return grad_output


class VocabParallelSoftmax(torch.nn.Module):
    def __init__(self, hidden, vocab):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(vocab // dist.get_world_size(), hidden))
        self.weight.tensor_model_parallel = True
        self.weight.partition_dim = 0

    def forward(self, hidden_states):
        logits = _CopyToModelParallelRegion.apply(hidden_states) @ self.weight.t()
        if dist.get_world_size() == 1:
            return torch.softmax(logits, dim=-1)
        exp_logits = logits.exp()
        normaliser = dist_fn.all_reduce(exp_logits.sum(dim=-1, keepdim=True))
        return exp_logits / normaliser


def entry():
    return {"model": VocabParallelSoftmax(hidden=2, vocab=8),
            "inputs": (torch.randn(3, 2).requires_grad_(),)}
