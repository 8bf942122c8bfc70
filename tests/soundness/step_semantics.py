#!/usr/bin/python3
"""The training step's backward half, as shardproof runs it, for
tests/groundtruth/check_pairs.py's ranks (truth.py's threads, and gloo's
processes in gloo_agreement.py).
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "groundtruth"))
import check_pairs  # noqa: E402

# The training step's backward half as shardproof runs it (docs/entry-contract.md):
# the entry's `backward` callable, when it gives one, is called with the loss
# on every rank (a pipeline schedule's backward, whose last stage alone holds
# a loss that needs a gradient); otherwise loss.backward(), when the loss needs
# a gradient at all (a schedule that ran forward and backward inside the
# model's forward returns a detached loss: its gradients are already there).
# finalize_grads runs after it either way, and every gradient is compared.
# check_pairs._rank_main calls loss.backward() on what the entry's loss
# returns: the loss is wrapped so that this call does the above.
class _StepLoss:
    def __init__(self, loss, backward):
        self.loss, self.framework_backward = loss, backward

    def backward(self):
        if self.framework_backward is not None:
            self.framework_backward(self.loss)
        elif isinstance(self.loss, torch.Tensor) and self.loss.requires_grad:
            self.loss.backward()


_plain_unpack = check_pairs._unpack


def _unpack(result):
    unpacked = list(_plain_unpack(result))
    loss_fn = unpacked[2]
    backward = result.get("backward") if isinstance(result, dict) else None

    def loss(out):
        if loss_fn is not None:
            value = loss_fn(out)
        else:  # the sum of every output (a tensor however many there are)
            parts = [t.sum() for t in check_pairs._outputs(out)]
            value = sum(parts[1:], parts[0]) if parts else torch.zeros(())
        return _StepLoss(value, backward)

    unpacked[2] = loss
    return tuple(unpacked)


def install():
    """check_pairs' ranks (in this process, or spawned by one that imported
    this module) run the step so."""
    if check_pairs._unpack is not _unpack:
        check_pairs._unpack = _unpack
