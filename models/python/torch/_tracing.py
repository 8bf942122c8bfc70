"""Tracing state of the stand-in torch: where ops come from, and the counters
that make one rank's run line up with the reference run."""
import ast
import contextlib
import functools
import itertools
import os
import re
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
        self.harness = set()   # files that build the analysed code (recipes)
        self.leaf_counters = {}  # op -> symbolic tensors it created, in order
        self.param_counter = 0
        self.building = False  # inside the entry: the model is being built
        self.entry_elements = {}  # term id -> (input, its shape, flat index): the entry's inputs
        self.uninitialised_elements = set()  # term ids of memory nothing wrote
        self.module_boundaries = False  # the model's forward: record module calls
        self.gaps = []  # (what, file, line) of every Unsupported raised
        self.per_run = {}  # other stand-in modules' state of one run (global module hooks)


state = State()


def reset(root):
    state.root = _as_folder(root)
    state.harness = set()
    state.leaf_counters = {}
    state.param_counter = 0
    state.building = False
    state.entry_elements = {}
    state.uninitialised_elements = set()
    state.module_boundaries = False
    state.gaps = []
    state.rng = None  # torch/random.py: every run starts from unseeded generators
    state.per_run = {}


def _as_folder(path):
    return path if path is None or path.endswith(os.sep) else path + os.sep


def analyse_tree(root, harness):
    """The framework tree at `root` is the analysed code from now on, built by
    the recipe file `harness` (never a location of its own where a tree frame
    is on the stack)."""
    state.root = _as_folder(os.path.abspath(root))
    state.harness.add(harness)


def in_tree(filename):
    return state.root is None or filename.startswith(state.root)


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
            if in_tree(filename):
                return here
            if fallback is None:
                fallback = here
        frame = frame.f_back
    # Work the stand-in does on the user's behalf with no user frame on the
    # stack (DDP's reduction in the backward's final callback) names the
    # user line that set it up.
    return fallback or state.per_run.get("fallback_location") or ("<unknown>", 0, "", 0)


@contextlib.contextmanager
def fallback_location(loc):
    """Work done inside, with no user frame on the stack, is placed at `loc`
    (where the user's code set it up), else where it was before."""
    outer = state.per_run.get("fallback_location")
    state.per_run["fallback_location"] = loc or outer
    try:
        yield
    finally:
        state.per_run["fallback_location"] = outer


