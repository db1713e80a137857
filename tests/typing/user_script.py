"""A user's script, checked by ``mypy --strict`` and pyright in ``tests/test_typing.py``.

It exercises the public surface the way an application would; it must type-check cleanly. It is
also run (``test_user_script_runs``), so every line is real, working aiograd code.
"""

from __future__ import annotations

import numpy as np

import aiograd as ag
import aiograd.nn.functional as F
from aiograd import Function, Tensor, executors, nn, profiler, serving, viz
from aiograd.function import FunctionCtx, once_differentiable
from aiograd.testing import gradcheck


class Exp(Function):
    """A custom Function with a sync backward."""

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor) -> Tensor:
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
        (y,) = ctx.saved_tensors
        return grad * y


class Scale(Function):
    """A custom Function with an ``async def`` backward and a constant argument kept on ctx."""

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor, k: float) -> Tensor:
        ctx.k = k
        return x * k

    @staticmethod
    @once_differentiable
    async def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None]:
        k: float = ctx.k
        return grad * k, None


def double_hook(grad: Tensor) -> Tensor:
    return grad * 2


async def async_hook(grad: Tensor) -> None:
    assert grad.shape == (3, 2)


def sum_of_squares(t: Tensor) -> Tensor:
    return (t * t).sum()


async def main() -> float:
    ag.manual_seed(0)
    w = ag.randn(3, 2, requires_grad=True)
    x = ag.tensor(np.ones((4, 3)), dtype=ag.float64)
    b = ag.zeros(2, requires_grad=True)

    # operators, reflected and in-place ones, comparisons, indexing
    h: Tensor = F.linear(x, w.T, b).tanh()
    h = 1.0 - h * 2 + h / 3 - 2 ** h.clamp(max=1.0)
    h = (x @ w + b).relu() + abs(-h) + (+h)
    mask: Tensor = h > 0
    picked = h[mask]
    h2 = h.clone()
    h2[0] = 0.0
    h2 += 1
    h2 *= 0.5
    first, rest = h2.split([1, 3])
    stacked = ag.cat([first, rest], dim=0).reshape(2, 4).transpose(0, 1).sum(dim=1)
    values, indices = h.max(dim=1)
    top: Tensor = h.max()

    # a loss, hooks, backward
    handle = w.register_hook(double_hook)
    w.register_hook(async_hook)
    logits = h + Exp.apply(stacked.unsqueeze(1)) + Scale.apply(values.unsqueeze(1), 0.5)
    target = ag.tensor([0, 1, 1, 0])
    loss = F.cross_entropy(logits, target) + F.mse_loss(h, ag.zeros_like(h)) + top + picked.sum()
    await loss.backward(retain_graph=True)
    handle.remove()
    assert w.grad is not None and b.grad is not None

    # grad, higher order, no_grad
    (g,) = await ag.grad((w * w).sum(), w, create_graph=True)
    assert g is not None
    (hess,) = await ag.grad(g.sum(), [w])
    with ag.no_grad():
        w.sub_(0.1 * w.grad)
    assert not (w * 2).requires_grad or True
    assert await gradcheck(sum_of_squares, [ag.randn(3, requires_grad=True)])
    assert hess is not None and indices.dtype == np.int64
    return float(loss.item())


@serving.batch(max_batch_size=8)
async def saliency(xs: list[np.ndarray]) -> list[np.ndarray]:
    """A batched saliency: each request's gradient from one backward."""
    model = nn.Sequential(nn.Linear(4, 2))
    assert serving.batch_coupled_modules(model) == []
    return [r.grad.numpy() for r in await serving.per_request_grad(model, xs)]


async def serve() -> np.ndarray:
    g: np.ndarray = await saliency(np.zeros((2, 4)))
    joined = serving.concat_requests([np.zeros((2, 4)), np.ones((1, 4))])
    pieces: list[Tensor] = joined.split(joined.tensor)
    arrays: list[np.ndarray] = joined.split(np.zeros(3))
    await serving.check_rows_independent(lambda t: t * 2, np.zeros((3, 4)))
    stats: serving.BatchStatistics = saliency.statistics()
    assert len(pieces) == len(arrays) == 2 and stats.items >= 1
    return g


async def observe() -> str:
    """The graph as DOT, a trace of one backward, and its progress."""
    model = nn.Sequential(nn.Linear(4, 2))
    loss = model(ag.randn(3, 4)).sum()
    dot: str = viz.to_dot(loss, params=model.named_parameters(), inputs=[model[0].weight])
    with profiler.profile() as prof:
        await loss.backward(retain_graph=True)
    events: list[profiler.NodeEvent] = prof.events()
    (task,) = prof.graph_tasks()
    reports: list[profiler.Progress] = []
    it = profiler.progress(loss.backward(retain_graph=True))
    async for report in it:
        reports.append(report)
    with profiler.on_progress(reports.append):
        await loss.backward()
    assert events and task.outcome == "ok" and reports[-1].done == reports[-1].total
    return dot


def cluster_executor(client: object) -> int:
    """A DaskExecutor's settings and counters (``client``: a distributed.Client; nothing is sent
    until a backward ships a node, so any object will do to make one)."""
    executor = executors.DaskExecutor(client, ship_threshold=50e6, ns_per_byte=1.0, local=executors.ThreadExecutor(2))
    shipped: int = executor.nodes_shipped + executor.nodes_kept + executor.arrays_scattered
    executor.close()
    return shipped


def blocking() -> None:
    """Code without an event loop uses aiograd.sync."""
    w = ag.randn(2, requires_grad=True)
    ag.sync.backward((w * w).sum())
    (g,) = ag.sync.grad((w * 3).sum(), w)
    assert g is not None and w.grad is not None


if __name__ == "__main__":
    print(ag.run(main()))
    print(ag.run(serve()))
    print(ag.run(observe()).splitlines()[0])
    blocking()
    print(cluster_executor(object()))
