#!/usr/bin/python3
"""Checks of truth.py's judgement of bf16 programs (generated seeds):
- seed 520 (no bug, tensor-parallel bf16) differs from its world-1 run by
  bf16 rounding only: it reconciles over the reals;
- seed 117 (bf16 gradients reduced in an fp16 buffer, overflowing under
  loss scaling) still does not reconcile: fp16 is not widened;
- dropout after an all-reduce draws, on every rank, what that rank's own
  process would (the ranks' threads share one generator): a mask every rank
  and the reference draw alike reconciles.
- the families of whole training steps (generate.NEW_FAMILIES: pipelines
  whose schedule runs backward in the model's forward or in the entry's
  backward callable, with point-to-point messages between stages; buckets
  all-reduced from tensor, AccumulateGrad and module hooks): for the first
  program of each variant (schedule and message spelling, hook kind) in
  seeds 0:400, the correct program reconciles and every bug the generator can
  inject into it does not.
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


def _variant(seed):
    """What tells a family's programs apart: the schedule and the messages'
    spelling of a pipeline, the hook kind of the buckets."""
    blocks = generate.build(seed, None).blocks
    return (blocks[0]["schedule"], blocks[0]["p2p"]) if blocks[0]["kind"] == "pipeline" \
        else blocks[-1]["hooks"]


def family_seeds():
    """Seeds in 0:400 that cover each family's variants, one each."""
    seen, seeds = set(), []
    for seed in range(400):
        family = generate.family_of(seed)
        if family is not None and (family, _variant(seed)) not in seen:
            seen.add((family, _variant(seed)))
            seeds.append(seed)
    return seeds


def check_families(workdir, failures):
    for seed in family_seeds():
        family = generate.family_of(seed)
        plan = generate.build(seed, None)
        for bug in [None] + sorted(plan.candidate_bugs):
            path = os.path.join(workdir, f"prog_{seed}_{bug or 'correct'}.py")
            with open(path, "w") as f:
                f.write(generate.build(seed, bug).source)
            got, why = truth.verdict(path)
            want = "mismatch" if bug else "reconciles"
            print(f"{family} seed {seed} (bug {bug}): {got} {why}")
            if got != want:
                failures.append(f"{family} seed {seed} (bug {bug}): {got} ({why}), "
                                f"expected {want}")


def main():
    failures = []
    with tempfile.TemporaryDirectory() as workdir:
        check_families(workdir, failures)
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
