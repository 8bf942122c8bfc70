# Exact constants at the Python boundary (run inside shardproof's embedded
# interpreter, tests/differential/differential_test.cpp): quotients of
# concrete floats are exact, a constant converts as Python's numbers do, and
# our own float() probe of an array of terms is no symbolic stop.
import operator
import sys

import numpy as np

import _shardproof as sp
import torch

failures = []


def check(what, ok):
    if not ok:
        failures.append(what)


third = sp.exact(1.0) / 3.0
check("1.0 / 3.0 is the exact third", (third * 3).id == sp.exact(1).id)
check("int() truncates a constant toward zero",
      int(sp.exact(7) / 2) == 3 and int(-sp.exact(7) / 2) == -3)
try:
    operator.index(third)
    check("operator.index of a fraction raises TypeError", False)
except TypeError:
    pass

sp.take_symbolic_stops()
x = sp.var("x")
product = sp.exact(2) * np.asarray(x, dtype=object)  # ndarray.__rmul__ takes it
check("a constant times an array of terms", isinstance(product, sp.Term))
check("our float() probe of an array is no stop", sp.take_symbolic_stops() == 0)

# A concrete tensor quotient is exact, so a third times three is one again.
t = torch.tensor([1.0]) / torch.tensor([3.0]) * 3
check("tensor 1/3*3 is exactly 1",
      isinstance(t._a[0], sp.Term) and t._a[0].id == sp.exact(1).id)

for f in failures:
    print("FAIL", f, file=sys.stderr)
print(f"exact constants: {len(failures)} failures", file=sys.stderr)
sys.exit(1 if failures else 0)
