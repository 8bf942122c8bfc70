"""torch.cuda.random: the CUDA generator of the one simulated device, as
torch/random.py models generators (its state is part of each rank's run)."""
from .. import random as _random

default_generators = (_random.cuda_default_generator,)


def _generator(device="cuda"):
    if isinstance(device, int):
        kind, index = "cuda", device
    elif isinstance(device, str):
        kind, _, number = device.partition(":")
        index = int(number) if number else None
    else:
        kind, index = _random._kind_of(device), device.index
    if kind != "cuda" or index not in (None, -1, 0):
        raise RuntimeError(f"no CUDA device {device!r}: there is one simulated device")
    return default_generators[0]


def get_rng_state(device="cuda"):
    return _generator(device).get_state()


def set_rng_state(new_state, device="cuda"):
    _generator(device).set_state(new_state)


def get_rng_state_all():
    return [g.get_state() for g in default_generators]


def set_rng_state_all(new_states):
    for g, state in zip(default_generators, new_states):
        g.set_state(state)


def manual_seed(seed):
    default_generators[0].manual_seed(seed)


def manual_seed_all(seed):
    for g in default_generators:
        g.manual_seed(seed)


def initial_seed():
    return default_generators[0].initial_seed()


def seed():
    default_generators[0].seed()


def seed_all():
    seed = default_generators[0].seed()
    for g in default_generators[1:]:
        g.manual_seed(seed)
