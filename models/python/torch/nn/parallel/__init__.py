"""torch.nn.parallel: DistributedDataParallel (modelled) and DataParallel
(on one device)."""
from . import distributed  # noqa: F401
from .distributed import DataParallel, DistributedDataParallel  # noqa: F401
