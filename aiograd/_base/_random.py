"""The random generators: ``Generator`` (torch.Generator on the CPU: the same Mersenne Twister,
seeded the same way, with the same state bytes) and the default one behind ``rand``, ``randn``,
dropout's masks and ``nn.init`` (torch's default CPU generator), and the means to replay it.

The engine is numpy's ``MT19937`` bit generator, seeded as torch seeds its ``mt19937``
(``init_genrand`` with the seed's low 32 bits), so the stream of 32-bit words is torch's word
for word; ``aiograd/_base/_sampling.py`` turns words into samples with torch's CPU algorithms,
which is why ``aiograd.manual_seed(s)`` gives torch's numbers for the same ``s``. A ``Generator``
is also a ``numpy.random.Generator`` over that stream, for code that wants numpy's samplers.

It lives at the bottom of the package so that ops (dropout) and factories draw from the same
stream, and checkpointing can replay that stream for a recomputation (``preserve_rng_state``).
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = [
    "DEFAULT_SEED", "Generator", "generator", "get_state", "initial_seed", "manual_seed", "replaying", "resolve",
    "seed", "set_state", "state_array",
]

#: What a new ``Generator`` is seeded with (torch's ``default_rng_seed_val``).
DEFAULT_SEED = 67280421310721

_U64 = 1 << 64
_MT_N = 624
#: torch's ``CPUGeneratorImplState``: the legacy ``THGeneratorState`` (initial seed, ``left``,
#: ``seeded``, ``next``, the 624 state words widened to 64 bits, the normal cache's x, y, rho
#: and valid flag) followed by the float normal cache and its flag: 5056 bytes.
_LEGACY = struct.Struct("<QiiQ624Qdddi4x")
_TAIL = struct.Struct("<f?3x")
_STATE_BYTES = _LEGACY.size + _TAIL.size


def _seed_value(seed: Any) -> int:
    """``seed`` as torch's ``manual_seed`` takes it: an int, negative ones wrapped to 64 bits."""
    if not isinstance(seed, (int, np.integer)):
        raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
    seed = int(seed)
    if not -(1 << 63) <= seed < _U64:
        raise ValueError("Overflow when unpacking long long")
    return seed % _U64


def _seeded_engine(seed: int) -> np.random.MT19937:
    """torch's ``mt19937(seed)``: the reference ``init_genrand`` of the seed's low 32 bits."""
    engine = np.random.MT19937(0)
    engine._legacy_seeding(seed & 0xFFFFFFFF)
    return engine


