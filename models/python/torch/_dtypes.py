import numpy as np


class dtype:
    def __init__(self, name, is_floating_point, itemsize, is_signed=True):
        self.name = name
        self.is_floating_point = is_floating_point
        self.itemsize = itemsize
        self.is_signed = is_signed
        self.is_complex = False

    def __repr__(self):
        return "torch." + self.name

    def __reduce__(self):
        return self.name

    @property
    def numpy(self):
        """The numpy storage: floats are object arrays so that a symbolic write
        into a view reaches its base, ints and bools stay concrete."""
        if self.is_floating_point:
            return object
        if self.is_complex:
            from ._tracing import Unsupported
            raise Unsupported(
                f"a tensor of dtype torch.{self.name} (complex numbers are not modelled)")
        return np.bool_ if self.name == "bool" else np.int64


float64 = dtype("float64", True, 8)
float32 = dtype("float32", True, 4)
float16 = dtype("float16", True, 2)
bfloat16 = dtype("bfloat16", True, 2)
# Quantised floats: a value is a real number like any other float here.
float8_e4m3fn = dtype("float8_e4m3fn", True, 1)
float8_e4m3fnuz = dtype("float8_e4m3fnuz", True, 1)
float8_e5m2 = dtype("float8_e5m2", True, 1)
float8_e5m2fnuz = dtype("float8_e5m2fnuz", True, 1)
float8_e8m0fnu = dtype("float8_e8m0fnu", True, 1)
int64 = dtype("int64", False, 8)
int32 = dtype("int32", False, 4)
int16 = dtype("int16", False, 2)
int8 = dtype("int8", False, 1)
uint8 = dtype("uint8", False, 1, is_signed=False)
uint16 = dtype("uint16", False, 2, is_signed=False)
uint32 = dtype("uint32", False, 4, is_signed=False)
uint64 = dtype("uint64", False, 8, is_signed=False)
bool = dtype("bool", False, 1, is_signed=False)  # noqa: A001 (torch's name)
# Complex dtypes exist for code that names them; a complex tensor stops tracing.
complex32, complex64, complex128 = (dtype(f"complex{8 * n}", False, n) for n in (4, 8, 16))
for _c in (complex32, complex64, complex128):
    _c.is_complex = True
chalf, cfloat, cdouble = complex32, complex64, complex128

double, float, half = float64, float32, float16  # noqa: A001
long, int, short = int64, int32, int16  # noqa: A001

FLOATS = (float64, float32, float16, bfloat16)
_default = [float32]


def default_float():
    return _default[0]


_FLOAT8 = (float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu)
_WIDE_UNSIGNED = (uint16, uint32, uint64)
_SIGNED = (int8, int16, int32, int64)


def _promote_pair(a, b):
    """torch.promote_types(a, b), PyTorch's table."""
    if a is b:
        return a
    if a is bool or b is bool:
        return b if a is bool else a
    if any(d in _FLOAT8 or d in _WIDE_UNSIGNED or d.is_complex for d in (a, b)):
        # PyTorch refuses the float8 and wide unsigned promotions; complex
        # values are not modelled. Never guess one.
        from ._tracing import Unsupported
        raise Unsupported(f"promoting torch.{a.name} with torch.{b.name}")
    if a.is_floating_point != b.is_floating_point:
        return a if a.is_floating_point else b
    if a.is_floating_point:
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if a.itemsize > b.itemsize else b
    if a is uint8 or b is uint8:  # with a signed integer
        other = b if a is uint8 else a
        return int16 if other is int8 else other
    return a if a.itemsize > b.itemsize else b


def promote(*dtypes):
    """The promoted dtype of several (int64 for none: a Python integer)."""
    result = None
    for d in dtypes:
        result = d if result is None else _promote_pair(result, d)
    return int64 if result is None else result
