"""The GitHub action (integrations/github-action/action.yml) and the
pre-commit hook (.pre-commit-hooks.yaml), run locally step by step on a
fixture repository this test makes:

  commit 1: model_a.py has a known bug (row_parallel_bias_before_reduce),
            model_b.py is correct (rank_conditional_allreduce), and a
            baseline of commit 1's findings;
  commit 2: model_b.py gets its bug (a rank-conditional all-reduce).

The action compared with commit 1 annotates exactly one finding, on the line
commit 2 changed, and fails; with the baseline, only the new finding fails a
full run. The upload step cannot run here: its SARIF file is validated
against the official schema instead.

    python3 action_test.py SHARDPROOF SOURCE_DIR"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

import yaml

import validate_sarif

FIXTURES = "tests/fixtures"
failures = []


def expect(condition, what):
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        failures.append(what)


def git(repo, *args):
    subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True)


def make_repository(repo, source_dir, shardproof):
    fixture = lambda name: open(os.path.join(source_dir, FIXTURES, name)).read()
    os.makedirs(repo)
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "test@example.com")
    git(repo, "config", "user.name", "test")
    write(repo, "model_a.py", fixture("row_parallel_bias_before_reduce/buggy.py"))
    write(repo, "model_b.py", fixture("rank_conditional_allreduce/correct.py"))
    write(repo, "pyproject.toml",
          '[tool.shardproof]\ntargets = ["model_a.py", "model_b.py"]\n')
    subprocess.run([shardproof, "check", "--write-baseline", "baseline.json"], cwd=repo,
                   capture_output=True)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one")
    first = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], capture_output=True,
                           text=True, check=True).stdout.strip()
    write(repo, "model_b.py", fixture("rank_conditional_allreduce/buggy.py"))
    git(repo, "commit", "-q", "-a", "-m", "two")
    return first


def write(repo, name, text):
    with open(os.path.join(repo, name), "w") as f:
        f.write(text)


def changed_lines(repo, base, file):
    diff = subprocess.run(["git", "-C", repo, "diff", "--unified=0", base, "--", file],
                          capture_output=True, text=True, check=True).stdout
    lines = set()
    for start, count in re.findall(r"^@@ -\S+ \+(\d+)(?:,(\d+))? @@", diff, re.M):
        lines.update(range(int(start), int(start) + int(count or 1)))
    return lines


def substitute(text, context):
    """GitHub's ${{ expr }} for the expressions the action uses."""
    def value(match):
        expr = match.group(1).strip()
        if expr not in context:
            raise KeyError(f"the local runner does not know ${{{{ {expr} }}}}")
        return context[expr]
    return re.sub(r"\$\{\{(.*?)\}\}", value, str(text))


def run_action(action_dir, repo, inputs, temp):
    """Runs the action's steps as GitHub would: `run` steps with bash in the
    repository, their env evaluated; returns (annotations, check status,
    the upload step's SARIF file)."""
    action = yaml.safe_load(open(os.path.join(action_dir, "action.yml")))
    context = {"github.action_path": action_dir, "runner.temp": temp,
               "github.event.pull_request.base.sha": ""}
    for name, spec in action["inputs"].items():
        context[f"inputs.{name}"] = inputs.get(name, substitute(spec.get("default", ""), context))
    context["always() && inputs.upload-sarif == 'true'"] = "true"
    env = dict(os.environ, RUNNER_TEMP=temp, GITHUB_WORKSPACE=repo,
               GITHUB_PATH=os.path.join(temp, "path"), GITHUB_OUTPUT=os.path.join(temp, "out"))
    stdout, status, sarif = "", None, None
    for step in action["runs"]["steps"]:
        if "uses" in step:
            expect(step["uses"].startswith("github/codeql-action/upload-sarif@"),
                   "the last step uploads SARIF to code scanning")
            sarif = os.path.join(repo, substitute(step["with"]["sarif_file"], context))
            continue
        step_env = dict(env, **{k: substitute(v, context) for k, v in step.get("env", {}).items()})
        if os.path.exists(env["GITHUB_PATH"]):  # what earlier steps put on the PATH
            extra = open(env["GITHUB_PATH"]).read().split()
            step_env["PATH"] = ":".join(extra + [env["PATH"]])
        run = subprocess.run(["bash", "-c", substitute(step["run"], context)], cwd=repo,
                             env=step_env, capture_output=True, text=True)
        if step.get("id") == "check":
            stdout, status = run.stdout, run.returncode
        elif run.returncode != 0:
            expect(False, f"step '{step['name']}' ran: {run.stderr}")
    annotations = [l for l in stdout.splitlines() if l.startswith("::")]
    return annotations, status, sarif


