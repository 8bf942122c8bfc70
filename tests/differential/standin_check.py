"""Runs every case of cases.py on shardproof's stand-in torch with symbolic
inputs (inside the embedded interpreter), evaluates the resulting terms at the
inputs real PyTorch used, and compares outputs and gradients."""
import json
import math
import os
import sys

import _shardproof as _sp
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cases import CASES  # noqa: E402


def close(a, b):
    # NaN where PyTorch has NaN is the stand-in being right (a fully masked
    # softmax row); the prover itself never calls NaN equal (prover.h).
    return all(math.isclose(x, y, rel_tol=1e-7, abs_tol=1e-9) or
               (math.isnan(x) and math.isnan(y)) for x, y in zip(a, b)) \
        and len(a) == len(b)


def check(name, shapes, fn, ref):
    if "raises" in ref:
        return _check_raises(shapes, fn, ref)
    inputs = [torch.randn(*s, dtype=torch.float64).requires_grad_() for s in shapes]
    out = fn(*inputs)
    cot = torch.tensor(ref["cotangent"]).reshape(ref["cotangent_shape"])
    if out.requires_grad:
        (out * cot).sum().backward()
    variables = [t for x in inputs for t in x._a.ravel().tolist()]
    values = [v for vals in ref["inputs"] for v in vals]
    draws, draw_values = _draw_assignments({t.id for t in variables})
    problems = []

    def value(terms):
        terms = list(terms)
        first, second = (_sp.evaluate(terms, variables + draws, values + v)
                         for v in draw_values)
        if not close(first, second):
            problems.append("the result depends on the values of the random draws")
        return first

    if list(out.shape) != ref["cotangent_shape"]:
        problems.append(f"output shape {list(out.shape)} != {ref['cotangent_shape']}")
    elif not close(value(out._a.ravel().tolist()), ref["output"]):
        problems.append("output values differ")
    if repr(out.dtype) != ref["dtype"]:
        problems.append(f"dtype {out.dtype!r}, PyTorch's {ref['dtype']}")
    if out.requires_grad != ref["requires_grad"]:
        problems.append(f"requires_grad {out.requires_grad}, PyTorch's {ref['requires_grad']}")
    aliasing = _aliasing(fn, shapes)
    if aliasing != ref["aliasing"]:
        problems.append(f"writing into the result: {aliasing}, PyTorch's {ref['aliasing']}")
    for k, (x, want) in enumerate(zip(inputs, ref["grads"])):
        got = value(x.grad._a.ravel().tolist()) if x.grad is not None else [0.0] * len(want)
        if not close(got, want):
            problems.append(f"gradient of input {k} differs: {got[:4]} vs {want[:4]}")
    return problems


def _draw_assignments(inputs):
    """Every random draw of the stand-in so far (torch/random.py), and two
    sets of nonzero values for them: a case compares what real PyTorch
    computes too, so its result must not depend on them (a mask drawn twice
    from one state and subtracted), and one that does is found. The inputs,
    drawn by randn outside an entry, keep PyTorch's values."""
    draws = [v for elements in torch.random._run().draws.values()
             for v in elements.ravel().tolist() if v.id not in inputs]
    return draws, [[2 * math.sin(7.0 * k + shift) for k in range(len(draws))]
                   for shift in (1.0, 2.0)]


def _check_raises(shapes, fn, ref):
    """PyTorch raised (an in-place write into a saved tensor, a backward
    returning too few gradients): the stand-in must raise the same error."""
    inputs = [torch.randn(*s, dtype=torch.float64).requires_grad_() for s in shapes]
    try:
        out = fn(*inputs)
        if out.requires_grad:
            out.sum().backward()
    except BaseException as e:  # Unsupported is one: a gap of ours, not PyTorch's error
        if type(e).__name__ == ref["raises"]:
            return []
        return [f"raised {type(e).__name__}: {e}, PyTorch {ref['raises']}: {ref['message']}"]
    return [f"ran, but PyTorch raised {ref['raises']}: {ref['message']}"]


def _aliasing(fn, shapes):
    """As torch_reference._aliasing: does an in-place write into the result
    change an input? ("alias", "copy" or "error")."""
    fresh = [torch.randn(*shape, dtype=torch.float64).requires_grad_() for shape in shapes]
    before = [x._a.ravel().tolist() for x in fresh]
    out = fn(*fresh)
    with torch.no_grad():
        try:
            out.add_(1.0)
        except (RuntimeError, ValueError):  # numpy refuses a write into a broadcast
            return "error"
    changed = any(_sp_ids(x._a.ravel().tolist()) != _sp_ids(b) for x, b in zip(fresh, before))
    return "alias" if changed else "copy"


def _sp_ids(values):
    return [v.id if isinstance(v, _sp.Term) else v for v in values]


def main(ref_path):
    with open(ref_path) as f:
        reference = json.load(f)
    passed = failed = 0
    for name, (shapes, fn) in CASES.items():
        try:
            problems = check(name, shapes, fn, reference[name])
        except BaseException as e:  # a case the stand-in cannot run is a failure
            import traceback
            problems = [f"{type(e).__name__}: {e} at " + " < ".join(
                f"{os.path.basename(fr.filename)}:{fr.lineno}"
                for fr in reversed(traceback.extract_tb(e.__traceback__)[-3:]))]
        if problems:
            failed += 1
            print(f"FAIL {name}: " + "; ".join(problems), flush=True)
        else:
            passed += 1
    print(f"{passed} passed, {failed} failed", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main(sys.argv[1])
