"""Test helpers: the torch oracle (optional), float64 input makers, a gather for any backend,
and small graph pieces several test modules use."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

import aiograd as ag

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


class Fails(ag.Function):
    """A custom Function whose backward raises ``ValueError("boom in backward")``."""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return x * 2

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        raise ValueError("boom in backward")


class Heavy(ag.Node):
    """An identity node that claims to be expensive: the engine offloads it."""

    def cost(self, grads: Any) -> float:
        return 1e12

    def apply(self, grads: Any) -> Any:
        return [grads[0]] * len(self.next_edges)


class Nested(ag.Function):
    """A custom Function whose backward runs a backward of its own (reentrant): the gradient of
    ``x * 1`` times d(sum(x * x))/dx, so ``x.grad`` is ``2 * x``."""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return x * 1

    @staticmethod
    async def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved_tensors
        with ag.enable_grad():
            y = x.detach().requires_grad_()
            (g,) = await ag.grad((y * y).sum(), y)
        return grad * g


class Blocks(ag.Function):
    """A custom Function whose async backward waits until cancelled: it sets ``Blocks.started``
    (an asyncio.Event the test provides) when it begins, and appends to ``Blocks.cancelled``
    when it is cancelled."""

    started: Any
    cancelled: list[bool] = []

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return x * 1

    @staticmethod
    async def backward(ctx: Any, grad: Any) -> Any:
        Blocks.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            Blocks.cancelled.append(True)
            raise
        return grad
