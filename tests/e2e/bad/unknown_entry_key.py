import torch


def entry():
    return {"model": torch.nn.Linear(2, 2), "inputs": (torch.randn(2),),
            "finalise_grads": lambda: None}


def bad_group():
    return {"model": torch.nn.Linear(2, 2), "inputs": (torch.randn(2),),
            "tensor_parallel_group": [0, 1]}
