"""What every framework recipe shares: the parallel layout it is asked to
build (`shardproof check ROOT --framework F --entry R --tp 2 --dp 2 --sp`
passes it in SHARDPROOF_PARALLEL), and the error a recipe raises when the
tree it was pointed at cannot build its component.

The world is tp x cp x ep x dp x pp; tensor parallelism varies fastest
(Megatron's default rank order), so rank r has tp rank r % tp. Without
SHARDPROOF_PARALLEL (a recipe run as a plain entry, `--world N`) tensor
parallelism spans the world.

A recipe's model options (bias, gated units, a MoE dispatcher...) ride in the
same text after the axes (`tp=2,sp=1,bias=0`, from `--option bias=0`): a
recipe declares them with @options, reads them with option(), and the scan
explores them with covering(), a pairwise covering matrix."""
import contextlib
import dataclasses
import functools
import itertools
import os

import torch

AXES = ("tp", "cp", "ep", "dp", "pp")


class RecipeError(RuntimeError):
    """The tree cannot build this component (too different, or not a tree)."""


class ComponentAbsent(RecipeError):
    """The tree has no such component (older or newer than the recipe's
    subject): `check` reports an error, `scan` lists it as absent."""


class LaunchError(RecipeError):
    """A launch configuration the tree cannot run as written: names the
    launch file's line."""

    def __init__(self, file, line, message):
        super().__init__(message)
        self.file, self.line = file, line


@dataclasses.dataclass(frozen=True)
class Parallel:
    tp: int = 1
    cp: int = 1
    ep: int = 1
    dp: int = 1
    pp: int = 1
    sp: bool = False  # sequence parallelism (over the tp group)
    options: tuple = ()  # ((name, value), ...): the recipe's model options

    @property
    def world(self):
        return self.tp * self.cp * self.ep * self.dp * self.pp

    def coordinate(self, axis, rank=None):
        """This rank's index along `axis` in tp-fastest order."""
        rank = torch.distributed.get_rank() if rank is None else rank
        for name in AXES:
            size = getattr(self, name)
            if name == axis:
                return rank % size
            rank //= size
        raise ValueError(f"no parallel axis {axis!r}")


def parse(text):
    """`tp=2,dp=2,sp=1,bias=0` -> Parallel: the axes and sp take digits; any
    other key is a model option (a number or a name)."""
    fields, options = {}, []
    for item in filter(None, (s.strip() for s in text.split(","))):
        key, _, value = item.partition("=")
        if key in AXES + ("sp",):
            if not value.isdigit():
                raise RecipeError(f"bad parallel layout item {item!r} in {text!r}")
            fields[key] = bool(int(value)) if key == "sp" else int(value)
        elif key.isidentifier() and value and value.replace("_", "").isalnum():
            options.append((key, int(value) if value.isdigit() else value))
        else:
            raise RecipeError(f"bad option {item!r} in {text!r} (want NAME=VALUE)")
    return Parallel(**fields, options=tuple(options))


def asked():
    """The layout the target asked for, the same in every run of it: the
    single-device reference sees the ranks' layout here (where parallel()
    gives it one device), so it can build the component at their sizes."""
    text = os.environ.get("SHARDPROOF_PARALLEL")
    if text:
        return parse(text)
    return Parallel(tp=int(os.environ.get("SHARDPROOF_WORLD")
                           or torch.distributed.get_world_size()))


def asked_options():
    """The model options the target asked for, {name: value}."""
    text = os.environ.get("SHARDPROOF_PARALLEL")
    return dict(parse(text).options) if text else {}


def parallel():
    """The layout asked for, checked against the simulated world."""
    world = torch.distributed.get_world_size()
    text = os.environ.get("SHARDPROOF_PARALLEL")
    if not text:
        return Parallel(tp=world)
    layout = parse(text)
    if world == 1:  # the reference: the same component on one device
        return Parallel(sp=layout.sp, options=layout.options)
    if layout.world != world:
        raise RecipeError(f"layout {text} needs {layout.world} ranks, "
                          f"the world has {world}")
    return layout


def framework_root(variable, marker, name="framework"):
    """The `name` checkout named by environment `variable`, which must hold
    `marker` (a folder inside it); put on sys.path."""
    import sys
    root = os.environ.get(variable)
    if not root:
        raise RecipeError(f"set {variable} to a {name} checkout")
    if not os.path.isdir(os.path.join(root, marker)):
        raise RecipeError(f"{root} is not a {name} checkout: it has no {marker}")
    if root not in sys.path:
        sys.path.insert(0, root)
    # From here on the framework tree is the analysed code: locations point
    # into it, and the recipe calling this is harness (an import it makes of
    # a module the tree lacks means the component is absent).
    from torch import _tracing
    _tracing.analyse_tree(root, harness=sys._getframe(1).f_code.co_filename)
    return root