def check_action(action_dir, repo, first, shardproof, temp):
    binary = {"binary": shardproof}
    annotations, status, sarif = run_action(action_dir, repo, {**binary, "base": first}, temp)
    errors = [a for a in annotations if a.startswith("::error ")]
    expect(len(errors) == 1, f"one annotation on the pull request: {errors}")
    where = re.match(r"::error file=([^,]+),line=(\d+)", errors[0]) if errors else None
    expect(where is not None and where.group(1) == "model_b.py" and
           int(where.group(2)) in changed_lines(repo, first, "model_b.py"),
           "the annotation is on a line the pull request changed")
    expect(status == 1, f"the new finding fails the job (exit {status})")
    expect(sarif is not None and os.path.exists(sarif) and validate_sarif.main([sarif]) == 0,
           "the SARIF file the upload step takes is valid SARIF 2.1.0")
    _, full_status, _ = run_action(action_dir, repo, {**binary, "base": ""}, temp)
    expect(full_status == 1, "without a baseline the full run fails too")
    annotations, known_status, _ = run_action(
        action_dir, repo, {**binary, "base": "", "baseline": "baseline.json"}, temp)
    errors = [a for a in annotations if a.startswith("::error ")]
    expect(len(errors) == 1 and "model_b.py" in errors[0] and known_status == 1,
           f"with commit 1 as baseline only the new finding fails: {errors}")
    git(repo, "checkout", "-q", first)
    _, old_status, _ = run_action(
        action_dir, repo, {**binary, "base": "", "baseline": "baseline.json"}, temp)
    expect(old_status == 0, f"commit 1 against its own baseline passes (exit {old_status})")
    git(repo, "checkout", "-q", "-")


def check_hook(source_dir, repo, first, shardproof):
    hooks = yaml.safe_load(open(os.path.join(source_dir, ".pre-commit-hooks.yaml")))
    hook = next(h for h in hooks if h["id"] == "shardproof")
    expect(hook["language"] == "system" and hook["pass_filenames"] is False,
           "the hook runs the installed shardproof on the configured targets")
    command = shlex.split(hook["entry"]) + hook.get("args", [])
    env = dict(os.environ, PATH=os.path.dirname(shardproof) + ":" + os.environ["PATH"])
    git(repo, "reset", "-q", "--soft", first)  # commit 2's change, staged
    staged = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
    errors = [l for l in staged.stdout.splitlines() if ": error: " in l]
    expect(staged.returncode == 1 and len(errors) == 1 and errors[0].startswith("model_b.py:"),
           f"the hook fails a commit that adds the bug: {errors}")
    git(repo, "stash", "-q")
    clean = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
    expect(clean.returncode == 0, f"the hook passes a commit with no change ({clean.stderr})")


def check_placement(source_dir, temp, shardproof):
    """A finding whose own line is unchanged but whose chain (a note: the
    output it reaches) passes through a changed line is placed there."""
    repo = os.path.join(temp, "placement")
    os.makedirs(repo)
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "test@example.com")
    git(repo, "config", "user.name", "test")
    text = open(os.path.join(source_dir, FIXTURES,
                             "row_parallel_bias_before_reduce/buggy.py")).read().splitlines()
    write(repo, "model.py", "\n".join(text) + "\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one")
    text[61] += "  # the output, reviewed"  # line 62: where the output is returned
    write(repo, "model.py", "\n".join(text) + "\n")
    run = subprocess.run([shardproof, "check", "model.py", "--diff", "HEAD", "--format", "json"],
                         cwd=repo, capture_output=True, text=True)
    findings = json.loads(run.stdout)["findings"] if run.stdout else []
    expect(len(findings) == 1 and findings[0]["line"] == 62 and
           findings[0]["notes"][0]["line"] == 61,
           f"the finding is placed on the changed line its chain reaches: {findings}")


def check_selection(temp, shardproof):
    """--diff selects a target by every file its runs executed: a module it
    imports that no finding or operation names, too; not by other files."""
    repo = os.path.join(temp, "placement")  # check_placement's, model.py committed
    write(repo, "helper.py", "SCALE = 1\n")
    write(repo, "main.py", "import helper  # imported, nothing of it traced\n"
                           "from model import entry\n")
    write(repo, "notes.txt", "one\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "helper")
    checked = lambda: subprocess.run([shardproof, "check", "main.py", "--diff", "HEAD"],
                                     cwd=repo, capture_output=True, text=True).stderr
    write(repo, "notes.txt", "two\n")
    expect("0 targets checked, 1 unchanged" in checked(), "an unrelated change selects nothing")
    write(repo, "helper.py", "SCALE = 2\n")
    expect("1 target checked, 0 unchanged" in checked(),
           "a change in a module the target imports selects it")


def main(shardproof, source_dir):
    shardproof = os.path.abspath(shardproof)
    with tempfile.TemporaryDirectory() as temp:
        repo = os.path.join(temp, "repo")
        first = make_repository(repo, source_dir, shardproof)
        action_dir = os.path.join(source_dir, "integrations", "github-action")
        check_action(action_dir, repo, first, shardproof, temp)
        check_hook(source_dir, repo, first, shardproof)
        check_placement(source_dir, temp, shardproof)
        check_selection(temp, shardproof)
    print(f"{0 if failures else 1} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
