"""Grad mode: context managers, decorators for plain, async and generator functions, per task."""

from __future__ import annotations

import asyncio
import inspect
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag


def test_context_managers_nest_and_restore():
    x = ag.tensor([1.0], requires_grad=True)
    with ag.no_grad():
        assert not ag.is_grad_enabled()
        assert not (x * 2.0).requires_grad
        with ag.enable_grad():
            assert (x * 2.0).requires_grad
        assert not ag.is_grad_enabled()
    assert ag.is_grad_enabled()


def test_set_grad_enabled_as_function_and_context_manager():
    with ag.set_grad_enabled(False):
        assert not ag.is_grad_enabled()
    assert ag.is_grad_enabled()
    ag.set_grad_enabled(False)
    try:
        assert not ag.is_grad_enabled()
    finally:
        ag.set_grad_enabled(True)
    assert ag.is_grad_enabled()


def test_decorators_on_plain_functions():
    @ag.no_grad()
    def f() -> bool:
        return ag.is_grad_enabled()

    @ag.set_grad_enabled(False)
    def g() -> bool:
        return ag.is_grad_enabled()

    assert f() is False and g() is False
    assert ag.is_grad_enabled()


def test_decorator_on_generators_keeps_its_mode_across_yields():
    @ag.no_grad()
    def gen():
        for _ in range(2):
            yield ag.is_grad_enabled()

    it = gen()
    assert next(it) is False
    assert ag.is_grad_enabled()  # the caller's mode between yields
    assert next(it) is False


async def test_decorator_on_coroutines_gives_the_mode_back_while_suspended():
    seen: list[bool] = []

    @ag.no_grad()
    async def work() -> None:
        seen.append(ag.is_grad_enabled())
        await asyncio.sleep(0)
        seen.append(ag.is_grad_enabled())

    async def other() -> None:
        seen.append(ag.is_grad_enabled())

    await asyncio.gather(work(), other())
    assert seen == [False, True, False]
    assert ag.is_grad_enabled()


async def test_each_task_has_its_own_mode():
    started = asyncio.Event()
    release = asyncio.Event()

    async def quiet() -> bool:
        with ag.no_grad():
            started.set()
            await release.wait()
            return ag.is_grad_enabled()

    task = asyncio.create_task(quiet())
    await started.wait()
    assert ag.is_grad_enabled()  # the other task's no_grad does not leak here
    release.set()
    assert await task is False


async def test_decorated_coroutine_propagates_errors_and_cancellation():
    @ag.no_grad()
    async def fails() -> None:
        await asyncio.sleep(0)
        raise ValueError("inside")

    try:
        await fails()
    except ValueError as exc:
        assert str(exc) == "inside"
    assert ag.is_grad_enabled()

    entered = asyncio.Event()
    modes: list[bool] = []

    @ag.no_grad()
    async def waits() -> None:
        entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            modes.append(ag.is_grad_enabled())  # still its own mode while handling it
            raise

    task = asyncio.create_task(waits())
    await entered.wait()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    assert modes == [False] and task.cancelled()
    assert ag.is_grad_enabled()


def test_decorated_generator_forwards_send_and_close():
    closed: list[bool] = []

    @ag.no_grad()
    def echo():
        try:
            value = yield ag.is_grad_enabled()
            while True:
                value = yield (value, ag.is_grad_enabled())
        finally:
            closed.append(True)

    gen = echo()
    assert next(gen) is False
    assert gen.send(5) == (5, False)
    assert ag.is_grad_enabled()
    gen.close()
    assert closed == [True]


# ------------------------------------------------------------------- torch's forms, side by side
# Each scenario takes the module under test (aiograd or torch) and returns what it observed; the
# tests run it on both and compare, so aiograd drifting from torch 2.13 (or torch changing) fails.


def _raised(call: Callable[[], object]) -> tuple[str, str] | str:
    """What ``call`` gave: the type name of its result, or the exception's type and words."""
    try:
        return type(call()).__name__
    except Exception as exc:  # noqa: BLE001 - compared with torch's
        return type(exc).__name__, str(exc)


