#!/usr/bin/python3
"""Small random distributed training programs, deterministic from a seed.

Each program is one module in the entry-contract form (docs/entry-contract.md)
built from 1-4 layers of a family of Megatron- and DeepSpeed-style blocks,
written here (never copied): column-/row-parallel linears through Megatron-like
mapping Functions or raw collectives, sequence-parallel gathers and
reduce-scatters, replicated norms and affines whose gradients need an
all-reduce, data-parallel gradient averaging in `finalize_grads`, in a flat
bucket or in gradient hooks, bf16 parameters with fp32 compute and loss
scaling, in-place collectives on views, `.data`, `.detach()`, `.clone()` and
`.contiguous()` results, nonlinearities, mean and sum losses.

Those are the "tp" and "dp" families. A share of the seeds (family_of) draws
one of the families of whole training steps instead (NEW_FAMILIES, fp32):

- pp_forward: a pipeline of NUM_LAYERS equal layers over the ranks (one stage
  each, a single stage at world 1; layers named by their global index, or by
  their local one with the entry's parameter_names adding the stage's
  offset), MICRO_BATCHES micro-batches, activations and their gradients
  passed between neighbouring stages by point-to-point messages (send/recv,
  isend/irecv with wait(), or batch_isend_irecv of P2POps). The model's
  forward runs the whole schedule, 1F1B or all forwards then all backwards,
  calling backward on every micro-batch itself, and returns the last stage's
  loss detached (broadcast to every stage): a loss that needs no gradient.
  The micro-batch losses may be scaled (LOSS_SCALE, unscaled after the
  schedule or in finalize_grads) and averaged in the loss or in
  finalize_grads.
- pp_backward: the same pipeline with the backwards in the entry's `backward`
  callable: the forward runs the forwards; the last stage returns its summed
  loss (needing a gradient) and backpropagates it at once, the other stages
  return the broadcast value (needing none) and pop their pending
  micro-batches one by one as the output gradients arrive.
- dp_buckets: a data-parallel stack of the dp family's blocks whose gradients
  backward hooks (tensor hooks, AccumulateGrad node hooks reached through
  `p.expand_as(p).grad_fn.next_functions`, or module full backward hooks) add
  into `main_grad` views of flat bucket buffers; each bucket is all-reduced
  from the hook of the parameter (module) PyTorch's engine reaches last for
  it (engine_order), and finalize_grads points `.grad` at `main_grad`
  (assigned or copied), averaging and unscaling where the program chose to.
  Their bugs: pp_* and bucket_reduced_early, finalize_* of BUGS.

A program is generated correct or with ONE injected bug from BUGS. The bug's
label is what the generator meant; whether the program is really wrong is for
real PyTorch to say (tests/soundness/truth.py).

Usage: generate.py SEED [OUT_DIR]   (prints the program, or writes
       OUT_DIR/prog_SEED.py and its sidecar prog_SEED.json)
"""
import json
import os
import random
import sys
import textwrap

# Every bug the generator can inject, with what it breaks.
BUGS = {
    "copy_to_no_reduce": "copy-to region's backward misses the all-reduce of the input gradient",
    "copy_to_reduce_forward": "copy-to region reduces in forward instead of backward",
    "reduce_from_in_backward": "reduce-from region reduces in backward instead of forward",
    "reduce_average": "all-reduce of partial sums divides by the world size (average where a sum is needed)",
    "reduce_wrong_group": "tensor-parallel all-reduce issued over the data-parallel group",
    "reduce_copy_discarded": "all-reduce runs on a clone and the original is returned",
    "split_wrong_index": "scatter keeps another rank's chunk",
    "gather_wrong_dim": "gather concatenates along the wrong dimension",
    "gather_backward_reduce": "gather's backward all-reduces a replicated gradient before splitting it",
    "sp_gather_backward_split": "sequence-parallel gather before a linear splits its gradient instead of reduce-scattering it",
    "sp_gather_backward_reduce_scatter": "sequence-parallel gather of replicated values reduce-scatters its gradient",
    "reduce_scatter_is_split": "reduce-scatter replaced by a plain split (missing reduction)",
    "fused_missing_input_reduce": "fused linear Function's backward misses the input-gradient all-reduce",
    "fused_grad_weight_reduced": "fused linear Function's backward also all-reduces the sharded weight gradient",
    "fused_reduce_grad_output_inplace": "fused linear Function all-reduces grad_output in place before the weight gradient uses it",
    "sp_fused_saves_gather_buffer": "sequence-parallel linear saves the shared all-gather buffer for backward (overwritten by later gathers) instead of gathering again",
    "grad_buffer_is_copy": "the flat gradient buffer is built by torch.cat (a copy): reducing it leaves every .grad local",
    "bias_before_reduce": "row-parallel bias added before the reduction (counted world-size times)",
    "raw_reduce_detached": "raw all-reduce on a .detach()/.data activation cuts the graph the weights need",
    "raw_reduce_noncontiguous_copy": "raw all-reduce on .contiguous() of a non-contiguous tensor (a copy) whose result is dropped",
    "sp_param_unsynced": "a replicated sequence-parallel weight's gradient is never all-reduced",
    "replicated_param_reduced": "a replicated weight outside the sequence-parallel region is all-reduced too (summed twice)",
    "local_softmax": "softmax over a dimension sharded across ranks",
    "finalize_average": "sequence-parallel gradients averaged where a sum is needed",
    "finalize_flat_not_copied_back": "flat gradient bucket reduced but never copied back",
    "finalize_wrong_group": "gradient all-reduce over the wrong (singleton) group",
    "grad_reduce_in_fp16": "bf16 gradients reduced in an fp16 buffer (overflows under loss scaling)",
    "dp_sum_not_average": "data-parallel gradients summed where the mean loss needs an average",
    "dp_average_sum_loss": "data-parallel gradients averaged where the sum loss needs a sum",
    "dp_skip_bias": "data-parallel averaging skips one-dimensional parameters",
    "dp_clone_not_written": "data-parallel all-reduce runs on a clone of the gradient",
    "dp_scaled_twice": "loss divided by the world size and gradients averaged too",
    # pipelines whose schedule calls backward itself (pp_forward, pp_backward)
    "pp_newest_first": "the schedule pops its pending micro-batches newest-first: activations paired with another micro-batch's output gradient",
    "pp_unscaled_stage": "the loss is scaled by 3 for backward and only the last stage unscales its gradients",
    "pp_finalize_rescaled": "finalize_grads also divides the gradients by the number of pipeline stages",
    "pp_exchange_deadlock": "1F1B's steady state sends with a blocking call before receiving: neighbouring stages each wait in their send (a hang on gloo)",
    "pp_recv_grad_dropped": "a stage receives its output gradient into a copy and backpropagates the zeros it allocated",
    # data-parallel buckets reduced from backward hooks (dp_buckets)
    "bucket_reduced_early": "a bucket is all-reduced from the hook of a parameter the engine reaches before another of the bucket's gradients arrives",
    "finalize_local_grad": "finalize_grads keeps the local .grad of one-dimensional parameters instead of the reduced main_grad",
    "finalize_averaged_twice": "gradients averaged over the data-parallel group twice (bucket, loss or finalize_grads)",
    "finalize_not_averaged": "the mean loss's gradients are summed over the data-parallel group, never averaged",
}


def _block(text):
    return textwrap.dedent(text).strip("\n") + "\n"


