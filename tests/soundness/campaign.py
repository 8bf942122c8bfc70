#!/usr/bin/python3
"""The soundness campaign: generated programs (generate.py), their ground
truth on real PyTorch (truth.py), and shardproof's verdict on each.

  FALSE PROOF  shardproof proved, real PyTorch shows a mismatch (the worst)
  false alarm  shardproof refuted, real PyTorch reconciles
  unknown      shardproof could not prove (exit 3)
A program on which torch itself raises is excluded (counted, and kept when
shardproof proved it anyway). Every disagreement is saved with its sidecar
and both verdicts under --save.

--families and --bugs run only the programs of some families / with some
injected bugs (the seeds of the range that have them), e.g. the pipelines and
hook buckets of issue 31:
  /usr/bin/python3 tests/soundness/campaign.py --seeds 0:400 --workers 1 \\
      --families pp_forward,pp_backward,dp_buckets --limit 40 --save DIR

CI (tests/CMakeLists.txt, soundness.campaign): a fixed seed range, fails on
any false proof:
  /usr/bin/python3 tests/soundness/campaign.py --seeds 0:80 --save DIR
The long run, which writes docs/soundness.md:
  /usr/bin/python3 tests/soundness/campaign.py --seeds 0:5000 \\
      --save build/soundness-disagreements --report docs/soundness.md
"""
import argparse
import collections
import datetime
import gzip
import json
import multiprocessing as mp
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import generate  # noqa: E402

SP_VERDICT = {0: "proved", 1: "refuted", 2: "error", 3: "unknown"}


def shardproof_verdict(binary, path, timeout_s, proof_s=None):
    """(verdict, detail): proved / refuted / unknown / error / timeout, with
    the rule ids found or the first reason an obligation could not be proved."""
    command = [binary, "check", f"{path}::entry", "--world", "2", "--format", "json"]
    if proof_s is not None:
        command += ["--timeout", str(proof_s)]
    for attempt in range(30):
        try:
            # A session of its own: on timeout its whole process group goes.
            proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, cwd=os.path.dirname(path),
                                    start_new_session=True)
            break
        except OSError:  # the binary is being relinked: wait for it
            time.sleep(10)
    else:
        return "error", f"cannot run {binary}"
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return "timeout", f"over {timeout_s} s"
    proc = subprocess.CompletedProcess(command, proc.returncode, stdout, stderr)
    verdict = SP_VERDICT.get(proc.returncode, f"exit {proc.returncode}")
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        return ("error" if verdict != "proved" else verdict), proc.stderr.strip()[-300:]
    if doc.get("verdict") == "accepted":
        verdict = "accepted"
    rules = sorted({f["rule_id"] for f in doc.get("findings", [])})
    whys = [o.get("why", "") for t in doc.get("targets", []) for o in t.get("obligations", [])
            if o.get("verdict") == "unknown"]
    errors = [e.get("message", "") for e in doc.get("errors", [])]
    detail = " ".join(rules) if verdict == "refuted" else (
        (whys[0] if whys else "") if verdict == "unknown" else "; ".join(errors)[:300])
    return verdict, detail


def classify(truth, sp):
    if truth == "harness error":
        return "truth harness error"
    if truth == "error":
        return "torch error, proved" if sp == "proved" else "torch error"
    if sp == "proved" and truth == "mismatch":
        return "FALSE PROOF"
    if sp == "refuted" and truth == "reconciles":
        return "false alarm"
    if sp in ("error", "timeout") or sp.startswith("exit"):
        return f"shardproof {sp}"
    return "agree" if sp in ("proved", "refuted") else "unknown"


# Outcomes saved for the lead to look at.
SAVED = ("FALSE PROOF", "false alarm", "torch error, proved", "shardproof error",
         "shardproof timeout", "truth harness error")

_worker_dir = None


def _init_worker():
    global _worker_dir
    _worker_dir = tempfile.mkdtemp(prefix="soundness-")
    import truth  # noqa: F401  (torch imported once per worker)


def check(args):
    """One program end to end: its record."""
    seed, binary, timeout_s, proof_s = args
    import truth
    path = generate.write(seed, _worker_dir)
    start = time.time()
    try:
        t_verdict, t_detail = truth.verdict(path)
    except Exception as e:  # noqa: B902 (one program never stops the campaign)
        t_verdict, t_detail = "harness error", f"{type(e).__name__}: {e}"[:300]
    t_truth = time.time() - start
    sp, sp_detail = shardproof_verdict(binary, path, timeout_s, proof_s)
    if sp == "proved" and t_verdict == "mismatch" and t_detail.startswith("hang"):
        t_verdict, t_detail = rejudged_hang(truth, path, t_detail)
    with open(path[:-3] + ".json") as f:
        sidecar = json.load(f)
    record = dict(seed=seed, truth=t_verdict, truth_detail=t_detail, shardproof=sp,
                  shardproof_detail=sp_detail, outcome=classify(t_verdict, sp),
                  bug=sidecar["bug"], family=sidecar.get("family", sidecar["mode"]),
                  mode=sidecar["mode"], dtype=sidecar["dtype"],
                  seconds_truth=round(t_truth, 3),
                  seconds_total=round(time.time() - start, 3), path=path)
    return record


