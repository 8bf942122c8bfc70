"""torch.random: PyTorch's random number generators as shardproof models them
(docs/entry-contract.md, "Random draws").

A generator's state is (kind, seed, offset). The offset is the sequence of
draws made since the generator was seeded: PyTorch's own offset is a counter
whose steps depend on each draw's size and on the device, so two runs are at
the same offset exactly when they made the same draws (op, shape, dtype) since
the same seed — never claimed otherwise. A draw's elements are symbolic values
named by (op, generator kind, seed, offset, shape, dtype) and registered as
leaves: a rank's draw is the reference's exactly when both names agree
(the linker binds them), and otherwise stays the rank's own value.

Seeds: a CPU generator (MT19937) uses the low 32 bits of its seed, a CUDA one
(Philox) all 64, as PyTorch's do. `seed()` draws a nondeterministic seed: a
different one in every run, as on every real process.

Which generator a draw uses: the one passed as `generator=`, else the default
generator of the op's `device=` (factory functions; the CPU by default), else,
for a draw into or from a tensor (dropout, `uniform_`, `bernoulli`), the CUDA
generator: every stand-in tensor is a CUDA tensor (`Tensor.device`).

While the entry builds the model, `randn`/`rand`/`empty`/initialisers make
symbolic inputs matched to the reference by creation order (the entry
contract) and advance their generator as the draw would; after it (the
forward, the loss, backward, finalize_grads) every draw is a keyed value."""
import builtins
import contextlib
import hashlib
import operator

import numpy as np

import _shardproof as _sp

from . import _dtypes, _tracing
from ._tensor import Tensor, record, fresh, device as _device, _index_str

DEFAULT_SEED = 67280421310721  # every PyTorch generator's seed until one is set
_U64 = (1 << 64) - 1
_STATE_BYTES = 16  # seed, then the state's number in this run (little-endian)


class _Cell:
    """One generator state; shared by generators after graphsafe_set_state."""

    def __init__(self, kind, seed=DEFAULT_SEED, count=0, digest=""):
        self.kind, self.seed, self.count, self.digest = kind, seed, count, digest

    def key(self):
        """What the values drawn next depend on."""
        effective = self.seed & 0xFFFF_FFFF if self.kind == "cpu" else self.seed
        return (self.kind, effective, self.count, self.digest)

    def copy(self):
        return _Cell(self.kind, self.seed, self.count, self.digest)

    def reseed(self, seed):
        self.seed, self.count, self.digest = seed, 0, ""

    def advance(self, step):
        self.count += 1
        self.digest = hashlib.blake2s(f"{self.digest}|{step}".encode(),
                                      digest_size=4).hexdigest()


class _Run:
    """The RNG of one traced run (a rank, or the reference)."""

    def __init__(self):
        self.defaults = {"cpu": _Cell("cpu"), "cuda": _Cell("cuda")}
        self.state_ids = {}  # (kind, seed, count, digest) -> its number
        self.states = []
        self.draws = {}  # leaf name -> the elements drawn under it


_NONDETERMINISTIC = [0]  # never reset: every run gets seeds of its own


def _run():
    run = getattr(_tracing.state, "rng", None)
    if run is None:
        run = _tracing.state.rng = _Run()
    return run


def _seed_value(seed):
    """A seed as PyTorch takes it: an integer in [-2**63, 2**64), negative
    ones wrapped to 0xffff_ffff_ffff_ffff + seed."""
    seed = operator.index(seed)
    if not -0x8000_0000_0000_0000 <= seed <= _U64:
        raise RuntimeError("Overflow when unpacking long")
    return _U64 + seed if seed < 0 else seed


def _nondeterministic_seed():
    _NONDETERMINISTIC[0] += 1
    return (0x5EED << 48) + _NONDETERMINISTIC[0]


def _kind_of(device):
    kind = (device.type if isinstance(device, _device) else
            "cuda" if isinstance(device, builtins.int) else str(device).split(":")[0])
    if kind not in ("cpu", "cuda"):
        _tracing.unmodelled(f"a random generator on device '{kind}'")
    return kind