def display(path):
    """A path as the user would write it: relative to the working directory
    when it lies below it (the reports do the same)."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def origin():
    file, line, _, _ = location()
    return f"{display(file)}:{line}"


def next_leaf_index(op):
    """The k-th symbolic tensor `op` made in this run: it is matched to the
    reference's k-th of that op, so tensors of other kinds made on one side
    only (a rank's communication buffers) do not shift the match."""
    k = state.leaf_counters.get(op, 0)
    state.leaf_counters[op] = k + 1
    return k


def next_param_index():
    k = state.param_counter
    state.param_counter += 1
    return k


class Unsupported(BaseException):
    """Valid code that shardproof does not model: the obligation becomes
    "could not prove", never "proved". A BaseException, so that the analysed
    code's `except Exception:` cannot swallow it, and every one raised is
    also remembered in `state.gaps`: a run that caught one anyway (a bare
    `except:`) still ends "could not prove"."""

    def __init__(self, what, loc=None):
        """`loc`: (file, line) the gap belongs to when that is not where it
        is raised (a gradient, raised during the backward)."""
        super().__init__(what)
        self.loc = loc
        file, line = loc or location()[:2]
        state.gaps.append((what, file, line))


class NotModelledAttribute(AttributeError):
    """A name real PyTorch has and the stand-in does not model. An
    AttributeError, so feature probes (`hasattr(t, "is_nested")`) see it
    missing and take their fallback; one that reaches the driver is "could
    not prove", not the user's error."""


def missing_attribute(owner, name, real_names):
    """The error for `owner.name` that normal lookup did not find."""
    if not name.startswith("_") and name in real_names:
        return NotModelledAttribute(f"{owner}.{name} is not modelled")
    return AttributeError(f"'{owner}' object has no attribute '{name}'")


def unknown_attribute(owner, name, real_names):
    """A module's `__getattr__` for `owner.name` that normal lookup did not
    find: a name real PyTorch has that the stand-in does not model is an
    ImportTimeName where code takes it while a module is imported (a type
    annotation, a decorator, a class body, `from torch.x import *`); else
    the error of missing_attribute."""
    if not name.startswith("_") and name in real_names:
        taken = _import_time_use()
        if taken is not None:
            return ImportTimeName(f"{owner}.{name}", f"{display(taken[0])}:{taken[1]}")
    raise missing_attribute(owner, name, real_names)


_IMPORT_TIME_OPS = {"LOAD_ATTR", "LOAD_METHOD", "IMPORT_FROM", "IMPORT_NAME", "IMPORT_STAR"}


def _import_time_use():
    """(file, line) of the analysed code that takes a torch attribute, where
    it does so while its module is imported: the innermost frame that is not
    ours runs a module's or a class body's code (not a function's), reads
    the attribute by name or imports it (not a hasattr() or getattr() probe,
    which must see it missing and take its fallback), and no `except` for an
    AttributeError or ImportError guards that line. None otherwise."""
    import dis
    import inspect
    frame = sys._getframe(2)
    while frame is not None and _is_runtime(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None or frame.f_code.co_flags & inspect.CO_OPTIMIZED:
        return None
    code, at = frame.f_code, frame.f_lasti
    op = next((i.opname for i in dis.get_instructions(code) if i.offset == at), None)
    if op not in _IMPORT_TIME_OPS:
        return None
    if handled_at(code.co_filename, frame.f_lineno,
                  {"AttributeError", "ImportError", "Exception", "BaseException"}):
        return None
    return code.co_filename, frame.f_lineno


# Python's TypeError for a call its callee's signature does not take; the
# callee is named by its code's qualified name (Python 3.11: co_qualname).
_SIGNATURE_ERROR = re.compile(
    r"^(?P<callee>[\w.<>]+)\(\) (?:got an unexpected keyword argument '(?P<keyword>\w+)'"
    r"|missing \d+ required (?:positional|keyword-only) arguments?: (?P<missing>.*)"
    r"|takes (?:from \d+ to )?(?P<takes>\d+) positional arguments? but \d+ (?:was|were) given"
    r"|got multiple values for argument '\w+'"
    r"|got some positional-only arguments passed as keyword arguments: .*)$")


def _callables_named(qualname):
    """The live functions whose code has this qualified name."""
    import gc
    import types
    return [f for f in gc.get_objects() if isinstance(f, types.FunctionType)
            and f.__code__.co_qualname == qualname]


def _could_raise(fn, match):
    """Whether calling `fn` can raise the signature error `match` describes
    (a function of that name that has the keyword, say, did not)."""
    import inspect
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    names = {p.name for p in params}
    if match["keyword"]:
        return match["keyword"] not in names and \
            not any(p.kind is p.VAR_KEYWORD for p in params)
    if match["missing"]:
        return all(n in names for n in re.findall(r"'(\w+)'", match["missing"]))
    if match["takes"]:
        return not any(p.kind is p.VAR_POSITIONAL for p in params)
    return True


def signature_gap(exc):
    """Whether `exc` is the TypeError of a call of one of the stand-in's own
    callables (models/python) in an argument form it does not take: an
    unexpected keyword, a missing argument, too many positional ones. Such a
    form is one the stand-in does not model (PyTorch may take it: a keyword
    of its own, an argument it defaults), so the run is "could not prove",
    not the analysed code's error. A call PyTorch would reject too is
    reported so as well (never proved). A TypeError of the analysed code's
    own functions (or any other TypeError) is not a gap: where a function of
    the code and one of ours share the name, the gap is ours only if the
    code's own could not have raised it."""
    if not isinstance(exc, TypeError) or not exc.args or not isinstance(exc.args[0], str):
        return False
    match = _SIGNATURE_ERROR.match(exc.args[0])
    if match is None:
        return False
    ours, theirs = [], []
    for fn in _callables_named(match["callee"]):
        (ours if fn.__code__.co_filename.startswith(RUNTIME_DIRS[0] + os.sep)
         else theirs).append(fn)
    return any(_could_raise(fn, match) for fn in ours) and \
        not any(_could_raise(fn, match) for fn in theirs)


def unmodelled(what):
    """Stops the trace here: `what` has no modelled semantics."""
    raise Unsupported(f"{what} is not modelled")


def no_kwargs(op, kwargs):
    """Keyword arguments a function takes only to reject: any given one is a
    gap, never silently ignored."""
    if kwargs:
        names = ", ".join(f"{k}=" for k in sorted(kwargs))
        raise Unsupported(f"{op}() with {names} is not modelled")


def only(op, name, value, *accepted):
    """A parameter modelled at the values `accepted` only (compared with ==
    or `is`); any other value is a gap."""
    for a in accepted:
        if value is a or (type(value) is type(a) and value == a):
            return
    raise Unsupported(f"{op}() with {name}={value!r} is not modelled")


def no_effect(**reasons):
    """Declares parameters that cannot change any value shardproof models
    (device placement, memory pinning, stream hints), each with the reason;
    the surface test (tests/surface) accepts them unused. With `function=`,
    the whole function is a deliberate no-op."""
    def mark(fn):
        fn.__dict__.setdefault("_no_effect", {}).update(reasons)
        return fn
    return mark


SymbolicControlFlow = _sp.SymbolicControlFlow


def _catches(handler, names):
    if handler.type is None:
        return True
    types_ = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(t, (ast.Name, ast.Attribute)) and
               (t.id if isinstance(t, ast.Name) else t.attr) in names for t in types_)


@functools.lru_cache(maxsize=None)
def _guarded_lines(filename, names):
    """Line ranges of `try` bodies with a handler that catches one of `names`."""
    try:
        with open(filename, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename)
    except (OSError, SyntaxError, ValueError):
        return ()
    return tuple((n.body[0].lineno, n.body[-1].end_lineno) for n in ast.walk(tree)
                 if isinstance(n, (ast.Try, getattr(ast, "TryStar", ast.Try)))
                 and any(_catches(h, names) for h in n.handlers))


def handled_at(filename, line, names):
    """Whether `line` of `filename` lies in a `try` whose handlers catch an
    exception named in `names` (the code has a path for when it is raised)."""
    return any(a <= line <= b for a, b in _guarded_lines(filename, frozenset(names)))


class ImportTimeName:
    """A torch name the stand-in does not model, taken while a module was
    imported. Importing, annotating with it, decorating with it and naming
    it in a class body do nothing; whatever uses it while the model is
    traced (a call, a value of it reaching a tensor or a decision, a class
    made from it, a function it decorated being called) stops the trace
    with "could not prove", naming it and the line that took it."""

    def __init__(self, name, where):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_where", where)

    def _stop(self, how):
        unmodelled(f"{self._name} ({how}; the name was taken at {self._where} "
                   "while its module was imported)")

    @property
    def _shardproof_term(self):
        self._stop("a value of it reached a tensor")

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return ImportTimeName(f"{self._name}.{attr}", self._where)

    @no_effect(value="setting any attribute of it stops the trace")
    def __setattr__(self, attr, value):
        self._stop(f"setting .{attr}")

    def __call__(self, *args, **kwargs):
        import functools
        import types
        if len(args) == 1 and not kwargs and isinstance(args[0], types.FunctionType):
            fn, name = args[0], self._name

            @functools.wraps(fn)
            def decorated(*a, **k):
                ImportTimeName(name, self._where)._stop(f"decorating {fn.__qualname__}, "
                                                        "which was called")
            return decorated
        if not _running_import():
            self._stop("called")
        return ImportTimeName(f"{self._name}(...)", self._where)

    @no_effect(bases="a class derived from it stops the trace when instantiated")
    def __mro_entries__(self, bases):
        placeholder = self

        class _Unmodelled:
            def __init__(self, *args, **kwargs):
                placeholder._stop(f"{type(self).__name__}, a class derived from it, "
                                  "was instantiated")
        return (_Unmodelled,)

    @no_effect(key="a generic in an annotation (Foo[int]): a placeholder too")
    def __getitem__(self, key):
        return ImportTimeName(f"{self._name}[...]", self._where)

    @no_effect(other="a union in an annotation (Foo | None): a placeholder too")
    def __or__(self, other):
        return ImportTimeName(f"{self._name} | ...", self._where)

    __ror__ = __or__

    def __repr__(self):
        return f"<unmodelled {self._name} taken at {self._where}>"

    def __eq__(self, other):
        """Itself only. Compared with anything else by the analysed code,
        its value would decide, which is not known; the standard library's
        comparisons (typing's checks of an annotation) are by identity."""
        if other is self:
            return True
        if not _is_runtime(sys._getframe(1).f_code.co_filename):
            self._stop("compared with a value")
        return False

    def __ne__(self, other):
        if other is self:
            return False
        if not _is_runtime(sys._getframe(1).f_code.co_filename):
            self._stop("compared with a value")
        return True

    __hash__ = object.__hash__

    def _used(self, *args, **kwargs):
        self._stop("used as a value")

    __bool__ = __index__ = __int__ = __float__ = __iter__ = __len__ = _used
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _used
    __truediv__ = __rtruediv__ = __matmul__ = __rmatmul__ = __pow__ = _used
    __lt__ = __le__ = __gt__ = __ge__ = __neg__ = __pos__ = _used
    __instancecheck__ = __subclasscheck__ = __enter__ = __exit__ = _used


def _running_import():
    """Whether the innermost frame that is not ours runs a module's or a
    class body's code (an import), not a function's."""
    frame = sys._getframe(2)
    while frame is not None and _is_runtime(frame.f_code.co_filename):
        frame = frame.f_back
    return frame is not None and not frame.f_code.co_flags & 0x1  # CO_OPTIMIZED
