"""torch.finfo: the limits of each floating-point format, as PyTorch reports
them (h6). `finfo(t).min` is the usual finite mask fill; shardproof's terms
hold it exactly, and the extended reals (-inf, NaN) hold what follows from
-inf fills."""
from . import _dtypes
from ._tracing import Unsupported

# bits, eps, max, tiny (smallest normal), resolution: PyTorch 1.13's values.
_LIMITS = {
    "float16": (16, 0.0009765625, 65504.0, 6.103515625e-05, 0.001),
    "bfloat16": (16, 0.0078125, 3.3895313892515355e+38, 1.1754943508222875e-38, 0.01),
    "float32": (32, 1.1920928955078125e-07, 3.4028234663852886e+38,
                1.1754943508222875e-38, 1e-06),
    "float64": (64, 2.220446049250313e-16, 1.7976931348623157e+308,
                2.2250738585072014e-308, 1e-15),
}


class finfo:
    def __init__(self, type=None):
        type = _dtypes.default_float() if type is None else type
        limits = _LIMITS.get(getattr(type, "name", None))
        if limits is None:
            raise Unsupported(f"torch.finfo({type!r}) is not modelled")
        self.bits, self.eps, self.max, self.tiny, self.resolution = limits
        self.min = -self.max
        self.smallest_normal = self.tiny
        self.dtype = type.name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min}, max={self.max}, "
                f"eps={self.eps}, smallest_normal={self.tiny}, tiny={self.tiny}, "
                f"dtype={self.dtype})")
