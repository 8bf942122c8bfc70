#!/usr/bin/python3
"""Checks of truth.py's judgement of bf16 programs (generated seeds):
- seed 520 (no bug, tensor-parallel bf16) differs from its world-1 run by
  bf16 rounding only: it reconciles over the reals;
- seed 117 (bf16 gradients reduced in an fp16 buffer, overflowing under
  loss scaling) still does not reconcile: fp16 is not widened;
- dropout after an all-reduce draws, on every rank, what that rank's own
  process would (the ranks' threads share one generator): a mask every rank
  and the reference draw alike reconciles.
Usage: truth_test.py
"""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import generate  # noqa: E402
import truth  # noqa: E402

EXPECTED = {520: ("reconciles", None, "over the reals"),
            117: ("mismatch", "grad_reduce_in_fp16", "")}


DROPOUT_AFTER_REDUCE = """
import torch
import torch.distributed as dist
import torch.nn.functional as F


class RowParallelDropout(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(4, 8 // dist.get_world_size()))
        self.weight.partition_dim, self.weight.partition_stride = 1, 1

    def forward(self, x):
        local = x.chunk(dist.get_world_size(), dim=-1)[dist.get_rank()]
        out = F.linear(local, self.weight)
        if dist.get_world_size() > 1:
            dist.all_reduce(out)
        return F.dropout(out, p=0.5, training=True)


def entry():
    return {"model": RowParallelDropout(), "inputs": (torch.randn(3, 8),)}
"""


def main():
    failures = []
    with tempfile.TemporaryDirectory() as workdir:
        path = os.path.join(workdir, "dropout_after_reduce.py")
        with open(path, "w") as f:
            f.write(DROPOUT_AFTER_REDUCE)
        got, why = truth.verdict(path)
        print(f"dropout after an all-reduce: {got} {why}")
        if got != "reconciles":
            failures.append(f"dropout after an all-reduce: {got} ({why}), expected reconciles")
    with tempfile.TemporaryDirectory() as workdir:
        for seed, (want, bug, detail) in EXPECTED.items():
            path = generate.write(seed, workdir)
            _, sidecar = generate.generate(seed)
            got, why = truth.verdict(path)
            print(f"seed {seed} (bug {sidecar['bug']}): {got} {why}")
            if sidecar["bug"] != bug or sidecar["dtype"] != "bf16":
                failures.append(f"seed {seed} is no longer the bf16 program this test "
                                f"names (bug {sidecar['bug']}): pick another")
            elif got != want or not why.startswith(detail):
                failures.append(f"seed {seed}: {got} ({why}), expected {want} ({detail}...)")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
