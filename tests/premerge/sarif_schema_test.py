"""shardproof's SARIF, validated against the official SARIF 2.1.0 schema
(validate_sarif.py) for reports of every kind: a refutation with its causal
chain, a collective mismatch naming the other rank's call, a proof (no
results), bad input and code shardproof could not prove (notifications).

    python3 sarif_schema_test.py SHARDPROOF SOURCE_DIR"""
import json
import os
import subprocess
import sys
import tempfile

import validate_sarif

RUNS = {
    "refuted": ["tests/fixtures/row_parallel_bias_before_reduce/buggy.py"],
    "mismatch": ["tests/fixtures/pipeline_receive_missing/buggy.py"],
    "proved": ["examples/tp_mlp.py::entry"],
    "bad_input": ["tests/e2e/bad/syntax_error.py"],
    "unsupported": ["tests/e2e/bad/symbolic_branch.py"],
    "several": ["examples/tp_mlp.py::entry", "examples/tp_mlp.py::entry_missing_allreduce"],
}


def main(binary, source_dir):
    failures = 0
    with tempfile.TemporaryDirectory() as out:
        files = []
        for name, targets in RUNS.items():
            file = os.path.join(out, name + ".sarif")
            run = subprocess.run([binary, "check", *targets, "--format", "sarif:" + file],
                                 cwd=source_dir, capture_output=True, text=True)
            if run.returncode not in (0, 1, 2, 3) or not os.path.exists(file):
                print(f"FAIL {name}: exit {run.returncode}, no report\n{run.stderr}")
                failures += 1
                continue
            files.append(file)
            doc = json.load(open(file))
            results = doc["runs"][0]["results"]
            notes = doc["runs"][0]["invocations"][0]["toolExecutionNotifications"]
            # What each run must show, so that a valid but empty document fails.
            expected = {"refuted": len(results) == 1 and "relatedLocations" in results[0],
                        "mismatch": any("relatedLocations" in r for r in results),
                        "proved": results == [],
                        "bad_input": not doc["runs"][0]["invocations"][0]["executionSuccessful"],
                        "unsupported": len(notes) >= 1,
                        "several": len(results) >= 1}[name]
            if not expected:
                print(f"FAIL {name}: the report lacks what this run must show")
                failures += 1
        failures += validate_sarif.main(files)
    print(f"{len(RUNS) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