def _decorator_forms(m: Any) -> list[object]:
    seen: list[object] = []

    @m.no_grad
    def bare_no_grad() -> bool:
        return m.is_grad_enabled()

    @m.enable_grad
    def bare_enable_grad() -> bool:
        return m.is_grad_enabled()

    @m.inference_mode
    def bare_inference() -> tuple[bool, bool]:
        return m.is_grad_enabled(), m.is_inference_mode_enabled()

    @m.inference_mode(mode=False)
    def not_inference() -> tuple[bool, bool]:
        return m.is_grad_enabled(), m.is_inference_mode_enabled()

    called_inference = m.inference_mode(lambda: (m.is_grad_enabled(), m.is_inference_mode_enabled()))
    seen += [bare_no_grad(), bare_no_grad.__name__, bare_inference(), called_inference()]
    with m.no_grad():
        seen += [bare_enable_grad(), not_inference(), m.is_inference_mode_enabled()]
    with m.inference_mode():
        seen += [not_inference(), m.is_inference_mode_enabled()]
        with m.enable_grad():
            seen.append((m.is_grad_enabled(), m.is_inference_mode_enabled()))
        with m.no_grad():
            seen.append((m.is_grad_enabled(), m.is_inference_mode_enabled()))
        with m.set_grad_enabled(True):
            seen.append((m.is_grad_enabled(), m.is_inference_mode_enabled()))
    seen.append((m.is_grad_enabled(), m.is_inference_mode_enabled()))
    # What torch takes for a function and what it refuses.
    seen += [
        _raised(lambda: m.no_grad(None)),
        _raised(lambda: m.enable_grad(None)),
        _raised(lambda: m.inference_mode(None)),
        _raised(lambda: m.inference_mode(1)),
        _raised(lambda: m.no_grad(1)),
        _raised(lambda: m.set_grad_enabled()),
    ]
    return seen


@requires_torch
def test_decorator_forms_and_inference_mode_match_torch():
    assert _decorator_forms(ag) == _decorator_forms(torch)
    assert ag.is_grad_enabled() and not ag.is_inference_mode_enabled()


@requires_torch
@pytest.mark.parametrize("mode", [1, None, 1.0, np.bool_(True), "yes"], ids=repr)
def test_set_grad_enabled_refuses_non_bools_like_torch(mode: object):
    assert _raised(lambda: ag.set_grad_enabled(mode)) == _raised(lambda: torch.set_grad_enabled(mode))  # type: ignore[arg-type]
    assert ag.is_grad_enabled() and torch.is_grad_enabled()


def _set_grad_enabled_uses(m: Any) -> list[object]:
    seen: list[object] = []

    @m.set_grad_enabled(False)
    def off() -> bool:
        return m.is_grad_enabled()

    seen += [off(), m.is_grad_enabled()]  # the decorator's immediate effect is undone
    switch = m.set_grad_enabled(False)
    seen.append(m.is_grad_enabled())  # a plain call takes effect at once
    with switch:
        seen.append(m.is_grad_enabled())
    seen.append(m.is_grad_enabled())  # exit restores the mode from before construction
    m.set_grad_enabled(True)
    keep = m.set_grad_enabled(True)
    with m.no_grad():
        copy = keep.clone()  # constructing a copy sets its mode, as torch's does
        seen += [m.is_grad_enabled(), copy.mode, copy.prev]
    seen += [type(m.no_grad().clone()).__name__, m.inference_mode(False).clone().mode]
    reused = m.no_grad()
    for _ in range(3):
        with reused:
            seen.append(m.is_grad_enabled())
        seen.append(m.is_grad_enabled())
    return seen


@requires_torch
def test_set_grad_enabled_clone_and_reuse_match_torch():
    assert _set_grad_enabled_uses(ag) == _set_grad_enabled_uses(torch)
    assert ag.is_grad_enabled()
    assert repr(ag.set_grad_enabled(True)) == "aiograd.set_grad_enabled(mode=True)"


