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
actual = {n for n in dir(_shardproof) if not n.startswith("_")}
missing, extra = sorted(actual - documented), sorted(documented - actual)
if missing or extra:
    print(f"FAIL _shardproof.pyi lacks {missing}, documents what the module lacks {extra}")
    sys.exit(1)
print(f"_shardproof.pyi documents the module's {len(actual)} names")
