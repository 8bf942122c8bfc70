# Megatron-style MoE layer with a learned top-2 router and a load-balancing
# auxiliary loss under tensor x expert parallelism with sequence parallelism.
# Ranks are (ep, tp) pairs, tp fastest. Each tensor-parallel rank holds one
# part of the sequence and routes it with the replicated router (the
# router's gradient is then all-reduced over the tensor-parallel group);
# tokens, routing probabilities and the routing map are all-gathered over
# it. Each expert-parallel rank holds NUM_EXPERTS / ep experts, each split
# over the tensor-parallel ranks (fc1 by columns, fc2 by rows). A rank
# permutes the tokens of its experts into expert-major order, runs each
# expert on its chunk, and un-permutes the outputs into one row per (local
# expert, token); the rows of every expert are all-gathered over the
# expert-parallel group, weighted by the routing probabilities, and the
# tensor-parallel partial sums reduce-scattered back to the sequence parts.
# The auxiliary loss (switch-style: probabilities times token counts) is a
# partial sum over the sequence parts, attached to the output by
# MoEAuxLossAutoScaler as Megatron does.
import torch
import torch.distributed as dist

TOKENS, HIDDEN, FFN, NUM_EXPERTS, TOPK = 2, 2, 2, 4, 2
TENSOR_PARALLEL = 2
AUX_LOSS_COEFF = 0.5


class _ParallelState:
    def __init__(self):
        world, rank = dist.get_world_size(), dist.get_rank()
        self.tp = min(TENSOR_PARALLEL, world)
        self.ep = world // self.tp
        self.tp_rank, self.ep_rank = rank % self.tp, rank // self.tp
        self.tp_group = self.ep_group = None
        for e in range(self.ep):  # every rank makes every group, as torch asks
            group = dist.new_group([e * self.tp + t for t in range(self.tp)])
            if e == self.ep_rank:
                self.tp_group = group
        for t in range(self.tp):
            group = dist.new_group([e * self.tp + t for e in range(self.ep)])
            if t == self.tp_rank:
                self.ep_group = group


class _GatherFromSequenceParallelRegion(torch.autograd.Function):
    """All-gather along dim 0 in the forward; reduce-scatter in the backward."""

    @staticmethod
    def forward(ctx, input_, group):
        ctx.group = group
        return _all_gather(input_, group)

    @staticmethod
    def backward(ctx, grad_output):
        return _reduce_scatter(grad_output, ctx.group), None


class _ReduceScatterToSequenceParallelRegion(torch.autograd.Function):
    """Reduce-scatter along dim 0 in the forward; all-gather in the backward."""

    @staticmethod
    def forward(ctx, input_, group):
        ctx.group = group
        return _reduce_scatter(input_, group)

    @staticmethod
    def backward(ctx, grad_output):
        return _all_gather(grad_output, ctx.group), None


def _all_gather(input_, group):
    """The group's tensors concatenated along dim 0."""
    parts = [torch.empty_like(input_) for _ in range(dist.get_world_size(group))]
    dist.all_gather(parts, input_.contiguous(), group=group)
    return torch.cat(parts)


def _reduce_scatter(input_, group):
    """This rank's part along dim 0 of the sum over the group (an all-reduce
    and a slice: gloo has no reduce-scatter)."""
    total = input_.clone()
    dist.all_reduce(total, group=group)
    return total.chunk(dist.get_world_size(group))[dist.get_rank(group)].contiguous()


class _GatherFromExpertParallelRegion(torch.autograd.Function):
    """All-gather along dim 0 in the forward; every rank uses the whole
    result alike, so the backward keeps this rank's part of the gradient."""

    @staticmethod
    def forward(ctx, input_, group):
        ctx.group, ctx.rows = group, input_.shape[0]
        return _all_gather(input_, group)

    @staticmethod
    def backward(ctx, grad_output):
        rank = dist.get_rank(ctx.group)
        return grad_output[rank * ctx.rows:(rank + 1) * ctx.rows].contiguous(), None


class MoEAuxLossAutoScaler(torch.autograd.Function):
    """Attaches the auxiliary loss to the activations: identity in the
    forward, and the loss receives gradient 1 in the backward."""

    @staticmethod
    def forward(ctx, output, aux_loss):
        ctx.save_for_backward(aux_loss)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        (aux_loss,) = ctx.saved_tensors
        return grad_output, torch.ones_like(aux_loss)