# --- Megatron-style primitives and mapping Functions (tensor parallelism) ----
# Each entry: variant -> code. "ok*" variants are correct; others are bugs.
PRIMITIVES = {
    "_reduce": {
        "ok": """
            def _reduce(input_):
                if dist.get_world_size(group=_TP) == 1:
                    return input_
                dist.all_reduce(input_, group=_TP)
                return input_
        """,
        "ok_view": """
            def _reduce(input_):
                if dist.get_world_size(group=_TP) == 1:
                    return input_
                dist.all_reduce(input_.view(-1), group=_TP)  # a view: reduces input_ in place
                return input_
        """,
        "ok_data": """
            def _reduce(input_):
                if dist.get_world_size(group=_TP) == 1:
                    return input_
                dist.all_reduce(input_.data, group=_TP)
                return input_
        """,
        "ok_clone": """
            def _reduce(input_):
                if dist.get_world_size(group=_TP) == 1:
                    return input_
                output = input_.clone()
                dist.all_reduce(output, group=_TP)
                return output
        """,
        "reduce_average": """
            def _reduce(input_):
                world = dist.get_world_size(group=_TP)
                if world == 1:
                    return input_
                dist.all_reduce(input_, group=_TP)
                input_.div_(world)
                return input_
        """,
        "reduce_wrong_group": """
            def _reduce(input_):
                if dist.get_world_size(group=_TP) == 1:
                    return input_
                dist.all_reduce(input_, group=_DP)
                return input_
        """,
        "reduce_copy_discarded": """
            def _reduce(input_):
                if dist.get_world_size(group=_TP) == 1:
                    return input_
                output = input_.clone()
                dist.all_reduce(output, group=_TP)
                return input_
        """,
    },
    "_split_last": {
        "ok": """
            def _split_last(input_):
                world = dist.get_world_size(group=_TP)
                if world == 1:
                    return input_
                return input_.chunk(world, dim=-1)[dist.get_rank(group=_TP)].contiguous()
        """,
        "split_wrong_index": """
            def _split_last(input_):
                world = dist.get_world_size(group=_TP)
                if world == 1:
                    return input_
                return input_.chunk(world, dim=-1)[world - 1 - dist.get_rank(group=_TP)].contiguous()
        """,
    },
    "_gather_last": {
        "ok": """
            def _gather_last(input_):
                world = dist.get_world_size(group=_TP)
                if world == 1:
                    return input_
                parts = [torch.empty_like(input_) for _ in range(world)]
                dist.all_gather(parts, input_.contiguous(), group=_TP)
                return torch.cat(parts, dim=-1).contiguous()
        """,
        "gather_wrong_dim": """
            def _gather_last(input_):
                world = dist.get_world_size(group=_TP)
                if world == 1:
                    return input_
                parts = [torch.empty_like(input_) for _ in range(world)]
                dist.all_gather(parts, input_.contiguous(), group=_TP)
                return torch.cat(parts, dim=0).contiguous()
        """,
    },
    "_split_first": {
        "ok": """
            def _split_first(input_):
                world = dist.get_world_size(group=_TP)
                if world == 1:
                    return input_
                return input_.chunk(world, dim=0)[dist.get_rank(group=_TP)].contiguous()
        """,
        "split_wrong_index": """
            def _split_first(input_):
                world = dist.get_world_size(group=_TP)
                if world == 1:
                    return input_
                return input_.chunk(world, dim=0)[world - 1 - dist.get_rank(group=_TP)].contiguous()
        """,
    },
    "_gather_first": {
        "ok": """
            def _gather_first(input_):
                world = dist.get_world_size(group=_TP)
                if world == 1:
                    return input_
                output = torch.empty((world * input_.shape[0],) + tuple(input_.shape[1:]),
                                     dtype=input_.dtype)
                dist.all_gather_into_tensor(output, input_.contiguous(), group=_TP)
                return output
        """,
    },
    "_reduce_scatter_first": {
        "ok": """
            def _reduce_scatter_first(input_):
                world = dist.get_world_size(group=_TP)
                if world == 1:
                    return input_
                output = torch.empty((input_.shape[0] // world,) + tuple(input_.shape[1:]),
                                     dtype=input_.dtype)
                dist.reduce_scatter_tensor(output, input_.contiguous(), group=_TP)
                return output
        """,
        "reduce_scatter_is_split": """
            def _reduce_scatter_first(input_):
                world = dist.get_world_size(group=_TP)
                if world == 1:
                    return input_
                return input_.chunk(world, dim=0)[dist.get_rank(group=_TP)].contiguous()
        """,
    },
}


def _mapping(name, forward, backward, extra_arg=False):
    arg = ", flag" if extra_arg else ""
    ret = "return {}, None" if extra_arg else "return {}"
    flag_store = "\n        ctx.flag = flag" if extra_arg else ""
    return (f"class {name}(torch.autograd.Function):\n"
            f"    @staticmethod\n"
            f"    def forward(ctx, input_{arg}):{flag_store}\n"
            f"        return {forward}\n\n"
            f"    @staticmethod\n"
            f"    def backward(ctx, grad_output):\n"
            f"        {ret.format(backward)}\n")


# name -> (primitives used, variant -> (forward, backward)); the flag of the
# sequence-parallel gather is Megatron's tensor_parallel_output_grad.
MAPPINGS = {
    "_CopyToTensorParallelRegion": (("_reduce",), {
        "ok": ("input_", "_reduce(grad_output)"),
        "copy_to_no_reduce": ("input_", "grad_output"),
        "copy_to_reduce_forward": ("_reduce(input_)", "grad_output")}),
    "_ReduceFromTensorParallelRegion": (("_reduce",), {
        "ok": ("_reduce(input_)", "grad_output"),
        "reduce_from_in_backward": ("input_", "_reduce(grad_output)")}),
    "_ScatterToTensorParallelRegion": (("_split_last", "_gather_last"), {
        "ok": ("_split_last(input_)", "_gather_last(grad_output)")}),
    "_GatherFromTensorParallelRegion": (("_gather_last", "_split_last", "_reduce"), {
        "ok": ("_gather_last(input_)", "_split_last(grad_output)"),
        "gather_backward_reduce": ("_gather_last(input_)", "_split_last(_reduce(grad_output))")}),
    "_ScatterToSequenceParallelRegion": (("_split_first", "_gather_first"), {
        "ok": ("_split_first(input_)", "_gather_first(grad_output)")}),
    "_GatherFromSequenceParallelRegion": (("_gather_first", "_reduce_scatter_first", "_split_first"), {
        "ok": ("_gather_first(input_)",
               "_reduce_scatter_first(grad_output) if ctx.flag else _split_first(grad_output)"),
        "sp_gather_backward_split": ("_gather_first(input_)", "_split_first(grad_output)"),
        "sp_gather_backward_reduce_scatter": ("_gather_first(input_)",
                                              "_reduce_scatter_first(grad_output)")}),
    "_ReduceScatterToSequenceParallelRegion": (("_reduce_scatter_first", "_gather_first"), {
        "ok": ("_reduce_scatter_first(input_)", "_gather_first(grad_output)")}),
}
# Which mapping variant a bug of a sequence-parallel gather applies to, by flag.
SP_GATHER_BUG = {True: "sp_gather_backward_split", False: "sp_gather_backward_reduce_scatter"}


class Program:
    """Accumulates the pieces of one program while blocks are chosen."""

    def __init__(self, rng, mode, dtype):
        self.rng, self.mode, self.dtype = rng, mode, dtype
        self.shared = {}           # other module-level helpers, by name
        self.mappings = set()      # mapping Functions used
        self.primitives = set()    # the primitives they (or fused Functions) call
        self.classes = []          # class sources, in order
        self.candidate_bugs = set()
        self.bug = None

    def use(self, mapping):
        self.mappings.add(mapping)
        variants = MAPPINGS[mapping][1]
        self.candidate_bugs.update(v for v in variants if not v.startswith("ok"))
        for prim in MAPPINGS[mapping][0]:
            self.use_primitive(prim)
        return mapping

    def use_primitive(self, prim):
        self.primitives.add(prim)
        self.candidate_bugs.update(v for v in PRIMITIVES[prim] if not v.startswith("ok"))

    def param(self, shape):
        dt = ", dtype=torch.bfloat16" if self.dtype == "bf16" else ""
        return f"torch.nn.Parameter(torch.empty({shape}{dt}))"

    def cast_in(self, expr):
        """Compute in fp32 under bf16, as mixed-precision code does."""
        return f"{expr}.float()" if self.dtype == "bf16" else expr

    def cast_out(self, expr, like="x"):
        return f"({expr}).to({like}.dtype)" if self.dtype == "bf16" else expr


# --- Blocks: each maps (layout, width) -> (layout, width) --------------------
# Layouts: "rep" replicated, "seq" sharded on dim 0 (sequence parallel),
# "col" sharded on the last dim (between a column- and a row-parallel linear),
# "batch" (data parallel: every rank holds its slice of the batch).

TP_ATTRS = """
        for p in {params}:
            p.tensor_model_parallel = True
            p.partition_dim = {dim}
            p.partition_stride = 1"""


class ColumnParallelLinear:
    accepts = ("rep", "seq")

    def build(self, prog, name, layout, width):
        rng = prog.rng
        out_w = rng.choice((4, 8))
        sp = layout == "seq"
        gather = not sp and rng.random() < 0.25
        fused = not gather and rng.random() < 0.35
        bias = rng.random() < 0.6 and not fused
        params = "(self.weight, self.bias)" if bias else "(self.weight,)"
        init = [f"world = dist.get_world_size(group=_TP)",
                f"self.weight = {prog.param(f'{out_w} // world, {width}')}"]
        if bias:
            init.append(f"self.bias = {prog.param(f'{out_w} // world')}")
        init_src = "\n        ".join(init) + TP_ATTRS.format(params=params, dim=0)
        if fused and sp:
            prog.use_primitive("_reduce_scatter_first")
            prog.candidate_bugs.add("sp_fused_saves_gather_buffer")
            if "_gather_into_buffer" not in prog.shared:
                prog.shared["_gather_into_buffer"] = GATHER_INTO_BUFFER
            fn = f"_SequenceParallelLinear{name[-1]}"
            prog.classes.append(sp_fused_linear_function(fn, prog.bug))
            body = f"return {fn}.apply(input_, self.weight)"
        elif fused:
            prog.use_primitive("_reduce")
            prog.candidate_bugs.update(("fused_missing_input_reduce", "fused_grad_weight_reduced",
                                        "fused_reduce_grad_output_inplace"))
            fn = f"_LinearWithInputGradAllReduce{name[-1]}"
            prog.classes.append(fused_linear_function(fn, prog.bug))
            body = f"return {fn}.apply(input_, self.weight)"
        else:
            if sp:
                region = f"{prog.use('_GatherFromSequenceParallelRegion')}.apply(input_, True)"
                prog.sp_gather_flags.add(True)
            else:
                region = f"{prog.use('_CopyToTensorParallelRegion')}.apply(input_)"
            lin = f"F.linear(x, self.weight, self.bias)" if bias else "F.linear(x, self.weight)"
            body = f"x = {region}\n        out = {lin}\n        "
            body += (f"return {prog.use('_GatherFromTensorParallelRegion')}.apply(out)"
                     if gather else "return out")
        prog.classes.append(module(name, init_src, body))
        return ("rep" if gather else "col"), out_w, dict(kind="column", out=out_w, sp=sp,
                                                         gather=gather, fused=fused, bias=bias)


