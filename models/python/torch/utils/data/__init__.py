"""torch.utils.data: the base classes frameworks derive their datasets and
samplers from when their modules are imported (real PyTorch imports this
package with torch, so `torch.utils.data.Dataset` needs no import). Loading
data is not modelled: PyTorch's other names here are "not modelled" where
used, and its submodules are unmodelled modules under the import policy."""
from ... import _tracing


class Dataset:
    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")


class IterableDataset(Dataset):
    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")


class Sampler:
    def __init__(self, data_source=None):
        self.data_source = data_source  # PyTorch 2.x only warns that it is unused

    def __iter__(self):
        raise NotImplementedError


# PyTorch 2.x's other public names here.
_REAL_NAMES = frozenset([
    "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "DistributedSampler",
    "RandomSampler", "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler",
    "TensorDataset", "WeightedRandomSampler", "default_collate", "default_convert",
    "get_worker_info", "random_split"])


def __getattr__(name):
    if name in _REAL_NAMES:
        raise _tracing.NotModelledAttribute(f"torch.utils.data.{name} is not modelled")
    raise AttributeError(f"module 'torch.utils.data' has no attribute '{name}'")
