"""A stand-in module that breaks both rules: the surface test must say so."""


def zeros(*shape, dtype=None, **kwargs):
    return [0] * len(shape) if dtype is None else None


class Tensor:
    def record_stream(self, stream):
        pass
