"""aiograd's pytest plugin (aiograd/pytest_plugin.py), run on scratch suites with pytester.

Each scratch suite runs in this process (``runpytest``), with the plugin loaded from aiograd's
``pytest11`` entry point as in any project that installs aiograd. The modules the scratch suites
use are imported here first: pytester forgets the modules a run imported, and Hypothesis (whose
pytest plugin imports it at the end of every run) costs seconds to import again each time.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import threading
from pathlib import Path

import hypothesis  # noqa: F401  (see the docstring)
import pytest
import sniffio  # noqa: F401
import trio  # noqa: F401
import uvloop  # noqa: F401

import aiograd as ag
from aiograd import pytest_plugin


@pytest.fixture(autouse=True)
def scratch_ini(pytester: pytest.Pytester) -> None:
    """pytest-asyncio asks for its fixture loop scope to be set (it warns otherwise)."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


BACKENDS_SEEN = '''
import asyncio

import pytest
import sniffio
from hypothesis import given, settings, strategies as st

import aiograd as ag

pytestmark = pytest.mark.aiograd


async def test_backward(aiograd_backend):
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    await (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]
    assert sniffio.current_async_library() == ("trio" if aiograd_backend == "trio" else "asyncio")
    if aiograd_backend != "trio":
        loop = type(asyncio.get_running_loop())
        assert (loop.__module__.split(".")[0] == "uvloop") == (aiograd_backend == "uvloop")


class TestInAClass:
    async def test_method(self):
        x = ag.tensor(2.0, requires_grad=True)
        (gx,) = await ag.grad(x * x, [x])
        assert gx.item() == 4.0


@settings(max_examples=3, deadline=None)
@given(st.floats(-1, 1))
async def test_hypothesis(v):
    x = ag.tensor(v, requires_grad=True)
    await (x * 3.0).backward()
    assert x.grad.item() == 3.0


def test_sync_bridge():
    x = ag.tensor(1.0, requires_grad=True)
    ag.sync.backward(x * 2.0)
    assert x.grad.item() == 2.0
'''


@pytest.mark.parametrize("mode", ["-oasyncio_mode=auto", "-oasyncio_mode=strict", "-pno:asyncio"])
def test_a_marked_test_runs_on_asyncio_uvloop_and_trio(pytester: pytest.Pytester, mode: str) -> None:
    """Whatever pytest-asyncio's mode, or without it, the plugin runs each marked async test once
    per backend, in that backend (sniffio's view and the loop's class), and a marked sync test once."""
    pytester.makepyfile(BACKENDS_SEEN)
    result = pytester.runpytest("-v", "-pno:randomly", mode)
    result.assert_outcomes(passed=10)
    for test in ("test_backward", "TestInAClass::test_method", "test_hypothesis"):
        for backend in ("asyncio", "uvloop", "trio"):
            result.stdout.fnmatch_lines([f"*::{test}[[]{backend}[]] PASSED*"])
    result.stdout.fnmatch_lines(["*::test_sync_bridge PASSED*"])


def test_the_backends_option_and_an_unknown_backend(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(BACKENDS_SEEN)
    result = pytester.runpytest("-v", "-pno:randomly", "--aiograd-backends=trio")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*::test_backward[[]trio[]] PASSED*"])
    result = pytester.runpytest("--aiograd-backends=asyncio,curio")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*aiograd: unknown backend(s) 'curio'; choose from asyncio, uvloop, anyio, trio"])


def test_the_anyio_backend_runs_the_test_as_anyio_s_root_task(pytester: pytest.Pytester) -> None:
    """``anyio``: anyio.run(backend="asyncio") runs the test, on asyncio's loop, as its root task
    named after the test, so anyio's cancel scopes and task groups work as in an anyio program."""
    pytester.makepyfile(BACKENDS_SEEN + '''

async def test_anyio_root_task():
    import anyio

    assert anyio.get_current_task().name == f"{__name__}.test_anyio_root_task"
    with anyio.move_on_after(0.01) as scope:
        await anyio.sleep(3600)
    assert scope.cancelled_caught
''')
    result = pytester.runpytest("-v", "-pno:randomly", "--aiograd-backends=anyio")
    result.assert_outcomes(passed=5)
    for test in ("test_backward", "TestInAClass::test_method", "test_hypothesis", "test_anyio_root_task"):
        result.stdout.fnmatch_lines([f"*::{test}[[]anyio[]] PASSED*"])


AUTO = '''
import pytest
import sniffio


async def test_unmarked(aiograd_backend):
    assert sniffio.current_async_library() == ("trio" if aiograd_backend == "trio" else "asyncio")


@pytest.mark.aiograd(backends=["uvloop"])
async def test_names_its_backend(aiograd_backend):
    assert aiograd_backend == "uvloop"


def test_sync():
    pass
'''


@pytest.mark.parametrize("asyncio_mode", ["-oasyncio_mode=auto", "-oasyncio_mode=strict", "-pno:asyncio"])
def test_auto_mode_runs_every_async_test_as_if_marked(pytester: pytest.Pytester, asyncio_mode: str) -> None:
    """``aiograd_mode = auto``: unmarked async tests run on the configured backends, a mark still
    picks its own, sync tests run once; pytest-asyncio, whatever its mode, runs none of them."""
    pytester.makepyfile(AUTO)
    result = pytester.runpytest("-v", "-pno:randomly", asyncio_mode, "-oaiograd_mode=auto",
                                "-oaiograd_backends=asyncio anyio trio")
    result.assert_outcomes(passed=5)
    for backend in ("asyncio", "anyio", "trio"):
        result.stdout.fnmatch_lines([f"*::test_unmarked[[]{backend}[]] PASSED*"])
    result.stdout.fnmatch_lines(["*::test_names_its_backend[[]uvloop[]] PASSED*", "*::test_sync PASSED*"])
    result = pytester.runpytest("-oaiograd_mode=sometimes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*aiograd: aiograd_mode must be one of strict, auto, got 'sometimes'"])


