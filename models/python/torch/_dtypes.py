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


def promote(*dtypes):
    floats = [d for d in dtypes if d.is_floating_point]
    if floats:
        return max(floats, key=lambda d: (d.itemsize, d.name == "float32"))
    if dtypes and all(d is bool for d in dtypes):
        return bool
    return int64
