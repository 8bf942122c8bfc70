"""torch.serialization: checkpoint files are outside what a trace reads."""
_safe_globals = []


def add_safe_globals(classes):
    _safe_globals.extend(classes)


def get_safe_globals():
    return list(_safe_globals)