# ---- Model options: declared per recipe, explored by the scan ----

_running = {}  # the options of the recipe now running: name -> (values, fixed)


def options(**choices):
    """Declares a recipe's options, each with the values the scan explores
    (the first is the default): @options(bias=(1, 0), gather_output=(0, 1)).
    Asking a recipe for an option it does not declare, or for a value it
    does not list, is an error that names them."""
    def declare(recipe):
        return _with_options(recipe, choices, {})
    return declare


def variant(recipe, **fixed):
    """`recipe` with some options fixed (an entry name for a configuration
    the corpus or the documentation names: column_parallel_linear_frozen)."""
    unknown = set(fixed) - set(recipe.options)
    if unknown:
        raise RecipeError(f"{recipe.__name__} has no option {sorted(unknown)[0]!r}")
    return _with_options(recipe.__wrapped__, recipe.options, fixed)


def _with_options(recipe, choices, fixed):
    @functools.wraps(recipe)
    def run(*args, **kwargs):
        wanted = asked_options()
        for name, value in wanted.items():
            if name not in choices:
                known = ", ".join(choices) or "none"
                raise RecipeError(f"{recipe.__name__} has no option {name!r} "
                                  f"(its options: {known})")
            if value not in choices[name]:
                listed = ", ".join(map(str, choices[name]))
                raise RecipeError(f"{recipe.__name__} option {name} takes {listed}, "
                                  f"not {value}")
            if name in fixed and fixed[name] != value:
                raise RecipeError(f"this entry fixes {name}={fixed[name]}")
        values = {name: values[0] for name, values in choices.items()}
        values.update(fixed)
        values.update(wanted)
        _running.clear()
        _running.update(values)
        return recipe(*args, **kwargs)
    run.options = choices
    return run


def option(name, *undeclared):
    """The running recipe's value of option `name`: asked, fixed by the
    entry, or the declared default; `undeclared` (one value) where the
    recipe does not declare it, for helpers several recipes share."""
    if name not in _running:
        if undeclared:
            return undeclared[0]
        raise RecipeError(f"the running recipe declares no option {name!r}")
    return _running[name]


def covering(recipe, layouts, allowed=None):
    """Scan rows (entry, layout) for `recipe` over `layouts` and its declared
    options: every pair of values of any two of these factors that some
    allowed row holds is in some row (a pairwise covering matrix), the
    first allowed row of the product (the defaults where allowed) first.
    `allowed(layout, values)` (a Parallel, {option: value}) rules out
    combinations the framework refuses or that repeat another row. A row
    names only the options that differ from their default. Greedy and
    deterministic: each next row is the first in product order that covers
    the most pairs not yet covered."""
    choices = getattr(recipe, "options", {})
    names = list(choices)
    factors = [list(layouts)] + [list(values) for values in choices.values()]
    candidates = [row for row in itertools.product(*factors)
                  if allowed is None or allowed(parse(row[0]), dict(zip(names, row[1:])))]

    def pairs(row):  # and each value alone, for a recipe without options
        return {((i, row[i]), (j, row[j]))
                for i, j in itertools.combinations(range(len(row)), 2)} | {
                    ((i, value),) for i, value in enumerate(row)}

    if not candidates:
        raise RecipeError(f"no allowed scan row of {recipe.__name__}")
    uncovered = set().union(*map(pairs, candidates))
    rows = [candidates[0]]
    uncovered -= pairs(rows[0])
    while uncovered:
        best = max(candidates, key=lambda row: len(pairs(row) & uncovered))
        rows.append(best)
        uncovered -= pairs(best)
    return [(recipe.__name__, _layout_text(row[0], zip(names, row[1:]), choices))
            for row in rows]


def _layout_text(layout, values, choices):
    extra = [f"{name}={value}" for name, value in values if value != choices[name][0]]
    return ",".join([layout] + extra)


# ---- Parameters a framework writes on purpose while the model is built ----


@contextlib.contextmanager
def parameters_written_as_run(parameters):
    """While an entry builds its model, writes into a Parameter are
    initialisation and not taken: it keeps its own symbolic values, so a
    proof covers every value of the weights. Inside this block writes into
    `parameters` are taken as written (Megatron zeroes the last pipeline
    stage's copy of the tied embedding and all-reduces it over the embedding
    group, so that it holds the first stage's values: with the zero not
    taken the copy would be the sum of two weights). Each is then recorded
    by the values it was made with (as after DDP's broadcast), and computes
    with what the block left in it, which the linker resolves."""
    from torch import _tracing
    made_with = [(p, p._a.copy()) for p in parameters]
    building, _tracing.state.building = _tracing.state.building, False
    try:
        yield
    finally:
        _tracing.state.building = building
        for p, values in made_with:
            if "_shardproof_initial" not in p.__dict__:
                p._shardproof_initial = values
