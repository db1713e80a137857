"""How the suite runs its async tests: aiograd's own pytest plugin, and nothing else.

Every ``async def`` test is run by ``aiograd/pytest_plugin.py`` (``aiograd_mode = auto`` in
pyproject.toml), once per backend, with the backend in its id: ``test_x[asyncio]`` (asyncio's
default loop) and ``test_x[uvloop]``, the ``aiograd_backends`` of pyproject.toml. Modules name
others: the public-API ones (test_api, test_hooks, test_function, test_checkpoint,
test_functional) trio too, since their tests are written for any loop; the ones about anyio's
cancel scopes (test_anyio, test_cancellation, test_serving) ``anyio`` too
(``anyio.run(backend="asyncio")``: the test is anyio's root task); op-math modules asyncio alone.

After every test the plugin fails it if it left anything behind: a pending task on the loop it
ran on (the test's own included), a GraphTask in flight, NodeTasks queued or in an executor
(``aiograd_leak_check``).

A test that cannot run under some backend says so, with the reason in a comment, by naming the
backends it runs under: ``@pytest.mark.aiograd(backends=["asyncio"])`` (it then runs once, with
its usual id). A test learns its backend from the plugin's ``aiograd_backend`` fixture.
docs/testing.md is the plugin's guide.
"""

from __future__ import annotations

import os

# torch's C++ errors capture a backtrace that its unwinder symbolizes with addr2line, minutes a
# time over libtorch_cpu.so; dladdr names the frames at once (set before torch is imported)
os.environ.setdefault("TORCH_DISABLE_ADDR2LINE", "1")

pytest_plugins = ["pytester"]  # tests/test_pytest_plugin.py runs the plugin on scratch suites

# ------------------------------------------------------------------------------ the default dtype
# The suite was written when aiograd's default dtype was float64 (gradchecks of tensors made
# from Python floats, exact comparisons with numpy's float64), so it runs under float64: pinned
# when the plugin loads (in each xdist worker too, so tensors made at collection are float64)
# and again before each test, whatever the one before did. The default is process-global, as
# torch's, so the async tests run by the plugin see it too; subprocesses (tests/test_examples.py)
# import aiograd afresh and get the real default, float32. A test marked
# ``@pytest.mark.real_default_dtype`` runs under the real default instead.
import pytest  # noqa: E402

import aiograd as _aiograd  # noqa: E402

#: aiograd's own default (float32, as torch's), read before the suite pins float64.
REAL_DEFAULT_DTYPE = _aiograd.get_default_dtype()
_SUITE_DEFAULT_DTYPE = _aiograd.float64
_aiograd.set_default_dtype(_SUITE_DEFAULT_DTYPE)


@pytest.fixture(autouse=True)
def _suite_default_dtype(request: pytest.FixtureRequest):
    """float64 for the test, or the real default for one marked ``real_default_dtype``; the
    suite's float64 again afterwards."""
    real = request.node.get_closest_marker("real_default_dtype") is not None
    _aiograd.set_default_dtype(REAL_DEFAULT_DTYPE if real else _SUITE_DEFAULT_DTYPE)
    yield
    _aiograd.set_default_dtype(_SUITE_DEFAULT_DTYPE)
