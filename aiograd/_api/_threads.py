"""``torch.set_num_threads``/``get_num_threads`` and the inter-op pair, for aiograd's two kinds of
threads: the BLAS (and OpenMP) pools that numpy's kernels use inside one matrix product, limited
through threadpoolctl, and the executor threads that run independent heavy nodes side by side
(the default CPU ``ThreadExecutor``, torch's inter-op pool).

The first is a budget (``aiograd.executors._blas``): by default the cores given to the process
less those other processes keep busy; the executor runs at most ``free cores // budget`` nodes at
once, so that BLAS threads times running nodes never exceed the cores. ``set_num_threads(n)`` fixes it at
``n``, as torch's sizes its intra-op pool: a script's ``torch.set_num_threads(1)`` keeps numpy's
BLAS on one thread. The environment variable ``AIOGRAD_NUM_THREADS`` does the same at ``import
aiograd``. ``set_num_interop_threads(n)`` sizes the default CPU executor, once, before it has run
anything (torch's rule).
"""

from __future__ import annotations

import os
import threading
from typing import Any

from .. import executors
from .._engine import get_executor, set_executor
from ..executors import _malloc
from ..executors._blas import budget

__all__ = ["apply_environment", "get_num_interop_threads", "get_num_threads", "set_num_interop_threads",
           "set_num_threads"]

_lock = threading.Lock()
_state: dict[str, Any] = {"controller": None, "interop_set": False}


def _controller() -> Any:
    # threadpoolctl scans the loaded libraries (about 10 ms): only when a thread count is asked
    # for or set, and after numpy (and its BLAS) is loaded, which aiograd's import guarantees.
    with _lock:
        if _state["controller"] is None:
            from threadpoolctl import ThreadpoolController

            _state["controller"] = ThreadpoolController()
        return _state["controller"]


def _positive_int(name: str, n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise RuntimeError(f"{name} expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"{name} expects a positive integer")
    return n


def set_num_threads(int: int) -> None:  # noqa: A002  (torch's parameter name)
    """Use ``int`` threads for one BLAS operation (numpy's, and any OpenMP runtime loaded), in
    the whole process, as ``torch.set_num_threads`` sizes torch's intra-op pool: fixed from now
    on, whatever the machine's load (the executor then runs ``cores // int`` nodes at once). A
    RuntimeError (torch's message) for a non-int or a count below 1."""
    n = _positive_int("set_num_threads", int)
    _controller().limit(limits=n)
    budget.fix(n)


def get_num_threads() -> int:
    """The threads one BLAS operation may use while one node runs: what ``set_num_threads``
    set, else the cores given to this process (its CPU affinity, capped by the BLAS's own
    configuration, ``OPENBLAS_NUM_THREADS`` for instance) less those other processes keep busy
    (followed as backward passes start; docs/executors.md)."""
    return budget.threads


def _default_executor_started() -> bool:
    executor = get_executor("cpu")
    return isinstance(executor, executors.ThreadExecutor) and executor.started


def set_num_interop_threads(int: int) -> None:  # noqa: A002  (torch's parameter name)
    """Run independent heavy CPU nodes on ``int`` executor threads (a new default
    ``ThreadExecutor(int)``, as ``torch.set_num_interop_threads`` sizes torch's inter-op pool).
    As torch, once only, and before the default executor has run anything: a RuntimeError
    otherwise."""
    n = _positive_int("set_num_interop_threads", int)
    if _state["interop_set"] or _default_executor_started():
        raise RuntimeError(
            "Error: cannot set number of interop threads after parallel work has started or "
            "set_num_interop_threads called"
        )
    set_executor("cpu", executors.ThreadExecutor(n))
    _state["interop_set"] = True


def get_num_interop_threads() -> int:
    """The threads that run heavy CPU nodes side by side: the CPU executor's ``max_workers`` (1
    for an executor that runs nodes on the loop's own thread)."""
    executor = get_executor("cpu")
    return executor.max_workers if isinstance(executor, executors.ThreadExecutor) else 1


def apply_environment() -> None:
    """``AIOGRAD_NUM_THREADS=n`` in the environment: ``set_num_threads(n)`` at import; and
    glibc's malloc told to keep freed memory for reuse (``aiograd.executors._malloc``), unless
    ``AIOGRAD_MALLOC_TUNING=0`` or glibc's own variables say otherwise."""
    _malloc.tune()
    value = os.environ.get("AIOGRAD_NUM_THREADS")
    if value:
        try:
            n = int(value)
        except ValueError:
            raise ValueError(f"AIOGRAD_NUM_THREADS must be a positive integer, got {value!r}") from None
        set_num_threads(n)
