# Entries for tests/e2e/other_frameworks/minitron, a framework in the style
# of picotron and nanotron (other_frameworks_test.cpp states what each must
# give). `--python-path tests/e2e/other_frameworks` puts minitron on the path.
import torch

from minitron import layers


def master_slice():
    return layers.MasterSliceColumn(4, 4), (torch.randn(3, 4, requires_grad=True),)


def master_slice_wrong_part():
    # Every rank keeps rows of part 0: rank 1 holds no shard of its own.
    return layers.MasterSliceColumn(4, 4, keep=0), (torch.randn(3, 4, requires_grad=True),)


def slice_metadata():
    return layers.ChunkedColumn(4, 8), (torch.randn(3, 4, requires_grad=True),)


def zero_bias():
    return layers.ZeroBiasColumn(4, 4), (torch.randn(3, 4, requires_grad=True),)


def summed_bias():
    return layers.SummedBias(4, 4), (torch.randn(3, 4, requires_grad=True),)


def decorated_at_import_called():
    return layers.ScaledColumn(4, 4), (torch.randn(3, 4, requires_grad=True),)


def raises_in_framework():
    return layers.CheckedColumn(4, 4), (torch.randn(3, 4),)


def raw_storage_messages():
    from minitron import pipeline

    return pipeline.TwoStages(), (torch.randn(3, 4),)


def header_chain():
    from minitron import pipeline

    return pipeline.SizeChain(), (torch.randn(3),)
