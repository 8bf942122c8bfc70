#!/usr/bin/python3
"""Ground truth for the fixture corpus under real PyTorch (Debian's
python3-torch, CPU, gloo, one process per rank).

For every pair: the correct module at world size 1 is the reference (weights
drawn at random, inputs from a fixed seed). Then
  - the buggy module at world 1 reconciles with it (the bug is distributed),
  - the correct module at world 2 reconciles with it,
  - the buggy module at world 2 does not (or hangs)
(world N instead of 2 where buggy.py says `# groundtruth: world N`).
"Reconciles" means every rank's output equals the reference output, either
whole or as that rank's chunk along one dimension, like shardproof's layouts,
and after the entry's loss, backward and finalize_grads every parameter holds
its shard of the reference gradient (whole for a replicated one) and every
input its gradient. Shards of the reference weights are handed to each rank
through the same partition_dim / partition_stride attributes shardproof reads.

Usage: check_pairs.py FIXTURES_DIR [PAIR ...]
"""
import datetime
import importlib.util
import multiprocessing as mp
import os
import socket
import sys
import tempfile
import traceback

import torch
import torch.distributed as dist

TIMEOUT_S = 60


def _load(path):
    spec = importlib.util.spec_from_file_location("fixture_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _unpack(result):
    """(model, inputs, loss, finalize_grads, tensor_parallel_group,
    parameter_names, step, grad_norm), as shardproof reads the entry."""
    if isinstance(result, dict):
        inputs = result["inputs"]
        extra = (result.get("loss"), result.get("finalize_grads"),
                 result.get("tensor_parallel_group"),
                 result.get("parameter_names") or (lambda name: name), result.get("step"),
                 result.get("grad_norm"))
    else:
        (_, inputs), extra = result, (None, None, None, lambda name: name, None, None)
    inputs = (inputs,) if isinstance(inputs, torch.Tensor) else tuple(inputs)
    model = result["model"] if isinstance(result, dict) else result[0]
    return (model, inputs) + extra


def _outputs(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    return [t for o in out for t in _outputs(o)] if isinstance(out, (list, tuple)) else []


def _shard_index(tensor_parallel_group):
    """(index, count) of this rank's shards: sharded parameters are split over
    the entry's tensor-parallel group (the world unless it names one)."""
    ranks = dist.get_process_group_ranks(tensor_parallel_group or dist.group.WORLD)
    return ranks.index(dist.get_rank()), len(ranks)


def _shard_of(full, dim, stride, index, count):
    pieces = full.chunk(count * stride, dim=dim)
    return torch.cat([pieces[c * count + index] for c in range(stride)], dim=dim)


def _rank_main(path, rank, world, port, reference_file, out_file):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=20))
    torch.manual_seed(1234)
    model, inputs, loss_fn, finalize_grads, tp_group, reference_name, step, grad_norm = \
        _unpack(_load(path).entry())
    # Parameters by the reference's name (an expert's local name differs).
    named_parameters = [(reference_name(n), p) for n, p in model.named_parameters()]
    reference = torch.load(reference_file) if reference_file else None
    # The weights drawn here are the harness's, not the module's: the
    # module's generator state after its entry stays as it left it, so the
    # dropout masks its forward draws are the same in every run.
    module_rng_state = torch.get_rng_state()
    with torch.no_grad():
        for name, p in named_parameters:
            if reference is None:
                p.normal_()
            else:
                full = reference["params"][name]
                p.copy_(full if full.shape == p.shape else _shard_of(
                    full, getattr(p, "partition_dim", -1),
                    getattr(p, "partition_stride", 1), *_shard_index(tp_group)))
    torch.set_rng_state(module_rng_state)
    initial = {n: p.detach().clone() for n, p in named_parameters}  # before any step
    # Inputs come from the fixed seed: an entry draws them before building
    # its model, so every rank draws what the reference drew (and a rank that
    # builds its own input, such as zeros on ranks without data, keeps it).
    # Inputs keep the requires_grad the entry gave them, as in shardproof: a
    # leaf that requires grad has its gradient checked.
    out = model(*inputs)
    loss = loss_fn(out) if loss_fn else sum(t.sum() for t in _outputs(out))
    loss.backward()
    if finalize_grads:
        finalize_grads()
    param_grads = {n: None if p.grad is None else p.grad.detach().clone()
                   for n, p in named_parameters}
    # The norm for clipping (which may then scale the gradients the step reads).
    norm = torch.as_tensor(grad_norm()).detach().clone() if grad_norm else None
    # The optimizer step's parameters, compared as the gradients are.
    stepped = {}
    if step:
        step()
        stepped = {n: p.detach().clone() for n, p in named_parameters}
    saved = {"stepped": stepped, "out": [t.detach() for t in _outputs(out)],
             "param_grads": param_grads, "grad_norm": norm,
             "param_attrs": {n: (getattr(p, "partition_dim", -1),
                                 getattr(p, "partition_stride", 1))
                             for n, p in named_parameters},
             "shard": _shard_index(tp_group),
             "input_grads": [x.grad.detach() if isinstance(x, torch.Tensor) and
                             x.is_leaf and x.grad is not None else None
                             for x in inputs]}
    if reference is None:
        saved["params"] = initial
        saved["inputs"] = [x.detach().clone() if isinstance(x, torch.Tensor) else x
                           for x in inputs]
    torch.save(saved, out_file)
    dist.barrier()
    dist.destroy_process_group()