def test_one_instance_nests_and_restores():
    # torch restores from one attribute, so a reused instance nested in itself leaves grad off;
    # aiograd pairs each exit with its own entry.
    reused = ag.no_grad()
    with reused:
        with reused:
            assert not ag.is_grad_enabled()
        assert not ag.is_grad_enabled()
    assert ag.is_grad_enabled()


@requires_torch
def test_decorating_a_class_warns_like_torch():
    def decorate(m: Any) -> tuple[bool, list[tuple[str, str, str]]]:
        class Probe:
            def __init__(self) -> None:
                self.mode = m.is_grad_enabled()

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            wrapped = m.no_grad()(Probe)
        return wrapped().mode, [(w.category.__name__, str(w.message), w.filename) for w in caught]

    ours, theirs = decorate(ag), decorate(torch)
    assert ours == theirs and theirs[1][0][2] == __file__


def _generator_steps(m: Any) -> tuple[list[object], list[object]]:
    log: list[object] = []

    @m.no_grad()
    def gen() -> Any:
        try:
            log.append(("start", m.is_grad_enabled()))
            got = yield 1
            log.append(("got", got, m.is_grad_enabled()))
            with m.enable_grad():
                yield 2
                log.append(("inner block after yield", m.is_grad_enabled()))
            m.set_grad_enabled(True)
            yield 3
            log.append(("after set_grad_enabled", m.is_grad_enabled()))
            try:
                yield 4
            except ValueError as exc:
                log.append(("thrown", str(exc), m.is_grad_enabled()))
            yield 5
        except GeneratorExit:
            log.append(("GeneratorExit", m.is_grad_enabled()))
            raise
        finally:
            log.append(("finally", m.is_grad_enabled()))

    @m.no_grad
    def returns() -> Any:
        yield m.is_grad_enabled()
        return 7

    caller: list[object] = []
    it = gen()
    caller += [next(it), m.is_grad_enabled(), it.send("a"), m.is_grad_enabled()]
    caller += [next(it), next(it), it.throw(ValueError("v")), m.is_grad_enabled()]
    it.close()
    caller.append(m.is_grad_enabled())
    it = returns()
    caller.append(next(it))
    try:
        next(it)
    except StopIteration as stop:
        caller.append(stop.value)
    return caller, log


@requires_torch
def test_decorated_generator_steps_match_torch():
    ours, theirs = _generator_steps(ag), _generator_steps(torch)
    assert ours == theirs
    assert ("GeneratorExit", False) in theirs[1]  # the mode holds in its close() handler


async def test_decorated_async_generator_keeps_its_mode_across_awaits_and_yields():
    log: list[object] = []

    @ag.no_grad()
    async def stream() -> Any:
        try:
            for i in range(3):
                await asyncio.sleep(0)
                got = yield (i, ag.is_grad_enabled())
                log.append(("got", got, ag.is_grad_enabled()))
        except GeneratorExit:
            await asyncio.sleep(0)
            log.append(("GeneratorExit", ag.is_grad_enabled()))
            raise

    async def other() -> None:
        for _ in range(3):
            log.append(("other", ag.is_grad_enabled()))
            await asyncio.sleep(0)

    agen = stream()
    assert inspect.isasyncgen(agen)
    other_task = asyncio.create_task(other())
    assert await agen.__anext__() == (0, False)
    assert ag.is_grad_enabled()  # the caller's mode between items
    assert await agen.asend("x") == (1, False)
    await agen.aclose()
    await other_task
    assert ("got", "x", False) in log and ("GeneratorExit", False) in log
    assert [entry for entry in log if entry[0] == "other"] == [("other", True)] * 3
    assert ag.is_grad_enabled()

    @ag.enable_grad
    async def numbers() -> Any:
        yield ag.is_grad_enabled()
        yield ag.is_grad_enabled()

    with ag.no_grad():
        assert [value async for value in numbers()] == [True, True]
        assert not ag.is_grad_enabled()


