#!/usr/bin/python3
"""Ground truth, under real PyTorch (gloo, one process per rank), for the
torch.distributed semantics the stand-in models beyond what a fixture pair
shows, and that tests/e2e/collectives_test.cpp relies on:
  - dist.reduce leaves the non-dst buffers holding something other than the
    input (so the stand-in makes them opaque rather than "unchanged");
  - torch.distributed.nn.functional.all_reduce's backward all-reduces the
    gradient (a row-parallel weight gets world times its gradient);
  - its broadcast's backward reduces the gradient to src and zeroes it
    elsewhere;
  - gloo rejects ReduceOp.AVG, a tensor list of the wrong length and the
    list all_to_all;
  - all_reduce counts elements, not shapes: a 0-dim tensor on one rank and
    [1] tensors on the others sum as one element;
  - point-to-point messages between a pair arrive in the order sent (also
    through batch_isend_irecv), and recv returns the sender. (A send to the
    sending rank itself is PyTorch 2's ValueError; Debian's 1.13 crashes.)
Usage: dist_semantics.py [WORLD ...]   (default 2 4); exits 1 on a mismatch."""
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.distributed.nn.functional as dist_fn
import torch.multiprocessing as mp


def _checks(rank, world):
    torch.manual_seed(0)
    failures = []
    x = torch.arange(4.0) + 10 * rank
    mine = x.clone()
    dist.reduce(x, dst=0)
    if rank == 0 and not torch.equal(x, sum(torch.arange(4.0) + 10 * r for r in range(world))):
        failures.append("reduce: dst does not hold the sum")
    if rank == world - 1 and torch.equal(x, mine):
        failures.append("reduce: the last rank's buffer kept its input (model it as such?)")

    inputs, weight = torch.randn(3, 4), torch.randn(2, 4)
    reference = weight.clone().requires_grad_()
    (inputs @ reference.t()).sum().backward()
    shard = weight.chunk(world, 1)[rank].clone().requires_grad_()
    dist_fn.all_reduce(inputs.chunk(world, 1)[rank] @ shard.t()).sum().backward()
    if not torch.allclose(shard.grad, world * reference.grad.chunk(world, 1)[rank]):
        failures.append("nn.functional.all_reduce: backward is not the all-reduced gradient")

    w, v = torch.randn(3).requires_grad_(), torch.randn(3)
    dist_fn.broadcast(v * w, src=0).sum().backward()
    if not torch.allclose(w.grad, v * (world if rank == 0 else 0)):
        failures.append("nn.functional.broadcast: backward is not reduce-to-src, zero elsewhere")

    # Point-to-point: the messages from one rank to another arrive in the
    # order sent, each in the buffer of the matching receive, batched or not.
    after, before = (rank + 1) % world, (rank - 1) % world
    first, second = torch.full((2,), float(rank)), torch.full((2,), 10.0 + rank)
    got_first, got_second = torch.empty(2), torch.empty(2)
    for work in dist.batch_isend_irecv([
            dist.P2POp(dist.isend, first, after), dist.P2POp(dist.isend, second, after),
            dist.P2POp(dist.irecv, got_first, before),
            dist.P2POp(dist.irecv, got_second, before)]):
        work.wait()
    if not (torch.equal(got_first, torch.full((2,), float(before))) and
            torch.equal(got_second, torch.full((2,), 10.0 + before))):
        failures.append("batch_isend_irecv: messages of a pair arrive out of order")
    if rank % 2 == 0 and rank + 1 < world:
        dist.send(first, rank + 1)
    elif rank % 2 == 1:
        got = torch.empty(2)
        if dist.recv(got, rank - 1) != rank - 1 or not torch.equal(got, torch.full((2,), rank - 1.0)):
            failures.append("send/recv: the receive does not hold the message, or names "
                            "another sender")

    # Buffers are counted in elements: a 0-dim tensor on rank 0 and [1]
    # tensors elsewhere all-reduce as one element (DeepSpeed's clip_grad_norm_).
    total = torch.tensor(2.0) if rank == 0 else torch.tensor([3.0])
    dist.all_reduce(total)
    if total.numel() != 1 or float(total.reshape(-1)[0]) != 2.0 + 3.0 * (world - 1):
        failures.append("all_reduce of a 0-dim and [1] tensors is not their sum")

    for what, call in (("AVG", lambda: dist.all_reduce(torch.ones(2), op=dist.ReduceOp.AVG)),
                       ("short list", lambda: dist.all_gather([torch.empty(1)], torch.ones(1))),
                       ("a list all_to_all", lambda: dist.all_to_all(
                           [torch.empty(1) for _ in range(world)],
                           [torch.ones(1) for _ in range(world)]))):
        try:
            call()
            failures.append(f"gloo accepted {what}")
        except RuntimeError:
            pass
    return failures


def _rank(rank, world, port, results):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    results[rank] = _checks(rank, world)
    dist.barrier()
    dist.destroy_process_group()


def main(argv):
    failed = False
    for world in [int(w) for w in argv[1:]] or [2, 4]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        results = mp.Manager().dict()
        mp.spawn(_rank, args=(world, port, results), nprocs=world)
        problems = sorted({p for r in results.values() for p in r})
        for p in problems:
            print(f"FAIL world {world}: {p}")
        failed = failed or bool(problems)
        if not problems:
            print(f"ok   world {world}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
