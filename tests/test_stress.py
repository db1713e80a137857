"""A bounded stress test: a random mix of backward and grad calls on one loop, some with an error
injected in a node, some cancelled at random moments, some through a sim device, with nodes
offloaded to threads. Every completed call is correct, every failed one raises its injected
error, every cancelled one raises CancelledError, and afterwards no task, GraphTask or graph
memory remains. Atomic backward calls into one shared leaf add exactly the completed ones."""

from __future__ import annotations

import asyncio
import gc
import weakref

import numpy as np
import pytest

import aiograd as ag
from aiograd import Function
from aiograd._engine import GraphTask

CALLS = 400


class InjectedError(Exception):
    pass


class Park(Function):
    """Identity whose backward yields to the loop a few times: a moment to be cancelled in."""

    @staticmethod
    def forward(ctx, x, turns):
        ctx.turns = turns
        return x.clone()

    @staticmethod
    async def backward(ctx, g):
        for _ in range(ctx.turns):
            await asyncio.sleep(0)
        return g, None


class Fail(Function):
    @staticmethod
    def forward(ctx, x, tag):
        ctx.tag = tag
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        raise InjectedError(ctx.tag)


OPS = (
    lambda h, w: h.tanh(),
    lambda h, w: h.sin() * 0.5,
    lambda h, w: h @ w,
    lambda h, w: h * h * 0.1,
    lambda h, w: (h + 1.0).relu(),
    lambda h, w: h.exp() * 0.01,
)


def make_plan(rng: np.random.Generator, i: int) -> dict:
    return {
        "ops": [2, *rng.integers(len(OPS), size=rng.integers(1, 12)).tolist()],  # w is used
        "park": int(rng.integers(0, 4)),
        "device": bool(rng.random() < 0.3),
        "fail": bool(rng.random() < 0.15),
        "mode": ("grad", "backward", "atomic")[int(rng.integers(3))],
        "cancel_after": int(rng.integers(0, 8)) if rng.random() < 0.25 else None,
        "x": rng.standard_normal((16, 64)) * 0.5,
        "w": rng.standard_normal((64, 64)) * 0.1,
        "k": float(i % 5 + 1),
    }


def build(plan: dict, x: ag.Tensor, w: ag.Tensor, shared: ag.Tensor, tag: int, inject: bool):
    h = x.to("sim:0") if plan["device"] else x
    wd = w.to("sim:0") if plan["device"] else w
    for op in plan["ops"]:
        h = OPS[op](h, wd)
    if plan["park"]:
        h = Park.apply(h, plan["park"])
    if inject and plan["fail"]:
        h = Fail.apply(h, tag)
    loss = h.to("cpu").sum() if plan["device"] else h.sum()
    return loss + (shared * plan["k"]).sum()


async def reference(plan: dict) -> tuple[np.ndarray, np.ndarray]:
    x = ag.tensor(plan["x"], requires_grad=True)
    w = ag.tensor(plan["w"], requires_grad=True)
    gx, gw = await ag.grad(build(plan, x, w, ag.zeros(4), 0, inject=False), [x, w])
    return gx.numpy(), gw.numpy()