class RowParallelLinear:
    accepts = ("col", "rep")

    def build(self, prog, name, layout, width):
        rng = prog.rng
        out_w = rng.choice((4, 8))
        scatter = layout == "rep"
        sp = not scatter and rng.random() < 0.35
        raw = not sp and rng.random() < 0.4  # raw in-place collective in forward
        bias = rng.random() < 0.7
        init = ["world = dist.get_world_size(group=_TP)",
                f"self.weight = {prog.param(f'{out_w}, {width} // world')}"]
        init_src = "\n        ".join(init) + TP_ATTRS.format(params="(self.weight,)", dim=1)
        if bias:
            init_src += f"\n        self.bias = {prog.param(out_w)}"
            if sp:
                if prog.bug != "sp_param_unsynced":
                    init_src += "\n        self.bias.sequence_parallel = True"
                prog.candidate_bugs.add("sp_param_unsynced")
                prog.sp_params = True
            else:
                prog.candidate_bugs.add("bias_before_reduce")
        lines = []
        x = "input_"
        if scatter:
            lines.append(f"x = {prog.use('_ScatterToTensorParallelRegion')}.apply(input_)")
            x = "x"
        early_bias = bias and not sp and prog.bug == "bias_before_reduce"
        if raw:
            style = rng.choice(("inplace", "data", "detach", "view", "contiguous"))
            prog.candidate_bugs.update(("raw_reduce_detached", "raw_reduce_noncontiguous_copy"))
            if prog.bug == "raw_reduce_noncontiguous_copy":
                style = "noncontiguous"
            cut = rng.choice(("detach()", "data"))
            lines += raw_reduce(x, style, cut if prog.bug == "raw_reduce_detached" else None,
                                early_bias)
        else:
            lin = f"F.linear({x}, self.weight, self.bias)" if early_bias else f"F.linear({x}, self.weight)"
            region = ("_ReduceScatterToSequenceParallelRegion" if sp
                      else "_ReduceFromTensorParallelRegion")
            lines += [f"partial = {lin}", f"out = {prog.use(region)}.apply(partial)"]
        lines.append("return out + self.bias" if bias and not early_bias else "return out")
        prog.classes.append(module(name, init_src, "\n        ".join(lines)))
        return ("seq" if sp else "rep"), out_w, dict(kind="row", out=out_w, sp=sp,
                                                     scatter=scatter, raw=raw, bias=bias)


def raw_reduce(x, style, detached, early_bias):
    """Row-parallel reduction written with a raw collective in forward (its
    backward is the identity, as the reduce-from region's). `detached`: the
    bug's spelling of the cut ("detach()" or "data"), or None."""
    bias = ", self.bias" if early_bias else ""
    if style == "noncontiguous":
        # The product is computed transposed; .contiguous() is then a copy.
        lines = [f"partial = torch.matmul(self.weight, {x}.transpose(-1, -2)).transpose(-1, -2)"]
        if early_bias:
            lines.append("partial = partial + self.bias")
        return lines + ["if dist.get_world_size(group=_TP) > 1:",
                        "    dist.all_reduce(partial.contiguous(), group=_TP)",
                        "out = partial"]
    lines = [f"partial = F.linear({x}, self.weight{bias})", "if dist.get_world_size(group=_TP) > 1:"]
    if detached:
        return lines + [f"    partial = partial.{detached}",
                        "    dist.all_reduce(partial, group=_TP)", "out = partial"]
    if style == "contiguous":
        # Transposed product made contiguous before the in-place reduction.
        lines[0] = f"partial = torch.matmul(self.weight, {x}.transpose(-1, -2)).transpose(-1, -2)"
        if early_bias:
            lines.insert(1, "partial = partial + self.bias")
        return lines + ["    partial = partial.contiguous()",
                        "    dist.all_reduce(partial, group=_TP)", "out = partial"]
    target = {"inplace": "partial", "data": "partial.data", "detach": "partial.detach()",
              "view": "partial.view(-1)"}[style]
    return lines + [f"    dist.all_reduce({target}, group=_TP)", "out = partial"]


# Megatron keeps one global buffer per shape for the sequence-parallel
# all-gather, and gathers again in backward rather than saving the buffer.
GATHER_INTO_BUFFER = """
_GATHER_BUFFERS = {}


def _gather_into_buffer(input_):
    world = dist.get_world_size(group=_TP)
    if world == 1:
        return input_
    shape = (world * input_.shape[0],) + tuple(input_.shape[1:])
    key = (shape, input_.dtype)
    if key not in _GATHER_BUFFERS:
        _GATHER_BUFFERS[key] = torch.empty(shape, dtype=input_.dtype)
    dist.all_gather_into_tensor(_GATHER_BUFFERS[key], input_.contiguous(), group=_TP)
    return _GATHER_BUFFERS[key]
"""


def sp_fused_linear_function(name, bug):
    """Sequence-parallel column linear as one Function: all-gather of the
    input in forward, reduce-scatter of the input gradient in backward."""
    saves_buffer = bug == "sp_fused_saves_gather_buffer"
    regather = ("" if saves_buffer else
                "        total_input = _gather_into_buffer(input_)\n")
    return (f"class {name}(torch.autograd.Function):\n"
            f"    @staticmethod\n"
            f"    def forward(ctx, input_, weight):\n"
            f"        total_input = _gather_into_buffer(input_)\n"
            f"        ctx.save_for_backward({'total_input' if saves_buffer else 'input_'}, weight)\n"
            f"        return torch.matmul(total_input, weight.t())\n\n"
            f"    @staticmethod\n"
            f"    def backward(ctx, grad_output):\n"
            f"        {'total_input' if saves_buffer else 'input_'}, weight = ctx.saved_tensors\n"
            f"{regather}"
            f"        grad_input = _reduce_scatter_first(grad_output.matmul(weight))\n"
            f"        flat_grad = grad_output.reshape(-1, grad_output.shape[-1])\n"
            f"        grad_weight = flat_grad.t().matmul(total_input.reshape(-1, total_input.shape[-1]))\n"
            f"        return grad_input, grad_weight\n")


def fused_linear_function(name, bug):
    """Megatron-like linear Function whose backward all-reduces the input
    gradient itself (the copy-to region fused into the layer)."""
    reduce_in = "        grad_input = _reduce(grad_input)\n"
    pre = ""
    if bug == "fused_missing_input_reduce":
        reduce_in = ""
    elif bug == "fused_reduce_grad_output_inplace":
        pre, reduce_in = "        grad_output = _reduce(grad_output)\n", ""
    post = ("        grad_weight = _reduce(grad_weight)\n" if bug == "fused_grad_weight_reduced" else "")
    return (f"class {name}(torch.autograd.Function):\n"
            f"    @staticmethod\n"
            f"    def forward(ctx, input_, weight):\n"
            f"        ctx.save_for_backward(input_, weight)\n"
            f"        return torch.matmul(input_, weight.t())\n\n"
            f"    @staticmethod\n"
            f"    def backward(ctx, grad_output):\n"
            f"        input_, weight = ctx.saved_tensors\n"
            f"{pre}"
            f"        grad_input = grad_output.matmul(weight)\n"
            f"{reduce_in}"
            f"        flat_grad = grad_output.reshape(-1, grad_output.shape[-1])\n"
            f"        grad_weight = flat_grad.t().matmul(input_.reshape(-1, input_.shape[-1]))\n"
            f"{post}"
            f"        return grad_input, grad_weight\n")


class ReplicatedNorm:
    """Layer norm, RMS norm or an affine with replicated weights; in the
    sequence-parallel region their gradients need an all-reduce."""
    accepts = ("rep", "seq", "batch")

    def build(self, prog, name, layout, width):
        rng = prog.rng
        flavour = rng.choice(("layer_norm", "rms_norm", "affine"))
        sp = layout == "seq"
        init = [f"self.weight = {prog.param(width)}"]
        if flavour != "rms_norm":
            init.append(f"self.bias = {prog.param(width)}")
        params = "(self.weight, self.bias)" if flavour != "rms_norm" else "(self.weight,)"
        if sp:
            prog.candidate_bugs.add("sp_param_unsynced")
            prog.sp_params = True
        elif layout == "rep" and prog.mode == "tp":
            prog.candidate_bugs.add("replicated_param_reduced")
        mark = (sp and prog.bug != "sp_param_unsynced") or \
               (layout == "rep" and prog.bug == "replicated_param_reduced")
        if mark:
            init.append(f"for p in {params}:\n            p.sequence_parallel = True")
            prog.sp_params = True
        xin = prog.cast_in("x")
        w = prog.cast_in("self.weight")
        b = prog.cast_in("self.bias")
        if flavour == "layer_norm":
            expr = f"F.layer_norm({xin}, ({width},), {w}, {b}, 1e-5)"
        elif flavour == "rms_norm":
            expr = f"{xin} * torch.rsqrt({xin}.pow(2).mean(-1, keepdim=True) + 1e-6) * {w}"
        else:
            expr = f"{xin} * {w} + {b}"
        body = f"return {prog.cast_out(expr)}"
        prog.classes.append(module(name, "\n        ".join(init), body, arg="x"))
        return layout, width, dict(kind="norm", flavour=flavour, sp=sp)


class Nonlinearity:
    accepts = ("rep", "seq", "col", "batch")

    def build(self, prog, name, layout, width):
        choices = ["gelu", "tanh", "silu", "exp", "sigmoid_gate", "scale"]
        if layout != "col":
            choices.append("softmax")
        else:
            prog.candidate_bugs.add("local_softmax")
        fn = prog.rng.choice(choices)
        if prog.bug == "local_softmax" and layout == "col":
            fn = "softmax"
        x = prog.cast_in("x")
        expr = {"gelu": f"F.gelu({x})", "tanh": f"torch.tanh({x})", "silu": f"F.silu({x})",
                "exp": f"torch.exp({x})", "sigmoid_gate": f"{x} * torch.sigmoid(1.702 * {x})",
                "scale": f"{x} * 0.5", "softmax": f"torch.softmax({x}, dim=-1)"}[fn]
        prog.classes.append(module(name, None, f"return {prog.cast_out(expr)}", arg="x"))
        return layout, width, dict(kind="nonlinearity", fn=fn)


