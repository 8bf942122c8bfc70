# frontend/python/runtime/_shardproof.pyi documents the built-in module
# `_shardproof`: the same public names, no more, no fewer. Run inside
# shardproof's embedded interpreter (tests/differential/differential_test.cpp).
import ast
import os
import sys

import _shardproof

STUB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "frontend",
                    "python", "runtime", "_shardproof.pyi")
tree = ast.parse(open(STUB).read())
documented = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
documented |= {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign)}
actual = {n for n in dir(_shardproof) if not n.startswith("_")}
missing, extra = sorted(actual - documented), sorted(documented - actual)
if missing or extra:
    print(f"FAIL _shardproof.pyi lacks {missing}, documents what the module lacks {extra}")
    sys.exit(1)
print(f"_shardproof.pyi documents the module's {len(actual)} names")

# The enumerations come from the IR's tables, and a recorder takes no other name.
assert _shardproof.CATEGORIES[:2] == ("leaf", "elementwise"), _shardproof.CATEGORIES
assert "all_reduce" in _shardproof.COLLECTIVES and "avg" in _shardproof.REDUCE_OPS
assert "bfloat16" in _shardproof.DTYPES
try:
    _shardproof.record_node(op="add", category="elementwize", file="f.py", line=1, column=1,
                            function="f", shape=(1,), dtype="float32", elements=[1.0],
                            parents=())
except ValueError as e:
    assert "unknown op category elementwize" in str(e), e
else:
    print("FAIL record_node accepted an unknown category")
    sys.exit(1)
print("the recorders accept only the IR's names")