def _rank_entry(*args):
    try:
        _rank_main(*args)
    except BaseException:  # reported through the missing output file
        traceback.print_exc(file=open(args[-1] + ".err", "w"))
        os._exit(1)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(path, world, workdir, reference_file=None):
    """Per-rank outputs, or None if a rank failed or the ranks hung."""
    ctx = mp.get_context("spawn")
    port = _free_port()
    outs = [os.path.join(workdir, f"{os.getpid()}-{port}-{r}.pt") for r in range(world)]
    procs = [ctx.Process(target=_rank_entry,
                         args=(path, r, world, port, reference_file, outs[r]))
             for r in range(world)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(TIMEOUT_S)
    hung = any(p.is_alive() for p in procs)
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()
    if hung or not all(os.path.exists(o) for o in outs):
        return None, outs
    return [torch.load(o) for o in outs], outs


def _close(a, b):
    """Equal up to the rounding of the tensors' format (bf16 and fp16 keep
    about 3 decimal digits; summing in another order changes the last)."""
    if a.shape != b.shape:
        return False
    low = {torch.bfloat16, torch.float16}
    rtol = 3e-2 if a.dtype in low or b.dtype in low else 1e-5
    a, b = a.double(), b.double()
    # inf and NaN are equal only where both have the same one; the finite
    # rest is compared at the scale of the finite reference values.
    finite = torch.isfinite(b)
    if not torch.equal(finite, torch.isfinite(a)) or \
            not torch.equal(a[~finite].nan_to_num(0.0, 1.0, -1.0),
                            b[~finite].nan_to_num(0.0, 1.0, -1.0)) or \
            not torch.equal(torch.isnan(a), torch.isnan(b)):
        return False
    a, b = a[finite], b[finite]
    atol = rtol * max(float(b.abs().max()) if b.numel() else 0.0, 1e-6)
    return bool(torch.allclose(a, b, rtol=rtol, atol=atol))




def step_reconciles(reference, ranks):
    """Outputs, parameter gradients, the gradient norm, stepped parameters
    and input gradients all agree."""
    for k, ref_out in enumerate(reference["out"]):
        if not reconciles(ref_out, [r["out"][k] for r in ranks], [r["shard"] for r in ranks]):
            return False
    for kind in ("param_grads", "stepped"):
        if not _parameters_reconcile(reference[kind], [r[kind] for r in ranks], ranks):
            return False
    if reference["grad_norm"] is not None and \
            not all(_close(r["grad_norm"], reference["grad_norm"]) for r in ranks):
        return False
    # Only inputs handed to the model whole (a rank's batch slice is scaled by
    # its local loss, as data parallelism intends).
    for k, ref_grad in enumerate(reference["input_grads"]):
        grads = [r["input_grads"][k] for r in ranks]
        if ref_grad is not None and all(g is not None and g.shape == ref_grad.shape
                                        for g in grads) and \
                not all(_close(g, ref_grad) for g in grads):
            return False
    return True


def _parameters_reconcile(reference, per_rank, ranks):
    """Every rank's value (a gradient, a stepped parameter) of each parameter
    it holds is its shard of the reference's (whole for a replicated one)."""
    for name, ref_grad in reference.items():
        for values, r in zip(per_rank, ranks):
            if name not in values:
                continue  # not held here (an expert on other ranks)
            grad = values[name]
            if (grad is None) != (ref_grad is None):
                return False
            if grad is None:
                continue
            dim, stride = r["param_attrs"][name]
            want = ref_grad if grad.shape == ref_grad.shape else \
                _shard_of(ref_grad, dim, stride, *r["shard"])
            if not _close(grad, want):
                return False
    return True


def reconciles(reference, outputs, shards=None):
    """Every rank's output is the reference's, or its chunk along one dim:
    chunked over the world, or, given each rank's `shards` (index, count)
    in the entry's tensor-parallel group, over that group and replicated
    across the other axes."""
    world = len(outputs)
    if all(o.shape == reference.shape for o in outputs):
        return all(_close(o, reference) for o in outputs)
    for dim in range(reference.dim()):
        chunks = reference.chunk(world, dim=dim)
        if len(chunks) == world and all(_close(o, c) for o, c in zip(outputs, chunks)):
            return True
        if shards and all(len(reference.chunk(count, dim=dim)) == count and
               _close(o, reference.chunk(count, dim=dim)[index])
               for o, (index, count) in zip(outputs, shards)):
            return True
    return False


def _pair_world(buggy):
    """The world size a pair's bug shows at: 2, or what a `# groundtruth:
    world N` line of buggy.py says (a bug that needs several expert-parallel
    ranks, each with several experts, shows at 4 only)."""
    with open(buggy) as f:
        for line in f:
            if line.startswith("# groundtruth: world "):
                return int(line.split()[3])
    return 2


def check_pair(pair_dir, workdir, world_n):
    correct = os.path.join(pair_dir, "correct.py")
    buggy = os.path.join(pair_dir, "buggy.py")
    ref_outputs, ref_files = run(correct, 1, workdir)
    if ref_outputs is None:
        return ["the correct module does not run at world size 1"]
    reference, reference_file = ref_outputs[0], ref_files[0]
    problems = []
    for path, world, expect in ((buggy, 1, True), (correct, world_n, True),
                                (buggy, world_n, False)):
        outputs, _ = run(path, world, workdir, reference_file)
        ok = outputs is not None and step_reconciles(reference, outputs)
        if ok != expect:
            what = "hung or failed" if outputs is None else (
                "reconciles" if ok else "does not reconcile")
            problems.append(f"{os.path.basename(path)} at world {world} {what} "
                            f"with the reference, expected the opposite")
    return problems


def main(argv):
    root = argv[1]
    pairs = argv[2:] or sorted(d for d in os.listdir(root)
                               if os.path.isfile(os.path.join(root, d, "buggy.py")))
    passed = failed = 0
    with tempfile.TemporaryDirectory() as workdir:
        for pair in pairs:
            world = _pair_world(os.path.join(root, pair, "buggy.py"))
            problems = check_pair(os.path.join(root, pair), workdir, world)
            if problems:
                failed += 1
                print(f"FAIL {pair}: " + "; ".join(problems))
            else:
                passed += 1
                print(f"ok   {pair}: correct reconciles at world {world}, buggy does not")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