def test_a_task_of_the_test_s_own_left_pending_fails_it(pytester: pytest.Pytester) -> None:
    """On a loop the plugin made for the test, any task left pending is reported and cancelled
    (asyncio.Runner would cancel it unseen), not only aiograd's."""
    pytester.makepyfile('''
import asyncio

import pytest


@pytest.mark.aiograd(backends=["asyncio", "uvloop", "anyio"])
async def test_leaves_a_task():
    asyncio.get_running_loop().create_task(asyncio.sleep(3600), name="forgotten")
''')
    result = pytester.runpytest("-v", "-pno:randomly")
    result.assert_outcomes(failed=3)
    for backend in ("asyncio", "uvloop", "anyio"):
        result.stdout.fnmatch_lines([
            f"*::test_leaves_a_task[[]{backend}[]] left work behind on its {backend} loop:",
            "  - task 'forgotten' is still pending: <coroutine object sleep at *>",
        ])


def test_without_a_mark_or_the_ini_option_the_plugin_does_nothing(pytester: pytest.Pytester) -> None:
    """An unmarked async test is pytest-asyncio's (or nobody's), and a leak goes unnoticed unless
    the ini option asks for the check, which then covers pytest-asyncio's tests too."""
    pytester.makepyfile(LEAKY.replace("pytestmark = pytest.mark.aiograd", ""))
    result = pytester.runpytest("-v", "-pno:randomly", "-oasyncio_mode=auto")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*::test_leaves_a_backward_running PASSED*"])  # no backend id

    result = pytester.runpytest("-v", "-pno:randomly", "-oasyncio_mode=auto", "-oaiograd_leak_check=true")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*::test_leaves_a_backward_running left work behind on its loop:",
        "  - task 'Task-*' is still pending: <aiograd._api._autograd._BackwardCall object at *>",
        "  - 1 GraphTask(s) still in flight",
    ])


LEAKY = '''
import asyncio

import hypothesis  # noqa: F401  (see the docstring)
import pytest
import sniffio  # noqa: F401
import trio  # noqa: F401
import uvloop  # noqa: F401

import aiograd as ag

pytestmark = pytest.mark.aiograd


class Waits(ag.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    async def backward(ctx, grad):
        await asyncio.Event().wait()  # forever: only a cancellation ends it
        return grad


async def test_leaves_a_backward_running():
    x = ag.tensor(1.0, requires_grad=True)
    asyncio.get_running_loop().create_task(Waits.apply(x).backward())
    await asyncio.sleep(0)


async def test_the_next_test_runs_on_a_clean_engine():
    x = ag.tensor(1.0, requires_grad=True)
    await (x * 2.0).backward()
    assert x.grad.item() == 2.0
'''


def test_a_marked_test_that_leaves_work_behind_fails_naming_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(LEAKY)
    result = pytester.runpytest("-v", "-pno:randomly", "--aiograd-backends=asyncio,uvloop")
    result.assert_outcomes(passed=2, failed=2)
    for backend in ("asyncio", "uvloop"):
        result.stdout.fnmatch_lines([
            f"*::test_leaves_a_backward_running[[]{backend}[]] left work behind on its {backend} loop:",
            "  - task 'Task-*' is still pending: <aiograd._api._autograd._BackwardCall object at *>",
            "  - 1 GraphTask(s) still in flight",
        ])
        result.stdout.fnmatch_lines([f"*::test_the_next_test_runs_on_a_clean_engine[[]{backend}[]] PASSED*"])


