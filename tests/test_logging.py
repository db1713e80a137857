"""The ``aiograd`` loggers: silent unless the application configures logging, and at DEBUG the
engine events docs/tracing.md lists."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import Fails, Heavy, Nested

import aiograd as ag
from aiograd.executors import ThreadExecutor

ROOT = Path(__file__).resolve().parent.parent
only_asyncio = pytest.mark.aiograd(backends=["asyncio"])


def test_silent_without_logging_configuration():
    # A fresh interpreter: pytest's own handlers on the root logger would hide logging's
    # last-resort handler, which prints records of WARNING and above to stderr when no handler
    # is found. The control line shows that it is active there.
    script = """
import logging
import aiograd as ag
import aiograd.sync
logging.getLogger("aiograd.engine").warning("aiograd warning")
logging.getLogger("aiograd.executors").error("aiograd error")
x = ag.tensor([1.0], requires_grad=True)
aiograd.sync.backward((x * x).sum())
logging.getLogger("elsewhere").warning("control")
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "control\n"
    assert [type(h) for h in logging.getLogger("aiograd").handlers] == [logging.NullHandler]



def engine_messages(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("aiograd") and r.levelno == logging.DEBUG]


@only_asyncio
async def test_graph_task_start_and_error_at_debug(caplog):
    caplog.set_level(logging.DEBUG, logger="aiograd")
    x = ag.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="boom in backward"):
        await (Fails.apply(x) * 3).sum().backward()
    started, ended = engine_messages(caplog)
    assert started.endswith("(backward, depth 0) started from " + f"{_task_name()}: 4 nodes to run, root SumBackward0")
    assert "(backward, depth 0) ended: error after" in ended
    assert ended.endswith("2 of 4 nodes run (ValueError: boom in backward (while running FailsBackward))")
    assert all(r.levelno == logging.DEBUG for r in caplog.records if r.name.startswith("aiograd"))


def _task_name() -> str:
    import asyncio

    return asyncio.current_task().get_name()



@only_asyncio
async def test_offload_decisions_at_debug(caplog):
    caplog.set_level(logging.DEBUG, logger="aiograd.engine")
    executor = ThreadExecutor(1)
    ag.get_engine().executors["cpu"] = executor
    try:
        x = ag.tensor([1.0], requires_grad=True)
        root = ag.Tensor._wrap(np.ones(1))
        root._requires_grad, root.grad_fn = True, Heavy(((ag._core._node.grad_accumulator(x), 0),))
        await root.backward(ag.ones(1))
    finally:
        executor.close()
    offloads = [m for m in engine_messages(caplog) if "offloaded" in m]
    threshold = ag.get_engine().offload_threshold
    assert offloads == [
        f"GraphTask #{_graph_task_id(caplog)}: Heavy offloaded to ThreadExecutor(max_workers=1) "
        f"(estimated 1000000000000 ns, threshold {threshold:.0f} ns)"
    ]


def _graph_task_id(caplog) -> int:
    first = next(m for m in engine_messages(caplog) if m.startswith("GraphTask #"))
    return int(first.split()[1][1:])



@only_asyncio
async def test_workers_starting_and_reentrant_moves_at_debug(caplog):
    caplog.set_level(logging.DEBUG, logger="aiograd.engine")
    ag.get_engine().max_reentrant_depth = 0  # every reentrant backward moves to a fresh task
    x = ag.tensor([3.0], requires_grad=True)
    await Nested.apply(x).sum().backward()
    assert x.grad.tolist() == [6.0]
    s = ag.tensor([1.0, 2.0], device="sim:0", requires_grad=True)
    await (s * s).sum().backward()
    worker = ag.get_engine().device_queue(s.device).worker
    if worker is not None:  # it stops once its queue is empty, maybe after the call returned
        await worker
    messages = engine_messages(caplog)
    assert (
        "reentrant backward at depth 1 moved to a fresh worker task (0 nested drives on this stack, "
        "max_reentrant_depth 0, or the stack is near the recursion limit)"
    ) in messages
    assert "device worker for sim:0 started" in messages
    assert "device worker for sim:0 stopped (its queue is empty)" in messages