class Generator(np.random.Generator):
    """torch.Generator on the CPU: a stream of random numbers that ``manual_seed`` restarts and
    ``get_state``/``set_state`` save and restore; independent of every other generator."""

    #: torch's cached second value of the last Box-Muller pair drawn one at a time (for a
    #: ``randn`` of fewer than 16 elements): the next such draw returns it.
    _next_double_normal: float | None
    _next_float_normal: float | None

    def __init__(self, device: Any = "cpu") -> None:
        kind = str(getattr(device, "type", device)).split(":")[0]
        if kind != "cpu":  # (torch's message for a device without a generator here)
            raise RuntimeError(f"{kind.upper()} device type not an accelerator.")
        super().__init__(_seeded_engine(DEFAULT_SEED))
        self._initial_seed = DEFAULT_SEED
        self._next_double_normal = None
        self._next_float_normal = None

    @property
    def device(self) -> Any:
        """The generator's device: always the CPU's (its name, ``"cpu"``)."""
        return "cpu"

    def manual_seed(self, seed: int) -> Generator:
        """Restart the stream from ``seed`` (an int; negative ones wrap to 64 bits); returns self."""
        value = _seed_value(seed)
        self.bit_generator.state = _seeded_engine(value).state
        self._initial_seed = value
        self._next_double_normal = self._next_float_normal = None
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy; returns the seed."""
        value = int.from_bytes(os.urandom(8), "little") >> 1  # (non-negative as a signed long)
        self.manual_seed(value)
        return value

    def initial_seed(self) -> int:
        """The seed the stream started from (the last ``manual_seed`` or ``seed``, or the state set)."""
        return self._initial_seed

    def get_state(self) -> Any:
        """The state, as torch's 5056 uint8 bytes (``set_state`` takes it back; so does torch's)."""
        return state_array(self)

    def set_state(self, new_state: Any) -> Generator:
        """Restore a state that ``get_state`` returned (or torch's ``get_state``); returns self."""
        data = new_state if isinstance(new_state, np.ndarray) else getattr(new_state, "data", None)
        if not isinstance(data, np.ndarray) or data.dtype != np.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        if data.size != _STATE_BYTES:
            raise RuntimeError(
                f"Expected a CPUGeneratorImplState of size {_STATE_BYTES} but found the input RNG state size to be {data.size}"
            )
        raw = data.reshape(-1).tobytes()
        fields = _LEGACY.unpack_from(raw)
        initial, left, _seeded, next_ = fields[:4]
        words = np.array(fields[4 : 4 + _MT_N], dtype=np.uint64)
        normal_y, normal_valid = fields[4 + _MT_N + 1], fields[4 + _MT_N + 3]
        float_y, float_valid = _TAIL.unpack_from(raw, _LEGACY.size)
        # torch's word ``state[next]`` is the next one out unless ``left`` runs out first (then
        # the state is twisted): numpy's position is ``next``, or 624 to twist on the next draw
        if (left < 1 or left > _MT_N + 1) or next_ > _MT_N:
            raise RuntimeError("The input RNG state is invalid: its Mersenne Twister position is out of range")
        position = _MT_N if left == 1 else next_
        self.bit_generator.state = {
            "bit_generator": "MT19937",
            "state": {"key": (words & np.uint64(0xFFFFFFFF)).astype(np.uint32), "pos": position},
        }
        self._initial_seed = initial
        self._next_double_normal = normal_y if normal_valid else None
        self._next_float_normal = float_y if float_valid else None
        return self

    def __repr__(self) -> str:
        return f"<aiograd.Generator object at {id(self):#x}>"


def state_array(gen: Generator) -> np.ndarray[Any, Any]:
    """``gen``'s state as torch's ``get_state`` bytes (a uint8 array ``Generator.set_state`` takes)."""
    state = gen.bit_generator.state["state"]
    key, position = state["key"], int(state["pos"])
    next_ = position
    if position == _MT_N and np.array_equal(key, _seeded_engine(gen._initial_seed).state["state"]["key"]):
        next_ = 0  # (just seeded: torch's fresh ``mt19937`` has next 0, not 624; the same stream)
    double_y, float_y = gen._next_double_normal, gen._next_float_normal
    raw = _LEGACY.pack(
        gen._initial_seed, _MT_N + 1 - position, 1, next_, *key.astype(np.uint64).tolist(),
        0.0, 0.0 if double_y is None else double_y, 0.0, double_y is not None,
    ) + _TAIL.pack(0.0 if float_y is None else float_y, float_y is not None)
    return np.frombuffer(raw, dtype=np.uint8).copy()


_rng = Generator()
_rng.seed()  # (the default stream differs from run to run until ``manual_seed``, as torch's)


def generator() -> Generator:
    """The default generator."""
    return _rng


def resolve(gen: Any) -> np.random.Generator:
    """What an op with a ``generator=`` argument draws from: ``gen``, or the default one."""
    if gen is None:
        return _rng
    if not isinstance(gen, np.random.Generator):
        raise TypeError(f"expected a Generator for argument 'generator', got {type(gen).__name__}")
    return gen


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (``rand``, ``randn``, dropout and ``nn.init`` draw from it);
    returns it, as torch.manual_seed does."""
    return _rng.manual_seed(seed)


def seed() -> int:
    """Seed the default generator from the operating system's entropy; returns the seed."""
    return _rng.seed()


def initial_seed() -> int:
    """The default generator's initial seed."""
    return _rng.initial_seed()


def get_state() -> np.ndarray[Any, Any]:
    """The default generator's state (torch's bytes; what ``replaying`` and ``set_state`` take)."""
    return state_array(_rng)


def set_state(state: np.ndarray[Any, Any]) -> None:
    """Set the default generator's state from ``get_state``'s bytes."""
    _rng.set_state(state)


@contextlib.contextmanager
def replaying(state: Any) -> Iterator[None]:
    """Run with the default generator set to ``state`` (None: as it is), then give the
    surrounding state back, also on error and even if the code calls ``manual_seed`` (torch's
    ``fork_rng``). Synchronous code only: no other coroutine draws meanwhile."""
    if state is None:
        yield
        return
    outer_state = state_array(_rng)
    _rng.set_state(state)
    try:
        yield
    finally:
        _rng.set_state(outer_state)
