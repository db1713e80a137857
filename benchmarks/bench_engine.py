"""The engine's own cost per node, with the math taken out.

A 100,000-node chain of identity nodes (``apply`` returns its input list) is backwarded; what is
left is the engine's bookkeeping, which should cost a few microseconds: the ready-queue push and pop,
the dependency update, the InputBuffer, the saved-tensor release check. It also times the fixed
cost of one small ``backward()`` call (argument checks, GraphTask, root gradient), next to torch's
for the same call when torch is installed.

    python benchmarks/bench_engine.py
    python benchmarks/bench_engine.py --watch   # the chain again, profiled, with progress, logged

``--watch`` times the identity chain with nothing watching it, inside
``aiograd.profiler.profile()``, inside ``aiograd.profiler.on_progress(...)``, and with the
``aiograd`` logger at DEBUG (to a NullHandler), interleaved: what watching costs per node.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np
from _timing import Timer

# This checkout's aiograd, not whichever is installed (as the other benchmarks do).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import aiograd as ag  # noqa: E402
from aiograd._core._node import Node, grad_accumulator  # noqa: E402

CHAIN = 100_000
REPEATS = 5
CALLS = 5_000


class Identity(Node):
    def apply(self, grads):  # type: ignore[no-untyped-def]
        return grads


def identity_chain() -> ag.Tensor:
    x = ag.tensor([1.0], requires_grad=True)
    node: Node = Identity(((grad_accumulator(x), 0),))
    for _ in range(CHAIN - 1):
        node = Identity(((node, 0),))
    root = ag.Tensor._wrap(np.ones(1))
    root._requires_grad, root.grad_fn = True, node
    return root


async def engine_us_per_node() -> float:
    times = []
    for _ in range(REPEATS):
        root = identity_chain()
        with Timer() as timer:
            await root.backward(ag.tensor([1.0]))
        times.append(timer.seconds / (CHAIN + 1) * 1e6)
    return statistics.median(times)


async def watched_us_per_node(mode: str) -> float:
    import logging

    import aiograd.profiler

    root = identity_chain()
    logger = logging.getLogger("aiograd")
    if mode == "DEBUG logs":
        logger.setLevel(logging.DEBUG)
    try:
        with Timer() as timer:
            if mode == "profile()":
                with aiograd.profiler.profile():
                    await root.backward(ag.tensor([1.0]))
            elif mode == "on_progress()":
                with aiograd.profiler.on_progress(lambda progress: None):
                    await root.backward(ag.tensor([1.0]))
            else:
                await root.backward(ag.tensor([1.0]))
    finally:
        logger.setLevel(logging.NOTSET)
    return timer.seconds / (CHAIN + 1) * 1e6


async def watch_costs() -> None:
    modes = ["nothing", "profile()", "on_progress()", "DEBUG logs"]
    times: dict[str, list[float]] = {mode: [] for mode in modes}
    for _ in range(REPEATS):
        for mode in modes:
            times[mode].append(await watched_us_per_node(mode))
    off = statistics.median(times["nothing"])
    print(f"{CHAIN:,}-node identity chain, median of {REPEATS}, watched by:")
    for mode in modes:
        median = statistics.median(times[mode])
        print(f"  {mode:14} {median:6.2f} us/node ({median - off:+.2f})")


async def small_call_us() -> float:
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    outputs = [x.sum() for _ in range(CALLS)]
    start = time.perf_counter()
    for y in outputs:
        await y.backward()
    return (time.perf_counter() - start) / CALLS * 1e6


def torch_small_call_us() -> float | None:
    try:
        import torch
    except ImportError:
        return None
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    outputs = [x.sum() for _ in range(CALLS)]
    start = time.perf_counter()
    for y in outputs:
        y.backward()
    return (time.perf_counter() - start) / CALLS * 1e6


async def main() -> None:
    per_node = await engine_us_per_node()
    call = await small_call_us()
    theirs = torch_small_call_us()
    print(f"engine bookkeeping, {CHAIN:,}-node identity chain: {per_node:.2f} us/node (median of {REPEATS})")
    line = f"one x.sum().backward() call (2 nodes): aiograd {call:.1f} us"
    if theirs is not None:
        line += f", torch {theirs:.1f} us (ratio {call / theirs:.2f})"
    print(line)


if __name__ == "__main__":
    ag.run(watch_costs() if "--watch" in sys.argv[1:] else main())
