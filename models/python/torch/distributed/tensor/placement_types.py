from . import Partial, Placement, Replicate, Shard, _StridedShard  # noqa: F401
