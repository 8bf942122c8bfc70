"""torch.amp: automatic mixed precision. Autocasting (torch.autocast) is
modelled when disabled only, so custom_fwd's cast_inputs (which acts only
inside an enabled autocast region) and custom_bwd change nothing. A
GradScaler is modelled when disabled, where PyTorch's is a pass-through; one
that scales is not: whether its step runs depends on finding infinities in
low-precision gradients, which values over the reals never have."""
from . import _tracing
from . import autocast  # noqa: F401

_NO_AUTOCAST = "acts only inside an enabled autocast region, and enabling autocast is rejected"
_DISABLED = "a disabled scaler ignores it, as PyTorch's does"


@_tracing.no_effect(device_type=_NO_AUTOCAST, cast_inputs=_NO_AUTOCAST)
def custom_fwd(fwd=None, *, device_type="cuda", cast_inputs=None):
    return fwd if fwd is not None else (lambda f: f)


@_tracing.no_effect(device_type=_NO_AUTOCAST)
def custom_bwd(bwd=None, *, device_type="cuda"):
    return bwd if bwd is not None else (lambda f: f)


class GradScaler:
    @_tracing.no_effect(device=_DISABLED, init_scale=_DISABLED, growth_factor=_DISABLED,
                        backoff_factor=_DISABLED, growth_interval=_DISABLED)
    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        if enabled:
            _tracing.unmodelled("an enabled GradScaler (loss scaling with inf checks)")
        self._enabled = False

    def scale(self, outputs):
        return outputs

    @_tracing.no_effect(optimizer=_DISABLED, function=_DISABLED)
    def unscale_(self, optimizer):
        return None

    def step(self, optimizer, *args, **kwargs):
        return optimizer.step(*args, **kwargs)

    @_tracing.no_effect(new_scale=_DISABLED, function=_DISABLED)
    def update(self, new_scale=None):
        return None

    def get_scale(self):
        return 1.0

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        return {}

    @_tracing.no_effect(state_dict="a disabled scaler has no state", function=_DISABLED)
    def load_state_dict(self, state_dict):
        return None


def __getattr__(name):
    """A name real PyTorch's torch.amp has and the stand-in does not model is
    "not modelled" (could not prove where used); any other does not exist."""
    from ._real_surface import NAMES
    return _tracing.unknown_attribute("torch.amp", name, NAMES["torch.amp"])
