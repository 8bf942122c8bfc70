"""torch.utils: only the submodules the stand-in models; the others
(data, checkpoint, ...) are unmodelled modules under the import policy."""
