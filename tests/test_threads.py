"""``set_num_threads``/``get_num_threads`` (numpy's BLAS threads, through threadpoolctl),
``AIOGRAD_NUM_THREADS`` at import, and the inter-op pair (the default CPU executor's threads),
with torch's errors."""

from __future__ import annotations

import subprocess
import sys

import pytest
import threadpoolctl

import aiograd as ag
from aiograd import executors


def _blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpoolctl.threadpool_info() if lib["user_api"] == "blas"]


@pytest.fixture
def restore_threads():
    before = ag.get_num_threads()
    yield
    ag.set_num_threads(before)


def test_set_num_threads_caps_numpys_blas(restore_threads) -> None:
    ag.set_num_threads(1)
    assert ag.get_num_threads() == 1
    assert _blas_threads() and set(_blas_threads()) == {1}


@pytest.mark.parametrize(("value", "message"), [
    (0, "set_num_threads expects a positive integer"), (-2, "set_num_threads expects a positive integer"),
    (1.5, "set_num_threads expects an int, but got float"),
])
def test_set_num_threads_refuses_as_torch(value, message) -> None:
    torch = pytest.importorskip("torch")
    for lib in (ag, torch):
        with pytest.raises(RuntimeError, match=f"^{message}$"):
            lib.set_num_threads(value)


def test_the_environment_variable_caps_blas_at_import() -> None:
    code = ("import aiograd, threadpoolctl; "
            "print(aiograd.get_num_threads(), {l['num_threads'] for l in threadpoolctl.threadpool_info()})")
    out = subprocess.run([sys.executable, "-c", code], env={"AIOGRAD_NUM_THREADS": "1", "PATH": ""},
                         capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split(None, 1) == ["1", "{1}\n"]
    bad = subprocess.run([sys.executable, "-c", "import aiograd"], env={"AIOGRAD_NUM_THREADS": "many"},
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "AIOGRAD_NUM_THREADS must be a positive integer, got 'many'" in bad.stderr


def test_interop_threads_size_the_default_executor_once() -> None:
    code = (
        "import aiograd as ag\n"
        "print(ag.get_num_interop_threads())\n"
        "ag.set_num_interop_threads(3)\n"
        "print(ag.get_num_interop_threads(), type(ag.get_executor('cpu')).__name__)\n"
        "try:\n    ag.set_num_interop_threads(2)\nexcept RuntimeError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    lines = out.stdout.splitlines()
    assert int(lines[0]) >= 1
    assert lines[1] == "3 ThreadExecutor"
    assert lines[2] == ("Error: cannot set number of interop threads after parallel work has started or "
                        "set_num_interop_threads called")


def test_thread_executor_says_its_size_and_whether_it_started() -> None:
    pool = executors.ThreadExecutor(2)
    assert (pool.max_workers, pool.started) == (2, False)
    pool.close()
