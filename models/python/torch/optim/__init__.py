"""torch.optim: the Optimizer base class that frameworks subclass, with
PyTorch's parameter-group and state bookkeeping, and SGD, Adam and AdamW,
whose steps compute PyTorch's update (single-tensor form; the foreach and
fused forms compute the same values). Other built-in optimizers are not
modelled: they stop tracing when they step."""
import math
from collections import defaultdict

from .. import _autograd, _tracing
from . import lr_scheduler  # noqa: F401

_SAME_UPDATE = "the foreach and fused forms compute the same update"


class Optimizer:
    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = defaultdict(dict)
        self.param_groups = []
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(params[0], dict):
            params = [{"params": params}]
        for group in params:
            self.add_param_group(group)

    def add_param_group(self, param_group):
        params = param_group["params"]
        group = dict(param_group)
        group["params"] = [params] if hasattr(params, "shape") else list(params)
        from .. import Tensor
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params "
                                f"is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        for key, value in self.defaults.items():
            group.setdefault(key, value)
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=_autograd._DEFAULT):
        _autograd.zero_grads([p for group in self.param_groups for p in group["params"]],
                             set_to_none, "Optimizer")

    @_tracing.no_effect(closure="the base class has no update: a step raises, as in PyTorch")
    def step(self, closure=None):
        raise NotImplementedError(
            f"{type(self).__name__}.step: the Optimizer base class has no update")

    def _closure_loss(self, closure):
        if closure is None:
            return None
        from .. import enable_grad
        with enable_grad():
            return closure()

    def state_dict(self):
        """PyTorch's packed form: parameters numbered in group order."""
        index, groups = {}, []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = [index.setdefault(id(p), len(index)) for p in group["params"]]
            groups.append(packed)
        state = {index[id(p)]: value for p, value in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """PyTorch's load: the saved state of parameter k goes to this
        optimizer's k-th parameter (floats cast to its dtype, the step kept),
        the saved hyperparameters replace the groups' own; tensors are copied."""
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"])
               for g, s in zip(self.param_groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't "
                             "match the size of optimizer's group")
        by_index = {k: p for g, s in zip(self.param_groups, saved_groups)
                    for k, p in zip(s["params"], g["params"])}
        state = defaultdict(dict)
        for k, value in state_dict["state"].items():
            if k in by_index:
                param = by_index[k]
                state[param] = {key: _loaded(param, key, v) for key, v in value.items()}
            else:
                state[k] = value
        self.state = state
        self.param_groups = [{**_copied(s), "params": g["params"]}
                             for g, s in zip(self.param_groups, saved_groups)]

    def __repr__(self):
        return f"{type(self).__name__}()"


def _copied(value):
    from .. import Tensor
    if isinstance(value, Tensor):
        return value.clone()
    if isinstance(value, dict):
        return {k: _copied(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_copied(v) for v in value)
    return value


def _loaded(param, key, value):
    from .. import Tensor
    if not isinstance(value, Tensor):
        return _copied(value)
    if key != "step" and param.dtype.is_floating_point and value.dtype.is_floating_point:
        return value.detach().to(param.dtype).clone()
    return value.detach().clone()


def _check_hyperparameters(lr, eps=0.0, weight_decay=0.0, betas=(0.0, 0.0), momentum=0.0):
    """PyTorch's constructor checks."""
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")
    for k, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {k}: {beta}")
    if not 0.0 <= momentum:
        raise ValueError(f"Invalid momentum value: {momentum}")


def _modelled_options(name, group):
    _tracing.only(name, "differentiable", group.get("differentiable", False), False)


def _updated(optimizer, closure, update):
    """Runs `update(param, grad, group, state)` for every parameter with a
    gradient, outside autograd, as PyTorch's step does."""
    from .. import no_grad
    loss = optimizer._closure_loss(closure)
    with no_grad():
        for group in optimizer.param_groups:
            _modelled_options(type(optimizer).__name__, group)
            for p in group["params"]:
                if p.grad is not None:
                    if getattr(p.grad, "is_sparse", False):
                        _tracing.unmodelled(f"{type(optimizer).__name__} with sparse gradients")
                    update(p, p.grad, group, optimizer.state[p])
    return loss


class SGD(Optimizer):
    @_tracing.no_effect(foreach=_SAME_UPDATE, fused=_SAME_UPDATE)
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        _check_hyperparameters(lr, weight_decay=weight_decay, momentum=momentum)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(
            lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
            nesterov=nesterov, maximize=maximize, foreach=foreach,
            differentiable=differentiable, fused=fused))

    def step(self, closure=None):
        return _updated(self, closure, _sgd_update)


def _sgd_update(param, grad, group, state):
    from .. import clone
    d_p = -grad if group["maximize"] else grad
    if group["weight_decay"] != 0:
        d_p = d_p.add(param, alpha=group["weight_decay"])
    momentum = group["momentum"]
    if momentum != 0:
        buf = state.get("momentum_buffer")
        if buf is None:
            buf = state["momentum_buffer"] = clone(d_p).detach()
        else:
            buf.mul_(momentum).add_(d_p, alpha=1 - group["dampening"])
        d_p = d_p.add(buf, alpha=momentum) if group["nesterov"] else buf
    param.add_(d_p, alpha=-group["lr"])


class Adam(Optimizer):
    _decoupled_weight_decay = False  # AdamW: the decay scales the parameter

    @_tracing.no_effect(foreach=_SAME_UPDATE, fused=_SAME_UPDATE,
                        capturable="a graph-capturable step computes the same update")
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None):
        _check_hyperparameters(lr, eps=eps, weight_decay=weight_decay, betas=betas)
        super().__init__(params, dict(
            lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
            maximize=maximize, foreach=foreach, capturable=capturable,
            differentiable=differentiable, fused=fused))

    def step(self, closure=None):
        decoupled = self._decoupled_weight_decay
        return _updated(self, closure, lambda p, g, group, state: _adam_update(
            p, g, group, state, decoupled))


