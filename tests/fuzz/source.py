"""Where a program's random choices come from: one interface, two implementations.

Hypothesis (``HypothesisSource``) drives the pytest test, so a failure shrinks to a small
program; a seeded numpy generator (``RngSource``) drives the collecting hunt, which must not
stop at the first difference. Every choice shrinks toward its first option / its low end / no,
so the "plain" program (float64, no views, no NaNs) is what Hypothesis shrinks to.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

import numpy as np

T = TypeVar("T")


class Source(Protocol):
    def integer(self, lo: int, hi: int) -> int:
        """An int in [lo, hi] (inclusive)."""

    def chance(self, p: float) -> bool:
        """True with probability ``p`` (shrinks to False)."""

    def seed(self) -> int:
        """A seed for bulk values (the numbers inside a tensor)."""


def pick(src: Source, options: Sequence[T]) -> T:
    """One of ``options`` (shrinks toward the first)."""
    return options[src.integer(0, len(options) - 1)]


def weighted(src: Source, options: Sequence[tuple[T, int]]) -> T:
    """One of ``options`` by integer weight (shrinks toward the first)."""
    total = sum(w for _, w in options)
    r = src.integer(0, total - 1)
    for value, w in options:
        if r < w:
            return value
        r -= w
    raise AssertionError("unreachable")


class RngSource:
    """Choices from a seeded numpy generator: the hunt's source."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def integer(self, lo: int, hi: int) -> int:
        return int(self.rng.integers(lo, hi + 1))

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def seed(self) -> int:
        return int(self.rng.integers(0, 2**31))


class HypothesisSource:
    """Choices drawn from Hypothesis's ``st.data()``: the pytest test's source (shrinks)."""

    def __init__(self, data: Any) -> None:
        from hypothesis import strategies as st

        self.data, self.st = data, st

    def integer(self, lo: int, hi: int) -> int:
        return int(self.data.draw(self.st.integers(lo, hi)))

    def chance(self, p: float) -> bool:
        # 0 (what Hypothesis shrinks to) means "no"
        return self.data.draw(self.st.integers(0, 999)) >= 1000 - round(p * 1000)

    def seed(self) -> int:
        return int(self.data.draw(self.st.integers(0, 2**31 - 1)))
