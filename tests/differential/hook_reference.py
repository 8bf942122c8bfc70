#!/usr/bin/python3
"""Runs every case of hook_cases.py under a real PyTorch and writes each
case's hook log to a JSON file (hook_check.py compares the stand-in's).

    /usr/bin/python3 hook_reference.py OUT.json    # Debian's 1.13, in ctest

hook_expected_torch2.json was made by this script under PyTorch 2.x, to
cover what 1.13 lacks (post-accumulate-grad hooks, hooks called with None,
full backward pre-hooks):

    python3 -m venv /tmp/torch2 && /tmp/torch2/bin/pip install torch numpy
    /tmp/torch2/bin/python hook_reference.py hook_expected_torch2.json
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hook_cases import CASES, MIN_VERSION, Watch  # noqa: E402


def fingerprint(t):
    if t is None:
        return None
    return [float(v) for v in t.detach().double().flatten().tolist()]


def main(out_path):
    major = int(torch.__version__.split(".")[0])
    post_accumulate = hasattr(torch.Tensor, "register_post_accumulate_grad_hook")
    results = {}
    for name, case in CASES.items():
        if MIN_VERSION.get(name, 1) > major:
            continue
        watch = Watch(torch, fingerprint, post_accumulate, prehooks=major >= 2)
        case(torch, watch)
        results[name] = watch.log
    head = {"torch": torch.__version__, "post_accumulate": post_accumulate,
            "prehooks": major >= 2}
    with open(out_path, "w") as f:  # one log entry a line, for readable diffs
        f.write(json.dumps(head)[:-1] + ', "cases": {\n')
        f.write(",\n".join(f"{json.dumps(name)}: [\n" + ",\n".join(
            json.dumps(entry) for entry in log) + "]" for name, log in results.items()))
        f.write("}}\n")


if __name__ == "__main__":
    main(sys.argv[1])