def rejudged_hang(truth, path, detail, tries=2):
    """truth.py calls a collective that a rank reaches after its barrier's
    timeout a hang: on a loaded machine a slow rank looks so (seed 1102 of
    the 2026-12-07 run). A hang against a proof is judged again, up to
    `tries` times; it stands only if every run hangs."""
    for _ in range(tries):
        verdict, again = truth.verdict(path)
        if not (verdict == "mismatch" and again.startswith("hang")):
            return verdict, (f"{again} (judged again: the first run's {detail!r} was a "
                             "rank slower than the barrier's timeout)").strip()
    return "mismatch", detail


def save(record, save_dir):
    kind = record["outcome"].replace(",", "").replace(" ", "_").lower()
    dest = os.path.join(save_dir, kind)
    os.makedirs(dest, exist_ok=True)
    base = os.path.join(dest, f"prog_{record['seed']}")
    shutil.copy(record["path"], base + ".py")
    shutil.copy(record["path"][:-3] + ".json", base + ".json")
    with open(base + ".verdicts.json", "w") as f:
        json.dump({k: v for k, v in record.items() if k != "path"}, f, indent=1)


def campaign(seeds, binary, timeout_s, proof_s, workers, save_dir, log, progress=None):
    records = []
    with mp.get_context("fork").Pool(workers, initializer=_init_worker,
                                      maxtasksperchild=500) as pool:
        for record in pool.imap_unordered(check, [(s, binary, timeout_s, proof_s) for s in seeds]):
            records.append(record)
            if save_dir and (record["outcome"] in SAVED or record["outcome"].startswith("shardproof")):
                save(record, save_dir)
            if log:
                log.write(json.dumps({k: v for k, v in record.items() if k != "path"}) + "\n")
                log.flush()
            if record["outcome"] == "FALSE PROOF":
                print(f"FALSE PROOF seed {record['seed']}: bug {record['bug']}, torch: "
                      f"{record['truth_detail']}", flush=True)
            if len(records) % 100 == 0:
                print(f"... {len(records)} programs", file=sys.stderr, flush=True)
            if progress and len(records) % 250 == 0:
                progress(sorted(records, key=lambda r: r["seed"]))
    return sorted(records, key=lambda r: r["seed"])


def table(records):
    truths = ("mismatch", "reconciles", "error")
    sps = ("proved", "refuted", "unknown", "accepted", "error", "timeout")
    counts = collections.Counter((r["truth"], r["shardproof"]) for r in records)
    lines = ["| torch \\ shardproof | " + " | ".join(sps) + " | total |",
             "|---" * (len(sps) + 2) + "|"]
    for t in truths:
        row = [counts[(t, s)] for s in sps]
        lines.append(f"| {t} | " + " | ".join(map(str, row)) + f" | {sum(row)} |")
    return "\n".join(lines)


def select(seeds, families=None, bugs=None):
    """The seeds whose program is of one of `families` and carries one of
    `bugs` ('none' for no bug): a program is still named by its seed alone."""
    seeds = list(seeds)
    if not families and not bugs:
        return seeds
    families = set(families.split(",")) if families else None
    bugs = set(bugs.split(",")) if bugs else None
    unknown = (families or set()) - {"tp", "dp", *generate.NEW_FAMILIES}
    unknown |= (bugs or set()) - {"none", *generate.BUGS}
    if unknown:
        raise SystemExit(f"campaign.py: unknown family or bug: {sorted(unknown)}")
    chosen = []
    for seed in seeds:
        _, sidecar = generate.generate(seed)
        if families and sidecar["family"] not in families:
            continue
        if bugs and (sidecar["bug"] or "none") not in bugs:
            continue
        chosen.append(seed)
    return chosen


def by_family(records):
    """Per family and injected bug: programs, torch's and shardproof's verdicts."""
    lines = ["| family | bug | programs | torch mismatch | proved | refuted | could not prove "
             "| other | false proofs (seeds) |", "|---" * 9 + "|"]
    groups = collections.defaultdict(list)
    for r in records:
        groups[(r.get("family", r["mode"]), r["bug"] or "(none)")].append(r)
    for (family, bug), rs in sorted(groups.items()):
        n = collections.Counter(r["shardproof"] for r in rs)
        false = [str(r["seed"]) for r in rs if r["outcome"] == "FALSE PROOF"]
        lines.append(f"| {family} | `{bug}` | {len(rs)} | "
                     f"{sum(r['truth'] == 'mismatch' for r in rs)} | {n['proved']} | "
                     f"{n['refuted']} | {n['unknown']} | "
                     f"{len(rs) - n['proved'] - n['refuted'] - n['unknown']} | "
                     f"{len(false)}{' (' + ', '.join(false[:10]) + ')' if false else ''} |")
    return "\n".join(lines)


