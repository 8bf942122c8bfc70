from .. import _tracing
from .._tensor import Tensor, fresh, _row_major


class Parameter(Tensor):
    """Always symbolic: a proof covers every value the weights may take, so the
    initial data only gives the shape and dtype."""

    _is_parameter = True

    def __new__(cls, data=None, requires_grad=True):
        """As PyTorch's: the Parameter is made by __new__ (a subclass's
        __new__ calls `nn.Parameter.__new__(cls, data=..., requires_grad=...)`,
        nanotron's NanotronParameter), and __init__ takes whatever the
        constructor was given and does nothing."""
        self = Tensor.__new__(cls)
        self._make(data, requires_grad)
        return self

    @_tracing.no_effect(args="taken by __new__", kwargs="taken by __new__",
                        function="PyTorch's Parameter is made by __new__")
    def __init__(self, *args, **kwargs):
        pass

    def _make(self, data, requires_grad):
        if data is None:
            raise TypeError("Parameter() needs data")
        symbolic = fresh(data.shape, data.dtype, "param", register=False,
                         index=_tracing.next_param_index())
        Tensor.__init__(self, symbolic._a, data.dtype, symbolic._node, requires_grad)
        self._origin = _tracing.location()[:2]
        self.__dict__.update({k: v for k, v in data.__dict__.items()
                              if k not in ("_a", "dtype", "_node", "_grad",
                                           "grad_fn", "requires_grad")})
        # Its values are new, row-major; PyTorch's Parameter shares data's
        # storage, so it has data's strides (Tensor.stride).
        self._row_major_result = _row_major(data)

    def __repr__(self):
        return f"Parameter(shape={list(self.shape)}, dtype={self.dtype})"

    def _deepcopy_values(self):
        """A new Parameter (PyTorch copies the values; here every Parameter
        is symbolic, so the copy is a new weight: a deep-copied expert is
        trained apart from the one it was copied from)."""
        return type(self)(self.detach(), self.requires_grad)
