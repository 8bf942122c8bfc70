# The built-in module `_shardproof` (frontend/python/term_module.cpp): the
# term engine the stand-in torch computes with, and the recorder it writes
# the tensor IR through. Every function but take_symbolic_stops raises
# RuntimeError outside a traced run (no trace recording).
from typing import Optional, Sequence, Union

Number = Union[int, float, "Term"]


class Term:
    """A symbolic real: one element of a symbolic tensor. Arithmetic and
    comparisons build terms; bool(), float() and int() of a non-constant
    raise SymbolicControlFlow (a branch on a symbolic value)."""
    id: int
    is_const: bool


class SymbolicFloat(Term):
    """A symbolic real as a Python float: what .item() and float() of a
    symbolic element give. Arithmetic with Python numbers stays one (with a
    tensor element it is an element); == and != decide on the path's
    witness as < does; a C double of it (math.log, numpy) raises
    SymbolicControlFlow."""


class SymbolicControlFlow(Exception): ...   # a branch or cast of a symbolic value
class UnmodelledValue(Exception): ...       # inf - inf, 0 * inf, ...: not modelled
class TraceTimeout(BaseException): ...      # the watchdog stopped an overlong run


def take_symbolic_stops() -> int:
    """Stops at symbolic control flow since the last call (caught or not)."""
def var(name: str, origin: str = "") -> Term:
    """A fresh symbolic leaf element (a parameter's or an input's)."""
def provably_positive(x: Term) -> bool:
    """True where x > 0 for every value of its variables (False: unknown)."""
def uninitialised(name: str, origin: str = "") -> Term:
    """An element of memory the running code never wrote: any value at all."""
def placeholder(name: str, origin: str = "") -> Term:
    """A collective's result element, resolved by the linker."""
def opaque(what: str, where: str = "") -> Term:
    """A value shardproof does not model: a proof that reads it is blocked."""
def rename(term: Term, name: str) -> None:
    """The name reports use for a leaf."""
def apply(fn: str, x: Number) -> Number:
    """A named nonlinear function (exp, log, tanh, gelu, ...); concrete in,
    concrete out."""
def number(x: Term) -> SymbolicFloat:
    """x as a SymbolicFloat: a Python number."""
def element(x: Term) -> Term:
    """x as a tensor element again (a SymbolicFloat put into a tensor)."""
def exact(x: Number) -> Term:
    """x as an exact constant term (a float: its exact binary value)."""
def where(cond: Number, a: Number, b: Number) -> Number: ...
def maximum(a: Number, b: Number) -> Number: ...
def minimum(a: Number, b: Number) -> Number: ...
def witness(terms: Sequence[Number]) -> Optional[list[float]]:
    """The terms' values at the path's witness (models/terms/witness.h), or
    None: no path to decide on, or a term reads a collective's result not
    linked yet or an unmodelled value."""
def unlinked(terms: Sequence[Number]) -> Optional[str]:
    """"NAME from FILE:LINE" of a collective's result the terms read that this
    run holds as a placeholder, not linked yet (each is recorded: the next
    tracing pass gives its linked value as terms where it can), or None.
    Until linked it may be any value, an infinity or NaN included."""
def assume(conditions: Sequence[Term], holds: Sequence[bool], what: str, file: str,
           line: int) -> None:
    """Records value-dependent decisions made at the witness: each comparison
    term came out as `holds` says (a path condition of the trace)."""
def evaluate(terms: Sequence[Number], vars: Sequence[Term],
             values: Sequence[float]) -> list[float]:
    """The terms at the given values of their variables (others 0)."""

# ---- the IR's enumerations, by name, from C++ (models/ir/trace.cpp) --------
DTYPES: tuple[str, ...]       # ir::DType: "float64", "float32", ..., "other"
CATEGORIES: tuple[str, ...]   # ir::OpCategory: "leaf", "elementwise", ...
COLLECTIVES: tuple[str, ...]  # ir::CollectiveKind: "all_reduce", ...
REDUCE_OPS: tuple[str, ...]   # ir::ReduceOp: "sum", "avg", "max", ...

# ---- recording (keyword arguments: the IR's field names) -------------------
# category: one of CATEGORIES (any other is a ValueError); dtype: a torch
# dtype's name (one not in DTYPES is recorded as "other"); kind and op of a
# collective: one of COLLECTIVES and REDUCE_OPS.

def record_node(*, op: str, category: str, file: str, line: int, column: int,
                function: str, shape: Sequence[int], dtype: str,
                elements: Sequence[Number], parents: Sequence[int]) -> int:
    """One IR node; returns its id."""
