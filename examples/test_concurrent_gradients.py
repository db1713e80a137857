"""Testing concurrent graph tasks with aiograd's pytest plugin: an example test module.

A service computes a saliency map (the gradient of the top class score with respect to the
input) per request, many requests at once on one event loop. These tests check what such a service
relies on: concurrent requests get exactly the gradients they would get one at a time, and a
cancelled request changes nothing for the others. The ``aiograd`` mark makes the plugin run each
test on asyncio, uvloop and trio, under three schedules of the engine's ready nodes (the shuffle
seeds), and fail any test that leaves a task, a GraphTask or queued work behind.

Run it with ``python -m pytest examples/test_concurrent_gradients.py -v`` (docs/testing.md).
"""

from __future__ import annotations

import anyio
import numpy as np
import pytest

import aiograd as ag
from aiograd import nn

pytestmark = pytest.mark.aiograd(shuffle_seeds=range(3))


def make_model() -> nn.Module:
    ag.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 4))


async def saliency(model: nn.Module, x: ag.Tensor, *, hook: object = None) -> np.ndarray:
    """One request: d(top class score)/d(input), for each row of ``x``."""
    x = x.detach().requires_grad_()
    score = model(x).max(dim=1).values.sum()
    if hook is not None:
        score.register_hook(hook)
    (grad,) = await ag.grad(score, [x])
    return grad.numpy()


async def slow_down(grad: ag.Tensor) -> ag.Tensor:
    """A hook that yields once to the event loop, as a backward with real work would. (Hooks run
    on aiograd's asyncio loop, under trio too, where anyio says so: anyio.sleep works in both.)"""
    await anyio.sleep(0)
    return grad


async def test_concurrent_requests_get_the_gradients_of_sequential_ones() -> None:
    model = make_model()
    requests = [ag.randn(4, 8, dtype=ag.float64) for _ in range(16)]
    alone = [await saliency(model, x) for x in requests]

    together: list[np.ndarray | None] = [None] * len(requests)

    async def serve(i: int) -> None:
        together[i] = await saliency(model, requests[i])

    # anyio's task group, not asyncio.gather: the same test then runs on trio too.
    async with anyio.create_task_group() as group:
        for i in range(len(requests)):
            group.start_soon(serve, i)
    for got, want in zip(together, alone):
        np.testing.assert_array_equal(got, want)  # bitwise: each request is its own GraphTask


async def test_a_cancelled_request_leaves_the_others_and_the_model_alone() -> None:
    model = make_model()
    x = ag.randn(4, 8, dtype=ag.float64)
    want = await saliency(model, x)

    with anyio.CancelScope() as scope:
        scope.cancel()  # the client goes away while its backward runs
        await saliency(model, x, hook=slow_down)
    assert scope.cancelled_caught

    np.testing.assert_array_equal(await saliency(model, x), want)
    assert all(p.grad is None for p in model.parameters())  # grad() never touches .grad