class AdamW(Adam):
    _decoupled_weight_decay = True

    @_tracing.no_effect(foreach=_SAME_UPDATE, fused=_SAME_UPDATE,
                        capturable="a graph-capturable step computes the same update")
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused)


def _adam_update(param, grad, group, state, decoupled_weight_decay):
    from .. import maximum, tensor, zeros_like, float32
    lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
    weight_decay = group["weight_decay"]
    if not state:
        state["step"] = tensor(0.0, dtype=float32)
        state["exp_avg"] = zeros_like(param)
        state["exp_avg_sq"] = zeros_like(param)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = zeros_like(param)
    grad = -grad if group["maximize"] else grad
    state["step"] += 1
    if decoupled_weight_decay:
        param.mul_(1 - lr * weight_decay)
    elif weight_decay != 0:
        grad = grad.add(param, alpha=weight_decay)
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
    exp_avg_sq.mul_(beta2).add_(grad * grad, alpha=1 - beta2)
    step = state["step"].item()
    step_size = lr / (1 - beta1 ** step)
    bias_correction2_sqrt = math.sqrt(1 - beta2 ** step)
    if group["amsgrad"]:
        state["max_exp_avg_sq"].copy_(maximum(state["max_exp_avg_sq"], exp_avg_sq))
        second_moment = state["max_exp_avg_sq"]
    else:
        second_moment = exp_avg_sq
    denom = (second_moment.sqrt() / bias_correction2_sqrt).add_(eps)
    param.add_(exp_avg / denom, alpha=-step_size)


class _Unmodelled(Optimizer):
    """A built-in optimizer whose update is not modelled: it is built (its
    groups and defaults kept), and its step stops tracing."""

    _defaults = {}

    def __init__(self, params, **kwargs):
        unknown = set(kwargs) - set(self._defaults)
        if unknown:
            raise TypeError(f"{type(self).__name__}() got unexpected arguments {sorted(unknown)}")
        super().__init__(params, {**self._defaults, **kwargs})

    @_tracing.no_effect(closure="every step is rejected")
    def step(self, closure=None):
        _tracing.unmodelled(f"{type(self).__name__}.step (its update)")


class Adagrad(_Unmodelled):
    _defaults = dict(lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                     eps=1e-10, foreach=None, maximize=False, differentiable=False,
                     fused=None)


def __getattr__(name):
    """A name real PyTorch's torch.optim has and the stand-in does not model is
    "not modelled" (could not prove where used); any other does not exist."""
    from .._real_surface import NAMES
    return _tracing.unknown_attribute("torch.optim", name, NAMES["torch.optim"])
