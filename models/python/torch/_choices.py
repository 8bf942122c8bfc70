"""Value-dependent decisions over symbolic values: which elements topk picks,
where argmax points, the order sort gives, which elements a mask of a
comparison keeps. No one answer holds for every input, so each run makes the
decision at its path's witness (a point shared by the reference and every
rank, models/terms/witness.h) and records what it decided as path
conditions: the run's terms are then checked where every decision comes out
the same, and other seeds explore the other paths (analyzer/session.cpp).
Equal keys (a tie) are a path of their own that PyTorch may resolve either
way: a tie at the witness stops the run."""
import numpy as np

import _shardproof as _sp

from . import _tracing


def is_symbolic(array):
    return array.dtype == object and any(
        isinstance(v, _sp.Term) and not v.is_const for v in array.ravel())


def values_at_witness(array):
    """The array's values at the path's witness, as float64; None where it
    has none (no path, a collective's result not linked yet, an unmodelled
    value)."""
    values = _sp.witness(list(array.ravel()))
    return None if values is None else \
        np.asarray(values, dtype=np.float64).reshape(array.shape)


def witness(array, what):
    """The array's values at the path's witness, as float64."""
    values = values_at_witness(array)
    if values is None:
        raise _tracing.Unsupported(
            f"{what} over symbolic values that have no value at the path's witness "
            "(a collective's result not linked yet, or an unmodelled value)")
    return values


def stop_unlinked(what, terms):
    """Stops the run where `what` (whether a value is finite) would read a
    collective's result this run holds as a placeholder: until the ranks are
    linked it may be any value, inf and NaN included. The next tracing pass
    gives the linked result (_shardproof.unlinked records what is needed)."""
    missing = _sp.unlinked(terms)
    if missing is not None:
        raise _tracing.Unsupported(
            f"{what} of a collective's result not linked yet ({missing}): a later "
            "tracing pass gives it as terms only where it links to values of the "
            "reference's inputs that every rank reached")


def assume(conditions, holds, what, loc=None):
    """Records that each comparison term in `conditions` came out as in
    `holds` at the witness (concrete ones hold for every input)."""
    pairs = [(c, bool(h)) for c, h in zip(conditions, holds) if isinstance(c, _sp.Term)]
    if not pairs:
        return
    file, line, _, _ = loc or _tracing.location()
    try:
        _sp.assume([c for c, _ in pairs], [h for _, h in pairs], what, file, line)
    except TypeError:
        raise _tracing.Unsupported(f"{what}: a truth value of a symbolic number that is "
                                   "not a comparison") from None


def record_order(keys, order, dim, count, descending, what, loc=None):
    """Records, for every row along `dim`, that the keys at order[0..count-1]
    come in that order (descending or ascending) and that the count-th is
    beyond every key left out: what topk(count), argmax (count 1) and sort
    (count = n) decided. `keys` are the symbolic keys, `order` the indices."""
    _record_picks(keys, order, dim, count, descending, what, loc,
                  lambda chain, rest: list(zip(chain, chain[1:])) +
                  [(chain[-1], r) for r in rest])


def record_picked(keys, order, dim, count, descending, what, loc=None):
    """Records, for every row along `dim`, that each key at
    order[0..count-1] is beyond every key left out, in whatever order they
    come: which keys a topk picked, not how it ordered them."""
    _record_picks(keys, order, dim, count, descending, what, loc,
                  lambda chain, rest: [(c, r) for c in chain for r in rest])


def _record_picks(keys, order, dim, count, descending, what, loc, pairs_of):
    """assume()s first > second (< when ascending) for each pair of key
    positions that pairs_of(picked, left out) gives per row."""
    k = np.moveaxis(keys, dim, -1).reshape(-1, keys.shape[dim])
    o = np.moveaxis(order, dim, -1).reshape(-1, order.shape[dim])
    conditions = []
    for row, picks in zip(k, o):
        chain = [int(i) for i in picks[:count]]
        # The keys left out in index order: the path is which keys were
        # picked, not how the others happen to rank.
        rest = sorted(set(range(len(row))) - set(chain))
        for first, second in pairs_of(chain, rest):
            a, b = row[first], row[second]
            conditions.append(a > b if descending else a < b)
    assume(conditions, [True] * len(conditions), what, loc)


class TopkChoice:
    """What a topk of symbolic keys decided at the witness, recorded when it
    is first read: which keys it picked, where the read cannot see their
    order (each picked value, or one constant, scattered to its own index),
    else which keys in which order. Recording less splits the inputs into
    fewer paths (k! fewer per row)."""

    def __init__(self, keys, order, dim, count, descending, what, loc):
        self.dim = dim
        self._args = (keys, order, dim, count, descending, what, loc)
        self.recorded = None  # None, "picked" or "order"

    def record_picked(self):
        if self.recorded is None:
            self.recorded = "picked"
            record_picked(*self._args)

    def record_order(self):
        if self.recorded != "order":
            self.recorded = "order"
            record_order(*self._args)


def truth(array, what):
    """A boolean array of comparisons made concrete at the witness."""
    values = witness(array, what) != 0
    flat = list(array.ravel())
    assume(flat, list(values.ravel()), what)
    return values
