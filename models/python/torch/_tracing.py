"""Tracing state of the stand-in torch: where ops come from, and the counters
that make one rank's run line up with the reference run."""
import itertools
import os
import sys

import _shardproof as _sp

# Frames in these folders are ours (the stand-in, numpy under it), never the
# user's; the driver adds its own.
RUNTIME_DIRS = [os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                os.path.dirname(os.path.abspath(__import__("numpy").__file__))]
_STDLIB = os.path.dirname(os.__file__)


class State:
    def __init__(self):
        self.root = None       # the analysed tree: locations point inside it
        self.leaf_counter = 0  # symbolic tensors created, in order
        self.param_counter = 0
        self.building = False  # inside the entry: the model is being built
        self.module_boundaries = False  # the model's forward: record module calls


state = State()


def reset(root):
    state.root = root
    state.leaf_counter = 0
    state.param_counter = 0
    state.building = False
    state.module_boundaries = False


def _is_runtime(filename):
    return filename.startswith(tuple(RUNTIME_DIRS)) or filename.startswith(_STDLIB) \
        or filename.startswith("<")


def _column(frame):
    """1-based column of the expression the frame is executing, 0 if unknown."""
    try:
        positions = frame.f_code.co_positions()
        _, _, col, _ = next(itertools.islice(positions, frame.f_lasti // 2, None))
        return (col or 0) + 1 if col is not None else 0
    except (StopIteration, AttributeError, ValueError):
        return 0


def location():
    """(file, line, function, column) of the innermost frame in the analysed
    tree, else of the innermost frame that is not ours."""
    frame = sys._getframe(1)
    fallback = None
    while frame is not None:
        filename = frame.f_code.co_filename
        if not _is_runtime(filename):
            here = (filename, frame.f_lineno, frame.f_code.co_name, _column(frame))
            if state.root is None or filename.startswith(state.root):
                return here
            if fallback is None:
                fallback = here
        frame = frame.f_back
    return fallback or ("<unknown>", 0, "", 0)


def display(path):
    """A path as the user would write it: relative to the working directory
    when it lies below it (the reports do the same)."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def origin():
    file, line, _, _ = location()
    return f"{display(file)}:{line}"


def next_leaf_index():
    k = state.leaf_counter
    state.leaf_counter += 1
    return k


def next_param_index():
    k = state.param_counter
    state.param_counter += 1
    return k


class Unsupported(Exception):
    """Valid code that shardproof does not model: the obligation becomes
    "could not prove", never "proved"."""


SymbolicControlFlow = _sp.SymbolicControlFlow
