"""Test helpers: the torch oracle (optional) and float64 input makers."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

try:
    import torch
except ImportError:  # pragma: no cover - the oracle is optional
    torch = None

requires_torch = pytest.mark.skipif(torch is None, reason="torch not installed (the oracle extra)")


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def to_torch(x: Any, requires_grad: bool = True) -> Any:
    """A torch leaf with the same data as an aiograd tensor or array."""
    data = x.data if hasattr(x, "data") and not isinstance(x, np.ndarray) else x
    return torch.tensor(np.asarray(data), requires_grad=requires_grad)



async def gather(*awaitables: Any, return_exceptions: bool = False) -> list[Any]:
    """``asyncio.gather`` for any backend (asyncio, uvloop, trio): the awaitables run
    concurrently in an anyio task group, started in order; the results come back in order. An
    error cancels the others and is raised (in an ExceptionGroup), unless ``return_exceptions``."""
    import anyio

    results: list[Any] = [None] * len(awaitables)

    async def run(i: int, awaitable: Any) -> None:
        try:
            results[i] = await awaitable
        except Exception as exc:
            if not return_exceptions:
                raise
            results[i] = exc

    async with anyio.create_task_group() as group:
        for i, awaitable in enumerate(awaitables):
            group.start_soon(run, i, awaitable)
    return results
