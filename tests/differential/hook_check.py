"""Runs every case of hook_cases.py on shardproof's stand-in torch (inside
the embedded interpreter) and compares each hook log with real PyTorch's:
hook_check.py REFERENCE.json... (files written by hook_reference.py). Each
file says which hooks its PyTorch had; the stand-in registers the same."""
import json
import math
import os
import sys
import traceback

import _shardproof as _sp
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hook_cases import CASES, Watch  # noqa: E402


class Values:
    """Evaluates gradients: a case's tensors are constants, but a module's
    parameters are symbolic, bound to the values the case gave them."""

    def __init__(self):
        self.variables, self.values = [], []

    def bind(self, p, values):
        def flat(v):
            return [x for e in v for x in flat(e)] if isinstance(v, list) else [v]
        for term, value in zip(p._a.ravel().tolist(), flat(values)):
            if isinstance(term, _sp.Term):
                self.variables.append(term)
                self.values.append(float(value))

    def fingerprint(self, t):
        if t is None:
            return None
        values = t.detach()._a.ravel().tolist()
        terms = [v for v in values if isinstance(v, _sp.Term)]
        if terms:
            evaluated = iter(_sp.evaluate(terms, self.variables, self.values))
            values = [next(evaluated) if isinstance(v, _sp.Term) else v for v in values]
        return [float(v) for v in values]


def same_entry(got, want):
    if got[:2] != want[:2] or len(got) != len(want):
        return False
    for g, w in zip(got[2:], want[2:]):
        if (g is None) != (w is None) or isinstance(g, list) != isinstance(w, list):
            return False
        if isinstance(g, list) and (len(g) != len(w) or not all(
                math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) for a, b in zip(g, w))):
            return False
        if not isinstance(g, list) and g != w:
            return False
    return True


def show(entry):
    if entry is None:
        return "(nothing)"
    return " ".join(str(e) if not isinstance(e, list) else
                    "[" + ", ".join(f"{v:.6g}" for v in e) + "]" for e in entry)


def check(name, reference, post_accumulate, prehooks):
    values = Values()
    watch = Watch(torch, values.fingerprint, post_accumulate, prehooks, values.bind)
    try:
        CASES[name](torch, watch)
    except BaseException as e:  # a case the stand-in cannot run is a failure
        return [f"{type(e).__name__}: {e} at " + " < ".join(
            f"{os.path.basename(fr.filename)}:{fr.lineno}"
            for fr in reversed(traceback.extract_tb(e.__traceback__)[-4:]))]
    got = watch.log
    for k in range(max(len(got), len(reference))):
        g = got[k] if k < len(got) else None
        w = reference[k] if k < len(reference) else None
        if g is None or w is None or not same_entry(g, w):
            return [f"entry {k}: stand-in {show(g)}; PyTorch {show(w)}",
                    "  stand-in: " + ", ".join(" ".join(e[:2]) for e in got),
                    "  PyTorch:  " + ", ".join(" ".join(e[:2]) for e in reference)]
    return []


def main(paths):
    passed = failed = 0
    for path in paths:
        with open(path) as f:
            reference = json.load(f)
        for name, log in reference["cases"].items():
            problems = check(name, log, reference["post_accumulate"], reference["prehooks"])
            if problems:
                failed += 1
                print(f"FAIL {name} (PyTorch {reference['torch']}): " + "\n".join(problems),
                      flush=True)
            else:
                passed += 1
    print(f"{passed} passed, {failed} failed", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main(sys.argv[1:])
