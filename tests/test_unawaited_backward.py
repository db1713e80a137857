"""``loss.backward()`` written without ``await`` (as in PyTorch) warns with aiograd's own message
naming the fix, and computes nothing; awaited, or handed to ``asyncio.create_task``, it runs as
before and does not warn."""

from __future__ import annotations

import asyncio
import gc
import warnings

import pytest

import aiograd as ag

MESSAGE = (
    "Tensor.backward() was called but never awaited, so no gradient was computed: write "
    "`await loss.backward()` in async code, or call `aiograd.sync.backward(loss)` where no "
    "event loop runs"
)


def test_a_dropped_backward_warns_with_the_fix_and_computes_nothing():
    w = ag.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (w * w).sum().backward()  # the PyTorch habit
        gc.collect()
    assert [(c.category, str(c.message)) for c in caught] == [(RuntimeWarning, MESSAGE)]
    assert caught[0].filename == __file__  # it points at the caller's line, not at aiograd
    assert w.grad is None


async def test_awaited_or_scheduled_backward_does_not_warn():
    w = ag.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        await (w * w).sum().backward()
        await asyncio.create_task((w * 3.0).sum().backward())
        call = (w * 1.0).sum().backward()
        assert asyncio.iscoroutine(call)
        await call
        gc.collect()
    assert w.grad.tolist() == [6.0, 8.0]


async def test_a_closed_or_failing_backward_does_not_warn():
    w = ag.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (w * 2.0).sum().backward().close()  # closed deliberately: not a forgotten await
        with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
            await (w * 2.0).backward()
        gc.collect()
    assert w.grad is None