class LayoutChange:
    """Megatron's scatter/gather regions between the layouts."""
    accepts = ("rep", "seq", "col")

    def build(self, prog, name, layout, width):
        if layout == "rep":
            mapping, call, out = "_ScatterToSequenceParallelRegion", "apply(x)", "seq"
        elif layout == "seq":
            mapping, call, out = "_GatherFromSequenceParallelRegion", "apply(x, False)", "rep"
            prog.sp_gather_flags.add(False)
        else:
            mapping, call, out = "_GatherFromTensorParallelRegion", "apply(x)", "rep"
        prog.classes.append(module(name, None, f"return {prog.use(mapping)}.{call}", arg="x"))
        return out, width, dict(kind="layout", mapping=mapping)


class DataParallelLinear:
    accepts = ("batch",)

    def build(self, prog, name, layout, width):
        rng = prog.rng
        out_w = rng.choice((4, 8))
        custom = rng.random() < 0.3
        init = [f"self.weight = {prog.param(f'{out_w}, {width}')}",
                f"self.bias = {prog.param(out_w)}"]
        if custom:
            fn = f"_LinearFunction{name[-1]}"
            prog.classes.append(dp_linear_function(fn))
            body = f"return {fn}.apply(x, self.weight, self.bias)"
        else:
            body = "return F.linear(x, self.weight, self.bias)"
        prog.classes.append(module(name, "\n        ".join(init), body, arg="x"))
        return layout, out_w, dict(kind="dp_linear", out=out_w, custom=custom)


def dp_linear_function(name):
    return (f"class {name}(torch.autograd.Function):\n"
            f"    @staticmethod\n"
            f"    def forward(ctx, input_, weight, bias):\n"
            f"        ctx.save_for_backward(input_, weight)\n"
            f"        return torch.matmul(input_, weight.t()) + bias\n\n"
            f"    @staticmethod\n"
            f"    def backward(ctx, grad_output):\n"
            f"        input_, weight = ctx.saved_tensors\n"
            f"        flat_grad = grad_output.reshape(-1, grad_output.shape[-1])\n"
            f"        grad_weight = flat_grad.t().matmul(input_.reshape(-1, input_.shape[-1]))\n"
            f"        return grad_output.matmul(weight), grad_weight, flat_grad.sum(0)\n")


def module(name, init, body, arg="input_"):
    init_src = f"        {init}\n" if init else ""
    return (f"class {name}(torch.nn.Module):\n"
            f"    def __init__(self):\n"
            f"        super().__init__()\n{init_src}\n"
            f"    def forward(self, {arg}):\n"
            f"        {body}\n")


TP_BLOCKS = [ColumnParallelLinear(), RowParallelLinear(), ReplicatedNorm(), Nonlinearity(),
             LayoutChange()]
DP_BLOCKS = [DataParallelLinear(), ReplicatedNorm(), Nonlinearity()]
PARALLEL_KINDS = ("column", "row", "layout")


# --- Gradient finalisation ---------------------------------------------------
def tp_finalize(prog):
    """All-reduce the gradients of sequence-parallel replicated weights over
    the tensor-parallel group (Megatron's finalize_model_grads)."""
    bug = prog.bug
    bucket = prog.rng.random() < 0.4
    if prog.sp_params:  # otherwise there is nothing to reduce, nor to get wrong
        prog.candidate_bugs.update(("finalize_average", "finalize_wrong_group"))
        prog.candidate_bugs.add("finalize_flat_not_copied_back" if bucket else "grad_reduce_in_fp16"
                                if prog.dtype == "bf16" else "finalize_average")
    group = "_DP" if bug == "finalize_wrong_group" else "_TP"
    head = ("def finalize_grads(model):\n"
            "    world = dist.get_world_size(group=_TP)\n"
            "    if world == 1:\n        return\n"
            "    grads = [p.grad for p in model.parameters()\n"
            "             if getattr(p, \"sequence_parallel\", False) and p.grad is not None]\n")
    if bucket:
        copy_back = "" if bug == "finalize_flat_not_copied_back" else (
            "    offset = 0\n    for grad in grads:\n"
            "        grad.copy_(flat[offset:offset + grad.numel()].view_as(grad))\n"
            "        offset += grad.numel()\n")
        return (head + "    if not grads:\n        return\n"
                "    flat = torch.cat([grad.reshape(-1) for grad in grads])\n"
                f"    dist.all_reduce(flat, group={group})\n"
                + ("    flat.div_(world)\n" if bug == "finalize_average" else "") + copy_back)
    return head + "    for grad in grads:\n" + grad_allreduce(
        prog, "grad", group, divide=bug == "finalize_average", indent=8)


def grad_allreduce(prog, g, group, divide, indent):
    """One gradient's all-reduce (in one of several equivalent spellings, or
    through a wider/narrower buffer under bf16), optionally averaged."""
    pad = " " * indent
    if prog.dtype == "bf16":
        narrow = prog.bug == "grad_reduce_in_fp16"
        spelling = prog.rng.choice(("cast", "copy_into"))
        if not narrow:
            spelling = "cast"
        if spelling == "copy_into":
            lines = [f"buffer = torch.empty({g}.shape, dtype=torch.float16)",
                     f"buffer.copy_({g})"]
        else:
            lines = [f"buffer = {g}.{'half' if narrow else 'float'}()"]
        lines.append(f"dist.all_reduce(buffer, group={group})")
        if divide:
            lines.append("buffer = buffer / world")
        lines.append(f"{g}.copy_(buffer.to({g}.dtype))")
    else:
        target = prog.rng.choice((g, f"{g}.data", f"{g}.view(-1)", f"{g}.detach()"))
        if prog.bug == "dp_clone_not_written":
            target = f"{g}.clone()"
        lines = [f"dist.all_reduce({target}, group={group})"]
        if divide:
            lines.append(prog.rng.choice((f"{g}.div_(world)", f"{g}.mul_(1.0 / world)")))
    return "".join(pad + line + "\n" for line in lines)


def dp_finalize(prog, mean_loss):
    """Data-parallel gradient averaging: in finalize_grads (per parameter or
    one flat bucket) or in gradient hooks. Returns (finalize source, hook
    source and registration or None, whether the loss is divided by the world)."""
    bug, rng = prog.bug, prog.rng
    # The loss may be divided by the world instead (then the reduction sums).
    loss_divided = mean_loss and rng.random() < 0.25
    scheme = rng.choice(("loop", "loop", "bucket", "hook", "grad_buffer"))
    if prog.dtype == "bf16" and scheme == "bucket":
        scheme = "loop"
    candidates = {"finalize_wrong_group"}
    candidates.add("grad_buffer_is_copy" if scheme == "grad_buffer" else "dp_skip_bias")
    if mean_loss:
        candidates.add("dp_scaled_twice")
        if not loss_divided:
            candidates.add("dp_sum_not_average")
    else:
        candidates.add("dp_average_sum_loss")
    if prog.dtype == "bf16" and scheme == "loop":
        candidates.add("grad_reduce_in_fp16")
    if prog.dtype != "bf16" and scheme in ("loop", "bucket"):
        candidates.add("dp_clone_not_written")
    prog.candidate_bugs.update(candidates)

    if bug == "dp_scaled_twice":
        loss_divided = True
    average = (mean_loss and not loss_divided) or bug in ("dp_average_sum_loss", "dp_scaled_twice")
    if bug == "dp_sum_not_average":
        average = False
    group = "_TP" if bug == "finalize_wrong_group" else "_DP"
    if scheme == "grad_buffer":
        if bug == "grad_buffer_is_copy":
            attach = ("    for p in params:\n        p.grad = torch.zeros_like(p)\n"
                      "    _GRAD_BUFFER = torch.cat([p.grad.view(-1) for p in params])\n")
        else:
            attach = ("    _GRAD_BUFFER = torch.zeros(sum(p.numel() for p in params), dtype=params[0].dtype)\n"
                      "    offset = 0\n    for p in params:\n"
                      "        p.grad = _GRAD_BUFFER[offset:offset + p.numel()].view_as(p)\n"
                      "        offset += p.numel()\n")
        helper = ("_GRAD_BUFFER = None\n\n\n"
                  "def attach_grad_buffer(model):\n"
                  "    \"\"\"Every .grad a view of one flat buffer (as DDP's buckets): backward\n"
                  "    accumulates into the views, one all-reduce covers them all.\"\"\"\n"
                  "    global _GRAD_BUFFER\n"
                  "    params = list(model.parameters())\n" + attach)
        return ("def finalize_grads(model):\n"
                "    world = dist.get_world_size(group=_DP)\n"
                "    if world == 1:\n        return\n"
                f"    dist.all_reduce(_GRAD_BUFFER, group={group})\n"
                + ("    _GRAD_BUFFER.div_(world)\n" if average else "")), \
            (helper, "    attach_grad_buffer(model)\n"), loss_divided
    if scheme == "hook":
        hook = ("def _allreduce_hook(grad):\n"
                "    world = dist.get_world_size(group=_DP)\n"
                "    grad = grad.clone()\n"
                f"    dist.all_reduce(grad, group={group})\n"
                + ("    return grad / world\n" if average else "    return grad\n"))
        reg = ("    for param in model.parameters():\n"
               + ("        if param.dim() > 1:\n            param.register_hook(_allreduce_hook)\n"
                  if bug == "dp_skip_bias" else "        param.register_hook(_allreduce_hook)\n"))
        return "def finalize_grads(model):\n    return\n", (hook, reg), loss_divided
    cond = "p.grad is not None" + (" and p.dim() > 1" if bug == "dp_skip_bias" else "")
    head = ("def finalize_grads(model):\n"
            "    world = dist.get_world_size(group=_DP)\n"
            "    if world == 1:\n        return\n")
    if scheme == "bucket":
        target = "flat.clone()" if bug == "dp_clone_not_written" else "flat"
        return (head + f"    grads = [p.grad for p in model.parameters() if {cond}]\n"
                "    if not grads:\n        return\n"
                "    flat = torch.cat([grad.reshape(-1) for grad in grads])\n"
                f"    dist.all_reduce({target}, group={group})\n"
                + ("    flat.div_(world)\n" if average else "")
                + "    offset = 0\n    for grad in grads:\n"
                "        grad.copy_(flat[offset:offset + grad.numel()].view_as(grad))\n"
                "        offset += grad.numel()\n"), None, loss_divided
    return (head + "    for p in model.parameters():\n"
            f"        if {cond}:\n" + grad_allreduce(prog, "p.grad", group, average, 12)), \
        None, loss_divided


