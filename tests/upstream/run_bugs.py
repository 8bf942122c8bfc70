#!/usr/bin/python3
"""The real-bug corpus (tests/upstream/bugs.toml) against fetched snapshots:
for every bug, `shardproof check` of its recipe at its layout must have an
error finding in the bug's file at the parent commit (caught) and none there
at the fix (clean; an open bug has no fix), and none at `before` where an
entry names the commit before a regression. Trees are extracted from bare git
mirrors with `git archive`, never committed.

    tests/upstream/run_bugs.py --mirrors /work/.mirror [--only ID,ID] [--build build] \
        [--write docs/coverage.md]

A mirror of owner/name is MIRRORS/owner+name/repo (what shardproof's `fetch`
tool makes) or MIRRORS/owner+name (a bare clone). Without --mirrors the
SHARDPROOF_MIRRORS variable names the folder; with neither the script exits
77 (skipped: CI has no network to fetch trees). Prints one line per bug and
commit and exits 1 when any bug is missed or any fix is not clean."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TREE_PATHS = {
    "megatron": ["megatron"],
    "deepspeed": ["deepspeed", "accelerator", "op_builder", "version.txt"],
}


def mirror_of(mirrors, repository):
    base = os.path.join(mirrors, repository.replace("/", "+"))
    return os.path.join(base, "repo") if os.path.isdir(os.path.join(base, "repo")) else base


def extract(git_dir, commit, framework, into):
    def git(*args):
        return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True,
                              capture_output=True).stdout
    present = set(git("ls-tree", "--name-only", commit).decode().split())
    archive = git("archive", commit, *[p for p in TREE_PATHS[framework] if p in present])
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)


AXES = ("tp", "cp", "ep", "dp", "pp")


def layout_flags(layout):
    """"tp=2,dp=2,sp=1,frozen=1" -> ["--tp", "2", "--dp", "2", "--sp",
    "--option", "frozen=1"] (a scan row's layout and model options)."""
    flags = []
    for item in filter(None, layout.split(",")):
        key, _, value = item.partition("=")
        if key == "sp":
            flags += ["--sp"] if value == "1" else []
        elif key in AXES:
            flags += [f"--{key}", value]
        else:
            flags += ["--option", item]
    return flags


def check(shardproof, tree, bug, python_path):
    args = [shardproof, "check", tree, "--framework", bug["framework"], "--entry",
            bug["recipe"], *layout_flags(bug["layout"]), "--format", "json"]
    if python_path:
        args += ["--python-path", python_path]
    result = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    try:
        doc = json.loads(result.stdout)
    except json.JSONDecodeError:
        return None, f"no report (exit {result.returncode}): {result.stderr.strip()[-300:]}"
    inside = tree.rstrip(os.sep) + os.sep
    errors = [(f["file"][len(inside):] if f["file"].startswith(inside) else f["file"],
               f["line"], f["rule_id"]) for f in doc["findings"] if f["severity"] == "error"]
    return doc, errors


def run_commit(shardproof, git_dir, bug, commit, python_path):
    with tempfile.TemporaryDirectory(prefix="shardproof-bug-") as tree:
        extract(git_dir, commit, bug["framework"], tree)
        doc, errors = check(shardproof, os.path.realpath(tree), bug, python_path)
    if doc is None:
        return None, errors
    return doc["verdict"], errors


def describe(verdict, errors, file):
    here = list(dict.fromkeys(f"{rule} {f}:{line}" for f, line, rule in errors if f == file))
    elsewhere = sorted({f"{rule} {f}:{line}" for f, line, rule in errors if f != file})
    return (f"{verdict}; in {file}: {', '.join(here) if here else 'no error finding'}"
            + (f"; elsewhere: {', '.join(elsewhere)}" if elsewhere else ""))


FIELDS = ("id", "repository", "framework", "recipe", "layout", "file", "rule", "parent",
          "fix", "what")


def validate(bugs):
    """Every entry complete: full commit hashes, a known framework, a recipe
    its recipe file defines, a layout of known axes, a rule id. Returns the
    problems, one line each."""
    import re
    problems, seen = [], set()
    recipes = {}
    for framework in TREE_PATHS:
        with open(os.path.join(ROOT, "integrations", framework, "recipes.py")) as f:
            defined = re.findall(r"^(?:def ([a-z]\w*)\(|([a-z]\w*) = variant\()",
                                 f.read(), re.M)
            recipes[framework] = {function or named for function, named in defined}
    for bug in bugs:
        name = bug.get("id", "?")
        problems += [f"{name}: no {k}" for k in FIELDS if k not in bug]
        if name in seen:
            problems.append(f"{name}: listed twice")
        seen.add(name)
        for key in ("parent", "fix", "before"):
            if key == "before" and key not in bug:
                continue
            value = bug.get(key, "")
            if not re.fullmatch(r"[0-9a-f]{40}", value) and not (key == "fix" and value == "open"):
                problems.append(f"{name}: {key} is not a full commit hash")
        if bug.get("recipe") not in recipes.get(bug.get("framework"), ()):
            problems.append(f"{name}: no recipe {bug.get('recipe')} for {bug.get('framework')}")
        if not all(re.fullmatch(r"(tp|cp|ep|dp|pp|sp)=\d+|[a-z_]+=\w+", item)
                   for item in bug.get("layout", "").split(",")):
            problems.append(f"{name}: bad layout {bug.get('layout')!r}")
        if not re.fullmatch(r"SP\d{3}", bug.get("rule", "")):
            problems.append(f"{name}: bad rule {bug.get('rule')!r}")
    return problems


def table(rows):
    """One line per bug: where the parent's finding is, and the fix's verdict."""
    lines = ["| bug | repository | parent | at the parent | fix | at the fix |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        bug = row["bug"]
        result, verdict, errors, where = row["parent"]
        found = sorted({f"{rule} `{f}:{line}`" for f, line, rule in errors if f == where})
        parent = f"{result}: {', '.join(found)}" if found else f"{result} ({verdict})"
        fix = row.get("fix")
        lines.append(f"| {bug['id']} | {bug['repository']} | `{bug['parent'][:10]}` | "
                     f"{parent} | " + (f"`{bug['fix'][:10]}` | {fix[0]} ({fix[1]}) |"
                                       if fix else "open | |"))
    return "\n".join(lines) + "\n"


def write_table(path, rows):
    begin, end = "<!-- corpus -->", "<!-- /corpus -->"
    with open(path) as f:
        doc = f.read()
    block = f"{begin}\n{table(rows)}{end}"
    doc = (doc[:doc.index(begin)] + block + doc[doc.index(end) + len(end):]
           if begin in doc and end in doc else doc.rstrip("\n") + "\n\n" + block + "\n")
    with open(path, "w") as f:
        f.write(doc)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", default=os.environ.get("SHARDPROOF_MIRRORS"))
    parser.add_argument("--bugs", default=os.path.join(ROOT, "tests", "upstream", "bugs.toml"))
    parser.add_argument("--only", help="comma-separated bug ids")
    parser.add_argument("--build", default="build")
    parser.add_argument("--python-path", help="passed to shardproof (pydantic 2 for DeepSpeed)")
    parser.add_argument("--write", help="a markdown file whose table between "
                                        "<!-- corpus --> and <!-- /corpus --> is replaced")
    parser.add_argument("--validate", action="store_true",
                        help="only check that every entry is complete")
    options = parser.parse_args()
    if options.validate:
        with open(options.bugs, "rb") as f:
            problems = validate(tomllib.load(f)["bug"])
        print("\n".join(problems) or "every entry is complete")
        return 1 if problems else 0
    if not options.mirrors:
        print("skipped: no --mirrors and no SHARDPROOF_MIRRORS")
        return 77
    with open(options.bugs, "rb") as f:
        bugs = tomllib.load(f)["bug"]
    if options.only:
        wanted = set(options.only.split(","))
        bugs = [b for b in bugs if b["id"] in wanted]
    shardproof = os.path.join(ROOT, options.build, "shardproof")
    failures, rows = 0, []
    for bug in bugs:
        git_dir = mirror_of(options.mirrors, bug["repository"])
        verdict, errors = run_commit(shardproof, git_dir, bug, bug["parent"],
                                     options.python_path)
        where = bug.get("finding_file", bug["file"])
        caught = verdict is not None and any(f == where for f, _, _ in errors)
        failures += not caught
        how = "caught" if where == bug["file"] else "caught by value"
        print(f"{bug['id']} parent {bug['parent'][:10]}: "
              f"{how if caught else 'MISSED'} "
              f"({describe(verdict, errors, where) if verdict else errors})", flush=True)
        row = {"bug": bug, "parent": (how if caught else "MISSED", verdict, errors, where)}
        rows.append(row)
        for role in ("before", "fix"):
            if bug.get(role, "open") == "open":
                continue
            verdict, errors = run_commit(shardproof, git_dir, bug, bug[role], options.python_path)
            clean = verdict is not None and not any(f == where for f, _, _ in errors)
            failures += not clean
            print(f"{bug['id']} {role} {bug[role][:10]}: {'clean' if clean else 'NOT CLEAN'} "
                  f"({describe(verdict, errors, where) if verdict else errors})", flush=True)
            row[role] = ("clean" if clean else "NOT CLEAN", verdict, errors, where)
    print(f"{len(bugs)} bugs, {failures} failures")
    if options.write:
        write_table(options.write, rows)
    return 1 if failures else 0


sys.exit(main())
