"""torch.utils.cpp_extension: where the CUDA toolkit is, found as PyTorch
finds it (CUDA_HOME or CUDA_PATH, else the folder above nvcc on PATH, else
/usr/local/cuda if it exists, else None), because frameworks probe it at
import time to decide which of their fused kernels can be built. Building an
extension fails here, as on a machine that cannot compile it, where the
caller has a path for that failure (a `try` catching RuntimeError, OSError
or Exception: the framework then takes its fallback). Anywhere else,
load(name, sources) gives the module its sources register with pybind11
(as shardproof's CUDA frontend reads them). A call of one of its functions
runs the function's host code at the arguments' sizes and lifts the
kernels it launches over their elements (the CUDA frontend), so the trace
holds what the kernels compute; what that cannot follow is "could not
prove", naming it. Other builds are not modelled."""
import os
import shutil
import sys
import types

import numpy as np

import _shardproof as _sp

from .. import _autograd, _tensor, _tracing


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
    functions, error, handle = found
    if error is not None:
        raise _tracing.Unsupported(f"the extension '{name}' could not be read: {error}")
    module = _Extension(name, functions, handle)
    # A pybind11 module initialises single-phase, which puts it in
    # sys.modules: `import NAME` after load() finds it (Megatron's fused
    # softmax imports its kernels so).
    sys.modules[name] = module
    return module


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
    """A function of a loaded extension. A call runs its host code and lifts
    the kernels it launches (`_sp.extension_call`): the tensors it returns
    hold what the kernels compute, and a tensor a kernel writes into is
    written in place. As in PyTorch, the results are not part of the autograd
    graph (the kernels write through raw pointers): a framework wraps such
    calls in an autograd.Function whose backward calls the backward kernel."""

    def __init__(self, module, name, function, registered_at, kernels, undefined, handle):
        self.__name__ = self.__qualname__ = name
        self.__module__ = module
        self._what = (function, registered_at, kernels, undefined)
        self._handle = handle

    def _unsupported(self, why):
        function, registered_at, _, _ = self._what
        return _tracing.Unsupported(
            f"a call of the extension function {self.__module__}.{self.__name__} "
            f"({function}, registered at {registered_at}): {why}")

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise self._unsupported("arguments given by name are not modelled")
        if self._handle is None:
            raise self._unsupported("its kernels are not lifted into the trace")
        answer = _sp.extension_call(self._handle, self.__name__,
                                    [_argument(arg, self) for arg in args])
        if answer[0] == "rejected":
            raise RuntimeError(answer[1])
        if answer[0] == "unsupported":
            raise self._unsupported(answer[1])
        _, returned, returns_none, sequence, written, same, number = answer
        op = f"{self.__module__}.{self.__name__}"
        inputs = tuple(arg for arg in args if isinstance(arg, _tensor.Tensor))
        with _autograd._no_grad():  # raw-pointer writes are invisible to autograd
            for index, elements in written.items():
                target = args[index]
                target._overwrite(_result(target.dtype, tuple(target.shape), elements,
                                          op, inputs))
            outputs = [args[index] if index >= 0 else
                       _result(_dtype_named(dtype), shape, elements, op, inputs)
                       for (dtype, shape, elements), index in zip(returned, same)]
        if number is not None:
            return number
        if returns_none:
            return None
        if sequence == "tuple":  # pybind11 gives a std::tuple as a tuple
            return tuple(outputs)
        return outputs if sequence else outputs[0]

    def __repr__(self):
        return f"<built-in method {self.__name__} of PyCapsule object>"


def _argument(arg, fn):
    """An argument as the C++ side takes it: a tensor's dtype, shape and
    elements (row-major), or a Python scalar."""
    if isinstance(arg, _sp.Term):  # a symbolic float (an .item() of a tensor)
        raise fn._unsupported("a symbolic scalar argument is not modelled")
    if arg is None or isinstance(arg, (bool, int, float)):
        return arg
    if isinstance(arg, (list, tuple)) and all(type(v) is int for v in arg):
        return list(arg)  # sizes (a torch.Size is a tuple of them)
    if isinstance(arg, _tensor.Tensor):
        if not arg.is_contiguous():
            raise fn._unsupported("a strided (non-contiguous) tensor argument is not "
                                  "modelled")
        return (arg.dtype.name, tuple(arg.shape), list(np.asarray(arg._a).ravel()))
    raise fn._unsupported(f"an argument of type {type(arg).__name__} is not modelled")


def _dtype_named(name):
    import torch
    return getattr(torch, name)


def _result(dtype, shape, elements, op, inputs):
    array = np.empty(len(elements), dtype=object)
    array[:] = elements
    return _tensor.record(array.reshape(shape), dtype, op, "other", inputs)


class _Extension(types.ModuleType):
    """The module load() builds: the functions its sources register, and no
    other attribute (as pybind11's module)."""

    def __init__(self, name, functions, handle):
        super().__init__(name)
        for fn_name, function, registered_at, kernels, undefined in functions:
            setattr(self, fn_name, _ExtensionFunction(name, fn_name, function,
                                                      registered_at, kernels, undefined,
                                                      handle))

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