# --- The program -------------------------------------------------------------
def _legacy_draws(seed):
    rng = random.Random(seed)
    mode = "dp" if rng.random() < 0.3 else "tp"
    dtype = "bf16" if rng.random() < 0.2 else "fp32"
    buggy = rng.random() < 0.6
    return mode, dtype, buggy


def generate(seed):
    """(source, sidecar) of program `seed`."""
    family = family_of(seed)
    if family is None:
        mode, dtype, buggy = _legacy_draws(seed)
    else:
        buggy = random.Random(seed * 131 + 7).random() < 0.6
    # First pass draws the structure and collects the applicable bugs; the
    # second pass, from the same seed, renders it with the chosen bug.
    plan = build(seed, None)
    bug = None
    if buggy and plan.candidate_bugs:
        bug = random.Random(seed * 7919 + 1).choice(sorted(plan.candidate_bugs))
    prog = build(seed, bug)
    return prog.source, dict(seed=seed, family=family or prog.mode, mode=prog.mode,
                             dtype=prog.dtype, blocks=prog.blocks, bug=bug,
                             bug_description=BUGS.get(bug), loss=prog.loss_desc)


def _build(seed, mode, dtype, bug):
    rng = random.Random(seed)
    for _ in range(3):  # mode, dtype, buggy: drawn by generate() from this seed
        rng.random()
    prog = Program(rng, mode, dtype)
    prog.bug = bug
    prog.sp_params = False
    prog.sp_gather_flags = set()
    three_d = rng.random() < 0.3
    width = rng.choice((4, 8))
    if mode == "tp":
        layout = rng.choice(("rep", "rep", "seq"))
        blocks = TP_BLOCKS
    else:
        layout, blocks = "batch", DP_BLOCKS
    in_layout, in_width = layout, width
    n = rng.randint(1, 4)
    layers, descs = [], []
    for i in range(n):
        usable = [b for b in blocks if layout in b.accepts]
        if i == 0:  # a layer with parameters (tensor-parallel ones under TP) comes first
            usable = [b for b in usable if isinstance(b, (ColumnParallelLinear, RowParallelLinear,
                                                          DataParallelLinear, ReplicatedNorm))]
            if mode == "tp":
                usable = [b for b in usable if not isinstance(b, ReplicatedNorm)]
        block = rng.choice(usable)
        name = f"Layer{i}"
        new_layout, new_width, desc = block.build(prog, name, layout, width)
        residual = new_layout == layout and new_width == width and rng.random() < 0.3
        desc["residual"] = residual
        layers.append((name, residual))
        descs.append(desc)
        layout, width = new_layout, new_width
    prog.blocks = descs
    # The sequence-parallel gather's bug depends on which flags are used.
    if prog.sp_gather_flags:
        prog.candidate_bugs.discard("sp_gather_backward_split")
        prog.candidate_bugs.discard("sp_gather_backward_reduce_scatter")
        prog.candidate_bugs.update(SP_GATHER_BUG[f] for f in prog.sp_gather_flags)

    # Loss: a mean only where the output is replicated (TP) or over the
    # batch (DP, then gradients are averaged).
    if mode == "dp":
        mean_loss = rng.random() < 0.7
    else:
        mean_loss = layout == "rep" and rng.random() < 0.4
    square = rng.random() < 0.4
    tail = [d for d in descs if d["kind"] != "layout"][-1]
    if tail.get("fn") == "softmax" and not tail["residual"]:
        square = True  # the sum of a softmax is constant: every gradient would be rounding noise
    out = "out.float()" if dtype == "bf16" else "out"
    term = f"({out} * {out})" if square else out
    loss = f"{term}.mean()" if mean_loss else f"{term}.sum()"
    if dtype == "bf16":
        loss += " * 2.0 ** 20"  # loss scaling
    hook = None
    if mode == "dp":
        finalize, hook, loss_divided = dp_finalize(prog, mean_loss)
        if loss_divided:
            loss = f"{loss} / dist.get_world_size(group=_DP)"
    else:
        finalize = tp_finalize(prog)
    prog.loss_desc = loss

    # Primitives and mappings, variants chosen (the bug's where it applies).
    head = []
    for p in sorted(prog.primitives):
        variants = PRIMITIVES[p]
        variant = bug if bug in variants else rng.choice(sorted(v for v in variants if v.startswith("ok")))
        head.append(_block(variants[variant]))
    head += [_block(src) for _, src in sorted(prog.shared.items())]
    for m in sorted(prog.mappings):
        variants = MAPPINGS[m][1]
        variant = bug if bug in variants else "ok"
        fwd, bwd = variants[variant]
        head.append(_mapping(m, fwd, bwd, extra_arg=m == "_GatherFromSequenceParallelRegion"))

    forward = []
    for name, residual in layers:
        attr = name.lower()
        forward.append(f"x = x + self.{attr}(x)" if residual else f"x = self.{attr}(x)")
    model = ("class Model(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
             + "".join(f"        self.{name.lower()} = {name}()\n" for name, _ in layers)
             + "\n    def forward(self, x):\n"
             + "".join(f"        {line}\n" for line in forward) + "        return x\n")

    shape = f"4, 2, {in_width}" if three_d else f"4, {in_width}"
    draw = f"torch.randn({shape})" + (".to(torch.bfloat16)" if dtype == "bf16" else "")
    if rng.random() < 0.75:  # an activation: its gradient is checked where it is whole
        draw += ".requires_grad_()"
    local = in_layout in ("seq", "batch")
    group_setup = (
        "    global _TP, _DP\n"
        "    rank, world = dist.get_rank(), dist.get_world_size()\n"
        + ("    _TP = dist.new_group(list(range(world)))\n"
           "    for r in range(world):  # one data-parallel group per rank\n"
           "        group = dist.new_group([r])\n"
           "        if r == rank:\n            _DP = group\n" if mode == "tp" else
           "    _DP = dist.new_group(list(range(world)))\n"
           "    for r in range(world):  # one tensor-parallel group per rank\n"
           "        group = dist.new_group([r])\n"
           "        if r == rank:\n            _TP = group\n"))
    hooks = hook[1] if hook else ""
    entry = ("def entry():\n" + group_setup
             + f"    x = {draw}\n"
             + "    model = Model()\n" + hooks
             + "    return {\"model\": model,\n"
             + (f"            \"inputs\": (x.chunk(world, dim=0)[rank],),\n" if local else
                "            \"inputs\": (x,),\n")
             + f"            \"loss\": lambda out: {loss},\n"
             + "            \"finalize_grads\": lambda: finalize_grads(model),\n"
             + ("            \"tensor_parallel_group\": _TP}\n" if mode == "tp" else
                "            \"data_parallel_group\": _DP}\n"))
    doc = (f"# Generated by tests/soundness/generate.py, seed {seed}: {mode}, {dtype}, "
           f"{len(layers)} layer(s).\n"
           + (f"# Injected bug: {bug}: {BUGS[bug]}.\n" if bug else "# No injected bug.\n"))
    parts = [doc + "import torch\nimport torch.distributed as dist\nimport torch.nn.functional as F\n\n"
             "_TP = None  # tensor-parallel group, set by entry()\n"
             "_DP = None  # data-parallel group, set by entry()\n"]
    parts += head + prog.classes + [model, finalize]
    if hook:
        parts.append(hook[0])
    parts.append(entry)
    prog.source = "\n\n".join(p.rstrip("\n") + "\n" for p in parts)
    return prog


# --- Families of whole training steps (issue 31) -----------------------------
# Pipelines whose schedule runs backward itself, and data-parallel gradient
# buckets reduced from backward hooks. Programs of these families are drawn
# for a share of the seeds (family_of); the others keep the tp/dp programs
# above, unchanged.
NEW_FAMILIES = ("pp_forward", "pp_backward", "dp_buckets")
NEW_FAMILY_SHARE = 0.35


