# Megatron's pipeline schedules, with deallocate_pipeline_outputs, run the
# backward of a stage's output through the autograd engine directly
# (custom_backward: Variable._execution_engine.run_backward), skipping the
# gradient's shape check. Not modelled: it must stop the trace, never leave
# the gradients unchecked.
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
        Variable._execution_engine.run_backward(  # gap: run_backward .* is not modelled
            tensors=(loss,), grad_tensors=(torch.ones_like(loss),), keep_graph=False,
            create_graph=False, inputs=tuple(), allow_unreachable=True,
            accumulate_grad=True)

    return {"model": Stage(), "inputs": (torch.randn(2),), "backward": backward}
