#!/usr/bin/python3
"""Runs every case of cases.py under real PyTorch (Debian's python3-torch) on
random inputs and writes inputs, a random cotangent, the output and the input
gradients of sum(output * cotangent) to a JSON file."""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cases import CASES  # noqa: E402


def _aliasing(fn, inputs):
    """Whether writing into the result (in place, outside autograd) changes
    an input: "alias", "copy", or "error" when PyTorch refuses the write."""
    fresh = [x.detach().clone().requires_grad_() for x in inputs]
    before = [x.detach().clone() for x in fresh]
    out = fn(*fresh)
    with torch.no_grad():
        try:
            out.add_(1.0)
        except RuntimeError:
            return "error"
    return "alias" if any(not torch.equal(a.detach(), b) for a, b in zip(fresh, before)) \
        else "copy"


def main(out_path):
    rng = np.random.default_rng(2024)
    results = {}
    for name, (shapes, fn) in CASES.items():
        inputs = [torch.tensor(rng.uniform(-2, 2, size=s), dtype=torch.float64,
                               requires_grad=True) for s in shapes]
        try:
            out = fn(*inputs)
            cot = torch.tensor(rng.uniform(-2, 2, size=tuple(out.shape)), dtype=torch.float64)
            if out.requires_grad:
                (out * cot).sum().backward()
        except (RuntimeError, TypeError, IndexError) as e:  # the stand-in must refuse it too
            results[name] = {"raises": type(e).__name__, "message": str(e)[:200]}
            continue
        aliasing = _aliasing(fn, inputs)
        results[name] = {
            "requires_grad": out.requires_grad,
            "dtype": str(out.dtype),
            "aliasing": aliasing,
            "inputs": [x.detach().numpy().ravel().tolist() for x in inputs],
            "cotangent": cot.numpy().ravel().tolist(),
            "cotangent_shape": list(out.shape),
            "output": out.detach().numpy().ravel().tolist(),
            "grads": [(x.grad if x.grad is not None else torch.zeros_like(x))
                      .numpy().ravel().tolist() for x in inputs],
        }
    with open(out_path, "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main(sys.argv[1])
