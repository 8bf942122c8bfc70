"""torch.utils: only the submodules the stand-in models (checkpoint,
cpp_extension, the base classes of data); the others are unmodelled modules
under the import policy."""
from . import data  # noqa: F401 (imported with torch, as PyTorch does)
