"""The shuffle debug mode: equal-priority ready NodeTasks run in a seeded random order.

PyTorch's ready queue orders NodeTasks by reentrant depth, then sequence number, and promises
nothing among equal keys: leaves made ready by one node, results of offloaded nodes, NodeTasks
of concurrent calls on shared nodes. Shuffling that order must change nothing a user relies on,
and under ``use_deterministic_algorithms(True)`` the gradients must stay bitwise equal.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import aiograd as ag
from aiograd.executors import ThreadExecutor

LEAVES = 12


async def accumulation_order() -> list[int]:
    """The order in which 12 leaves made ready at once (by one StackBackward0) accumulate."""
    leaves = [ag.tensor([float(i)], requires_grad=True) for i in range(LEAVES)]
    order: list[int] = []
    for i, leaf in enumerate(leaves):
        leaf.register_post_accumulate_grad_hook(lambda t, i=i: order.append(i))
    await ag.stack(leaves).sum().backward()
    assert all(leaf.grad.item() == 1.0 for leaf in leaves)
    return order


def run_with_seed(seed: int | None, coroutine_fn):  # type: ignore[no-untyped-def]
    ag.set_shuffle_seed(seed)
    try:
        return asyncio.run(coroutine_fn())
    finally:
        ag.set_shuffle_seed(None)


def test_without_shuffling_equal_priority_nodes_run_in_the_order_they_became_ready():
    assert run_with_seed(None, accumulation_order) == list(range(LEAVES))


def test_shuffling_is_random_but_reproducible_per_seed():
    orders = {seed: run_with_seed(seed, accumulation_order) for seed in range(5)}
    for seed, order in orders.items():
        assert sorted(order) == list(range(LEAVES))
        assert run_with_seed(seed, accumulation_order) == order  # same seed, same order
    assert len({tuple(order) for order in orders.values()}) > 1  # it does shuffle


async def test_engine_takes_the_seed_it_is_given_and_reports_it(aiograd_shuffle_seed):
    engine = ag.Engine(shuffle_seed=42)
    assert engine.statistics().shuffle_seed == 42
    assert ag.Engine().statistics().shuffle_seed is None  # the process default: off
    ag.set_shuffle_seed(3)
    assert ag.Engine().statistics().shuffle_seed == 3
    assert ag.get_shuffle_seed() == 3


def test_a_seed_must_be_an_int():
    with pytest.raises(TypeError, match="shuffle seed must be an int or None, got str"):
        ag.set_shuffle_seed("1")  # type: ignore[arg-type]


async def fan_in_gradient() -> bytes:
    """x feeds eight matrix products whose backward nodes run in the thread pool at once, so
    their contributions to x's gradient arrive in whatever order the threads and the shuffle
    give; returns the gradient's bytes."""
    rng = np.random.default_rng(0)
    engine = ag.get_engine()
    engine.executors["cpu"] = ThreadExecutor(2)
    engine.offload_threshold = engine.stall_threshold = 1.0  # every product leaves the loop
    x = ag.tensor(rng.standard_normal((32, 48)), requires_grad=True)
    ws = [ag.tensor(rng.standard_normal((48, 40))) for _ in range(8)]
    loss = sum(((x @ w).tanh() * (k + 1.0)).sum() for k, w in enumerate(ws))
    await loss.backward()
    assert engine.statistics().nodes_offloaded >= 8
    engine.executors["cpu"].close()
    return x.grad.numpy().tobytes()


@pytest.fixture
def deterministic():
    ag.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        ag.use_deterministic_algorithms(False)


def test_deterministic_mode_gives_bitwise_equal_gradients_under_any_shuffle(deterministic):
    results = {run_with_seed(seed, fan_in_gradient) for seed in (None, 0, 1, 2, 3)}
    assert len(results) == 1
