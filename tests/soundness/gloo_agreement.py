#!/usr/bin/python3
"""Sanity check of truth.py: on a sample of generated programs, the
in-process ground truth (threads, collectives performed in process) agrees
with tests/groundtruth/check_pairs.py's harness (gloo, one process per rank).

Gloo (torch 1.13) lacks all_gather_into_tensor and reduce_scatter_tensor and
cannot reduce bf16, so the sample is the fp32 programs that call neither. The check fails if any verdict differs,
or if the sample lacks programs that reconcile or that mismatch.

--families F,G samples only those families (generate.NEW_FAMILIES: the
pipelines' point-to-point messages and the hooks' buckets on gloo).

Usage: gloo_agreement.py [COUNT] [FIRST_SEED] [--families F,G]
"""
import glob
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "groundtruth"))
import check_pairs  # noqa: E402
import generate  # noqa: E402
import step_semantics  # noqa: E402

# Here and in every spawned rank (which imports this module again): the
# entry's backward callable, no second backward of a detached loss.
step_semantics.install()

# Not imported at module level: spawned gloo ranks re-import this module, and
# truth.py replaces torch.distributed in the process that imports it.
truth = None


def gloo_verdict(path, workdir):
    ref, ref_files = check_pairs.run(path, 1, workdir)
    if ref is None:
        return "error"
    outputs, out_files = check_pairs.run(path, 2, workdir, ref_files[0])
    if outputs is not None:
        return "reconciles" if check_pairs.step_reconciles(ref[0], outputs) else "mismatch"
    # A rank that raised leaves its traceback; ranks that hung do not, nor do
    # they when gloo gave up waiting (its own timeout: a deadlock, a hang).
    errors = [open(f + ".err").read() for f in out_files if os.path.exists(f + ".err")]
    hung = all("Timed out waiting" in e or "Connection closed by peer" in e for e in errors)
    return "mismatch" if hung else "error"


def gloo_runs(source, sidecar):
    return sidecar["dtype"] == "fp32" and "all_gather_into_tensor" not in source and \
        "reduce_scatter_tensor" not in source


def main(argv):
    global truth
    import truth as truth_module
    truth = truth_module
    families = None
    if "--families" in argv:
        k = argv.index("--families")
        families = set(argv[k + 1].split(","))
        argv = argv[:k] + argv[k + 2:]
    count = int(argv[1]) if len(argv) > 1 else 8
    seed = int(argv[2]) if len(argv) > 2 else 0
    disagreements, seen = [], set()
    with tempfile.TemporaryDirectory() as workdir:
        checked = 0
        while checked < count:
            source, sidecar = generate.generate(seed)
            if gloo_runs(source, sidecar) and (families is None or
                                                sidecar["family"] in families):
                path = generate.write(seed, workdir)
                fast, _ = truth.verdict(path)
                slow = gloo_verdict(path, workdir)
                seen.add(fast)
                mark = "ok  " if fast == slow else "FAIL"
                print(f"{mark} seed {seed} ({sidecar['bug']}): in-process {fast}, gloo {slow}",
                      flush=True)
                if fast != slow:
                    disagreements.append(seed)
                for f in glob.glob(os.path.join(workdir, "*.pt*")):
                    os.remove(f)
                checked += 1
            seed += 1
    missing = {"reconciles", "mismatch"} - seen
    if missing:
        print(f"FAIL: the sample has no program whose verdict is {sorted(missing)}")
    print(f"{checked} programs, {len(disagreements)} disagreements")
    return 1 if disagreements or missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