async def test_decorated_async_generator_forwards_athrow():
    @ag.inference_mode
    async def guarded() -> Any:
        try:
            yield 1
        except KeyError:
            yield ag.is_inference_mode_enabled(), ag.is_grad_enabled()

    agen = guarded()
    assert await agen.__anext__() == 1
    assert await agen.athrow(KeyError("k")) == (True, False)
    assert not ag.is_inference_mode_enabled()
    await agen.aclose()


async def test_decorated_coroutine_keeps_its_own_mode_changes_across_awaits():
    @ag.no_grad
    async def work() -> list[bool]:
        seen = [ag.is_grad_enabled()]
        with ag.enable_grad():
            await asyncio.sleep(0)
            seen.append(ag.is_grad_enabled())  # the body's own block holds across the await
        seen.append(ag.is_grad_enabled())
        ag.set_grad_enabled(True)
        await asyncio.sleep(0)
        seen.append(ag.is_grad_enabled())  # and so does a change it made as a function call
        return seen

    assert await work() == [False, True, False, True]
    assert ag.is_grad_enabled()  # none of it reached the caller

    @ag.set_grad_enabled(False)
    async def off() -> bool:
        await asyncio.sleep(0)
        return ag.is_grad_enabled()

    @ag.inference_mode(False)
    async def on() -> bool:
        return ag.is_grad_enabled()

    assert await off() is False and ag.is_grad_enabled()
    with ag.no_grad():
        assert await on() is True
        assert not ag.is_grad_enabled()


async def test_decorated_coroutines_on_concurrent_tasks_do_not_leak():
    release = asyncio.Event()

    @ag.no_grad()
    async def quiet(n: int) -> list[bool]:
        seen = [ag.is_grad_enabled()]
        await release.wait()
        seen.append(ag.is_grad_enabled())
        return seen

    async def plain() -> bool:
        await asyncio.sleep(0)
        return ag.is_grad_enabled()

    tasks = [asyncio.create_task(quiet(n)) for n in range(3)]
    others = [asyncio.create_task(plain()) for _ in range(3)]
    assert await asyncio.gather(*others) == [True] * 3
    release.set()
    assert await asyncio.gather(*tasks) == [[False, False]] * 3
    assert ag.is_grad_enabled()


async def test_one_instance_entered_by_concurrent_tasks():
    shared = ag.no_grad()
    entered = [asyncio.Event(), asyncio.Event()]
    leave = [asyncio.Event(), asyncio.Event()]

    async def use(n: int) -> tuple[bool, bool]:
        with shared:
            inside = ag.is_grad_enabled()
            entered[n].set()
            await leave[n].wait()
        return inside, ag.is_grad_enabled()

    first, second = asyncio.create_task(use(0)), asyncio.create_task(use(1))
    await entered[0].wait()
    await entered[1].wait()
    leave[0].set()  # the first to enter leaves first: its exit must not take the other's entry
    assert await first == (False, True)
    leave[1].set()
    assert await second == (False, True)


@requires_torch
async def test_backward_inside_a_decorated_coroutine_on_concurrent_tasks():
    @ag.no_grad
    async def step(w: ag.Tensor) -> tuple[object, ...]:
        with ag.enable_grad():
            loss = (w * w * w).sum()
            await asyncio.sleep(0)
            (g,) = await ag.grad(loss, [w], create_graph=True)
            (gg,) = await ag.grad(g.sum(), [w])
        return g.detach().tolist(), gg.tolist(), (w * 2).requires_grad

    @torch.no_grad()
    def torch_step(w: Any) -> tuple[object, ...]:
        with torch.enable_grad():
            (g,) = torch.autograd.grad((w * w * w).sum(), [w], create_graph=True)
            (gg,) = torch.autograd.grad(g.sum(), [w])
        return g.detach().tolist(), gg.tolist(), (w * 2).requires_grad

    w = ag.tensor([1.0, -2.0], requires_grad=True)
    expected = torch_step(torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True))
    assert await asyncio.gather(step(w), step(w)) == [expected, expected]
    assert ag.is_grad_enabled()
