#!/usr/bin/python3
"""Checks of the program generator itself (no torch needed):
- a seed always gives the same program and sidecar;
- every program compiles;
- every bug the generator may inject into a program changes that program
  (a label without an effect would count a correct program as buggy);
- the catalogue is used: every bug of BUGS is injected in some program, and
  both modes and both dtypes occur, and every family (generate.NEW_FAMILIES:
  pipelines whose schedule calls backward, buckets reduced from hooks).
Usage: generator_test.py [SEEDS]
"""
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate  # noqa: E402


def body(source):
    return source.split("\n", 2)[2]  # without the header naming the bug


def main(argv):
    seeds = int(argv[1]) if len(argv) > 1 else 1500
    failures, injected, kinds = [], collections.Counter(), collections.Counter()
    families = collections.Counter()
    for seed in range(seeds):
        source, sidecar = generate.generate(seed)
        if generate.generate(seed) != (source, sidecar):
            failures.append(f"seed {seed}: not deterministic")
        compile(source, f"prog_{seed}.py", "exec")
        injected[sidecar["bug"]] += 1
        kinds[(sidecar["mode"], sidecar["dtype"])] += 1
        families[sidecar["family"]] += 1
        plan = generate.build(seed, None)
        for bug in sorted(plan.candidate_bugs):
            variant = generate.build(seed, bug)
            if body(variant.source) == body(plan.source):
                failures.append(f"seed {seed}: bug {bug} leaves the program unchanged")
    unused = sorted(set(generate.BUGS) - set(injected))
    if unused:
        failures.append(f"bugs never injected in {seeds} programs: {unused}")
    for kind in (("tp", "fp32"), ("tp", "bf16"), ("dp", "fp32"), ("dp", "bf16")):
        if not kinds[kind]:
            failures.append(f"no {kind} program")
    for family in ("tp", "dp") + generate.NEW_FAMILIES:
        if not families[family]:
            failures.append(f"no {family} program")
    for f in failures[:20]:
        print("FAIL", f)
    print(f"{seeds} programs, {sum(v for k, v in injected.items() if k)} with a bug, "
          f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
