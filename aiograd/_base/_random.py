"""The default random generator: the one behind ``rand``, ``randn``, dropout's masks and
``nn.init`` (torch's default CPU generator), and the means to replay it.

It lives at the bottom of the package so that ops (dropout) and factories draw from the same
stream, and checkpointing can replay that stream for a recomputation (``preserve_rng_state``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = ["generator", "get_state", "manual_seed", "replaying", "set_state"]

_rng = np.random.default_rng()


def generator() -> np.random.Generator:
    """The default generator (replaced by ``manual_seed``: do not keep it across a reseed)."""
    return _rng


def manual_seed(seed: int) -> None:
    """Seed the default generator: ``rand``, ``randn``, dropout and ``nn.init`` draw from it."""
    global _rng
    _rng = np.random.default_rng(seed)


def get_state() -> Any:
    """The default generator's state (torch.get_rng_state)."""
    return _rng.bit_generator.state


def set_state(state: Any) -> None:
    """Set the default generator's state (torch.set_rng_state)."""
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
    outer_rng.bit_generator.state = state
    try:
        yield
    finally:
        _rng = outer_rng
        outer_rng.bit_generator.state = outer_state
