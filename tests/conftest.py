"""Shared fixtures: the event-loop matrix, and every test must leave no asyncio task behind.

The loop matrix
---------------
Every async test (and the async fixtures it uses) runs three times, once per loop variant, with
the variant in its id: ``test_x[asyncio]``, ``test_x[uvloop]``, ``test_x[anyio]``.

- ``asyncio``: asyncio's own default event loop, whatever event-loop policy is installed.
- ``uvloop``: ``uvloop.new_event_loop()`` (skipped, visibly, when uvloop is not installed).
- ``anyio``: the test coroutine runs the way ``anyio.run(test, backend="asyncio")`` runs its
  main function: on asyncio's default loop, as anyio's root task (see ``_as_anyio_main``), so
  anyio cancel scopes and task groups behave as in an anyio program.

The mechanism is pytest-asyncio's ``pytest_asyncio_loop_factories`` hook (pytest-asyncio >= 1.4):
pytest-asyncio parametrizes each async test over the factories it returns, and the hook's keys are
the ids. It parametrizes only the tests that pytest-asyncio runs, so synchronous tests run once
(overriding the ``event_loop_policy`` fixture instead, the older way, parametrizes every test,
sync ones included: pytest-asyncio issue #796). The anyio variant needs one thing more than a
loop: ``pytest_runtest_call`` below swaps the test function for one that runs it as anyio's root
task.

The public-API test modules (test_api, test_hooks, test_function, test_checkpoint,
test_functional) are marked ``pytest.mark.aiograd`` instead: aiograd's own pytest plugin
(``aiograd/pytest_plugin.py``) runs their async tests on asyncio, uvloop and trio, ``test_x[trio]``
included. The plugin also checks every test for aiograd work left behind (``aiograd_leak_check``
in pyproject.toml); ``no_leaked_tasks`` below checks for any asyncio task, aiograd's or not.

A test that cannot run under some variant says so, with the reason in a comment, by naming the
variants it runs under: ``@pytest.mark.asyncio(loop_factories=["asyncio"])`` (it then runs once,
with its usual id). A test learns its variant from the ``loop_variant`` fixture.
"""

from __future__ import annotations

import asyncio
import functools
import sys
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
import pytest_asyncio

pytest_plugins = ["pytester"]  # tests/test_loop_matrix.py runs the matrix on a scratch suite


# --------------------------------------------------------------------------------- loop matrix
def _default_loop() -> asyncio.AbstractEventLoop:
    """The loop ``asyncio.run()`` makes when no policy is installed (its default loop class):
    named explicitly so that a policy installed by some test (``uvloop.install()``) cannot turn
    the default variant into another loop."""
    loop_class = getattr(asyncio, "EventLoop", None)  # Python 3.13+
    if loop_class is None:
        loop_class = asyncio.ProactorEventLoop if sys.platform == "win32" else asyncio.SelectorEventLoop
    return loop_class()


def _uvloop_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # uvloop is optional: the [uvloop] variant is then skipped, not dropped
        pytest.skip("uvloop is not installed (pip install -e '.[uvloop]')")
    return uvloop.new_event_loop()


class LoopVariant:
    """A named loop factory, as pytest-asyncio calls it (``factory()`` returns a new loop)."""

    def __init__(self, name: str, factory: Callable[[], asyncio.AbstractEventLoop]) -> None:
        self.name, self._factory = name, factory

    def __call__(self) -> asyncio.AbstractEventLoop:
        return self._factory()

    def __repr__(self) -> str:
        return f"LoopVariant({self.name!r})"


#: The variants, in the order each test runs under them. anyio.run(backend="asyncio") without
#: backend options runs on asyncio's default loop, so the anyio variant does too.
LOOP_VARIANTS: dict[str, LoopVariant] = {
    v.name: v
    for v in (
        LoopVariant("asyncio", _default_loop),
        LoopVariant("uvloop", _uvloop_loop),
        LoopVariant("anyio", _default_loop),
    )
}