def record_leaf(*, role: str, name: str, shape: Sequence[int],
                elements: Sequence[Term], partition_dim: int, partition_stride: int,
                shard: int, shards: int, file: str, line: int) -> None:
    """A parameter (role "param", its shard `shard` of `shards` along
    partition_dim, -1 if replicated) or an input (role "input")."""
def record_module_call(*, name: str, type_name: str, file: str, line: int,
                       inputs: Sequence[tuple[int, Sequence[int], Sequence[Number]]],
                       outputs: Sequence[tuple[int, Sequence[int], Sequence[Number]]]
                       ) -> int:
    """A module's inputs and outputs as (node, shape, elements); returns the
    call's index."""
def record_module_gradient(call: int, output: int, node: int,
                           elements: Sequence[Number]) -> None:
    """The whole gradient output `output` of module call `call` received."""
def record_parallel_group(axis: str, ranks: Sequence[int]) -> None:
    """The entry's "tensor_parallel" or "data_parallel" group (global ranks)."""
def record_collective(*, kind: str, op: str, group: Sequence[int], sequence: int,
                      src: int, input_shape: Sequence[int],
                      output_shape: Sequence[int], dtype: str,
                      inputs: Sequence[Number], outputs: Sequence[Term], file: str,
                      line: int, column: int, function: str, node: int,
                      input_splits: Optional[Sequence[int]] = None,
                      output_splits: Optional[Sequence[int]] = None,
                      blocking: bool = False) -> int:
    """One collective call: kind is ir::collective_name's ("all_reduce",
    "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce",
    "gather", "scatter"), op the reduction ("sum", "avg", "max", ...), the
    n-th (sequence) call over `group`; outputs are its placeholders.
    `blocking`: a point-to-point call ("send_recv") that returns only once
    its message is matched (send, recv), not one that posts and returns.
    Returns the call's index among the rank's calls."""
def record_guess(group: list[int], sequence: int) -> bool:
    """Whether this run may take the result of the call (group, sequence) as
    guessed (a broadcast's source traced before it in this pass, an
    all-reduce of concrete values as if every rank sent this one's),
    recording that it does: the tracing passes confirm it (the next pass
    has it known) or trace again without guessing that call."""
def record_wait(index: int) -> None:
    """The first wait() on the Work of the isend or irecv recorded at `index`."""
def known_collective(group: Sequence[int], sequence: int, message: bool = False
                     ) -> Optional[list[Term]]:
    """What an earlier pass linked that collective's result to, or None.
    `message`: the n-th point-to-point message from group[0] to group[1],
    whose known elements are constants or the receiver's own placeholders."""
def extension_module(name: str, sources: Sequence[str], flags: Sequence[str]
                     ) -> Optional[tuple[list[tuple[str, str, str, list[str], list[str]]],
                                         Optional[str], Optional[int]]]:
    """What torch.utils.cpp_extension.load(name, sources) builds, read by the
    CUDA frontend: None when that is not modelled; else (functions, error,
    handle), each function (name, bound C++ function, registered at, kernels
    "K (launched at FILE:LINE)", functions reached that no source defines),
    error a source that could not be read, handle what extension_call takes
    (None: calls are not modelled)."""
ExtensionArgument = Union[None, bool, int, float, list[int],
                          tuple[str, Sequence[int], Sequence[Number]]]
def extension_call(handle: int, function: str, args: Sequence[ExtensionArgument]
                   ) -> tuple:
    """Calls the extension's function (its Python name): its host code at the
    arguments' sizes, each kernel it launches lifted over their elements. A
    tensor argument is (dtype name, shape, elements row-major), a list of
    ints is sizes. Gives ("rejected", message) when the host code refuses
    the arguments (a RuntimeError in PyTorch), ("unsupported", why) when it
    does what is not modelled, else ("ok", returned, returns_none, sequence
    ("list", "tuple" or ""), written, returned_arguments, number): returned a list
    of (dtype, shape, elements), written {argument index: elements} for the
    tensor arguments the kernels wrote into, returned_arguments the argument
    each returned tensor is (-1: a new tensor), number what a function that
    returns an int, float or bool returned (else None)."""
def record_output(*, path: str, node: int, shape: Sequence[int], dtype: str,
                  elements: Sequence[Number], role: str, subject: str,
                  owned: Sequence[int] | None = None) -> None:
    """An entry output ("forward"), a parameter's gradient ("param-grad") or
    an input's ("input-grad"); `owned`: the flat element ranges this rank
    answers for, as start, end, start, end, ... (None: every element)."""
