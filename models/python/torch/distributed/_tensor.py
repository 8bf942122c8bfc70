"""torch.distributed._tensor: the older name of torch.distributed.tensor."""
from .tensor import (DTensor, DeviceMesh, Partial, Placement, Replicate,  # noqa: F401
                     Shard, distribute_tensor)
