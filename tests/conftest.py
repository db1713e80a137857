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

pytest_plugins = ["pytester"]  # tests/test_pytest_plugin.py runs the plugin on scratch suites
