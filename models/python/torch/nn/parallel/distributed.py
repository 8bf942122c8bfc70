"""torch.nn.parallel.DistributedDataParallel as PyTorch runs it, over the
stand-in's collectives (so the linker sees every one):
- construction broadcasts every parameter and buffer from rank 0 of the
  process group (init_sync);
- a forward with grad enabled outside no_sync() arms the reducer; each
  parameter's AccumulateGrad post-hook marks it ready, and when the backward
  ends (the engine's final callback) every gradient is divided by the group's
  size and all-reduced (SUM) over the group, in reverse parameter order;
- with broadcast_buffers the buffers are broadcast from rank 0 before each
  forward."""
import contextlib

from ... import _autograd, _tracing
from ... import distributed as dist
from ..modules import Module


class DistributedDataParallel(Module):
    @_tracing.no_effect(
        device_ids="device placement of the replica",
        output_device="device placement of the output",
        dim="only splits inputs over several devices of one process, which DDP no longer does",
        bucket_cap_mb="buckets only group the all-reduces; each gradient's reduced value "
                      "is the same",
        check_reduction="deprecated; PyTorch ignores it")
    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, init_sync=True, process_group=None,
                 bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None):
        super().__init__()
        for name, value in (("delay_all_reduce_named_params", delay_all_reduce_named_params),
                            ("param_to_hook_all_reduce", param_to_hook_all_reduce),
                            ("mixed_precision", mixed_precision),
                            ("device_mesh", device_mesh)):
            if value is not None:
                _tracing.unmodelled(f"DistributedDataParallel({name}=...)")
        # The gradients would be views of the flat buckets (aliasing).
        _tracing.only("DistributedDataParallel", "gradient_as_bucket_view",
                      gradient_as_bucket_view, False)
        ignored = set(getattr(module, "_ddp_params_and_buffers_to_ignore", ()))
        self.module = module
        self.process_group = dist.group.WORLD if process_group is None else process_group
        self.broadcast_buffers = broadcast_buffers
        # static_graph finds unused parameters on its first iteration, as
        # find_unused_parameters does on every one.
        self.find_unused_parameters = find_unused_parameters
        self.static_graph = static_graph
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        object.__setattr__(self, "_ddp_params", [
            (n, p) for n, p in module.named_parameters()
            if p.requires_grad and n not in ignored])
        object.__setattr__(self, "_ddp_buffers", [
            (n, b) for n, b in module.named_buffers() if n not in ignored])
        if not self._ddp_params:
            raise RuntimeError("DistributedDataParallel is not needed when a module "
                               "doesn't have any parameter that requires a gradient.")
        object.__setattr__(self, "_site", _tracing.location())  # where it was built
        object.__setattr__(self, "_armed", False)
        object.__setattr__(self, "_ready", set())
        object.__setattr__(self, "_finalize_queued", False)
        if init_sync:
            self._broadcast([p for _, p in self._ddp_params] +
                            [b for _, b in self._ddp_buffers])
        for _, p in self._ddp_params:
            p.register_post_accumulate_grad_hook(self._mark_ready)

    def _src(self):
        return dist.get_global_rank(self.process_group, 0)

    def _broadcast(self, tensors):
        """From rank 0 of the group, in place: every rank holds rank 0's
        values from here on (PyTorch's _sync_module_states)."""
        with _autograd._no_grad():
            for t in tensors:
                leaf = t._a.copy()
                dist.broadcast(t, self._src(), group=self.process_group)
                # The driver records a parameter by the values it was made
                # with; what it now holds is rank 0's.
                if getattr(t, "_is_parameter", False) and \
                        "_shardproof_initial" not in t.__dict__:
                    t._shardproof_initial = leaf

    def forward(self, *inputs, **kwargs):
        if self.require_forward_param_sync and self.broadcast_buffers and self._ddp_buffers:
            self._broadcast([b for _, b in self._ddp_buffers])
        if _autograd.GradMode.enabled and self.require_backward_grad_sync:
            # prepare_for_backward: the next backward reduces.
            object.__setattr__(self, "_armed", True)
            self._ready.clear()
        return self.module(*inputs, **kwargs)

    def _mark_ready(self, param):
        if not self._armed:
            return  # a forward under no_sync (or outside DDP): no reduction
        self._ready.add(id(param))
        if not self._finalize_queued:
            object.__setattr__(self, "_finalize_queued", True)
            _autograd.queue_callback(self._finalize_backward)

    def _finalize_backward(self):
        with _tracing.fallback_location(self._site):  # the reduction is this DDP's
            self._reduce_gradients()

    def _reduce_gradients(self):
        object.__setattr__(self, "_finalize_queued", False)
        object.__setattr__(self, "_armed", False)
        params = self._ddp_params
        find_unused = self.find_unused_parameters or self.static_graph
        unused = [n for n, p in params if id(p) not in self._ready]
        if unused and not find_unused:
            _tracing.unmodelled(
                f"DistributedDataParallel(find_unused_parameters=False) with parameters "
                f"that got no gradient ({', '.join(unused[:3])}): PyTorch leaves their "
                "buckets unreduced and fails on the next iteration")
        from ... import tensor, zeros_like
        if find_unused:
            # PyTorch all-reduces the map of locally used parameters: one used
            # on some rank only is reduced with zeros where it was not used.
            used = tensor([1 if id(p) in self._ready else 0 for _, p in params])
            dist.all_reduce(used, group=self.process_group)
            globally_used = [int(v) > 0 for v in used.tolist()]
        else:
            globally_used = [True] * len(params)
        size = dist.get_world_size(self.process_group)
        for (name, p), needed in reversed(list(zip(params, globally_used))):
            if not needed:
                continue  # unused everywhere: .grad is left as it is
            if p.grad is None:
                p.grad = zeros_like(p)
            p.grad.div_(size)
            dist.all_reduce(p.grad, group=self.process_group)

    @contextlib.contextmanager
    def no_sync(self):
        """Forwards inside do not arm the reducer: their backward accumulates
        local gradients only."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def register_comm_hook(self, state, hook):
        _tracing.unmodelled(f"DistributedDataParallel.register_comm_hook({getattr(hook, '__name__', hook)}, "
                            f"state={type(state).__name__})")

    def _set_static_graph(self):
        self.static_graph = True


class DataParallel(Module):
    """Single-process replication over several devices: on one device it is
    the module itself; over several, its buffer updates come from the first
    replica's slice of the batch only, which is not modelled."""

    @_tracing.no_effect(output_device="device placement of the output")
    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if device_ids is None or len(device_ids) != 1:
            _tracing.unmodelled(f"DataParallel(device_ids={device_ids}, dim={dim}) over "
                                "several devices")
        self.module = module

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