class TopKRouter(torch.nn.Module):
    def __init__(self, state):
        super().__init__()
        self.state = state
        self.weight = torch.nn.Parameter(torch.empty(NUM_EXPERTS, HIDDEN))
        self.weight.sequence_parallel = True

    def forward(self, hidden_states):
        scores = torch.softmax(torch.matmul(hidden_states, self.weight.t()), dim=-1)
        probs, top_indices = torch.topk(scores, TOPK, dim=-1)
        routing_probs = torch.zeros_like(scores).scatter(1, top_indices, probs)
        routing_map = torch.zeros_like(scores).int().scatter(1, top_indices, 1)
        return scores, routing_probs, routing_map

    def aux_loss(self, scores, routing_map):
        """Switch load balancing over the whole sequence; this rank's part."""
        tokens_per_expert = routing_map.sum(dim=0)
        if self.state.tp > 1:
            dist.all_reduce(tokens_per_expert, group=self.state.tp_group)
        total_tokens = scores.shape[0] * self.state.tp
        aggregated_probs = scores.sum(dim=0)
        return (aggregated_probs * tokens_per_expert).sum() * (
            NUM_EXPERTS * AUX_LOSS_COEFF / (TOPK * total_tokens * total_tokens))


class ExpertMLP(torch.nn.Module):
    def __init__(self, tp):
        super().__init__()
        self.fc1 = torch.nn.Parameter(torch.empty(FFN // tp, HIDDEN))
        self.fc2 = torch.nn.Parameter(torch.empty(HIDDEN, FFN // tp))
        for weight, dim in ((self.fc1, 0), (self.fc2, 1)):
            weight.tensor_model_parallel, weight.partition_dim = True, dim

    def forward(self, tokens):
        return torch.matmul(torch.tanh(torch.matmul(tokens, self.fc1.t())), self.fc2.t())


class MoELayer(torch.nn.Module):
    def __init__(self, state):
        super().__init__()
        self.state = state
        self.num_local_experts = NUM_EXPERTS // state.ep
        self.router = TopKRouter(state)
        self.experts = torch.nn.ModuleList(
            ExpertMLP(state.tp) for _ in range(self.num_local_experts))

    def forward(self, hidden_states):
        state = self.state
        scores, routing_probs, routing_map = self.router(hidden_states)
        aux_loss = self.router.aux_loss(scores, routing_map)
        if state.tp > 1:
            hidden_states = _GatherFromSequenceParallelRegion.apply(
                hidden_states, state.tp_group)
            routing_probs = _GatherFromSequenceParallelRegion.apply(
                routing_probs, state.tp_group)
            routing_map = _all_gather(routing_map, state.tp_group)
        expert_rows = self.run_local_experts(hidden_states, routing_map)
        if state.ep > 1:
            expert_rows = _GatherFromExpertParallelRegion.apply(expert_rows, state.ep_group)
        tokens = hidden_states.shape[0]
        rows = expert_rows.view(NUM_EXPERTS, tokens, HIDDEN)
        output = (rows * routing_probs.t().unsqueeze(-1)).sum(dim=0)
        if state.tp > 1:
            output = _ReduceScatterToSequenceParallelRegion.apply(output, state.tp_group)
        return MoEAuxLossAutoScaler.apply(output, aux_loss)

    def run_local_experts(self, hidden_states, routing_map):
        """One row per (local expert, token): the expert's output where the
        token is routed to it, else zero."""
        tokens = hidden_states.shape[0]
        first = self.state.ep_rank * self.num_local_experts
        local_map = routing_map[:, first:first + self.num_local_experts].bool()
        # Expert-major order: every token of local expert 0, then of 1, ...
        expert_of, token_of = local_map.t().nonzero(as_tuple=True)
        permuted = hidden_states.index_select(0, token_of)
        counts = local_map.sum(dim=0).tolist()
        outputs = torch.cat([expert(chunk) for expert, chunk
                             in zip(self.experts, permuted.split(counts))])
        rows = torch.zeros(self.num_local_experts * tokens, HIDDEN, dtype=outputs.dtype)
        return rows.index_add(0, expert_of * tokens + token_of, outputs)


def finalize_model_grads(model):
    for p in model.parameters():
        if getattr(p, "sequence_parallel", False) and model.state.tp > 1:
            dist.all_reduce(p.grad, group=model.state.tp_group)


def entry():
    hidden_states = torch.randn(TOKENS, HIDDEN)
    state = _ParallelState()
    model = MoELayer(state)

    def reference_name(name):
        # experts.i on expert-parallel rank e is expert e * local + i
        if name.startswith("experts."):
            index, rest = name[len("experts."):].split(".", 1)
            return f"experts.{state.ep_rank * model.num_local_experts + int(index)}.{rest}"
        return name

    local = hidden_states.chunk(state.tp, dim=0)[state.tp_rank]
    return {"model": model, "inputs": (local,),
            "loss": lambda out: (out * out).sum(),
            "finalize_grads": lambda: finalize_model_grads(model),
            "tensor_parallel_group": state.tp_group,
            "parameter_names": reference_name}