# ---- generators ---------------------------------------------------------------
class Generator:
    """torch.Generator: a handle on one generator state."""

    def __init__(self, device="cpu"):
        self._kind = _kind_of(device)
        self.device = _device(self._kind)
        self._own = _Cell(self._kind)
        self._default = False  # a default generator's state belongs to the run

    @property
    def _cell(self):
        return _run().defaults[self._kind] if self._default else self._own

    def _set_cell(self, cell):
        if self._default:
            _run().defaults[self._kind] = cell
        else:
            self._own = cell

    def manual_seed(self, seed):
        self._cell.reseed(_seed_value(seed))
        return self

    def seed(self):
        seed = _nondeterministic_seed()
        self._cell.reseed(seed)
        return seed

    def initial_seed(self):
        return self._cell.seed

    def get_state(self):
        return _state_tensor(self._cell)

    def set_state(self, new_state):
        cell = _cell_of_state(new_state)
        if cell.kind != self._kind:
            raise RuntimeError(f"a {cell.kind} RNG state cannot be set on a "
                               f"{self._kind} generator (wrong size)")
        target = self._cell
        target.seed, target.count, target.digest = cell.seed, cell.count, cell.digest
        return self

    def graphsafe_get_state(self):
        """The generator's state object itself: draws through either advance both."""
        view = Generator(self._kind)
        view._own = self._cell
        return view

    def graphsafe_set_state(self, state):
        if not isinstance(state, Generator) or state._kind != self._kind:
            raise RuntimeError("graphsafe_set_state expects a generator state of "
                               "the same device")
        self._set_cell(state._cell)

    def clone_state(self):
        copy = Generator(self._kind)
        copy._own = self._cell.copy()
        return copy


def _default_generator(kind):
    g = Generator(kind)
    g._default = True
    return g


default_generator = _default_generator("cpu")
cuda_default_generator = _default_generator("cuda")


def _state_tensor(cell):
    """A state as PyTorch hands it out: a concrete byte tensor (equal states,
    equal bytes), which set_state turns back into the state."""
    run = _run()
    full = (cell.kind, cell.seed, cell.count, cell.digest)
    number = run.state_ids.get(full)
    if number is None:
        number = run.state_ids[full] = len(run.states)
        run.states.append(full)
    data = cell.seed.to_bytes(8, "little") + number.to_bytes(8, "little")
    return record(np.frombuffer(data, dtype=np.uint8).copy(), _dtypes.uint8,
                  "get_rng_state", "leaf")


def _cell_of_state(state):
    if not isinstance(state, Tensor):
        raise TypeError(f"expected a torch.ByteTensor, but got {type(state).__name__}")
    flat = state._a.ravel().tolist()
    if state.dtype is not _dtypes.uint8 or len(flat) != _STATE_BYTES or \
            not builtins.all(isinstance(v, (builtins.int, np.integer)) for v in flat):
        _tracing.unmodelled("setting an RNG state that get_state/get_rng_state did "
                            "not make")
    data = bytes(builtins.int(v) for v in flat)
    seed = builtins.int.from_bytes(data[:8], "little")
    number = builtins.int.from_bytes(data[8:], "little")
    states = _run().states
    if number >= len(states) or states[number][1] != seed:
        _tracing.unmodelled("setting an RNG state that get_state/get_rng_state did "
                            "not make in this run (edited or loaded)")
    return _Cell(*states[number])


# ---- the module-level API (torch.*, torch.random.*) --------------------------------
def manual_seed(seed):
    """Seeds the CPU generator and every CUDA one; returns the CPU generator."""
    seed = _seed_value(seed)
    for cell in _run().defaults.values():
        cell.reseed(seed)
    return default_generator


def seed():
    s = _nondeterministic_seed()
    for cell in _run().defaults.values():
        cell.reseed(s)
    return s


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state):
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, device_type="cuda"):
    """Saves the CPU state and those of the CUDA devices and restores them on
    exit (there is one simulated device)."""
    if not enabled:
        yield
        return
    _tracing.only("torch.random.fork_rng", "device_type", device_type, "cuda")
    forked = ["cpu"] + ([] if devices is not None and len(list(devices)) == 0 else ["cuda"])
    saved = {kind: _run().defaults[kind].copy() for kind in forked}
    try:
        yield
    finally:
        for kind, cell in saved.items():
            target = _run().defaults[kind]
            target.seed, target.count, target.digest = cell.seed, cell.count, cell.digest


# ---- draws ---------------------------------------------------------------------------
def _cell_for(generator, device, on_tensor):
    if generator is not None:
        if not isinstance(generator, Generator):
            raise TypeError(f"generator must be a torch.Generator, not "
                            f"{type(generator).__name__}")
        return generator._cell
    if device is not None:
        return _run().defaults[_kind_of(device)]
    return _run().defaults["cuda" if on_tensor else "cpu"]