def family_of(seed):
    """The family of program `seed`: one of NEW_FAMILIES, or None for the
    tensor-/data-parallel layer stacks (whose mode generate() draws)."""
    # (The constant keeps the seeds that tests name as tp/dp programs so:
    # 0 in soundness.campaign_catches_false_proofs, 117 and 520 in
    # truth_test.py, 702 the one finalize_flat_not_copied_back below 1500.)
    rng = random.Random(seed * 6151 + 23)
    if rng.random() >= NEW_FAMILY_SHARE:
        return None
    return rng.choice(NEW_FAMILIES)


P2P = {
    # A stage's messages to its neighbours, in three spellings: blocking,
    # isend/irecv with wait(), batch_isend_irecv of P2POps.
    "blocking": {
        "send": "dist.send({t}, dst={peer})",
        "recv": "dist.recv({t}, src={peer})",
    },
    "async": {
        "send": "dist.isend({t}, dst={peer}).wait()",
        "recv": "request = dist.irecv({t}, src={peer})\n    request.wait()",
    },
    "batched": {
        "send": "for request in dist.batch_isend_irecv([dist.P2POp(dist.isend, {t}, {peer})]):\n"
                "        request.wait()",
        "recv": "for request in dist.batch_isend_irecv([dist.P2POp(dist.irecv, {t}, {peer})]):\n"
                "        request.wait()",
    },
}


def p2p_helpers(style, bug):
    """send_forward / recv_forward / send_backward / recv_backward."""
    s = P2P[style]
    dropped = bug == "pp_recv_grad_dropped"  # the message lands in a copy; the zeros stay
    return (
        "def send_forward(output):\n"
        "    \"\"\"The stage's output activation, to the next stage.\"\"\"\n"
        "    activation = output.detach().contiguous()\n"
        f"    {s['send'].format(t='activation', peer='dist.get_rank() + 1')}\n\n\n"
        "def recv_forward(shape):\n"
        "    \"\"\"The previous stage's output: this stage's input, a leaf whose\n"
        "    gradient goes back.\"\"\"\n"
        "    activation = torch.empty(shape)\n"
        f"    {s['recv'].format(t='activation', peer='dist.get_rank() - 1')}\n"
        "    return activation.requires_grad_()\n\n\n"
        "def send_backward(input_grad):\n"
        "    \"\"\"The gradient of the stage's input, to the previous stage.\"\"\"\n"
        "    grad = input_grad.contiguous()\n"
        f"    {s['send'].format(t='grad', peer='dist.get_rank() - 1')}\n\n\n"
        "def recv_backward(shape):\n"
        "    \"\"\"The gradient of the stage's output, from the next stage.\"\"\"\n"
        f"    grad = torch.{'zeros' if dropped else 'empty'}(shape)\n"
        f"    {s['recv'].format(t='grad.clone()' if dropped else 'grad', peer='dist.get_rank() + 1')}\n"
        "    return grad\n")


def p2p_exchanges(style, bug):
    """send_forward_recv_backward / send_backward_recv_forward of 1F1B's
    steady state: both messages posted before either is waited on (each
    neighbour sends while the other sends too)."""
    if bug == "pp_exchange_deadlock":  # a blocking send first: both stages wait in it
        return ("def send_forward_recv_backward(output):\n"
                "    send_forward(output)\n"
                "    return recv_backward(output.shape)\n\n\n"
                "def send_backward_recv_forward(input_grad, shape):\n"
                "    send_backward(input_grad)\n"
                "    return recv_forward(shape)\n")
    dropped = bug == "pp_recv_grad_dropped"

    def exchange(send, recv, peer):
        if style == "batched":
            return (f"    requests = dist.batch_isend_irecv([dist.P2POp(dist.isend, {send}, {peer}),\n"
                    f"                                       dist.P2POp(dist.irecv, {recv}, {peer})])\n")
        return (f"    requests = [dist.isend({send}, dst={peer}), dist.irecv({recv}, src={peer})]\n")

    return ("def send_forward_recv_backward(output):\n"
            "    \"\"\"The activation to the next stage; the gradient of an earlier one back.\"\"\"\n"
            "    activation = output.detach().contiguous()\n"
            f"    grad = torch.{'zeros' if dropped else 'empty'}(output.shape)\n"
            + exchange("activation", "grad.clone()" if dropped else "grad", "dist.get_rank() + 1")
            + "    for request in requests:\n        request.wait()\n"
            "    return grad\n\n\n"
            "def send_backward_recv_forward(input_grad, shape):\n"
            "    \"\"\"An input's gradient to the previous stage; the next input from it.\"\"\"\n"
            "    grad = input_grad.contiguous()\n"
            "    activation = torch.empty(shape)\n"
            + exchange("grad", "activation", "dist.get_rank() - 1")
            + "    for request in requests:\n        request.wait()\n"
            "    return activation.requires_grad_()\n")


