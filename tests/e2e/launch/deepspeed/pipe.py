"""A four-layer pipeline (deepspeed.pipe.PipelineModule), as DeepSpeed's
pipeline tutorial builds one: the layers as LayerSpecs, the loss as the
module's loss_fn, the stage count from the command line (here the builder's
num_stages, whose default is what the launch asks for)."""
import torch
import torch.nn.functional as F
from deepspeed.pipe import LayerSpec, PipelineModule

WIDTH = 2


def batch(samples):
    return torch.randn(samples, WIDTH), torch.randn(samples, WIDTH)


def build(num_stages=2):
    layers = [LayerSpec(torch.nn.Linear, WIDTH, WIDTH) for _ in range(4)]
    model = PipelineModule(layers=layers, num_stages=num_stages, loss_fn=F.mse_loss,
                           partition_method="uniform")
    return {"model": model, "batch": batch}