def advance(op, shape, dtype, generator=None, device=None, on_tensor=True):
    """A draw while the entry builds the model: its values are the caller's
    (creation-order inputs), the generator moves on as the draw would move it."""
    _cell_for(generator, device, on_tensor).advance((op, tuple(shape), dtype.name))


def initialised(device, *draws):
    """A module's own initialisation (nn.Linear's reset_parameters): its
    Parameters keep their symbols, the generator of `device` (the CPU by
    default, as PyTorch's) moves on by each (op, tensor) draw; None skips."""
    for op, t in draws:
        if t is not None:
            advance(op, t.shape, t.dtype, device=device, on_tensor=False)


def draw(op, shape, dtype, generator=None, device=None, on_tensor=True):
    """The elements of one random draw: symbolic values u keyed by the
    generator's state (one per element, in row-major order); the same state
    and draw give the same values, in this run and in every other."""
    cell = _cell_for(generator, device, on_tensor)
    shape = tuple(builtins.int(d) for d in shape)
    kind, seed, count, digest = cell.key()
    name = (f"rng:{op}:{kind}={seed}/{count}.{digest or '0'}:"
            f"{'x'.join(map(str, shape)) or 'scalar'}:{dtype.name}")
    cell.advance((op, shape, dtype.name))
    run = _run()
    elements = run.draws.get(name)
    if elements is None:
        origin = _tracing.origin()
        flat = [_sp.var(f"{name}{_index_str(shape, i)}", origin)
                for i in range(int(np.prod(shape, dtype=np.int64)))]
        file, line, _, _ = _tracing.location()
        _sp.record_leaf(role="input", name=name, shape=shape, elements=flat,
                        partition_dim=-1, partition_stride=1, shard=0, shards=1,
                        file=file, line=line)
        elements = np.empty(len(flat), dtype=object)
        elements[:] = flat
        elements = run.draws[name] = elements.reshape(shape)
    return elements


def _map(fn, array):
    out = np.empty(array.shape, dtype=object)
    out.ravel()[:] = [fn(u) for u in array.ravel()]
    return out


def unit_uniform(u):
    """A uniform value in (0, 1) from a free real: any value a falsifier
    picks is one the generator could draw."""
    return _sp.apply("sigmoid", u)


def bernoulli_value(u, p):
    return _sp.where(unit_uniform(u) < p, 1, 0)


def values(op, shape, dtype, element, generator=None, device=None, on_tensor=True):
    """A tensor of `element(u)` for one keyed draw; no gradient flows into it."""
    u = draw(op, shape, dtype, generator, device, on_tensor)
    return record(_map(element, u), dtype, op, "leaf")


def _check_float(op, dtype):
    if not dtype.is_floating_point:
        _tracing.unmodelled(f"{op} into a tensor of dtype {dtype.name}")


# ---- tensor methods (Tensor.uniform_ and friends) ---------------------------------------
def fill_(t, op, element, generator):
    """t.op_(...): in the entry, an initialisation (t becomes a creation-order
    input, a Parameter keeps its symbols); later, t's elements are replaced
    by a keyed draw."""
    _check_float(f"Tensor.{op}", t.dtype)
    if _tracing.state.building:
        advance(op, t.shape, t.dtype, generator)
        return t._reinit_symbolic()
    if element is None:
        _tracing.unmodelled("a torch.nn.init initialiser outside the entry")
    if getattr(t, "_is_parameter", False):
        _tracing.unmodelled(f"Tensor.{op} on a Parameter outside the entry "
                            "(a proof covers every value of the weights)")
    return t._overwrite(values(op, t.shape, t.dtype, element, generator))


def bernoulli_probabilities(t, p, op, generator):
    """The 0/1 tensor of Bernoulli draws with probabilities p (a number or a
    tensor broadcast to t's shape), of t's dtype."""
    _check_float(op, t.dtype)
    if isinstance(p, Tensor):
        probs = np.broadcast_to(p._a, t._a.shape)
        u = draw(op, t.shape, t.dtype, generator)
        out = np.empty(u.shape, dtype=object)
        out.ravel()[:] = [bernoulli_value(a, b) for a, b in zip(u.ravel(), probs.ravel())]
        return record(out, t.dtype, op, "leaf", (p,))
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    return values(op, t.shape, t.dtype, lambda u: bernoulli_value(u, p), generator)


