"""Grad mode: context managers, decorators for plain, async and generator functions, per task."""

from __future__ import annotations

import asyncio

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
