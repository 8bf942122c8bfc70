"""torch.cuda.random: the RNG state is bookkeeping; every random tensor is a
fresh symbolic value whatever the state, so a state is a constant byte tensor."""


def _state():
    from .. import zeros, uint8
    return zeros(16, dtype=uint8)


from .. import Generator as _Generator  # noqa: E402

default_generators = (_Generator("cuda"),)


def get_rng_state(device="cuda"):
    return _state()


def set_rng_state(new_state, device="cuda"):
    return None


def get_rng_state_all():
    return [_state()]


def set_rng_state_all(states):
    return None


def manual_seed(seed):
    default_generators[0].manual_seed(seed)


manual_seed_all = manual_seed


def initial_seed():
    return default_generators[0].initial_seed()


def seed():
    return None


seed_all = seed