@pytest.mark.parametrize(
    ("seed", "aiograd_shuffle_seed"), [(0, None), (1, None), (2, 20), (3, 30)], indirect=["aiograd_shuffle_seed"]
)
# Not under the anyio variant: asyncio's own loop again (the stress uses asyncio's tasks), at
# seconds a run.
@pytest.mark.aiograd(backends=["asyncio", "uvloop"])
@pytest.mark.slow
async def test_stress_mix_of_calls_errors_and_cancellations(seed, aiograd_shuffle_seed):
    engine = ag.get_engine()
    engine.offload_threshold = 1_000  # small enough that matmul nodes go to the thread pool
    engine.stall_threshold = 1_000
    engine.nodes_per_turn = 16  # many turns: calls interleave
    rng = np.random.default_rng(seed)
    plans = [make_plan(rng, i) for i in range(CALLS)]
    expected = [await reference(plan) for plan in plans]
    shared = ag.tensor(np.zeros(4), requires_grad=True)
    outcomes: list[str] = [""] * CALLS
    leaves: list[tuple[ag.Tensor, ag.Tensor] | None] = [None] * CALLS

    async def call(i: int) -> None:
        plan = plans[i]
        x = ag.tensor(plan["x"], requires_grad=True)
        w = ag.tensor(plan["w"], requires_grad=True)
        leaves[i] = (x, w)
        loss = build(plan, x, w, shared, i, inject=True)
        if plan["mode"] == "grad":
            gx, gw = await ag.grad(loss, [x, w])
            np.testing.assert_allclose(gx.numpy(), expected[i][0], rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(gw.numpy(), expected[i][1], rtol=1e-10, atol=1e-12)
        elif plan["mode"] == "backward":
            await loss.backward(inputs=[x, w])
        else:
            await loss.backward(atomic=True)

    async def run(i: int) -> None:
        task = asyncio.get_running_loop().create_task(call(i))
        if plans[i]["cancel_after"] is not None:
            for _ in range(plans[i]["cancel_after"]):
                await asyncio.sleep(0)
            task.cancel()
        try:
            await task
            outcomes[i] = "done"
        except asyncio.CancelledError:
            outcomes[i] = "cancelled"
        except InjectedError as exc:
            assert exc.args == (i,), (exc.args, i)
            assert plans[i]["fail"]
            outcomes[i] = "failed"

    await asyncio.gather(*(run(i) for i in range(CALLS)))

    for i, plan in enumerate(plans):
        if leaves[i] is None:  # cancelled before it started
            assert outcomes[i] == "cancelled", i
            continue
        x, w = leaves[i]
        if outcomes[i] == "done":
            assert not plan["fail"], i
            if plan["mode"] != "grad":
                np.testing.assert_allclose(x.grad.numpy(), expected[i][0], rtol=1e-10, atol=1e-12)
                np.testing.assert_allclose(w.grad.numpy(), expected[i][1], rtol=1e-10, atol=1e-12)
        else:
            assert outcomes[i] in ("cancelled", "failed"), (i, outcomes[i])
            if plan["mode"] == "atomic":
                assert x.grad is None and w.grad is None, i
    # Atomic calls commit all or nothing: the shared leaf holds exactly the completed ones'.
    committed = sum(p["k"] for p, o in zip(plans, outcomes) if p["mode"] == "atomic" and o == "done")
    staged_only = [p for p in plans if p["mode"] == "atomic"]
    assert staged_only and 0 < committed
    non_atomic = [
        p["k"] for p, o in zip(plans, outcomes) if p["mode"] == "backward" and o == "done"
    ]
    assert non_atomic  # backward(inputs=[x, w]) leaves the shared leaf alone
    np.testing.assert_array_equal(shared.grad.numpy(), [committed] * 4)
    assert {"done", "cancelled", "failed"} <= set(outcomes)
    assert engine.statistics().nodes_offloaded > 0  # the executor path was exercised

    # Nothing left: no GraphTask, no queued or in-flight work, the graphs' memory released.
    graph_refs = [weakref.ref(pair[0]) for pair in leaves if pair is not None]
    leaves.clear()
    del x, w
    for _ in range(3):
        await asyncio.sleep(0)  # finished tasks' done callbacks

    async def in_flight_finished() -> None:
        while engine.statistics().nodes_in_flight:
            await asyncio.sleep(0)  # offloaded math of cancelled calls finishing in the threads

    # A bound, so that a lost executor result fails here (with the statistics) instead of hanging.
    try:
        await asyncio.wait_for(in_flight_finished(), timeout=60)
    except TimeoutError:
        pytest.fail(f"offloaded nodes never came back: {engine.statistics()}")
    gc.collect()
    assert not any(type(o) is GraphTask for o in gc.get_objects())
    assert all(ref() is None for ref in graph_refs)
    stats = engine.statistics()
    assert stats.graph_tasks_in_flight == 0 and stats.nodes_in_flight == 0
    assert all(depth == 0 for depth in stats.queue_depths.values()), stats.queue_depths
