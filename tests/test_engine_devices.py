"""The engine across devices: NodeTasks go to their device's queue and worker (sim devices stand
in for GPUs), GraphTasks share those workers, owners are woken, errors and results come back."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import aiograd as ag


def two_device_graph(x: ag.Tensor) -> ag.Tensor:
    """cpu -> sim:0 -> sim:1 -> cpu, with a diamond spanning sim:0 and sim:1."""
    a = x.to("sim:0") * 3.0
    left = a.tanh().to("sim:1")
    right = (a * a).to("sim:1")
    return ((left * right).sin().to("cpu") + x).sum()


async def test_cross_device_graph_matches_the_cpu_gradient():
    values = np.array([0.3, -0.7, 1.1])
    x = ag.tensor(values, requires_grad=True)
    await two_device_graph(x).backward()
    ref_x = ag.tensor(values, requires_grad=True)
    a = ref_x * 3.0
    await ((a.tanh() * (a * a)).sin() + ref_x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), ref_x.grad.numpy(), rtol=1e-12)
    assert x.grad.device == ag.device("cpu")
    queues = ag.get_engine()._device_queues
    assert set(map(str, queues)) == {"sim:0", "sim:1"}


async def test_nodes_run_on_their_devices_worker():
    where: list[tuple[str, str]] = []
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    a = x.to("sim:0")
    y = a * 2.0
    y.register_hook(lambda g: where.append(("sim:0 node", asyncio.current_task().get_name())))
    x.register_hook(lambda g: where.append(("cpu leaf", asyncio.current_task().get_name())))
    await y.to("cpu").sum().backward()
    assert where[0] == ("sim:0 node", "aiograd worker sim:0")
    assert where[1][0] == "cpu leaf" and not where[1][1].startswith("aiograd worker")


async def test_many_graph_tasks_share_the_device_workers():
    async def one(i: int) -> np.ndarray:
        x = ag.tensor([0.1 * i, -0.2 * i], requires_grad=True)
        (g,) = await ag.grad(two_device_graph(x), x)
        return g.numpy()

    results = await asyncio.gather(*(one(i) for i in range(30)))
    for i, g in enumerate(results):
        x = ag.tensor([0.1 * i, -0.2 * i], requires_grad=True)
        a = x * 3.0
        (ref,) = await ag.grad(((a.tanh() * (a * a)).sin() + x).sum(), x)
        np.testing.assert_allclose(g, ref.numpy(), rtol=1e-12)


async def test_an_error_on_a_device_worker_fails_only_its_graph_task():
    class Boom(ag.Node):
        def apply(self, grads):
            raise FloatingPointError("boom on sim:1")

    async def failing() -> None:
        x = ag.tensor([1.0], requires_grad=True)
        on_sim = (x.to("sim:1") * 1.0)
        broken = ag.Tensor._wrap(on_sim.data.copy())
        broken._device = on_sim._device
        broken._requires_grad, broken.grad_fn = True, Boom(((on_sim.grad_fn, 0),))
        await broken.to("cpu").sum().backward()

    async def fine() -> float:
        x = ag.tensor([2.0], requires_grad=True)
        await (x.to("sim:1") * 5.0).to("cpu").sum().backward()
        return x.grad.item()

    results = await asyncio.gather(failing(), fine(), return_exceptions=True)
    assert isinstance(results[0], FloatingPointError)
    assert "while running Boom" in results[0].__notes__
    assert results[1] == 5.0


async def test_a_graph_task_completed_by_a_device_worker_wakes_its_owner():
    # The last node (the leaf's accumulator) lives on sim:0, so the worker completes the task.
    x = ag.tensor([1.0, 2.0], device="sim:0", requires_grad=True)
    await (x * x).sum().backward()
    assert x.grad.device == ag.device("sim:0") and x.grad.tolist() == [2.0, 4.0]


async def test_cancelling_the_owner_drops_its_device_work():
    gate = asyncio.Event()

    async def slow_hook(g):
        await gate.wait()
        return g

    x = ag.tensor([1.0], requires_grad=True)
    y = x.to("sim:0") * 2.0
    y.register_hook(slow_hook)
    task = asyncio.create_task(y.to("cpu").sum().backward())
    for _ in range(10):
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    gate.set()
    for _ in range(10):
        await asyncio.sleep(0)
    assert x.grad is None
    await (x.to("sim:0") * 2.0).to("cpu").sum().backward()  # the workers keep serving
    assert x.grad.item() == 2.0


async def test_engine_aclose_stops_workers_and_a_fresh_engine_takes_over():
    gate = asyncio.Event()

    async def blocked(g):
        await gate.wait()

    x = ag.tensor([1.0], requires_grad=True)
    y = x.to("sim:0") * 2.0
    y.register_hook(blocked)
    backward = asyncio.create_task(y.to("cpu").sum().backward())
    for _ in range(10):
        await asyncio.sleep(0)
    engine = ag.get_engine()
    backward.cancel()
    await engine.aclose()
    with pytest.raises(asyncio.CancelledError):
        await backward
    assert all(t.done() for t in asyncio.all_tasks() if t.get_name().startswith("aiograd worker"))
    assert ag.get_engine() is not engine
    await (x.to("sim:0") * 3.0).to("cpu").sum().backward()
    assert x.grad.item() == 3.0