def report(records, seconds, command, save_dir, planned=None, note=None):
    outcomes = collections.Counter(r["outcome"] for r in records)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    out = ["# Soundness campaign", "",
           "Generated by `tests/soundness/campaign.py` (do not edit by hand): random",
           "Megatron/DeepSpeed-style programs from `tests/soundness/generate.py`, each",
           "correct or with one injected bug; ground truth from real PyTorch",
           "(`tests/soundness/truth.py`: every rank in one process, collectives",
           "performed on the real tensors, judged as `tests/groundtruth/check_pairs.py`",
           "judges the fixtures); shardproof's verdict at world 2.", "",
           f"- Command: `{command}`",
           *([f"- **In progress: {len(records)} of {planned} programs so far**"]
             if planned and planned != len(records) else []),
           f"- Date: {date}, commit {commit} (plus the working tree of that time)",
           f"- Programs: {len(records)}, in {seconds / 60:.1f} min "
           f"({len(records) / max(seconds, 1e-9) * 60:.1f} programs/minute, 2 workers)",
           f"- FALSE PROOFS (proved, torch mismatch): **{outcomes['FALSE PROOF']}**",
           f"- False alarms (refuted, torch reconciles): {outcomes['false alarm']}",
           f"- Could not prove: {outcomes['unknown']}",
           f"- shardproof errors (exit 2) / timeouts: {outcomes['shardproof error']} / "
           f"{outcomes['shardproof timeout']}",
           f"- Judged over the reals (a bf16 run that differs from its world-1 run by "
           f"rounding only, reconciling with bf16 computed in float64): "
           f"{sum(r['truth_detail'].startswith('over the reals') for r in records)}",
           f"- Excluded, the ground-truth harness failed: {outcomes['truth harness error']}",
           f"- Excluded, torch raises: {outcomes['torch error'] + outcomes['torch error, proved']}"
           f" (of which shardproof proved: {outcomes['torch error, proved']})",
           *([f"- Note: {note}"] if note else []),
           "", "## Verdicts", "", table(records), ""]
    for title, kind in (("False proofs", "FALSE PROOF"), ("False alarms", "false alarm"),
                        ("Proved while torch raises", "torch error, proved"),
                        ("shardproof errors", "shardproof error"),
                        ("shardproof timeouts", "shardproof timeout")):
        hits = [r for r in records if r["outcome"] == kind]
        out += [f"## {title} ({len(hits)})", ""]
        if not hits:
            out += ["None.", ""]
            continue
        by_bug = collections.defaultdict(list)
        for r in hits:
            by_bug[r["bug"] or "(none injected)"].append(r)
        for bug, rs in sorted(by_bug.items()):
            seeds = ", ".join(str(r["seed"]) for r in rs[:12]) + (" ..." if len(rs) > 12 else "")
            detail = rs[0]["truth_detail"] if kind == "FALSE PROOF" else rs[0]["shardproof_detail"]
            out.append(f"- `{bug}`: {len(rs)} (seeds {seeds}); e.g. {detail[:200]}")
        out.append("")
    out += ["## By injected bug", "",
            "| bug | programs | torch mismatch | refuted | proved | could not prove | other |",
            "|---|---|---|---|---|---|---|"]
    by_bug = collections.defaultdict(list)
    for r in records:
        by_bug[r["bug"] or "(none)"].append(r)
    for bug, rs in sorted(by_bug.items()):
        n = collections.Counter(r["shardproof"] for r in rs)
        other = len(rs) - n["refuted"] - n["proved"] - n["unknown"]
        out.append(f"| `{bug}` | {len(rs)} | {sum(r['truth'] == 'mismatch' for r in rs)} | "
                   f"{n['refuted']} | {n['proved']} | {n['unknown']} | {other} |")
    out.append("")
    out += ["## By family", "",
            "Families: `tp` and `dp` (layer stacks), and generate.NEW_FAMILIES: "
            "`pp_forward` (a pipeline whose schedule runs backward inside the model's "
            "forward), `pp_backward` (its backwards in the entry's backward callable), "
            "`dp_buckets` (buckets all-reduced from backward hooks).", "",
            by_family(records), ""]
    unknown_reasons = collections.Counter(
        r["shardproof_detail"].split(":")[0][:90] for r in records if r["shardproof"] == "unknown")
    out += ["## Most common reasons for \"could not prove\"", ""]
    out += [f"- {n} x {why or '(no reason given)'}" for why, n in unknown_reasons.most_common(10)]
    out += ["", f"Every disagreement's program, sidecar and verdicts: under `{save_dir}` "
                "of the run (regenerate one with `generate.py SEED DIR`).", ""]
    return "\n".join(out)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="0:300", help="A:B, the half-open seed range, "
                        "or seeds S,T,... (not with --from-log)")
    parser.add_argument("--shardproof", default=os.path.join(ROOT, "build", "shardproof"))
    parser.add_argument("--timeout", type=float, default=60, help="seconds per program")
    parser.add_argument("--proof-timeout", type=float,
                        help="shardproof's --timeout (seconds per obligation; its default "
                        "unless given)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--families", help="only the programs of these families (comma-"
                        "separated: tp, dp, " + ", ".join(generate.NEW_FAMILIES) + ")")
    parser.add_argument("--bugs", help="only the programs with these injected bugs "
                        "(comma-separated names of generate.BUGS; 'none': the correct ones)")
    parser.add_argument("--limit", type=int, help="at most this many programs (the first "
                        "selected seeds of the range)")
    parser.add_argument("--save", help="directory for every disagreement")
    parser.add_argument("--log", help="JSON-lines file of every program's record")
    parser.add_argument("--report", help="write the markdown report here (docs/soundness.md)")
    parser.add_argument("--from-log", help="write --report from earlier runs' --log files "
                        "(comma-separated) instead of running, for the programs in --seeds")
    parser.add_argument("--seconds", type=float, help="with --from-log: that run's duration")
    parser.add_argument("--note", help="with --from-log: a line on how the run went")
    args = parser.parse_args(argv[1:])
    if args.from_log:
        first, last = map(int, args.seeds.split(":"))
        by_seed = {}  # several logs (a run resumed), the last record of a seed
        for log_path in args.from_log.split(","):
            opener = gzip.open if log_path.endswith(".gz") else open
            with opener(log_path, "rt") as f:
                by_seed.update((r["seed"], r) for r in map(json.loads, f))
        records = sorted((r for s, r in by_seed.items() if first <= s < last),
                         key=lambda r: r["seed"])
        # The command of the run that wrote the log (the options but these two).
        run_args, rest = [], list(argv[1:])
        while rest:
            a = rest.pop(0)
            if a in ("--from-log", "--seconds", "--note"):
                rest.pop(0)  # and its value
            else:
                run_args.append(a)
        # Several logs are several runs (their commands are in --note): the
        # command is then the one that wrote the report from them.
        logs = ["--from-log" if "," in args.from_log else "--log", args.from_log]
        command = "/usr/bin/python3 " + " ".join(
            [os.path.relpath(os.path.abspath(argv[0]), ROOT)] + run_args + logs)
        with open(args.report, "w") as f:
            f.write(report(records, args.seconds or 0, command, args.save, last - first,
                           args.note))
        return 0
    if ":" in args.seeds:
        first, last = map(int, args.seeds.split(":"))
        seeds = range(first, last)
    else:  # a list of seeds (those of earlier disagreements)
        seeds = [int(s) for s in args.seeds.split(",")]
    import truth  # noqa: F401  (before the workers fork: they all run this code)
    log = open(args.log, "w") if args.log else None
    start = time.time()
    command = "/usr/bin/python3 " + " ".join(
        [os.path.relpath(os.path.abspath(argv[0]), ROOT)] + argv[1:])

    def write_report(records, planned=None):
        with open(args.report, "w") as f:
            f.write(report(records, time.time() - start, command, args.save, planned))

    progress = (lambda records: write_report(records, len(seeds))) if args.report else None
    seeds = select(seeds, args.families, args.bugs)
    if args.limit is not None:
        seeds = seeds[:args.limit]
    records = campaign(seeds, os.path.abspath(args.shardproof), args.timeout,
                       args.proof_timeout, args.workers, args.save, log, progress)
    seconds = time.time() - start
    print(table(records))
    print(by_family(records))
    outcomes = collections.Counter(r["outcome"] for r in records)
    print(", ".join(f"{k}: {v}" for k, v in sorted(outcomes.items())))
    print(f"{len(records)} programs in {seconds:.0f} s "
          f"({len(records) / max(seconds, 1e-9) * 60:.1f}/min)")
    if args.report:
        write_report(records)
    false_proofs = [r for r in records if r["outcome"] == "FALSE PROOF"]
    for r in false_proofs:
        print(f"FALSE PROOF: seed {r['seed']} (bug {r['bug']}): torch {r['truth']} "
              f"({r['truth_detail']}), shardproof proved. Reproduce: "
              f"python3 tests/soundness/generate.py {r['seed']} DIR")
    return 1 if false_proofs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
