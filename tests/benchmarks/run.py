#!/usr/bin/python3
"""Proof time against depth, with and without module-boundary lemmas, on a
stack of identical tensor-parallel blocks (tests/benchmarks/layer_stack.py).
Prints numbers and asserts nothing: shared machines are noisy, so compare
the ratios within one run.

Usage: tests/benchmarks/run.py [BUILD_DIR] [--depths 1,2,4,8,16]"""
import argparse
import os
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def seconds(shardproof, depth, world, modular):
    args = [shardproof, "check", f"tests/benchmarks/layer_stack.py::layers_{depth}",
            "--world", str(world)] + ([] if modular else ["--no-modular"])
    start = time.monotonic()
    result = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    elapsed = time.monotonic() - start
    verdict = result.stdout.split(": ", 2)[1].split(" ")[0] if ": " in result.stdout else "?"
    return elapsed, verdict


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build", nargs="?", default="build")
    parser.add_argument("--depths", default="1,2,4,8,16")
    parser.add_argument("--worlds", default="2,4")
    options = parser.parse_args()
    shardproof = os.path.join(ROOT, options.build, "shardproof")
    print(f"{'depth':>5} {'world':>5} {'modular s':>10} {'whole s':>10} {'whole/modular':>14}"
          "  verdicts")
    for depth in map(int, options.depths.split(",")):
        for world in map(int, options.worlds.split(",")):
            modular, v1 = seconds(shardproof, depth, world, True)
            whole, v2 = seconds(shardproof, depth, world, False)
            print(f"{depth:>5} {world:>5} {modular:>10.2f} {whole:>10.2f} "
                  f"{whole / modular:>14.1f}  {v1}/{v2}", flush=True)


main()