def _build_pipeline(seed, bug, in_forward):
    """A pipeline of NUM_LAYERS equal layers over the ranks (one stage each;
    a single stage at world 1), MICRO_BATCHES micro-batches, point-to-point
    messages between neighbouring stages. in_forward: the model's forward runs
    the whole schedule (forwards and backwards, 1F1B or all forwards then all
    backwards) and returns the loss detached; otherwise the forward runs the
    forwards and the entry's `backward` callable the backwards, the last stage
    backpropagating its summed loss at once."""
    rng = random.Random(seed * 7877 + 3)
    prog = Program(rng, "pp", "fp32")
    prog.bug = bug
    hidden = rng.choice((2, 4))
    num_layers = rng.choice((2, 4))
    micro = rng.choice((2, 3, 4))
    rows = rng.choice((1, 2))
    schedule = rng.choice(("1f1b", "1f1b", "gpipe")) if in_forward else "gpipe"
    style = rng.choice(tuple(P2P))
    naming = rng.choice(("global", "offset"))
    act = rng.choice(("tanh", "gelu", "silu", "sigmoid", "none"))
    bias = rng.random() < 0.6
    loss_scale = rng.random() < 0.5
    unscale_where = rng.choice(("schedule", "finalize")) if loss_scale else None
    mb_average = rng.choice(("loss", "finalize", "none"))
    # (a linear stack under a plain sum has output gradients that depend on
    # nothing: every pairing of micro-batches would be right)
    square = rng.random() < 0.7 or act == "none"
    default_loss = rng.random() < 0.3
    has_finalize = unscale_where == "finalize" or mb_average == "finalize"

    prog.candidate_bugs.add("pp_recv_grad_dropped")
    if not in_forward or schedule == "1f1b":
        prog.candidate_bugs.add("pp_newest_first")
    if schedule == "1f1b":
        prog.candidate_bugs.add("pp_exchange_deadlock")
    if loss_scale:
        prog.candidate_bugs.add("pp_unscaled_stage")
    if has_finalize:
        prog.candidate_bugs.add("pp_finalize_rescaled")

    header = (f"NUM_LAYERS, MICRO_BATCHES, ROWS, HIDDEN = {num_layers}, {micro}, {rows}, {hidden}\n"
              + ("LOSS_SCALE = 3.0  # the loss is scaled for backward, the gradients unscaled after\n"
                 if loss_scale else ""))
    activation = {"tanh": "torch.tanh(x)", "gelu": "F.gelu(x)", "silu": "F.silu(x)",
                  "sigmoid": "torch.sigmoid(x)", "none": "x"}[act]
    layer = _block(f'''
        class Layer(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = torch.nn.Parameter(torch.empty(HIDDEN, HIDDEN))
                {"self.bias = torch.nn.Parameter(torch.empty(HIDDEN))" if bias else "self.bias = None"}

            def forward(self, x):
                x = F.linear(x, self.weight, self.bias)
                return {activation}
    ''')
    term = "output * output" if square else "output"
    scale_mb = " / MICRO_BATCHES" if mb_average == "loss" else ""
    loss_fn = _block(f'''
        def micro_batch_loss(output):
            return ({term}).{"mean" if rng.random() < 0.5 else "sum"}(){scale_mb}
    ''')
    if naming == "global":
        layers_init = ("self.layers = torch.nn.ModuleDict(\n"
                       "            {str(self.offset + i): Layer() for i in range(per_stage)})")
        layers_iter = "self.layers.values()"
    else:
        layers_init = "self.layers = torch.nn.ModuleList([Layer() for _ in range(per_stage)])"
        layers_iter = "self.layers"
    scaled = "output * LOSS_SCALE" if loss_scale else "output"
    pop = "pending.pop()" if bug == "pp_newest_first" else "pending.pop(0)"
    unscale_guard = "self.is_last and " if bug == "pp_unscaled_stage" else ""
    unscale = (f"        for param in self.parameters():\n"
               f"            if {unscale_guard}param.grad is not None:\n"
               f"                param.grad.div_(LOSS_SCALE)\n") if unscale_where == "schedule" else ""

    methods = [f'''
    def __init__(self):
        super().__init__()
        rank, world = dist.get_rank(), dist.get_world_size()
        per_stage = NUM_LAYERS // world
        self.offset = rank * per_stage
        self.is_first, self.is_last = rank == 0, rank == world - 1
        {layers_init}

    def global_name(self, name):
        """This stage's layer i is the whole model's layer offset + i."""
        kind, index, rest = name.split(".", 2)
        return f"{{kind}}.{{self.offset + int(index)}}.{{rest}}"

    def run_layers(self, x):
        for layer in {layers_iter}:
            x = layer(x)
        return x

    def stage_output(self, input_):
        """The stage's layers; on the last stage, the micro-batch's loss."""
        output = self.run_layers(input_)
        return micro_batch_loss(output) if self.is_last else output

    def forward_step(self, micro_batch):
        """(input, output) of one micro-batch, the output sent on."""
        input_ = micro_batch if self.is_first else recv_forward(micro_batch.shape)
        output = self.stage_output(input_)
        if not self.is_last:
            send_forward(output)
        return input_, output
''']
    if in_forward:
        methods.append(f'''
    def backward_step(self, input_, output, grad):
        """The backward of one micro-batch (grad: its output's gradient, None
        on the last stage); the gradient of its input."""
        if self.is_last:
            torch.autograd.backward({scaled})
        else:
            torch.autograd.backward(output, grad_tensors=grad)
        return None if self.is_first else input_.grad
''')
        if schedule == "1f1b":
            sched = (f"        # 1F1B: warm-up forwards, then a forward and a backward in turn\n"
                     f"        # (neighbours exchange both ways at once), then the backwards left\n"
                     f"        shape = micro_batches[0].shape\n"
                     f"        warmup = min(dist.get_world_size() - dist.get_rank() - 1, MICRO_BATCHES)\n"
                     f"        pending, losses = [], []\n"
                     f"        for micro_batch in micro_batches[:warmup]:\n"
                     f"            pending.append(self.forward_step(micro_batch))\n"
                     f"        steady = micro_batches[warmup:]\n"
                     f"        if steady and not self.is_first:\n"
                     f"            input_ = recv_forward(shape)\n"
                     f"        for i, micro_batch in enumerate(steady):\n"
                     f"            if self.is_first:\n"
                     f"                input_ = micro_batch\n"
                     f"            output = self.stage_output(input_)\n"
                     f"            if self.is_last:\n"
                     f"                losses.append(output.detach())\n"
                     f"                grad = None\n"
                     f"            else:\n"
                     f"                grad = send_forward_recv_backward(output)\n"
                     f"            pending.append((input_, output))\n"
                     f"            oldest_input, oldest_output = {pop}\n"
                     f"            input_grad = self.backward_step(oldest_input, oldest_output, grad)\n"
                     f"            if self.is_first:\n"
                     f"                continue\n"
                     f"            if i + 1 < len(steady):\n"
                     f"                input_ = send_backward_recv_forward(input_grad, shape)\n"
                     f"            else:\n"
                     f"                send_backward(input_grad)\n"
                     f"        while pending:\n"
                     f"            input_, output = {pop}\n"
                     f"            input_grad = self.backward_step(input_, output, recv_backward(output.shape))\n"
                     f"            if not self.is_first:\n"
                     f"                send_backward(input_grad)\n")
        else:
            sched = (f"        # All forwards, then all backwards\n"
                     f"        pending = [self.forward_step(micro_batch) for micro_batch in micro_batches]\n"
                     f"        losses = [output.detach() for _, output in pending]\n"
                     f"        while pending:\n"
                     f"            input_, output = {pop}\n"
                     f"            grad = None if self.is_last else recv_backward(output.shape)\n"
                     f"            input_grad = self.backward_step(input_, output, grad)\n"
                     f"            if not self.is_first:\n"
                     f"                send_backward(input_grad)\n")
        methods.append(
            "\n    def forward(self, batch):\n"
            "        \"\"\"One training step's forward and backward over the micro-batches;\n"
            "        the loss, which needs no gradient, from the last stage.\"\"\"\n"
            "        micro_batches = batch.chunk(MICRO_BATCHES)\n"
            + sched + unscale
            + "        loss = torch.stack(losses).sum() if self.is_last else torch.zeros(())\n"
              "        dist.broadcast(loss, src=dist.get_world_size() - 1)\n"
              "        return loss\n")
    else:
        methods.append(
            "\n    def forward(self, batch):\n"
            "        \"\"\"The forwards of every micro-batch; the last stage returns its\n"
            "        loss, the others the value it broadcasts (needing no gradient).\"\"\"\n"
            "        self.pending = [self.forward_step(mb) for mb in batch.chunk(MICRO_BATCHES)]\n"
            "        if self.is_last:\n"
            "            loss = torch.stack([output for _, output in self.pending]).sum()\n"
            "            value = loss.detach().clone()\n"
            "        else:\n"
            "            value = torch.zeros(())\n"
            "        dist.broadcast(value, src=dist.get_world_size() - 1)\n"
            "        return loss if self.is_last else value\n")
        methods.append(
            "\n    def backward_schedule(self, loss):\n"
            "        \"\"\"The backwards (the entry's backward callable): the last stage\n"
            "        backpropagates its summed loss, then every stage sends its inputs'\n"
            "        gradients back in micro-batch order.\"\"\"\n"
            "        pending, self.pending = self.pending, []\n"
            "        if self.is_last:\n"
            f"            torch.autograd.backward({'loss * LOSS_SCALE' if loss_scale else 'loss'})\n"
            "            if not self.is_first:\n"
            "                for input_, _ in pending:\n"
            "                    send_backward(input_.grad)\n"
            "        else:\n"
            "            while pending:\n"
            f"                input_, output = {pop}\n"
            "                torch.autograd.backward(output, grad_tensors=recv_backward(output.shape))\n"
            "                if not self.is_first:\n"
            "                    send_backward(input_.grad)\n"
            + unscale)
    stage = ("class PipelineStage(torch.nn.Module):\n"
             "    \"\"\"Layers offset .. offset + NUM_LAYERS // world of the model: this rank's stage.\"\"\"\n"
             + "".join(methods))

    finalize = None
    if has_finalize:
        lines = ["def finalize_grads(model):",
                 "    \"\"\"The gradients of the summed micro-batch losses"
                 + (" under loss scaling" if loss_scale else "") + ", rescaled.\"\"\"",
                 "    scale = " + ("1.0 / MICRO_BATCHES" if mb_average == "finalize" else "1.0")]
        if unscale_where == "finalize":
            if bug == "pp_unscaled_stage":
                lines += ["    if model.is_last:", "        scale = scale / LOSS_SCALE"]
            else:
                lines.append("    scale = scale / LOSS_SCALE")
        if bug == "pp_finalize_rescaled":
            lines.append("    scale = scale / dist.get_world_size()  # averaged over the stages too")
        lines += ["    for param in model.parameters():",
                  "        if param.grad is not None:",
                  "            param.grad.mul_(scale)"]
        finalize = "\n".join(lines) + "\n"
    entry = ("def entry():\n"
             "    batch = torch.randn(MICRO_BATCHES * ROWS, HIDDEN)\n"
             "    model = PipelineStage()\n"
             "    return {\"model\": model,\n"
             "            \"inputs\": (batch,),\n"
             + ("" if default_loss else "            \"loss\": lambda loss: loss,\n")
             + ("" if in_forward else "            \"backward\": model.backward_schedule,\n")
             + ("            \"finalize_grads\": lambda: finalize_grads(model),\n" if finalize else "")
             + ("            \"parameter_names\": model.global_name,\n" if naming == "offset" else "")
             + "            }\n")
    prog.blocks = [dict(kind="pipeline", schedule=schedule if in_forward else "backward_callable",
                        layers=num_layers, micro_batches=micro, p2p=style, naming=naming,
                        activation=act, bias=bias, loss_scale=unscale_where,
                        micro_batch_average=mb_average)]
    prog.loss_desc = f"micro-batch ({term}){scale_mb}, summed over micro-batches"
    parts = [header, p2p_helpers(style, bug)]
    if schedule == "1f1b":
        parts.append(p2p_exchanges(style, bug))
    parts += [layer, loss_fn, stage]
    if finalize:
        parts.append(finalize)
    parts.append(entry)
    prog.parts = parts
    return prog


# The order in which PyTorch's engine reaches a layer's parameters (its
# AccumulateGrad nodes) in backward, by block: F.linear's bias comes from the
# addmm node itself, its weight through the transpose after it; a custom
# Function's (and layer_norm's) outputs in the order of their inputs; an
# affine's bias from the add before the multiply. Layers are reached last
# to first (each layer's nodes were created after those of the layers before).
def engine_order(desc):
    if desc["kind"] == "dp_linear":
        return ("weight", "bias") if desc["custom"] else ("bias", "weight")
    if desc["kind"] == "norm":
        return {"layer_norm": ("weight", "bias"), "rms_norm": ("weight",),
                "affine": ("bias", "weight")}[desc["flavour"]]
    return ()


BUCKET_CLASS = '''
class GradBucket:
    """Gradients of some parameters, each param.main_grad a view of one flat
    buffer all-reduced at once over the data-parallel group (as DDP's and
    Megatron's buckets): from the backward hook that the engine runs last
    for the bucket, when every gradient in it has arrived."""

    def __init__(self, params):
        self.params = params
        self.buffer = torch.zeros(sum(p.numel() for p in params))
        offset = 0
        for p in params:
            p.main_grad = self.buffer[offset:offset + p.numel()].view_as(p)
            offset += p.numel()

    def all_reduce(self):
        dist.all_reduce(self.buffer, group=_DP){average}
'''


