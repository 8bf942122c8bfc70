# Megatron's pipeline schedules run the backward of a stage's output through
# the autograd engine directly (custom_backward:
# Variable._execution_engine.run_backward). With accumulate_grad=False the
# engine returns the gradients instead of accumulating them (autograd.grad's
# form): not modelled, it must stop the trace, never leave the gradients
# unchecked.
import torch
from torch.autograd.variable import Variable


class Stage(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(2))

    def forward(self, x):
        return (self.weight * x).sum()


def entry():
    def backward(loss):
        Variable._execution_engine.run_backward(  # gap: accumulate_grad=False.* is not modelled
            tensors=(loss,), grad_tensors=(torch.ones_like(loss),), keep_graph=False,
            create_graph=False, inputs=tuple(), allow_unreachable=True,
            accumulate_grad=False)

    return {"model": Stage(), "inputs": (torch.randn(2),), "backward": backward}
