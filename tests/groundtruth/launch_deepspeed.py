#!/usr/bin/env python3
"""Ground truth for the DeepSpeed launch check under REAL PyTorch and a real
DeepSpeed tree (CPU, gloo), not shardproof's stand-in.

integrations/deepspeed/launch.py's own plan() and entry() run a launch
(a ds_config JSON and a model builder) at the world plan() gives, one process
per rank, and at world 1, as shardproof runs them; each process then takes
the step as shardproof's driver does (the model's forward, the entry's
backward, finalize_grads, grad_norm, step) and keeps the loss, every
gradient, the gradient norm and every parameter after the step. Every run
starts from the same weights (each full parameter drawn from a generator
seeded by its name as the reference names it) and the same global batch
(the builder's batch() after torch.manual_seed(0)). Each rank's values are
compared with the world-1 run's:

    python tests/groundtruth/launch_deepspeed.py --tree DEEPSPEED_TREE \\
        --launch tests/e2e/launch/deepspeed/zero0.json \\
        --entry tests/e2e/launch/deepspeed/mlp.py::build [--world N]

prints one line per compared value that differs and a closing line
"matches (max |d| = ...)" or "differs (max |d| = ...)"; exit status 0 when
every value matches within the tolerance (relative 1e-5 in fp32, 2e-2 with
bf16 or fp16 enabled), 1 when some differ.

The interpreter needs torch 2.x with gloo and DeepSpeed's Python
requirements (tests/upstream/requirements.txt); --python-path adds folders
to the workers' path (pydantic 2 and the like). DeepSpeed runs with
DS_ACCELERATOR=cpu and deepspeed.comm on gloo; the tree is never edited.
"""
import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
RUNTIME = os.path.join(REPO, "frontend", "python", "runtime")
INTEGRATION = os.path.join(REPO, "integrations", "deepspeed")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", required=True)
    parser.add_argument("--launch", required=True)
    parser.add_argument("--entry", required=True, help="MODEL.py::FUNCTION")
    parser.add_argument("--world", type=int, default=0)
    parser.add_argument("--python-path", action="append", default=[])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    path, _, function = args.entry.partition("::")
    args.entry = os.path.abspath(path) + "::" + (function or "build")
    args.launch = os.path.abspath(args.launch)
    if args.worker:
        return _worker(args)
    sys.path[:0] = [RUNTIME, INTEGRATION] + args.python_path
    import launch
    planned = launch.plan(args.launch, args.world, args.entry)
    print(f"launch: {planned['summary']}")
    config = json.load(open(args.launch))
    low = any(launch._enabled(config.get(k, {"enabled": False})) for k in ("bf16", "fp16"))
    with tempfile.TemporaryDirectory() as out:
        reference = _run(args, planned["layout"], 1, out)
        ranks = _run(args, planned["layout"], planned["world"], out)
    return _compare(reference[0], ranks, 2e-2 if low else 1e-5)


