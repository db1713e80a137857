"""aiograd's pytest plugin: graph-task tests on asyncio, uvloop and trio, leak checks, schedules.

Installed with aiograd as a ``pytest11`` entry point, so pytest loads it in any project that has
aiograd installed; it changes nothing until a test or the configuration asks for it:

- ``@pytest.mark.aiograd`` on an ``async def`` test (or in a module's ``pytestmark``) runs it once
  per backend, ``test_x[asyncio]``, ``test_x[uvloop]``, ``test_x[trio]`` (the ``aiograd_backends``
  ini option or ``--aiograd-backends`` picks them, among asyncio, uvloop, anyio and trio; a
  backend whose package is missing is skipped with the reason), and fails it if it leaves work
  behind (see below). The plugin runs these tests itself: on asyncio and uvloop in a fresh
  ``asyncio.Runner``, on anyio with ``anyio.run(backend="asyncio")`` (the test is anyio's root
  task), on trio with ``trio.run``. A sync test with the mark gets the leak check and the shuffle
  only. ``aiograd_mode = auto`` in the ini file takes every ``async def`` test as if it were
  marked (as pytest-asyncio's ``asyncio_mode = auto`` does), so a suite needs no marks at all.
- The leak check: after the test, no task is pending on the loop the plugin ran it on (aiograd's
  engine workers, reentrant workers, backward calls started as tasks and never awaited, and the
  test's own tasks: asyncio's runner would cancel them unseen), no GraphTask is in flight, no
  NodeTask is queued or running in an executor; and on ``aiograd.sync``'s background loop (where
  trio's backward calls run) no aiograd work is left. ``aiograd_leak_check = true`` in the ini
  file applies it to every test, the async tests pytest-asyncio runs included.
- The shuffle debug mode (``aiograd.set_shuffle_seed``): ready NodeTasks of equal priority run in
  a seeded random order, so a test that passes under many seeds does not depend on one schedule.
  ``@pytest.mark.aiograd(shuffle_seeds=range(8))`` runs a test under seeds 0-7 (``[asyncio-shuffle3]``),
  ``--aiograd-shuffle-seeds=N`` every marked test under N seeds, ``--aiograd-shuffle-seed=S`` under
  one (to replay a failing schedule). The ``aiograd_shuffle_seed`` fixture, parametrized
  indirectly, does the same for any test.

pytest-asyncio in auto mode takes every ``async def`` test; the plugin hands it a synchronous
stand-in for each marked test instead (``_run_on_backend``), so the two work side by side in
either mode. Async fixtures are pytest-asyncio's and run on its loop, not on the backend's: a
marked test that requests one fails at setup, naming it (enter an async context manager in the
test instead). docs/testing.md has the guide and an example.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from . import sync
from ._engine import set_shuffle_seed
from ._engine.engine import _engines

__all__ = ["BACKENDS", "DEFAULT_BACKENDS", "MODES", "leaks_on_running_loop", "leaks_on_sync_loop"]

#: The backends a marked async test can run on, in the order its variants run. ``anyio`` is
#: ``anyio.run(test, backend="asyncio")``: asyncio's default loop, the test as anyio's root task.
BACKENDS: tuple[str, ...] = ("asyncio", "uvloop", "anyio", "trio")

#: The backends a marked test runs on unless the mark, the ini file or the command line says
#: otherwise: one per kind of loop (anyio on asyncio is asyncio's loop again).
DEFAULT_BACKENDS: tuple[str, ...] = ("asyncio", "uvloop", "trio")

#: ``aiograd_mode``: ``strict`` runs only marked tests; ``auto`` every ``async def`` test.
MODES: tuple[str, ...] = ("strict", "auto")

_MARK = "aiograd"
_PACKAGE_DIR = str(Path(__file__).resolve().parent)
_THIS_FILE = str(Path(__file__).resolve())


# ------------------------------------------------------------------------------ configuration
def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("aiograd", "aiograd: graph-task tests on several loops")
    group.addoption(
        "--aiograd-backends", metavar="LIST", default=None,
        help="comma-separated backends for @pytest.mark.aiograd tests, among asyncio, uvloop, "
        "anyio, trio (default: the aiograd_backends ini option, else asyncio,uvloop,trio)",
    )
    group.addoption(
        "--aiograd-shuffle-seeds", metavar="N", type=int, default=None,
        help="run every @pytest.mark.aiograd test under shuffle seeds 0..N-1",
    )
    group.addoption(
        "--aiograd-shuffle-seed", metavar="S", type=int, default=None,
        help="run every @pytest.mark.aiograd test under shuffle seed S only (to replay a schedule)",
    )
    parser.addini(
        "aiograd_backends", "backends for @pytest.mark.aiograd async tests", type="args",
        default=list(DEFAULT_BACKENDS),
    )
    parser.addini(
        "aiograd_mode", "auto: run every async def test as if marked @pytest.mark.aiograd; "
        "strict (the default): only marked ones", default="strict",
    )
    parser.addini(
        "aiograd_leak_check", "check every test (not only @pytest.mark.aiograd ones) for "
        "aiograd work left behind", type="bool", default=False,
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "aiograd(backends=None, shuffle_seeds=None, leak_check=True): run an async test on "
        "aiograd's backends (asyncio, uvloop, trio), under the given shuffle seeds, and fail it "
        "if it leaves aiograd tasks, GraphTasks or queued work behind",
    )
    backends = _configured_backends(config)
    unknown = [b for b in backends if b not in BACKENDS]
    if unknown:
        raise pytest.UsageError(
            f"aiograd: unknown backend(s) {', '.join(map(repr, unknown))}; choose from {', '.join(BACKENDS)}"
        )
    mode = _mode(config)
    if mode not in MODES:
        raise pytest.UsageError(f"aiograd: aiograd_mode must be one of {', '.join(MODES)}, got {mode!r}")


def _mode(config: pytest.Config) -> str:
    return str(config.getini("aiograd_mode")).strip()


def _mark_of(node: pytest.Item | pytest.Collector, config: pytest.Config) -> pytest.Mark | None:
    """The aiograd mark that applies to ``node`` (its own or an enclosing one); in auto mode, an
    unmarked async test's is the mark without arguments."""
    mark = node.get_closest_marker(_MARK)
    if mark is None and _mode(config) == "auto" and getattr(getattr(node, "function", None), "_aiograd_stand_in", False):
        mark = pytest.mark.aiograd.mark
    return mark


