#!/usr/bin/python3
"""Checks of truth.py's judgement of bf16 programs (generated seeds):
- seed 520 (no bug, tensor-parallel bf16) differs from its world-1 run by
  bf16 rounding only: it reconciles over the reals;
- seed 117 (bf16 gradients reduced in an fp16 buffer, overflowing under
  loss scaling) still does not reconcile: fp16 is not widened.
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


def main():
    failures = []
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