def _build_buckets(seed, bug):
    """A data-parallel layer stack (fp32) whose gradients are added into
    main_grad buffers by backward hooks (tensor hooks, AccumulateGrad hooks
    or module full backward hooks), each bucket all-reduced from the hook the
    engine reaches last for it; finalize_grads points .grad at main_grad,
    averaging and unscaling where the program chose to."""
    rng = random.Random(seed * 4099 + 11)
    prog = Program(rng, "dp", "fp32")
    prog.bug = bug
    hook_kind = rng.choice(("tensor", "accumulate_grad", "module"))
    three_d = rng.random() < 0.3
    width = rng.choice((4, 8))
    in_width, layout = width, "batch"
    n = rng.randint(1, 4)
    layers, descs = [], []
    for i in range(n):
        usable = [b for b in DP_BLOCKS if i > 0 or isinstance(b, (DataParallelLinear, ReplicatedNorm))]
        block = rng.choice(usable)
        name = f"Layer{i}"
        layout, new_width, desc = block.build(prog, name, layout, width)
        residual = new_width == width and rng.random() < 0.3
        desc["residual"] = residual
        layers.append((name, residual))
        descs.append(desc)
        width = new_width
    prog.candidate_bugs = set()  # the blocks' own bugs do not apply here
    # Units the hooks are registered on, in the order the engine reaches them.
    if hook_kind == "module":
        units = [f"model.layer{i}" for i in reversed(range(n)) if engine_order(descs[i])]
    else:
        units = [f"model.layer{i}.{p}" for i in reversed(range(n)) for p in engine_order(descs[i])]
    # One or two buckets of consecutive units.
    cut = rng.randint(1, len(units) - 1) if len(units) >= 4 and rng.random() < 0.5 else len(units)
    buckets = [units[:cut], units[cut:]] if cut < len(units) else [units]
    early = [k for k, b in enumerate(buckets) if len(b) >= 2]
    if early:
        prog.candidate_bugs.add("bucket_reduced_early")
    mean_loss = rng.random() < 0.7
    average = None
    if mean_loss:
        average = rng.choice(("bucket", "finalize", "loss"))
        prog.candidate_bugs.update(("finalize_averaged_twice", "finalize_not_averaged"))
    if hook_kind == "tensor":
        prog.candidate_bugs.add("finalize_local_grad")
    loss_scale = rng.random() < 0.4
    copy = rng.choice(("assign", "copy")) if hook_kind == "tensor" else "assign"
    wrong_bucket = rng.choice(early) if early else None
    wrong_unit = rng.randrange(len(buckets[wrong_bucket]) - 1) if early else None
    if bug == "finalize_not_averaged":
        average = None
    bucket_average = average == "bucket" or (bug == "finalize_averaged_twice" and average != "bucket")
    finalize_average = average == "finalize" or (bug == "finalize_averaged_twice" and average == "bucket")

    # Model, as the tp/dp programs build it.
    forward = [f"x = x + self.{name.lower()}(x)" if residual else f"x = self.{name.lower()}(x)"
               for name, residual in layers]
    model = ("class Model(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
             + "".join(f"        self.{name.lower()} = {name}()\n" for name, _ in layers)
             + "\n    def forward(self, x):\n"
             + "".join(f"        {line}\n" for line in forward) + "        return x\n")
    bucket_class = _block(BUCKET_CLASS.format(
        average="\n        self.buffer.div_(dist.get_world_size(group=_DP))" if bucket_average else ""))
    if hook_kind == "tensor":
        hook = _block('''
            def make_hook(param, bucket, reduce):
                """A tensor hook: adds the gradient into main_grad before .grad gets
                it; the bucket's last one all-reduces the bucket."""
                def hook(grad):
                    param.main_grad.add_(grad)
                    if reduce:
                        bucket.all_reduce()
                return hook
        ''')
    elif hook_kind == "accumulate_grad":
        hook = _block('''
            _GRAD_ACCUMULATORS = []  # the hooks live as long as their nodes


            def make_hook(param, bucket, reduce):
                """A hook on the parameter's AccumulateGrad node (after .grad is
                written): moves .grad into main_grad, as Megatron's DDP does."""
                def hook(*unused):
                    param.main_grad.add_(param.grad)
                    param.grad = None
                    if reduce:
                        bucket.all_reduce()
                return hook
        ''')
    else:
        hook = _block('''
            def make_hook(bucket, reduce):
                """A module full backward hook: once the module's input gradient is
                computed, its parameters' gradients are in .grad; moves them into
                main_grad."""
                def hook(module, grad_input, grad_output):
                    for param in module.parameters():
                        param.main_grad.add_(param.grad)
                        param.grad = None
                    if reduce:
                        bucket.all_reduce()
                return hook
        ''')
    reg = ["def register_bucket_hooks(model):",
           "    \"\"\"Buckets in the order backward fills them, each reduced from the hook",
           "    of its last " + ("module" if hook_kind == "module" else "parameter") + ".\"\"\"",
           "    buckets = []"]
    for k, bucket in enumerate(buckets):
        last = len(bucket) - 1
        if bug == "bucket_reduced_early" and k == wrong_bucket:
            last = wrong_unit
        if hook_kind == "module":
            params = "[p for module in modules for p in module.parameters()]"
            reg += [f"    modules = [{', '.join(bucket)}]",
                    f"    bucket = GradBucket({params})",
                    "    for module in modules:",
                    "        module.register_full_backward_hook(",
                    f"            make_hook(bucket, reduce=module is {bucket[last]}))"]
        else:
            reg += [f"    bucket = GradBucket([{', '.join(bucket)}])",
                    "    for param in bucket.params:"]
            if hook_kind == "tensor":
                reg += [f"        param.register_hook(make_hook(param, bucket, reduce=param is {bucket[last]}))"]
            else:
                reg += ["        accumulator = param.expand_as(param).grad_fn.next_functions[0][0]",
                        f"        accumulator.register_hook(make_hook(param, bucket, reduce=param is {bucket[last]}))",
                        "        _GRAD_ACCUMULATORS.append(accumulator)"]
        reg.append("    buckets.append(bucket)")
    reg.append("    return buckets")
    register = "\n".join(reg) + "\n"

    fin = ["def finalize_grads(model):",
           "    \"\"\"Every .grad the reduced main_grad" + (", averaged" if finalize_average else "")
           + (", unscaled" if loss_scale else "") + ".\"\"\"",
           "    world = dist.get_world_size(group=_DP)",
           "    for param in model.parameters():"]
    pad = "        "
    if bug == "finalize_local_grad":
        fin.append("        if param.dim() > 1:  # the biases keep their local .grad")
        pad = "            "
    fin.append(pad + ("param.grad = param.main_grad" if copy == "assign"
                      else "param.grad.copy_(param.main_grad)"))
    if finalize_average:
        fin.append("        param.grad.div_(world)")
    if loss_scale:
        fin.append("        param.grad.mul_(1.0 / LOSS_SCALE)" if rng.random() < 0.5 else
                   "        param.grad.div_(LOSS_SCALE)")
    finalize = "\n".join(fin) + "\n"

    tail = [d for d in descs if d["kind"] != "layout"][-1]
    square = rng.random() < 0.4 or (tail.get("fn") == "softmax" and not tail["residual"])
    term = "(out * out)" if square else "out"
    loss = f"{term}.mean()" if mean_loss else f"{term}.sum()"
    if average == "loss":
        loss += " / dist.get_world_size(group=_DP)"
    if loss_scale:
        loss += " * LOSS_SCALE"
    prog.loss_desc = loss
    draw = f"torch.randn({'4, 2, ' if three_d else '4, '}{in_width})"
    if hook_kind == "module" or rng.random() < 0.75:
        draw += ".requires_grad_()"
    entry = ("def entry():\n"
             "    global _DP\n"
             "    rank, world = dist.get_rank(), dist.get_world_size()\n"
             "    _DP = dist.new_group(list(range(world)))\n"
             f"    x = {draw}\n"
             "    model = Model()\n"
             "    register_bucket_hooks(model)\n"
             "    return {\"model\": model,\n"
             "            \"inputs\": (x.chunk(world, dim=0)[rank],),\n"
             f"            \"loss\": lambda out: {loss},\n"
             "            \"finalize_grads\": lambda: finalize_grads(model),\n"
             "            \"data_parallel_group\": _DP}\n")
    prog.blocks = descs + [dict(kind="buckets", hooks=hook_kind, buckets=buckets,
                                average=average, loss_scale=loss_scale, copy=copy)]
    head = "_DP = None  # data-parallel group, set by entry()\n" + (
        "LOSS_SCALE = 1024.0\n" if loss_scale else "")
    prog.parts = [head] + prog.classes + [model, bucket_class, hook, register, finalize, entry]
    return prog


def _render(seed, family, prog):
    doc = (f"# Generated by tests/soundness/generate.py, seed {seed}: {family}, {prog.dtype}.\n"
           + (f"# Injected bug: {prog.bug}: {BUGS[prog.bug]}.\n" if prog.bug else "# No injected bug.\n"))
    parts = [doc + "import torch\nimport torch.distributed as dist\nimport torch.nn.functional as F\n"]
    parts += prog.parts
    prog.source = "\n\n".join(p.rstrip("\n") + "\n" for p in parts)
    return prog


def build(seed, bug):
    """Program `seed` rendered with `bug` (None: correct), whatever its family."""
    family = family_of(seed)
    if family is None:
        mode, dtype, _ = _legacy_draws(seed)
        return _build(seed, mode, dtype, bug)
    if family == "dp_buckets":
        prog = _build_buckets(seed, bug)
    else:
        prog = _build_pipeline(seed, bug, in_forward=family == "pp_forward")
    return _render(seed, family, prog)


def write(seed, out_dir):
    """Writes prog_SEED.py and prog_SEED.json; returns the .py path."""
    source, sidecar = generate(seed)
    path = os.path.join(out_dir, f"prog_{seed}.py")
    with open(path, "w") as f:
        f.write(source)
    with open(path[:-3] + ".json", "w") as f:
        json.dump(sidecar, f, indent=1)
    return path


if __name__ == "__main__":
    if len(sys.argv) > 2:
        print(write(int(sys.argv[1]), sys.argv[2]))
    else:
        src, side = generate(int(sys.argv[1]))
        print(src)
        print("#", json.dumps(side))