def _configured_backends(config: pytest.Config) -> list[str]:
    option = config.getoption("aiograd_backends", None)
    if option:
        return [b.strip() for b in option.split(",") if b.strip()]
    return list(config.getini("aiograd_backends"))


def _shuffle_seeds(config: pytest.Config, mark: pytest.Mark) -> list[int] | None:
    """The seeds a marked test runs under (None: once, without the shuffle)."""
    one = config.getoption("aiograd_shuffle_seed", None)
    if one is not None:
        return [one]
    many = config.getoption("aiograd_shuffle_seeds", None)
    if many is not None:
        return list(range(many))
    seeds = mark.kwargs.get("shuffle_seeds")
    if seeds is None:
        return None
    seeds = [seeds] if isinstance(seeds, int) else list(seeds)
    for seed in seeds:
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise TypeError(f"aiograd mark: shuffle_seeds must be ints, got {seed!r}")
    return seeds


# ------------------------------------------------------------------------------ collection
def _is_coroutine_test(obj: object) -> bool:
    handle: Any = obj
    target = handle.hypothesis.inner_test if hasattr(handle, "hypothesis") else obj  # @given's test
    return inspect.iscoroutinefunction(target)


def _marked(collector: pytest.Collector, obj: object) -> bool:
    if _mode(collector.config) == "auto":
        return True
    own = getattr(obj, "pytestmark", ())
    return collector.get_closest_marker(_MARK) is not None or any(m.name == _MARK for m in own)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> Any:
    """A marked ``async def`` test is collected as a synchronous stand-in that runs it on the
    backend its variant names. The stand-in replaces the function in its module or class too,
    because pytest looks a test's function up by name again when it runs it."""
    if isinstance(obj, staticmethod) or getattr(obj, "_aiograd_stand_in", False):
        return None
    if not (isinstance(collector, (pytest.Module, pytest.Class)) and collector.istestfunction(obj, name)):
        return None
    if not (_is_coroutine_test(obj) and _marked(collector, obj)):
        return None
    if hasattr(obj, "hypothesis"):  # Hypothesis calls inner_test once per example
        handle: Any = obj
        handle.hypothesis.inner_test = _stand_in(handle.hypothesis.inner_test)
        handle._aiograd_stand_in = True
        stand_in = handle
    else:
        stand_in = _stand_in(obj)  # type: ignore[arg-type]
    setattr(collector.obj, name, stand_in)
    return collector.ihook.pytest_pycollect_makeitem(collector=collector, name=name, obj=stand_in)


