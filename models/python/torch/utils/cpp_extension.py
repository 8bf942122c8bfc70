"""torch.utils.cpp_extension: where the CUDA toolkit is, found as PyTorch
finds it (CUDA_HOME or CUDA_PATH, else the folder above nvcc on PATH, else
/usr/local/cuda if it exists, else None), because frameworks probe it at
import time to decide which of their fused kernels can be built. Building an
extension fails here, as on a machine that cannot compile it, where the
caller has a path for that failure (a `try` catching RuntimeError, OSError
or Exception: the framework then takes its fallback); anywhere else it is
not modelled."""
import os
import shutil
import sys

from .. import _tracing


def _find_cuda_home():
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home is None:
        nvcc = shutil.which("nvcc")
        if nvcc is not None:
            home = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
        elif os.path.exists("/usr/local/cuda"):
            home = "/usr/local/cuda"
    return home


CUDA_HOME = _find_cuda_home()
ROCM_HOME = None  # the simulated machine runs the CUDA build
SYCL_HOME = None
IS_HIP_EXTENSION = False


_FAILURE_HANDLERS = {"RuntimeError", "OSError", "Exception", "BaseException"}


def _build(*args, name=None, **kwargs):
    caller = sys._getframe(1)
    if _tracing.handled_at(caller.f_code.co_filename, caller.f_lineno, _FAILURE_HANDLERS):
        raise RuntimeError(f"Error building extension '{name or (args or ['?'])[0]}': "
                           "no compiler on the simulated machine")
    raise _tracing.Unsupported("building a C++/CUDA extension is not modelled")


load = load_inline = CppExtension = CUDAExtension = BuildExtension = _build