def _run(args, layout, world, out):
    """Runs `world` worker processes; their results, by rank."""
    port = _free_port()
    processes = []
    for rank in range(world):
        env = dict(os.environ, SHARDPROOF_LAUNCH=args.launch, SHARDPROOF_LAUNCH_MODEL=args.entry,
                   SHARDPROOF_PARALLEL=layout, SHARDPROOF_WORLD=str(world),
                   DEEPSPEED_ROOT=os.path.abspath(args.tree), DS_ACCELERATOR="cpu",
                   RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                   LOCAL_WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        command = [sys.executable, os.path.abspath(__file__), "--worker", "--tree", args.tree,
                   "--launch", args.launch, "--entry", args.entry,
                   "--out", os.path.join(out, f"w{world}r{rank}.pt")]
        for folder in args.python_path:
            command += ["--python-path", folder]
        processes.append(subprocess.Popen(command, env=env))
    if any(p.wait() for p in processes):
        sys.exit(f"a worker of the world-{world} run failed")
    import torch
    return [torch.load(os.path.join(out, f"w{world}r{rank}.pt")) for rank in range(world)]


def _compare(reference, ranks, tolerance):
    worst, differs = 0.0, False
    for rank, values in enumerate(ranks):
        for key, value in values.items():
            if key not in reference:
                print(f"rank {rank}: {key} has no reference value")
                differs = True
                continue
            expected = reference[key].double()
            d = (value.double() - expected).abs().max().item() if value.numel() else 0.0
            scale = expected.abs().max().item() if expected.numel() else 0.0
            worst = max(worst, d)
            if d > tolerance * max(1.0, scale):
                differs = True
                print(f"rank {rank}: {key} differs (max |d| = {d:.3g}, reference max {scale:.3g})")
    print(f"{'differs' if differs else 'matches'} (max |d| = {worst:.3g})")
    return 1 if differs else 0


# ---- One worker: a rank of the launch, or the world-1 reference ----


def _worker(args):
    sys.path[:0] = [RUNTIME, INTEGRATION, os.path.abspath(args.tree)] + args.python_path
    import torch
    import torch.distributed as dist
    dist.init_process_group("gloo")
    import shardproof_recipes
    import launch

    def framework_root(variable, marker, name="framework"):
        return os.environ[variable]
    shardproof_recipes.framework_root = framework_root
    recipes = launch._recipes()
    recipes.framework_root = framework_root

    def deepspeed_on_gloo():
        import deepspeed
        import deepspeed.comm as ds_dist
        ds_torch = sys.modules.get("deepspeed.comm.torch")
        if ds_torch is not None and hasattr(ds_torch, "build_shm_op"):
            ds_torch.build_shm_op = lambda: None  # the CPU accelerator's JIT-built all-reduce
        ds_dist.init_distributed(dist_backend="gloo", auto_mpi_discovery=False, verbose=False)
        return deepspeed, ds_dist
    recipes._deepspeed = deepspeed_on_gloo
    launch._analysed = lambda path: None

    load_builder = launch._load_builder

    def seeded_builder(path, function):
        builder = load_builder(path, function)

        def build(**sizes):
            built = builder(**sizes)
            model = built["model"] if isinstance(built, dict) else built
            _set_weights(model)
            return built
        return build
    launch._load_builder = seeded_builder
    global_batch = launch.Built.global_batch

    def seeded_batch(self, samples, pipeline):
        torch.manual_seed(0)
        return global_batch(self, samples, pipeline)
    launch.Built.global_batch = seeded_batch

    entry = launch.entry()
    names = entry["parameter_names"]
    model = entry["model"]
    out = model(*entry["inputs"])
    loss = entry["loss"](out)
    entry["backward"](loss)
    entry["finalize_grads"]()
    results = {"loss": out.detach().float().reshape(-1)}
    for name, p in model.named_parameters():
        if p.grad is not None:
            results[f"grad({names(name)})"] = p.grad.detach().float().clone()
    if entry.get("grad_norm"):
        norm = entry["grad_norm"]()
        results["grad_norm"] = torch.as_tensor(float(norm)).reshape(1)
    entry["step"]()
    for name, p in model.named_parameters():
        results[f"step({names(name)})"] = p.detach().float().clone()
    torch.save(results, args.out)
    dist.barrier()
    return 0


def _set_weights(model):
    """Every parameter from a generator seeded by its name as the reference
    names it (a local expert by its global index, a pipeline layer by its
    global index, which PipelineModule's names already are)."""
    import torch
    rename = _expert_names(model)
    with torch.no_grad():
        for name, p in model.named_parameters():
            generator = torch.Generator().manual_seed(_seed(rename(name)))
            values = torch.randn(p.shape, generator=generator) * 0.5
            p.copy_(values.to(p.dtype))


def _expert_names(model):
    import torch.distributed as dist
    try:
        from deepspeed.moe.layer import MoE
    except ImportError:
        return lambda name: name
    layers = [m for m in model.modules() if isinstance(m, MoE)]
    if not layers:
        return lambda name: name
    # DeepSpeed's expert-parallel groups are runs of ep_size consecutive ranks
    # (its groups exist only once the engine is built).
    local = layers[0].num_local_experts
    rank = dist.get_rank() % layers[0].ep_size
    pattern = re.compile(r"(deepspeed_experts\.)(\d+)(\.|$)")
    return lambda name: pattern.sub(lambda m: f"{m[1]}{rank * local + int(m[2])}{m[3]}", name)


def _seed(name):
    import hashlib
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "little")


if __name__ == "__main__":
    sys.exit(main())
