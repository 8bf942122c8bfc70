"""torch.utils: only the submodules the stand-in models (checkpoint,
cpp_extension); the others (data, ...) are unmodelled modules under the
import policy."""
