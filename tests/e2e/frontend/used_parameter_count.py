# Data parallelism whose reduction waits, as DeepSpeed's ZeRO does, until
# every parameter the running backward reaches has its gradient: it counts
# them with torch._C._will_engine_execute_node over each parameter's
# AccumulateGrad node. One parameter is unused, so a stand-in that said every
# node runs would never reduce (the gradients stay partial: refuted), and one
# without a graph task inside the hook would fail the assertion.
import torch
import torch.distributed as dist
import torch.nn.functional as F


class TwoLayers(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.first = torch.nn.Parameter(torch.randn(4, 4))
        self.second = torch.nn.Parameter(torch.randn(2, 4))
        self.unused = torch.nn.Parameter(torch.randn(2, 2))  # a frozen branch's

    def forward(self, x):
        return F.linear(torch.tanh(F.linear(x, self.first)), self.second)


class ReduceWhenAllReached:
    def __init__(self, model):
        self.params = list(model.parameters())
        self.ready = []
        for p in self.params:
            p.register_post_accumulate_grad_hook(self.on_gradient)

    def on_gradient(self, param):
        assert torch._C._current_graph_task_id() != -1, "a hook runs inside a backward"
        self.ready.append(param)
        with torch.enable_grad():
            nodes = [torch.autograd.graph._get_grad_fn_or_grad_acc(p) for p in self.params]
        reached = sum(map(torch._C._will_engine_execute_node, nodes))
        if len(self.ready) == reached:
            for p in self.ready:
                dist.all_reduce(p.grad)  # the loss is a sum over the batch


def entry():
    assert torch._C._current_graph_task_id() == -1, "no backward runs yet"
    model = TwoLayers()
    ReduceWhenAllReached(model)
    world, rank = dist.get_world_size(), dist.get_rank()
    x = torch.randn(4, 4).requires_grad_()
    return {"model": model, "inputs": (x.chunk(world)[rank],)}
