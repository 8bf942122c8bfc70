"""Reads a Megatron-LM launch: the arguments of its entry script as a user
runs it, from a functional-test `model_config.yaml` (MODEL_ARGS), a shell
launch script (its torchrun line, with the script's own variables and bash
arrays expanded), or an arguments file (the arguments over several lines,
`#` comments allowed, optionally starting with the entry script).

Pure text handling, no torch and no tree imports: `shardproof check TREE
--launch FILE` plans the world from it before any rank runs."""
import dataclasses
import os
import re
import shlex

from shardproof_recipes import LaunchError


@dataclasses.dataclass
class Launch:
    path: str
    script: str  # the entry script as the launch names it, or ""
    args: list  # the entry script's arguments, as on its command line
    world: int = 0  # from the launcher (torchrun --nproc-per-node x --nnodes), 0: not said
    lines: dict = dataclasses.field(default_factory=dict)  # "--flag" -> line in path
    # Variables the launch sets for its processes (ENV_VARS, a script's exports).
    environment: dict = dataclasses.field(default_factory=dict)

    def line(self, flag):
        return self.lines.get(flag, 0)

    def error(self, flag, message):
        return LaunchError(self.path, self.line(flag), message)


def read(path):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise LaunchError(path, 0, f"cannot read the launch: {e}") from e
    if path.endswith((".yaml", ".yml")):
        return _from_yaml(path, text)
    if path.endswith(".sh") or text.startswith("#!"):
        return _from_shell(path, text)
    return _from_arguments(path, text)


def _flag_lines(text):
    lines = {}
    for number, line in enumerate(text.splitlines(), 1):
        for match in re.finditer(r"(--[A-Za-z0-9][\w-]*)", line.split("#", 1)[0]):
            lines.setdefault(match.group(1), number)
    return lines


# ---- model_config.yaml ----

def _from_yaml(path, text):
    import yaml
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise LaunchError(path, mark.line + 1 if mark else 0, f"not YAML: {e}") from e
    if not isinstance(document, dict) or not isinstance(document.get("MODEL_ARGS"), dict):
        raise LaunchError(path, 1, "no MODEL_ARGS mapping (a Megatron functional-test "
                          "model_config.yaml has one)")
    args = []
    # As the functional tests' _run_training.sh turns MODEL_ARGS into argv:
    # true is the bare flag, a list its items, an empty value the bare flag.
    for key, value in document["MODEL_ARGS"].items():
        key = str(key)
        if value is True or value == "" or value is None:
            args.append(key)
        elif value is False:
            continue  # a flag left off
        elif isinstance(value, list):
            args += [key] + [_scalar(v) for v in value]
        else:
            args += [key, _scalar(value)]
    environment = document.get("ENV_VARS") or {}
    if not isinstance(environment, dict):
        raise LaunchError(path, _key_line(text, "ENV_VARS"), "ENV_VARS is not a mapping")
    return Launch(path, _script_of_test_case(path), args, 0, _flag_lines(text),
                  {str(k): _scalar(v) for k, v in environment.items()})


def _key_line(text, key):
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith(key + ":"):
            return number
    return 0


def _scalar(value):
    if isinstance(value, float) and value == int(value) and abs(value) < 1e15:
        return repr(value)
    return str(value)


def _script_of_test_case(path):
    """The entry script the functional tests run for this test case: the
    TRAINING_SCRIPT_PATH of the tests/test_utils/recipes file that lists the
    case, else by the model folder (gpt and moe: pretrain_gpt.py)."""
    case_dir = os.path.dirname(os.path.abspath(path))
    case, model = os.path.basename(case_dir), os.path.basename(os.path.dirname(case_dir))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(case_dir))))
    recipes = os.path.join(root, "tests", "test_utils", "recipes")
    for folder, _, files in os.walk(recipes):
        for name in sorted(files):
            if not name.endswith(".yaml"):
                continue
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                text = f.read()
            if re.search(rf"\b{re.escape(case)}\b", text):
                found = re.search(r"TRAINING_SCRIPT_PATH=\\?\"?([\w./-]+\.py)", text)
                if found:
                    return found.group(1)
    return {"gpt": "pretrain_gpt.py", "moe": "pretrain_gpt.py", "mixtral": "pretrain_gpt.py",
            "hybrid": "pretrain_hybrid.py", "mamba": "pretrain_mamba.py"}.get(model, "")


# ---- arguments files ----

