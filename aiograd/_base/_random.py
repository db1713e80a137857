"""The random generators: ``Generator`` (torch.Generator's seeding and state, on numpy's PCG64)
and the default one behind ``rand``, ``randn``, dropout's masks and ``nn.init`` (torch's default
CPU generator), and the means to replay it.

It lives at the bottom of the package so that ops (dropout) and factories draw from the same
stream, and checkpointing can replay that stream for a recomputation (``preserve_rng_state``).
A ``Generator`` is a ``numpy.random.Generator``, so anything that takes numpy's (``nn.init``'s
``generator=``) takes it too. Its state here is a uint8 array; the public ``aiograd.Generator``
(``aiograd/_ops/random_ops.py``) hands it out as a uint8 tensor, as torch does.
"""

from __future__ import annotations

import contextlib
import os
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
#: The state's bytes: PCG64's 128-bit state and increment, its cached half word (flag and
#: value), and the initial seed (torch's state carries its seed too).
_STATE_BYTES = 16 + 16 + 1 + 4 + 8


def _seed_value(seed: Any) -> int:
    """``seed`` as torch's ``manual_seed`` takes it: an int, negative ones wrapped to 64 bits."""
    if not isinstance(seed, (int, np.integer)):
        raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
    seed = int(seed)
    if not -(1 << 63) <= seed < _U64:
        raise ValueError("Overflow when unpacking long long")
    return seed % _U64


class Generator(np.random.Generator):
    """torch.Generator on the CPU: a stream of random numbers that ``manual_seed`` restarts and
    ``get_state``/``set_state`` save and restore; independent of every other generator."""

    def __init__(self, device: Any = "cpu") -> None:
        kind = str(getattr(device, "type", device)).split(":")[0]
        if kind != "cpu":  # (torch's message for a device without a generator here)
            raise RuntimeError(f"{kind.upper()} device type not an accelerator.")
        super().__init__(np.random.PCG64(DEFAULT_SEED))
        self._initial_seed = DEFAULT_SEED

    @property
    def device(self) -> Any:
        """The generator's device: always the CPU's (its name, ``"cpu"``)."""
        return "cpu"

    def manual_seed(self, seed: int) -> Generator:
        """Restart the stream from ``seed`` (an int; negative ones wrap to 64 bits); returns self."""
        value = _seed_value(seed)
        self.bit_generator.state = np.random.PCG64(value).state
        self._initial_seed = value
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy; returns the seed."""
        value = int.from_bytes(os.urandom(8), "little") >> 1  # (non-negative as a signed long)
        self.manual_seed(value)
        return value

    def initial_seed(self) -> int:
        """The seed the stream started from (the last ``manual_seed``, ``seed`` or state set)."""
        return self._initial_seed

    def get_state(self) -> Any:
        """The state, as a uint8 array (``set_state`` takes it back)."""
        return state_array(self)

    def set_state(self, new_state: Any) -> Generator:
        """Restore a state that ``get_state`` returned; returns self."""
        data = new_state if isinstance(new_state, np.ndarray) else getattr(new_state, "data", None)
        if not isinstance(data, np.ndarray) or data.dtype != np.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        if data.size != _STATE_BYTES:
            raise RuntimeError(
                f"Expected a CPUGeneratorImplState of size {_STATE_BYTES} but found the input RNG state size to be {data.size}"
            )
        raw = data.reshape(-1).tobytes()
        self.bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": int.from_bytes(raw[0:16], "little"), "inc": int.from_bytes(raw[16:32], "little")},
            "has_uint32": raw[32],
            "uinteger": int.from_bytes(raw[33:37], "little"),
        }
        self._initial_seed = int.from_bytes(raw[37:45], "little")
        return self

    def __repr__(self) -> str:
        return f"<aiograd.Generator object at {id(self):#x}>"


def state_array(gen: Generator) -> np.ndarray[Any, Any]:
    """``gen``'s state as the uint8 array ``Generator.set_state`` takes."""
    s = gen.bit_generator.state
    raw = (
        s["state"]["state"].to_bytes(16, "little") + s["state"]["inc"].to_bytes(16, "little")
        + bytes([s["has_uint32"]]) + int(s["uinteger"]).to_bytes(4, "little") + gen._initial_seed.to_bytes(8, "little")
    )
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


def get_state() -> Any:
    """The default generator's state, as numpy's dict (what ``replaying`` takes)."""
    return _rng.bit_generator.state


def set_state(state: Any) -> None:
    """Set the default generator's state from numpy's dict (``get_state``'s)."""
    _rng.bit_generator.state = state


@contextlib.contextmanager
def replaying(state: Any) -> Iterator[None]:
    """Run with the default generator set to ``state`` (None: as it is), then give the
    surrounding state back, also on error and even if the code calls ``manual_seed`` (torch's
    ``fork_rng``). Synchronous code only: no other coroutine draws meanwhile."""
    global _rng
    if state is None:
        yield
        return
    outer_rng = _rng
    outer_state = outer_rng.bit_generator.state
    outer_seed = outer_rng._initial_seed
    outer_rng.bit_generator.state = state
    try:
        yield
    finally:
        _rng = outer_rng
        outer_rng.bit_generator.state = outer_state
        outer_rng._initial_seed = outer_seed