# ---- factory functions --------------------------------------------------------------
def _factory(op, element):
    @_tracing.no_effect(pin_memory="page-locking host memory changes no value")
    def create(*size, generator=None, out=None, dtype=None, layout=None, device=None,
               requires_grad=False, pin_memory=False, **kwargs):
        from . import _shape, _layout_and_format, _created
        size = _shape(size, kwargs.pop("size", None))
        _tracing.no_kwargs(f"torch.{op}", kwargs)
        _layout_and_format(op, layout)
        dtype = dtype or (out.dtype if out is not None else _dtypes.default_float())
        _check_float(f"torch.{op}", dtype)
        if _tracing.state.building:
            advance(op, size, dtype, generator, device, on_tensor=False)
            t = fresh(size, dtype, op)
        else:
            t = values(op, size, dtype, element, generator, device, on_tensor=False)
        return _created(t, op, requires_grad, out)
    create.__name__ = op
    return create


rand = _factory("rand", unit_uniform)
randn = _factory("randn", lambda u: u)


def _like(fn):
    @_tracing.no_effect(pin_memory="page-locking host memory changes no value")
    def like(t, *, dtype=None, layout=None, device=None, requires_grad=False,
             memory_format=None, pin_memory=False):
        from . import _layout_and_format
        _layout_and_format(fn.__name__ + "_like", None, memory_format)
        return fn(*t.shape, dtype=dtype or t.dtype, layout=layout, device=device,
                  requires_grad=requires_grad)
    like.__name__ = fn.__name__ + "_like"
    return like


rand_like, randn_like = _like(rand), _like(randn)


def normal(mean, std=1.0, size=None, *, generator=None, out=None):
    """torch.normal: mean + std * u elementwise, for tensors of means or
    standard deviations, or for two numbers and a size."""
    from . import _created
    if not (isinstance(mean, Tensor) or isinstance(std, Tensor)):
        if size is None:
            raise TypeError("normal() with a number mean and std needs a size")
        return _created(randn(*size, generator=generator) * std + mean, "normal", False, out)
    if size is not None:
        raise TypeError("normal() takes no size with tensor mean or std")
    like = mean if isinstance(mean, Tensor) else std
    shape = np.broadcast(np.asarray(mean._a if isinstance(mean, Tensor) else mean),
                         np.asarray(std._a if isinstance(std, Tensor) else std)).shape
    _check_float("torch.normal", like.dtype)
    if _tracing.state.building:
        advance("normal", shape, like.dtype, generator)
        noise = fresh(shape, like.dtype, "normal")
    else:
        noise = values("normal", shape, like.dtype, lambda u: u, generator)
    return _created(noise * std + mean, "normal", False, out)


def bernoulli(input, p=None, *, generator=None, out=None):  # noqa: A002 (torch's name)
    """A 0/1 tensor of input's shape and dtype: element i is 1 with
    probability input[i] (or p)."""
    from . import _created
    result = bernoulli_probabilities(input, input if p is None else p, "bernoulli",
                                     generator)
    return _created(result, "bernoulli", False, out)


def _integer_draw(op):
    def unmodelled_draw(*args, **kwargs):
        raise _tracing.Unsupported(f"torch.{op} (random integers that choose which "
                                   "elements are used) is not modelled")
    unmodelled_draw.__name__ = op
    return unmodelled_draw


randperm, multinomial, randint_like = map(_integer_draw, ("randperm", "multinomial",
                                                           "randint_like"))


def randint(low, high=None, size=None, *, generator=None, dtype=None, device=None,
            **kwargs):
    """In the entry: concrete integers (token ids; the entry contract), the
    same for the same size in every run, and the generator moves on; in the
    computation, random integers are not modelled."""
    if not _tracing.state.building:
        _tracing.unmodelled("torch.randint in the computation (random integers "
                            "choose which elements are used)")
    _tracing.only("torch.randint", "requires_grad", kwargs.pop("requires_grad", False),
                  False)
    _tracing.no_kwargs("torch.randint", kwargs)
    from . import _shape, _concrete
    if high is None:
        low, high = 0, low
    shape = _shape((size,))
    dtype = dtype or _dtypes.int64
    advance("randint", shape, dtype, generator, device, on_tensor=False)
    rng = np.random.default_rng(12345)
    return _concrete(rng.integers(low, high, size=shape), dtype, "randint")
