"""torch.utils.cpp_extension: where the CUDA toolkit is, found as PyTorch
finds it (CUDA_HOME or CUDA_PATH, else the folder above nvcc on PATH, else
/usr/local/cuda if it exists, else None), because frameworks probe it at
import time to decide which of their fused kernels can be built. Building an
extension fails here, as on a machine that cannot compile it, where the
caller has a path for that failure (a `try` catching RuntimeError, OSError
or Exception: the framework then takes its fallback). Anywhere else,
load(name, sources) gives the module its sources register with pybind11
(as shardproof's CUDA frontend reads them): its functions are there, each
naming the kernels behind it, but a call of one is not modelled (the
kernels are checked on their own: `shardproof check FILE.cu`). Other builds
are not modelled."""
import os
import shutil
import sys
import types

import _shardproof as _sp

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


def _unavailable(caller, name):
    if _tracing.handled_at(caller.f_code.co_filename, caller.f_lineno, _FAILURE_HANDLERS):
        raise RuntimeError(f"Error building extension '{name}': "
                           "no compiler on the simulated machine")


def load(name, sources, *args, is_python_module=True, **kwargs):
    _unavailable(sys._getframe(1), name)
    if args:  # their order differs between PyTorch releases
        raise _tracing.Unsupported("load() with build options given by position is not "
                                   "modelled (give them by name)")
    unknown = sorted(set(kwargs) - _LOAD_OPTIONS)
    if unknown:
        raise _tracing.Unsupported(f"load(..., {unknown[0]}=...) is not modelled")
    if not is_python_module:
        raise _tracing.Unsupported(f"the extension '{name}' loaded with "
                                   "is_python_module=False (its operators in torch.ops) "
                                   "is not modelled")
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    paths = [os.path.abspath(os.fspath(source)) for source in sources]
    found = _sp.extension_module(name, paths, _preprocessor_flags(kwargs))
    if found is None:
        raise _tracing.Unsupported("building a C++/CUDA extension is not modelled")
    functions, error = found
    if error is not None:
        raise _tracing.Unsupported(f"the extension '{name}' could not be read: {error}")
    return _Extension(name, functions)


# load()'s options that change no function the sources register (the
# preprocessor's are read by _preprocessor_flags).
_LOAD_OPTIONS = {"extra_cflags", "extra_cuda_cflags", "extra_sycl_cflags", "extra_ldflags",
                 "extra_include_paths", "build_directory", "verbose", "with_cuda",
                 "with_sycl", "is_standalone", "keep_intermediates"}


def _preprocessor_flags(kwargs):
    """What reading the sources needs of the build's flags: include paths and
    macros (the compilers' other flags change no declaration)."""
    flags = [f"-I{os.path.abspath(path)}" for path in kwargs.get("extra_include_paths") or []]
    for flag in (kwargs.get("extra_cflags") or []) + (kwargs.get("extra_cuda_cflags") or []):
        if flag.startswith(("-I", "-D", "-U")):
            flags.append(flag)
    return flags


class _ExtensionFunction:
    """A function of a loaded extension: it exists (hasattr, getattr, being
    passed around), but what it computes is the kernels' and is not lifted
    into the trace, so a call stops it ("could not prove")."""

    def __init__(self, module, name, function, registered_at, kernels, undefined):
        self.__name__ = self.__qualname__ = name
        self.__module__ = module
        self._what = (function, registered_at, kernels, undefined)

    def __call__(self, *args, **kwargs):
        function, registered_at, kernels, undefined = self._what
        behind = "; ".join(
            [f"it runs kernel {kernel}" for kernel in kernels] +
            [f"it calls {callee}, which none of its sources defines" for callee in undefined]
        ) or "it launches no kernel its sources define"
        raise _tracing.Unsupported(
            f"a call of the extension function {self.__module__}.{self.__name__} "
            f"({function}, registered at {registered_at}; {behind}): the kernels a "
            "Python call runs are not lifted into its trace (check each kernel with "
            "`shardproof check FILE.cu`)")

    def __repr__(self):
        return f"<built-in method {self.__name__} of PyCapsule object>"


class _Extension(types.ModuleType):
    """The module load() builds: the functions its sources register, and no
    other attribute (as pybind11's module)."""

    def __init__(self, name, functions):
        super().__init__(name)
        for fn_name, function, registered_at, kernels, undefined in functions:
            setattr(self, fn_name, _ExtensionFunction(name, fn_name, function,
                                                      registered_at, kernels, undefined))

    def __getattr__(self, attr):
        # A built module's own attributes (its file, loader, spec) are not
        # modelled; any other name it does not register is absent, as there.
        if attr.startswith("__") and attr.endswith("__"):
            raise _tracing.Unsupported(f"the extension module's {attr} is not modelled")
        raise AttributeError(f"module '{self.__name__}' has no attribute '{attr}'")


def _build(*args, name=None, **kwargs):
    _unavailable(sys._getframe(1), name or (args or ['?'])[0])
    raise _tracing.Unsupported("building a C++/CUDA extension is not modelled")


load_inline = CppExtension = CUDAExtension = BuildExtension = _build
