#!/usr/bin/python3
"""`shardproof scan` over the releases of a framework tree: one row per tag,
the scan's target verdicts counted, every error named. Trees are never
committed: point it at a git directory (a clone, or a snapshot from `fetch`)
and it extracts each tag's framework folders into a temporary folder.

    tests/benchmarks/scan_versions.py --git-dir /path/to/Megatron-LM/.git \
        --framework megatron [--since 2023] [--tags 23.04,core_v0.4.0,HEAD] \
        [--build build] [--write docs/coverage.md] [--python-path ENV ...] \
        [--json rows.json] [--keep rows.json] [-- SCAN ARGS]

Without --tags it takes the first release of every minor version whose
commit is from --since on, and the newest commit (HEAD). --write replaces
the table between the markers `<!-- versions:FRAMEWORK -->` and
`<!-- /versions:FRAMEWORK -->` of that file. Prints numbers and asserts
nothing, but exits 1 when some row has a recipe error (a recipe that could
not build its component in that tree). A target the tree itself fails (it
raised inside the tree) is counted apart: that is the tree's behaviour.
Under the table, each version lists the targets whose verdict changed since
the version before (proved → refuted is where a regression landed), then its
error findings, and the rows whose --target-timeout budget ran out (their
obligations left are "could not prove"; the "budget spent" column counts
them).

With --python-path (repeatable), each tree runs with the first environment,
the interpreter's own packages or a given folder over them, that satisfies
the tree's requirements file (DeepSpeed's pydantic pin: pydantic 1 before
mid-2024, 2 after)."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The folders a scan of each framework reads (DeepSpeed's accelerator/ and
# op_builder/ are symlinked into deepspeed/).
TREE_PATHS = {
    "megatron": ["megatron"],
    "deepspeed": ["deepspeed", "accelerator", "op_builder", "version.txt"],
}
# Where a tree lists the packages it runs with; an environment is chosen per
# tree from them (DeepSpeed before mid-2023 needs pydantic 1, after mid-2024
# pydantic 2).
REQUIREMENTS = {"deepspeed": "requirements/requirements.txt"}
# The packages shardproof's own interpreter has without --python-path.
SYSTEM_PACKAGES = "/usr/lib/python3/dist-packages"
RELEASE = re.compile(r"^(?:tags/)?(?:core_v|core_r|v)?(\d+)\.(\d+)(?:\.(\d+))?$")
VERDICTS = ["proved", "refuted", "unknown", "absent", "accepted", "error"]


def git(git_dir, *args, **kwargs):
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True,
                          capture_output=True, **kwargs)


def commit_date(git_dir, ref):
    return git(git_dir, "log", "-1", "--format=%cs", ref, text=True).stdout.strip()


def minor_releases(git_dir, since):
    """The first release (lowest patch, earliest commit) of each minor
    version whose commit is dated `since` or later, oldest first."""
    tags = git(git_dir, "tag", text=True).stdout.split()
    first = {}
    for tag in tags:
        m = RELEASE.match(tag)
        if not m:
            continue
        date = commit_date(git_dir, tag)
        if date < since:
            continue
        key = (int(m.group(1)), int(m.group(2)))
        candidate = (int(m.group(3) or 0), date, tag)
        if key not in first or candidate < first[key]:
            first[key] = candidate
    return [tag for _, (_, _, tag) in sorted(first.items(), key=lambda kv: kv[1][1])]


def extract(git_dir, ref, framework, into):
    present = set(git(git_dir, "ls-tree", "--name-only", ref, text=True).stdout.split())
    paths = [p for p in TREE_PATHS[framework] if p in present]
    archive = git(git_dir, "archive", ref, *paths).stdout
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)


def installed(folder):
    """{normalised package name: version} of the distributions in `folder`."""
    found = {}
    for entry in os.listdir(folder) if os.path.isdir(folder) else []:
        m = re.match(r"^(.+?)-(\d[^-]*?)(?:-py[\d.]+)?\.(?:dist|egg)-info$", entry)
        if m:
            found[canonicalize_name(m.group(1))] = m.group(2)
    return found


def environment_for(git_dir, ref, framework, python_paths):
    """The --python-path (None: the interpreter's own packages) whose packages,
    over the interpreter's own, satisfy the requirements file of the tree at
    `ref`: Debian's first, then `python_paths` in order. Only packages some
    environment has are compared (torch is shardproof's stand-in). A tree
    no environment satisfies gets the first, and the reason."""
    path = REQUIREMENTS.get(framework)
    if not python_paths or not path:
        return (python_paths or [None])[0], None
    try:
        text = git(git_dir, "show", f"{ref}:{path}", text=True).stdout
    except subprocess.CalledProcessError:
        return None, None
    system = installed(SYSTEM_PACKAGES)
    envs = [(None, system)] + [(p, {**system, **installed(p)}) for p in python_paths]
    known = set().union(*(packages for _, packages in envs)) - {"torch"}
    wanted = []
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        try:
            requirement = Requirement(line) if line else None
        except InvalidRequirement:
            continue
        if requirement and canonicalize_name(requirement.name) in known:
            wanted.append(requirement)
    for env, packages in envs:
        if all(canonicalize_name(r.name) in packages and
               r.specifier.contains(packages[canonicalize_name(r.name)], prereleases=True)
               for r in wanted):
            return env, None
    return python_paths[0], f"no environment satisfies {', '.join(map(str, wanted))}"


def scan(shardproof, tree, timeout, extra_args):
    start = time.monotonic()
    try:
        result = subprocess.run([shardproof, "scan", tree, "--format", "json", *extra_args],
                                capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"the scan ran over {timeout} s", time.monotonic() - start
    seconds = time.monotonic() - start
    try:
        return json.loads(result.stdout), None, seconds
    except json.JSONDecodeError:
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        return None, f"exit {result.returncode}: {tail[0]}", seconds


def summarise(ref, date, commit, tree, report, failure, seconds):
    """One row: the targets' verdicts counted; an error target is the tree's
    own failure when its location is inside the tree (the framework raised),
    else a recipe error (the recipe could not build the component)."""
    row = {"tag": ref, "date": date, "commit": commit, "seconds": round(seconds),
           "counts": {v: 0 for v in VERDICTS}, "tree_failures": [], "recipe_errors": [],
           "findings": [], "verdicts": {}, "over_budget": []}
    if failure:
        row["recipe_errors"].append(failure)
        return row
    inside = tree.rstrip(os.sep) + os.sep

    def shown(file):
        return file[len(inside):] if file.startswith(inside) else file

    for target in report["targets"]:
        row["counts"][target["verdict"]] += 1
        row["verdicts"][short_target(target["target"])] = target["verdict"]
        if any("--target-timeout" in o["why"] for o in target["obligations"]):
            row["over_budget"].append(short_target(target["target"]))
    verdict_of = {t["target"]: t["verdict"] for t in report["targets"]}
    for error in report["errors"]:  # absent components are listed here too
        if verdict_of.get(error["target"]) == "error":
            kind = "tree_failures" if error["file"].startswith(inside) else "recipe_errors"
            entry = error["target"].split("::")[-1]
            row[kind].append(f"{entry}: {shown(error['file'])}:{error['line']}: "
                             f"{error['message']}")
    for finding in report["findings"]:
        if finding["severity"] == "error":
            entry = finding["target"].split("::")[-1]
            row["findings"].append(f"{finding['rule_id']} {shown(finding['file'])}:"
                                   f"{finding['line']} ({entry})")
    return row


def short_target(target):
    """`recipes.py::entry [layout] --world N` -> `entry [layout]`."""
    entry = target.split("::")[-1]
    return entry.split(" --world")[0]


def changes(previous, row):
    """The targets whose verdict differs from the previous version's (a
    component that appeared or went is not a change): where a regression
    or a fix landed."""
    return [f"{t}: {previous['verdicts'][t]} → {v}" for t, v in sorted(row["verdicts"].items())
            if previous["verdicts"].get(t, v) != v
            and "absent" not in (previous["verdicts"][t], v)]


def table(framework, rows):
    lines = [f"| {framework} tag | commit date | commit | proved | refuted | could not prove "
             "| absent | tree raised | recipe error | budget spent | scan s | packages |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        c = row["counts"]
        lines.append(f"| {row['tag']} | {row['date']} | `{row['commit']}` | {c['proved']} | "
                     f"{c['refuted']} | {c['unknown']} | {c['absent']} | "
                     f"{len(row['tree_failures'])} | {len(row['recipe_errors'])} | "
                     f"{len(row.get('over_budget', []))} | {row['seconds']} | "
                     f"{row.get('packages', 'own')} |")
    lines.append("")
    for previous, row in zip([None] + rows, rows):
        notes = (changes(previous, row) if previous else []) \
            + sorted(set(row["findings"])) + sorted(set(row["tree_failures"])) \
            + sorted(set(row["recipe_errors"])) \
            + [f"budget spent: {t}" for t in row.get("over_budget", [])]
        if notes:
            lines.append(f"- {row['tag']}: " + "; ".join(n.replace("|", "/")[:300]
                                                          for n in notes))
    return "\n".join(lines) + "\n"


def write_into(path, framework, text):
    begin, end = f"<!-- versions:{framework} -->", f"<!-- /versions:{framework} -->"
    with open(path) as f:
        doc = f.read()
    block = f"{begin}\n{text}{end}"
    if begin in doc and end in doc:
        doc = doc[:doc.index(begin)] + block + doc[doc.index(end) + len(end):]
    else:
        doc = doc.rstrip("\n") + "\n\n" + block + "\n"
    with open(path, "w") as f:
        f.write(doc)


def save(options, rows):
    if options.write:
        write_into(options.write, options.framework, table(options.framework, rows))
    if options.json:
        with open(options.json, "w") as f:
            json.dump(rows, f, indent=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--git-dir", required=True)
    parser.add_argument("--framework", required=True, choices=sorted(TREE_PATHS))
    parser.add_argument("--since", default="2023-01-01")
    parser.add_argument("--tags", help="comma-separated refs (default: minor releases, HEAD)")
    parser.add_argument("--build", default="build")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per scan")
    parser.add_argument("--write", help="a markdown file to put the table into")
    parser.add_argument("--json", help="also write the rows as JSON here")
    parser.add_argument("--python-path", action="append", default=[],
                        help="an environment to choose per tree (repeatable): the "
                             "interpreter's own packages, then these, the first that "
                             "satisfies the tree's requirements file")
    parser.add_argument("--keep", help="an earlier run's --json: its rows are kept and "
                                       "their tags not scanned again (resumes a sweep)")
    parser.add_argument("scan_args", nargs="*", help="passed to `shardproof scan` (after --)")
    options = parser.parse_args()
    git_dir = os.path.abspath(options.git_dir)
    refs = (options.tags.split(",") if options.tags
            else minor_releases(git_dir, options.since) + ["HEAD"])
    shardproof = os.path.join(ROOT, options.build, "shardproof")
    kept = {}
    if options.keep and os.path.exists(options.keep):
        with open(options.keep) as f:
            kept = {row["tag"]: row for row in json.load(f)}
    rows = []
    for ref in refs:
        if ref in kept:
            rows.append(kept[ref])
            continue
        commit = git(git_dir, "rev-parse", "--short=10", f"{ref}^{{commit}}", text=True
                     ).stdout.strip()
        with tempfile.TemporaryDirectory(prefix="shardproof-tree-") as tree:
            extract(git_dir, ref, options.framework, tree)
            env, unmet = environment_for(git_dir, ref, options.framework,
                                         options.python_path)
            report, failure, seconds = scan(
                shardproof, tree, options.timeout,
                (["--python-path", env] if env else []) + options.scan_args)
        row = summarise(ref, commit_date(git_dir, ref), commit, tree, report, failure,
                        seconds)
        row["packages"] = (f"--python-path {options.python_path.index(env) + 1}"
                           if env else "own")
        if unmet:
            row["recipe_errors"].append(unmet)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
        # After each version, with the kept rows still to come: a long sweep
        # stopped here keeps what it has and what it was given.
        done = {r["tag"] for r in rows}
        save(options, rows + [kept[r] for r in refs if r in kept and r not in done])
    save(options, rows)  # also when every row was kept: the table from them
    print(table(options.framework, rows), end="")
    sys.exit(1 if any(r["recipe_errors"] for r in rows) else 0)


main()
