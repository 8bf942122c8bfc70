"""Python numbers that analysed code computes from symbolic values
(_shardproof.SymbolicFloat: what .item() and float() of a symbolic value give).

math's functions read a C double, which a symbolic value has not, so they
stop the trace; the ones frameworks apply to gradient norms are answered
here for a SymbolicFloat: the root (as `x ** 0.5` of a tensor is), and whether it
is finite (a symbolic value is a finite real: models/terms/term_store.h;
one that reads a collective's result not linked yet stops the trace).
Everything else goes to math as it was."""
import math

import _shardproof as _sp


def _is_symbolic(x):
    return isinstance(x, _sp.Term) and not x.is_const and not x.is_unmodelled


def _answer_for_numbers(name, symbolic):
    real = getattr(math, name)

    def answered(x):
        return symbolic(x) if _is_symbolic(x) else real(x)
    answered.__name__, answered.__doc__ = real.__name__, real.__doc__
    setattr(math, name, answered)


def _finite(x):
    """A symbolic value is a finite real, once it holds no collective's
    result not linked yet (which may be inf or NaN): the trace stops there and
    the next tracing pass gives the linked result."""
    from . import _choices
    _choices.stop_unlinked("math.isfinite/isinf/isnan", [x])
    return True


def install():
    """Once per interpreter, before the analysed code imports (`from math
    import sqrt` binds what is there then)."""
    if getattr(math, "_shardproof_numbers", False):
        return
    _answer_for_numbers("sqrt", lambda x: x ** 0.5)
    _answer_for_numbers("isfinite", _finite)
    _answer_for_numbers("isinf", lambda x: not _finite(x))
    _answer_for_numbers("isnan", lambda x: not _finite(x))
    math._shardproof_numbers = True
