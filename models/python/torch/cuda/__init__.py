"""torch.cuda: harmless no-ops; the simulated device always exists."""
import contextlib


def is_available():
    return True


def current_device():
    return 0


def device_count():
    return 1


def set_device(d):
    return None


def synchronize(*a):
    return None


def manual_seed(seed):
    return None


manual_seed_all = manual_seed


def get_device_capability(*a):
    return (9, 0)


def empty_cache():
    return None


class Stream:
    def __init__(self, *a, **k):
        pass

    def wait_stream(self, *a):
        pass

    def synchronize(self):
        pass


def current_stream(*a):
    return Stream()


@contextlib.contextmanager
def stream(s):
    yield


class Event:
    def __init__(self, *a, **k):
        pass

    def record(self, *a):
        pass

    def wait(self, *a):
        pass


class amp:
    @staticmethod
    def autocast(*a, **k):
        return contextlib.nullcontext()

    @staticmethod
    def custom_fwd(fn=None, **k):
        return fn if fn is not None else (lambda f: f)

    custom_bwd = custom_fwd
