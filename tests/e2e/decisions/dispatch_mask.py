# GShard-style top-1 dispatch, as DeepSpeed's top1gating builds it: the
# combine weights are the gate probabilities on the token's expert and 0
# elsewhere, and the dispatch mask is `combine_weights.bool()`. A softmax
# probability is > 0 for every input, so the mask is known exactly on each
# routing path; the same cast of a value of either sign (a raw logit) is not
# modelled and stops the proof.
import torch
import torch.nn.functional as F


class Top1Dispatch(torch.nn.Module):
    def __init__(self, mask_from_logits):
        super().__init__()
        self.mask_from_logits = mask_from_logits
        self.weight = torch.nn.Parameter(torch.empty(2, 2))

    def forward(self, tokens):
        logits = torch.matmul(tokens, self.weight.t())
        gates = F.softmax(logits, dim=1)
        expert = torch.argmax(gates, dim=1)
        chosen = F.one_hot(expert, num_classes=2).float()
        combine = (logits if self.mask_from_logits else gates) * chosen
        dispatch = combine.bool()  # unmodelled: of the logits, the sign is unknown
        return torch.einsum("se,sm->esm", dispatch.float(), tokens)


def entry():
    return Top1Dispatch(mask_from_logits=False), (torch.randn(1, 2),)


def entry_mask_from_logits():
    return Top1Dispatch(mask_from_logits=True), (torch.randn(1, 2),)