def test_shuffle_seeds_from_the_mark_and_the_command_line(pytester: pytest.Pytester) -> None:
    """Each seed is a variant; the engine the backward runs on (the test's loop's, or under trio
    aiograd.sync's background loop's) has that seed while the test runs, and none after."""
    pytester.makepyfile('''
import hypothesis  # noqa: F401  (see the docstring)
import pytest
import sniffio  # noqa: F401
import trio  # noqa: F401
import uvloop  # noqa: F401

import aiograd as ag


@pytest.mark.aiograd(shuffle_seeds=[1, 2])
async def test_seed(aiograd_shuffle_seed):
    seen = []
    x = ag.tensor(1.0, requires_grad=True)
    y = x * 2.0
    y.register_hook(lambda g: seen.append(ag.get_engine().shuffle_seed))
    await y.backward()
    assert seen == [aiograd_shuffle_seed] and ag.get_shuffle_seed() == aiograd_shuffle_seed


def test_after():
    assert ag.get_shuffle_seed() is None
    seen = []
    x = ag.tensor(1.0, requires_grad=True)
    y = x * 2.0
    y.register_hook(lambda g: seen.append(ag.get_engine().shuffle_seed))
    ag.sync.backward(y)
    assert seen == [None]
''')
    result = pytester.runpytest("-v", "-pno:randomly")
    result.assert_outcomes(passed=7)
    for backend in ("asyncio", "uvloop", "trio"):
        for seed in (1, 2):
            result.stdout.fnmatch_lines([f"*::test_seed[[]{backend}-shuffle{seed}[]] PASSED*"])
    result = pytester.runpytest("-v", "-pno:randomly", "--aiograd-shuffle-seed=7", "--aiograd-backends=trio")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*::test_seed[[]trio-shuffle7[]] PASSED*"])


def test_a_marked_test_cannot_take_an_async_fixture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile('''
import pytest
import pytest_asyncio


@pytest_asyncio.fixture
async def resource():
    yield 1


@pytest.mark.aiograd(backends=["asyncio"])
async def test_uses(resource):
    pass
''')
    result = pytester.runpytest("-pno:randomly")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        "*::test_uses[[]asyncio[]]: an @pytest.mark.aiograd test cannot take the async fixture "
        "'resource': it would be set up on pytest-asyncio's loop, not on the test's backend; enter "
        "an async context manager inside the test instead",
    ])


def test_the_plugin_is_an_entry_point() -> None:
    plugins = importlib.metadata.entry_points(group="pytest11")
    assert [ep.value for ep in plugins if ep.name == "aiograd"] == ["aiograd.pytest_plugin"]


def test_leaks_on_the_sync_loop_are_found() -> None:
    """A backward left running on aiograd.sync's background loop (where trio's backward calls
    run) is reported, with its GraphTask; once it is done, nothing is."""
    release = threading.Event()

    class Blocks(ag.Function):
        @staticmethod
        def forward(ctx, x):  # type: ignore[no-untyped-def]
            return x * 1.0

        @staticmethod
        async def backward(ctx, grad):  # type: ignore[no-untyped-def]
            await asyncio.get_running_loop().run_in_executor(None, release.wait)
            return grad

    x = ag.tensor(1.0, requires_grad=True)
    ag.sync.backward(x * 1.0)  # the background loop is up
    assert pytest_plugin.leaks_on_sync_loop() == []
    started = threading.Event()

    def run() -> None:
        started.set()
        ag.sync.backward(Blocks.apply(x))

    thread = threading.Thread(target=run)
    thread.start()
    try:
        started.wait()
        problems: list[str] = []
        while not problems:  # until the backward has reached the background loop
            problems = pytest_plugin.leaks_on_sync_loop()
        assert problems[-1] == "1 GraphTask(s) still in flight"
    finally:
        release.set()
        thread.join()
    assert pytest_plugin.leaks_on_sync_loop() == []
    assert x.grad is not None and x.grad.item() == 2.0


def test_the_documented_example_passes_everywhere(pytester: pytest.Pytester) -> None:
    """examples/test_concurrent_gradients.py, the example docs/testing.md walks through: 2 tests
    x 3 backends x 3 shuffle seeds."""
    example = Path(__file__).resolve().parent.parent / "examples" / "test_concurrent_gradients.py"
    pytester.makepyfile(test_concurrent_gradients=example.read_text())
    result = pytester.runpytest("-v", "-pno:randomly")
    result.assert_outcomes(passed=18)
    result.stdout.fnmatch_lines(["*::test_a_cancelled_request_leaves_the_others_and_the_model_alone[[]trio-shuffle2[]] PASSED*"])