def _stand_in(test: Callable[..., Any]) -> Callable[..., None]:
    @functools.wraps(test)  # pytest reads the fixtures it needs through __wrapped__
    def _run_on_backend(*args: Any, **kwargs: Any) -> None:
        if _current is None:
            raise RuntimeError(f"{test.__qualname__} is an aiograd-marked async test: only pytest runs it")
        _current.run(test, args, kwargs)

    _run_on_backend._aiograd_stand_in = True  # type: ignore[attr-defined]
    # The plugin runs the test, not pytest-asyncio: an asyncio mark (a module's, or one that
    # picks pytest-asyncio's loops) means nothing here, and pytest-asyncio would warn about it.
    marks = getattr(test, "pytestmark", [])
    _run_on_backend.pytestmark = [m for m in marks if m.name != "asyncio"]  # type: ignore[attr-defined]
    return _run_on_backend


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    mark = _mark_of(metafunc.definition, metafunc.config)
    if mark is None:
        return
    if getattr(metafunc.function, "_aiograd_stand_in", False):
        backends = mark.kwargs.get("backends") or _configured_backends(metafunc.config)
        metafunc.fixturenames.append("aiograd_backend")
        metafunc.parametrize("aiograd_backend", [_backend_param(b) for b in backends], indirect=True)
    seeds = _shuffle_seeds(metafunc.config, mark)
    if seeds is not None and "aiograd_shuffle_seed" not in _parametrized_names(metafunc):
        metafunc.fixturenames.append("aiograd_shuffle_seed")
        metafunc.parametrize(
            "aiograd_shuffle_seed", [pytest.param(s, id=f"shuffle{s}") for s in seeds], indirect=True
        )


def _parametrized_names(metafunc: pytest.Metafunc) -> set[str]:
    names: set[str] = set()
    for mark in metafunc.definition.iter_markers("parametrize"):
        argnames = mark.args[0] if mark.args else mark.kwargs.get("argnames", ())
        names.update(a.strip() for a in argnames.split(",")) if isinstance(argnames, str) else names.update(argnames)
    return names


def _backend_param(backend: str) -> Any:
    if backend not in BACKENDS:
        raise pytest.UsageError(f"aiograd mark: unknown backend {backend!r}; choose from {', '.join(BACKENDS)}")
    missing = {"uvloop": "uvloop", "anyio": "anyio", "trio": "trio"}.get(backend)
    if missing is not None and not _importable(missing):
        return pytest.param(backend, id=backend, marks=pytest.mark.skip(reason=f"{missing} is not installed"))
    return pytest.param(backend, id=backend)


