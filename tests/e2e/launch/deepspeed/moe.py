"""A model with a mixture-of-experts layer (deepspeed.moe.layer.MoE), as
DeepSpeed's MoE tutorial builds one: a dense layer, then the MoE layer over
`num_experts` experts spread over `ep_size` expert-parallel ranks. The gate
routes top-1 with room for every token and no noise, so which expert a token
goes to does not depend on how the batch is split over the ranks."""
import torch
import torch.nn.functional as F
from deepspeed.moe.layer import MoE

WIDTH = 2
EXPERTS = 2


class Net(torch.nn.Module):
    def __init__(self, ep_size):
        super().__init__()
        self.dense = torch.nn.Linear(WIDTH, WIDTH)
        self.moe = MoE(hidden_size=WIDTH, expert=torch.nn.Linear(WIDTH, WIDTH),
                       num_experts=EXPERTS, ep_size=ep_size, k=1,
                       capacity_factor=float(EXPERTS), eval_capacity_factor=float(EXPERTS),
                       min_capacity=0, noisy_gate_policy=None, drop_tokens=True, use_rts=False)

    def forward(self, x):
        out, _aux_loss, _counts = self.moe(self.dense(x))
        return out


def batch(samples):
    return torch.randn(samples, WIDTH), torch.randn(samples, WIDTH)


def loss(output, targets):
    return F.mse_loss(output, targets)


def build(ep_size=2):
    return {"model": Net(ep_size), "batch": batch, "loss": loss}
