"""torch.distributed.tensor (DTensor): the frameworks shardproof traces shard
by hand, so no tensor of a traced run is a DTensor and `isinstance(t,
DTensor)` is False; building a DTensor, a device mesh or a placement is not
modelled and stops tracing ("could not prove")."""
from ... import _tracing


class _NotModelled:
    def __new__(cls, *args, **kwargs):
        raise _tracing.Unsupported(f"torch.distributed.tensor.{cls.__name__} "
                                   "(DTensor) is not modelled")


class DTensor(_NotModelled):
    pass


class DeviceMesh(_NotModelled):
    pass


class Placement(_NotModelled):
    pass


class Shard(Placement):
    pass


class _StridedShard(Shard):
    pass


class Replicate(Placement):
    pass


class Partial(Placement):
    pass


def distribute_tensor(*args, **kwargs):
    raise _tracing.Unsupported("torch.distributed.tensor.distribute_tensor "
                               "(DTensor) is not modelled")