def _importable(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


# ------------------------------------------------------------------------------ fixtures
@pytest.fixture
def aiograd_backend(request: pytest.FixtureRequest) -> str:
    """The backend this ``@pytest.mark.aiograd`` test runs on: "asyncio", "uvloop", "anyio" or
    "trio"."""
    backend = getattr(request, "param", None)
    if backend is None:
        pytest.fail(f"{request.node.nodeid}: aiograd_backend is for @pytest.mark.aiograd async tests", pytrace=False)
    return str(backend)


@pytest.fixture
def aiograd_shuffle_seed(request: pytest.FixtureRequest) -> Iterable[int | None]:
    """The shuffle debug mode's seed for this test (None: off). Engines made while the test runs
    take it: each asyncio test's loop gets a fresh one, and ``aiograd.sync``'s background loop
    (trio's backward calls) gets a fresh one before and after the test."""
    seed = getattr(request, "param", None)
    set_shuffle_seed(seed)
    if seed is not None:
        _renew_sync_engine()
    try:
        yield seed
    finally:
        set_shuffle_seed(None)
        if seed is not None:
            _renew_sync_engine()


def _renew_sync_engine() -> None:
    """Make ``aiograd.sync``'s background loop build a new engine (with the current shuffle seed)
    at its next backward call. Nothing to do when the loop was never started."""
    portal = sync._current
    if portal is not None:
        _on_sync_loop(portal.loop, _close_engine())


async def _close_engine() -> None:
    engine = _engines.get(asyncio.get_running_loop())
    if engine is not None:
        await engine.aclose()


# ------------------------------------------------------------------------------ running
@dataclass
class _Run:
    """How the marked test being run runs: its backend and whether it is checked for leaks."""

    backend: str
    leak_check: bool
    nodeid: str

    def run(self, test: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if self.backend == "trio":
            import trio

            trio.run(functools.partial(test, *args, **kwargs))
            return
        problems: list[str] = []
        check = problems if self.leak_check else None
        if self.backend == "anyio":
            import anyio

            # anyio.run names its root task after the function it runs: the test's name, as in
            # an anyio program whose main is the test.
            @functools.wraps(test)
            async def main() -> Any:
                return await _then_check(test(*args, **kwargs), check)

            anyio.run(main, backend="asyncio")
        else:
            with asyncio.Runner(loop_factory=_loop_factory(self.backend)) as runner:
                runner.run(_then_check(test(*args, **kwargs), check))
        if problems:
            pytest.fail(_report(self.nodeid, f"its {self.backend} loop", problems), pytrace=False)


_current: _Run | None = None


def _loop_factory(backend: str) -> Callable[[], asyncio.AbstractEventLoop]:
    if backend == "uvloop":
        import uvloop

        return uvloop.new_event_loop
    # asyncio.run's own default loop, named so that an installed policy (uvloop.install())
    # cannot turn the asyncio variant into another loop.
    loop_class: Callable[[], asyncio.AbstractEventLoop] | None = getattr(asyncio, "EventLoop", None)  # 3.13+
    if loop_class is not None:
        return loop_class
    if sys.platform == "win32":
        return asyncio.ProactorEventLoop
    return asyncio.SelectorEventLoop


async def _then_check(test: Any, problems: list[str] | None, *, any_task: bool = True) -> Any:
    """Await the test, then (``problems`` given) add what it left behind on this loop: with
    ``any_task``, every pending task (the plugin's own loop: nothing else runs there)."""
    result = await test
    if problems is not None:
        problems.extend(await leaks_on_running_loop(cancel=True, any_task=any_task))
    return result


def _leak_check_wanted(item: pytest.Item) -> bool:
    mark = _mark_of(item, item.config)
    if mark is not None:
        return bool(mark.kwargs.get("leak_check", True))
    return bool(item.config.getini("aiograd_leak_check"))


def _backend_of(item: pytest.Item) -> str | None:
    """The backend of a marked async test's variant (None for any other test)."""
    callspec = getattr(item, "callspec", None)
    backend = callspec.params.get("aiograd_backend") if callspec is not None else None
    return None if backend is None else str(backend)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A marked async test cannot take async fixtures as arguments: pytest-asyncio would set
    them up on a loop of its own (autouse ones, which the test does not see, may run there)."""
    if _backend_of(item) is None or not isinstance(item, pytest.Function):
        return
    for name in item._fixtureinfo.argnames:
        defs = item._fixtureinfo.name2fixturedefs.get(name)
        func = defs[-1].func if defs else None
        if inspect.iscoroutinefunction(func) or inspect.isasyncgenfunction(func):
            pytest.fail(
                f"{item.nodeid}: an @pytest.mark.aiograd test cannot take the async fixture {name!r}: "
                f"it would be set up on pytest-asyncio's loop, not on the test's backend; enter an "
                f"async context manager inside the test instead",
                pytrace=False,
            )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    """Run a marked test on its backend; check any test the configuration asks to check."""
    global _current
    checked = _leak_check_wanted(item)
    backend = _backend_of(item)
    sync_uses = sync._uses
    restore: Callable[[], None] | None = None
    if backend is not None:
        _current = _Run(str(backend), checked, item.nodeid)
    elif checked:
        restore = _check_pytest_asyncio_test(item)
    try:
        result = yield
    finally:
        _current = None
        if restore is not None:
            restore()
    if checked and sync._uses != sync_uses:  # the test used aiograd.sync's loop (or trio did)
        problems = leaks_on_sync_loop()
        if problems:
            pytest.fail(_report(item.nodeid, "aiograd.sync's background loop", problems), pytrace=False)
    return result


def _check_pytest_asyncio_test(item: pytest.Item) -> Callable[[], None] | None:
    """For an async test that pytest-asyncio runs: swap its coroutine function for one that checks
    for leaks on the test's loop once the test is done (pytest-asyncio looks the function up when it
    runs the test: ``item.obj``, or for a Hypothesis test the ``inner_test`` it calls)."""
    try:
        import pytest_asyncio
    except ImportError:
        return None
    if not (isinstance(item, pytest.Function) and pytest_asyncio.is_async_test(item)):
        return None
    owner, attr = (item.obj.hypothesis, "inner_test") if hasattr(item.obj, "hypothesis") else (item, "obj")
    test = getattr(owner, attr)
    nodeid = item.nodeid

    @functools.wraps(test)
    async def checked(*args: Any, **kwargs: Any) -> Any:
        problems: list[str] = []
        # pytest-asyncio's loop: its fixtures may keep tasks across tests, so aiograd's only
        result = await _then_check(test(*args, **kwargs), problems, any_task=False)
        if problems:
            pytest.fail(_report(nodeid, "its loop", problems), pytrace=False)
        return result

    setattr(owner, attr, checked)
    return lambda: setattr(owner, attr, test)


# ------------------------------------------------------------------------------ leak checks
def _is_aiograd_task(task: asyncio.Task[Any]) -> bool:
    """Whether ``task`` runs aiograd's code (an engine or reentrant worker, a backward call)."""
    coro = task.get_coro()
    code = getattr(coro, "cr_code", None)
    if code is not None:
        return bool(code.co_filename.startswith(_PACKAGE_DIR) and code.co_filename != _THIS_FILE)
    return type(coro).__module__.startswith("aiograd.")  # a coroutine object of aiograd's own class


async def leaks_on_running_loop(*, cancel: bool = False, any_task: bool = False) -> list[str]:
    """What aiograd has left on the running loop: its pending tasks (other than the caller's),
    GraphTasks in flight, NodeTasks queued or running in an executor. Empty when nothing is left.
    ``any_task`` reports every pending task, not only aiograd's (for a loop that belongs to the
    test alone).

    A task that finishes on the loop's next turns (a worker that has just run out of work) is
    not left behind: the check lets a few turns pass first. ``cancel`` cancels the pending tasks
    it reports and waits for them, so that a failed check leaves a clean loop."""
    me = asyncio.current_task()
    pending: list[asyncio.Task[Any]] = []
    for _ in range(3):  # turns, not time: each lets just-woken tasks run to their end
        await asyncio.sleep(0)
        pending = [
            t for t in asyncio.all_tasks()
            if t is not me and not t.done() and (any_task or _is_aiograd_task(t))
        ]
        if not pending:
            break
    problems = [f"task {t.get_name()!r} is still pending: {t.get_coro()!r}" for t in pending]
    engine = _engines.get(asyncio.get_running_loop())
    if engine is not None:
        stats = engine.statistics()
        if stats.graph_tasks_in_flight:
            problems.append(f"{stats.graph_tasks_in_flight} GraphTask(s) still in flight")
        if stats.nodes_in_flight:
            problems.append(f"{stats.nodes_in_flight} node(s) still running in an executor")
        problems += [f"{n} NodeTask(s) still queued for {q}" for q, n in stats.queue_depths.items() if n]
    if cancel and pending:
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
    return problems


def leaks_on_sync_loop() -> list[str]:
    """``leaks_on_running_loop`` for ``aiograd.sync``'s background loop (where ``aiograd.sync``'s
    calls and, under trio, every backward run). Empty when that loop was never started. Call it
    from a thread that is not that loop's."""
    portal = sync._current
    if portal is None or not portal.thread.is_alive():
        return []
    result: list[str] = _on_sync_loop(portal.loop, leaks_on_running_loop())
    return result


def _on_sync_loop(loop: asyncio.AbstractEventLoop, coro: Any) -> Any:
    future = asyncio.run_coroutine_threadsafe(coro, loop)
    # A bound, not a delay: the check itself takes microseconds; a loop that cannot run it in a
    # minute is stuck, and saying so beats hanging the test run.
    return future.result(timeout=60)


def _report(nodeid: str, where: str, problems: list[str]) -> str:
    lines = "\n".join(f"  - {p}" for p in problems)
    return f"{nodeid} left work behind on {where}:\n{lines}"