def _from_arguments(path, text):
    joined = re.sub(r"\\\n", " ", text)
    try:
        words = shlex.split(joined, comments=True)
    except ValueError as e:
        raise LaunchError(path, 0, f"cannot split the arguments: {e}") from e
    script = ""
    if words and words[0].endswith(".py"):
        script, words = words[0], words[1:]
    return Launch(path, script, words, 0, _flag_lines(text))


# ---- shell launch scripts ----

def _from_shell(path, text):
    variables, arrays, exported = {}, {}, {}
    lines = _logical_lines(text)
    for number, line in lines:
        array = re.match(r"^\s*(?:export\s+|declare\s+-a\s+)?([A-Za-z_]\w*)=\((.*)\)\s*$",
                         line, re.S)
        if array:
            arrays[array.group(1)] = _words(_expand(array.group(2), variables, arrays),
                                            path, number)
            continue
        scalar = re.match(r"^\s*(?:export\s+)?([A-Za-z_]\w*)=(\S*)\s*(?:#.*)?$", line)
        if scalar:
            variables[scalar.group(1)] = _scalar_value(
                _expand(scalar.group(2), variables, arrays))
            if line.lstrip().startswith("export "):
                exported[scalar.group(1)] = variables[scalar.group(1)]
            continue
    for number, line in lines:
        words = _words(_expand(line, variables, arrays), path, number)
        scripts = [i for i, w in enumerate(words) if w.endswith(".py")]
        launcher = words and os.path.basename(words[0]) in ("torchrun", "python", "python3",
                                                            "deepspeed")
        if scripts and launcher:
            at = scripts[0]
            world = _launcher_world(words[1:at], path, number)
            return Launch(path, words[at], words[at + 1:], world, _flag_lines(text),
                          exported)
    raise LaunchError(path, 0, "no torchrun or python line that runs an entry script")


def _logical_lines(text):
    """(first line number, text) with backslash continuations joined and
    bash arrays `NAME=( ... )` over several lines gathered into one."""
    out, pending, start, depth = [], "", 0, 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #", 1)[0] if not raw.lstrip().startswith("#") else ""
        if not pending:
            start = number
        continued = line.rstrip().endswith("\\")
        pending += (line.rstrip()[:-1] if continued else line) + " "
        depth += line.count("(") - line.count(")")
        if not continued and depth <= 0:
            out.append((start, pending.strip()))
            pending, depth = "", 0
    if pending.strip():
        out.append((start, pending.strip()))
    return out


def _expand(text, variables, arrays):
    def arithmetic(match):
        expression = _expand(match.group(1), variables, arrays)
        if re.fullmatch(r"[\d\s+*/()-]+", expression):
            return str(int(eval(expression, {"__builtins__": {}})))  # digits and + - * / only
        return ""
    text = re.sub(r"\$\(\((.*?)\)\)", arithmetic, text)
    text = re.sub(r"\$\{(\w+)\[@\]\}", lambda m: " ".join(map(shlex.quote,
                                                          arrays.get(m.group(1), []))), text)
    text = re.sub(r"\$\{(\w+):-([^}]*)\}",
                  lambda m: variables.get(m.group(1)) or m.group(2), text)
    text = re.sub(r"\$\{(\w+)\}|\$([A-Za-z_]\w*)",
                  lambda m: variables.get(m.group(1) or m.group(2), ""), text)
    return re.sub(r"\$\d", "", text)  # the script's own positional parameters: unknown


def _scalar_value(text):
    try:
        words = shlex.split(text)
    except ValueError:
        return text
    return words[0] if len(words) == 1 else text


def _words(text, path, number):
    try:
        return shlex.split(text, comments=True)
    except ValueError as e:
        raise LaunchError(path, number, f"cannot split this line: {e}") from e


def _launcher_world(words, path, number):
    sizes = {}
    for i, word in enumerate(words):
        key, _, value = word.partition("=")
        key = key.replace("-", "_")
        if key in ("__nproc_per_node", "__nnodes", "__num_gpus", "__num_nodes"):
            value = value or (words[i + 1] if i + 1 < len(words) else "")
            if not value.isdigit():
                raise LaunchError(path, number, f"{word} {value}: the launcher's size is "
                                  "not a number; pass --world")
            sizes[key] = int(value)
    per_node = sizes.get("__nproc_per_node", sizes.get("__num_gpus", 0))
    return per_node * sizes.get("__nnodes", sizes.get("__num_nodes", 1)) if per_node else 0
