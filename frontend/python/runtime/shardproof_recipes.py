"""What every framework recipe shares: the parallel layout it is asked to
build (`shardproof check ROOT --framework F --entry R --tp 2 --dp 2 --sp`
passes it in SHARDPROOF_PARALLEL), and the error a recipe raises when the
tree it was pointed at cannot build its component.

The world is tp x cp x ep x dp x pp; tensor parallelism varies fastest
(Megatron's default rank order), so rank r has tp rank r % tp. Without
SHARDPROOF_PARALLEL (a recipe run as a plain entry, `--world N`) tensor
parallelism spans the world."""
import dataclasses
import os

import torch

AXES = ("tp", "cp", "ep", "dp", "pp")


class RecipeError(RuntimeError):
    """The tree cannot build this component (too different, or not a tree)."""


class ComponentAbsent(RecipeError):
    """The tree has no such component (older or newer than the recipe's
    subject): `check` reports an error, `scan` lists it as absent."""


@dataclasses.dataclass(frozen=True)
class Parallel:
    tp: int = 1
    cp: int = 1
    ep: int = 1
    dp: int = 1
    pp: int = 1
    sp: bool = False  # sequence parallelism (over the tp group)

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
    """`tp=2,dp=2,sp=1` -> Parallel; unknown keys are an error."""
    fields = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        key, _, value = item.partition("=")
        if key not in AXES + ("sp",) or not value.isdigit():
            raise RecipeError(f"bad parallel layout item {item!r} in {text!r}")
        fields[key] = bool(int(value)) if key == "sp" else int(value)
    return Parallel(**fields)


def asked():
    """The layout the target asked for, the same in every run of it: the
    single-device reference sees the ranks' layout here (where parallel()
    gives it one device), so it can build the component at their sizes."""
    text = os.environ.get("SHARDPROOF_PARALLEL")
    if text:
        return parse(text)
    return Parallel(tp=int(os.environ.get("SHARDPROOF_WORLD")
                           or torch.distributed.get_world_size()))


def parallel():
    """The layout asked for, checked against the simulated world."""
    world = torch.distributed.get_world_size()
    text = os.environ.get("SHARDPROOF_PARALLEL")
    if not text:
        return Parallel(tp=world)
    layout = parse(text)
    if world == 1:  # the reference: the same component on one device
        return Parallel(sp=layout.sp)
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