def pytest_asyncio_loop_factories(config: pytest.Config, item: pytest.Item) -> dict[str, LoopVariant]:
    return dict(LOOP_VARIANTS)


def _variant_of(item: pytest.Item) -> LoopVariant | None:
    """The variant an async test was parametrized with (pytest-asyncio names the parameter
    ``_asyncio_loop_factory``); None for a sync test."""
    callspec = getattr(item, "callspec", None)
    factory = callspec.params.get("_asyncio_loop_factory") if callspec is not None else None
    return factory if isinstance(factory, LoopVariant) else None


@pytest.fixture
def loop_variant(request: pytest.FixtureRequest) -> str:
    """The loop variant this test runs under: "asyncio", "uvloop" or "anyio"."""
    variant = _variant_of(request.node)
    if variant is None:
        pytest.fail(f"{request.node.nodeid}: loop_variant is only for async tests", pytrace=False)
    return variant.name


def _as_anyio_main(test: Callable[..., Coroutine[Any, Any, Any]]) -> Callable[..., Coroutine[Any, Any, Any]]:
    """``test`` run the way ``anyio.run(test, backend="asyncio")`` runs its main function.

    anyio.run (anyio 4) records "asyncio" as the current async library in sniffio's context
    variable (when sniffio is installed), makes an ``asyncio.Runner`` on the default loop, and
    runs the function in a wrapper that names the task after it and registers the task in the
    asyncio backend's task table as the root task: no parent, no cancel scope. pytest-asyncio
    already provides the Runner; this does the rest in the task pytest-asyncio runs the test in.
    The task table is private to anyio (nothing public makes a task anyio's root task), hence the
    import here rather than at the top: a change in anyio breaks only the [anyio] variant.
    """
    try:
        from anyio._backends._asyncio import TaskState, _task_states
    except ImportError:  # a later anyio moved them: run as a task anyio adopts (still works)
        TaskState = _task_states = None

    try:
        from sniffio import current_async_library_cvar
    except ImportError:  # anyio 4 does not need sniffio, and sets it only when it is there
        current_async_library_cvar = None

    @functools.wraps(test)
    async def main(*args: Any, **kwargs: Any) -> Any:
        task = asyncio.current_task()
        assert task is not None
        task.set_name(".".join(filter(None, (test.__module__, test.__qualname__))))
        if _task_states is not None:
            _task_states[task] = TaskState(None, None)
        token = current_async_library_cvar.set("asyncio") if current_async_library_cvar else None
        try:
            return await test(*args, **kwargs)
        finally:
            if token is not None:
                current_async_library_cvar.reset(token)
            if _task_states is not None:
                del _task_states[task]

    return main


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    """Under the anyio variant, run the test coroutine as anyio's root task. pytest-asyncio looks
    the coroutine function up when it runs the test (``item.obj``, or for a Hypothesis test the
    ``inner_test`` that Hypothesis calls with each example), so swapping it for the call is
    enough."""
    variant = _variant_of(item)
    if variant is not LOOP_VARIANTS["anyio"] or not pytest_asyncio.is_async_test(item):
        return (yield)
    owner, attr = (item.obj.hypothesis, "inner_test") if hasattr(item.obj, "hypothesis") else (item, "obj")
    test = getattr(owner, attr)
    setattr(owner, attr, _as_anyio_main(test))
    try:
        return (yield)
    finally:
        setattr(owner, attr, test)


def pytest_report_header(config: pytest.Config) -> str:
    return "async tests run on these loops: " + ", ".join(LOOP_VARIANTS)


# ------------------------------------------------------------------------------- leaked tasks
@pytest.fixture(autouse=True)
async def no_leaked_tasks():
    """Fail a test that leaves asyncio tasks pending on its loop."""
    yield
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # a trio test (anyio's plugin): its nurseries leave no task behind
        return
    await asyncio.sleep(0)
    me = asyncio.current_task()
    pending = [t for t in asyncio.all_tasks() if t is not me and not t.done()]
    for t in pending:
        t.cancel()
    assert not pending, f"test leaked asyncio tasks: {pending}"
