"""Blocking ``backward()`` and ``grad()`` for code with no running event loop.

Scripts, worker threads and REPLs where no event loop runs call these without
``async``/``await``::

    import aiograd
    import aiograd.sync

    w = aiograd.randn(3, requires_grad=True)
    aiograd.sync.backward((w * w).sum())     # accumulates into w.grad
    (g,) = aiograd.sync.grad((w * w).sum(), w)

Each call runs the ordinary ``await aiograd.backward(...)`` / ``await aiograd.grad(...)`` as its
own GraphTask on one background event loop (a daemon thread behind anyio's blocking portal, on
uvloop when it is installed), started on first use and shared by every caller and thread, and
blocks until it is done. Arguments, results and errors are those of the async functions: an
exception raised by the backward (a custom Function's, with its "while running XBackward" note)
is the very object the caller gets, its traceback running from the caller into the backward.
The backward runs in a copy of the caller's context, so anomaly mode, the default device and
the caller's own context variables apply to it, as they would to an awaited call.

Called from a thread whose event loop is running (``async def`` code, or a hook or Function
backward run by this module's own loop) they raise ``RuntimeError`` before doing anything,
since blocking would stall that loop, or deadlock it: await the async functions there instead.
A Jupyter notebook is such a place: its cells run in the thread of ipykernel's event loop, so
there ``aiograd.sync.backward(loss)`` raises, and a top-level ``await loss.backward()`` in the
cell is the way.

An exception that interrupts the waiting caller (``KeyboardInterrupt``) cancels the call's
GraphTask and waits for it to stop before propagating, so no ``.grad`` changes afterwards.
``shutdown()`` stops the background loop (the next call starts a fresh one); it also runs at
interpreter exit.
"""

from __future__ import annotations

import asyncio as _asyncio
import atexit as _atexit
import concurrent.futures as _futures
import contextvars as _contextvars
import functools as _functools
import inspect as _inspect
import os as _os
import sys as _sys
import threading as _threading
from collections.abc import Callable as _Callable
from collections.abc import Coroutine as _Coroutine
from contextlib import AbstractContextManager as _AbstractContextManager
from typing import Any as _Any
from typing import ParamSpec as _ParamSpec
from typing import TypeVar as _TypeVar
from typing import cast as _cast

from . import functional as _functional
from ._api import _autograd
from ._base._graph_context import current_graph_task as _current_graph_task
from ._core._anomaly import current_node as _current_node
from ._engine import current_worker as _current_worker
from ._engine.completion import release_frames as _release_frames

__all__ = ["backward", "functional", "grad", "shutdown"]

_T = _TypeVar("_T")
_P = _ParamSpec("_P")

#: The name of the background loop's thread.
_THREAD_NAME = "aiograd-sync-portal"


class _Portal:
    """The background loop: anyio's portal, the context manager that owns its thread, and the
    thread itself."""

    __slots__ = ("portal", "manager", "thread", "loop")

    def __init__(
        self, portal: _Any, manager: _AbstractContextManager[_Any], thread: _threading.Thread,
        loop: _asyncio.AbstractEventLoop,
    ) -> None:
        self.portal = portal
        self.manager = manager
        self.thread = thread
        self.loop = loop


_lock = _threading.Lock()
_current: _Portal | None = None
_exiting = False  # set by the atexit handler: no new portal after it ran
#: Calls that used the background loop so far (approximate across threads: only "has it changed"
#: is read, by aiograd's pytest plugin, to check that loop after the tests that used it).
_uses = 0


def _backend_options() -> dict[str, _Any]:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return {}
    return {"use_uvloop": True}


def _name_portal_thread() -> _threading.Thread:
    thread = _threading.current_thread()
    thread.name = _THREAD_NAME
    return thread


def _start() -> _Portal:
    """Start the background loop (called with ``_lock`` held)."""
    from anyio.from_thread import start_blocking_portal

    manager = start_blocking_portal(backend="asyncio", backend_options=_backend_options())
    portal = manager.__enter__()
    try:
        thread = portal.call(_name_portal_thread)
        loop = portal.call(_asyncio.get_running_loop)
    except BaseException:
        manager.__exit__(None, None, None)
        raise
    return _Portal(portal, manager, thread, loop)


def _stop(current: _Portal, cancel: bool) -> None:
    """Stop a portal that was taken out of ``_current``, and join its thread."""
    try:
        current.portal.call(current.portal.stop, cancel)
    except RuntimeError:
        pass  # its loop is gone already (it died, or a concurrent shutdown stopped it)
    # Leaving the manager joins the thread once every task has finished (its own stop call
    # finds the portal stopped and passes).
    current.manager.__exit__(None, None, None)


def shutdown(cancel: bool = False) -> None:
    """Stop the background event loop and join its thread; the next call starts a fresh one.

    Calls in flight finish first, unless ``cancel=True``, which cancels them: their callers get a
    ``RuntimeError``. Nothing happens if no loop is running. Runs at interpreter exit (with
    ``cancel=True``). Calling it from the background loop itself (a hook or a Function's backward
    run by ``aiograd.sync``) raises ``RuntimeError``: that loop cannot wait for itself.
    """
    global _current
    current = _current
    if current is not None and current.thread is _threading.current_thread():
        # Checked before taking the lock: a caller holding it may be waiting for this loop.
        raise RuntimeError(
            "aiograd.sync.shutdown() cannot be called from aiograd.sync's own event loop "
            "thread (from a hook or a Function's backward it runs): it would wait for itself"
        )
    with _lock:
        current, _current = _current, None
    if current is not None:
        _stop(current, cancel)


def _shutdown_at_exit() -> None:
    global _exiting
    _exiting = True
    shutdown(cancel=True)


_atexit.register(_shutdown_at_exit)


#: The parents' portals a forked child forgot, kept alive: collecting one would close its
#: ``start_blocking_portal`` context manager, whose cleanup waits for the parent's loop thread,
#: which the child does not have (the child would hang in the fork).
_orphaned_in_fork: list[_Any] = []


def _after_fork_in_child() -> None:
    # The child has no portal thread: forget the parent's portal (it cannot be stopped here).
    global _lock, _current
    _lock = _threading.Lock()
    if _current is not None:
        _orphaned_in_fork.append(_current)
    _current = None


if hasattr(_os, "register_at_fork"):
    _os.register_at_fork(after_in_child=_after_fork_in_child)


def _in_trio() -> _Any:
    """The ``trio`` module when this thread runs a trio task, else None."""
    trio = _sys.modules.get("trio")
    if trio is None:
        return None
    try:
        trio.lowlevel.current_task()
    except RuntimeError:
        return None
    return trio


def _check_no_running_loop(name: str) -> None:
    """Refuse to block a thread whose event loop is running: the call would stall that loop,
    and deadlock it when it is the background loop the call needs."""
    # Asked of the loops themselves, not of sniffio: its context variable is copied into
    # worker threads (asyncio.to_thread, anyio.to_thread), where no loop runs.
    try:
        _asyncio.get_running_loop()
    except RuntimeError:
        if _in_trio() is None:
            return
    current = _current
    if current is not None and current.thread is _threading.current_thread():
        raise RuntimeError(
            f"aiograd.sync.{name}() cannot be called from aiograd.sync's own event loop thread "
            "(from a hook or a Function's backward it runs): it would wait for itself; make the "
            f"hook or backward `async def` and use `await aiograd.{name}(...)` instead"
        )
    raise RuntimeError(
        f"aiograd.sync.{name}() cannot be called from a running event loop (it would block the "
        f"loop it runs on); use `await aiograd.{name}(...)` instead"
    )


def _forget_backward() -> None:
    """In the copied context: this call is a backward of its own, not a reentrant one, even when
    the caller runs inside a backward (a node offloaded to an executor thread)."""
    _current_graph_task.set(None)
    _current_worker.set(None)
    _current_node.set(None)


class _Handover:
    """A call handed to the background loop: its task once started there, and whether the
    caller gave up on it while handing it over (an interrupt inside ``_submit``)."""

    __slots__ = ("abandoned", "task")

    def __init__(self) -> None:
        self.abandoned = False
        self.task: _asyncio.Task[_Any] | None = None


def _spawn(
    context: _contextvars.Context,
    function: _Callable[..., _Coroutine[_Any, _Any, _T]],
    args: tuple[_Any, ...],
    finished: _threading.Event,
    handover: _Handover,
) -> _asyncio.Task[_T] | None:
    """On the portal's loop: run ``function(*args)`` as a task in the caller's (copied) context.
    The portal's task awaits it, so cancelling that cancels this one; ``finished`` is set when it
    is done, however it ends (this is a plain function, so it runs even for a call cancelled
    before it started). A call its caller abandoned while handing it over never starts."""
    if handover.abandoned:
        finished.set()
        return None
    task = _asyncio.get_running_loop().create_task(function(*args), context=context)

    def done(_: object) -> None:
        # Dropped once done: the task holds the call's error, whose traceback holds the
        # caller's frame, which holds the handover: a cycle that would keep the failed graph.
        handover.task = None
        finished.set()

    task.add_done_callback(done)
    handover.task = task
    return task


def _cancel_handover(handover: _Handover, finished: _threading.Event) -> None:
    """The caller was interrupted while handing a call over, so it has no future to cancel: mark
    the call abandoned (so it never starts) and cancel it on the loop if it has started, then wait
    until it has stopped, as for an interrupt during the wait."""
    handover.abandoned = True
    portal = _current
    if portal is None or not portal.thread.is_alive():
        return
    checked = _threading.Event()

    def cancel() -> None:  # on the loop: after _spawn if that ran first (the loop is one thread)
        if handover.task is not None:
            handover.task.cancel()
        checked.set()

    try:
        portal.loop.call_soon_threadsafe(cancel)
    except RuntimeError:  # its loop has closed: nothing runs there any more
        return
    while not checked.wait(0.1) and portal.thread.is_alive():
        pass
    if handover.task is not None:
        while not finished.wait(0.1) and portal.thread.is_alive():
            pass


def _running_portal(name: str) -> _Portal:
    """The background loop, started (or restarted, if its thread died) as needed."""
    global _current, _uses
    _uses += 1
    with _lock:
        if _exiting:
            raise RuntimeError(f"aiograd.sync.{name}() called during interpreter shutdown")
        current = _current
        if current is not None and not current.thread.is_alive():
            current = _current = None  # its loop died: start a fresh one
        if current is None:
            current = _current = _start()
        return current


def _submit(name: str, fn: _Callable[[], _Any]) -> tuple[_futures.Future[_Any], _threading.Thread]:
    current = _running_portal(name)
    return current.portal.start_task_soon(fn, name=f"aiograd.sync.{name}"), current.thread


#: Modules whose frames an error crosses on its way back from the loop thread.
_BRIDGE_MODULES = ("aiograd.", "anyio.", "asyncio.", "concurrent.futures.")


def _call(
    name: str, function: _Callable[_P, _Coroutine[_Any, _Any, _T]], /, *args: _P.args, **kwargs: _P.kwargs
) -> _T:
    """Run ``await function(*args, **kwargs)`` on the background loop and wait for its result."""
    _check_no_running_loop(name)
    context = _contextvars.copy_context()
    context.run(_forget_backward)
    finished = _threading.Event()
    handover = _Handover()
    with_keywords = _functools.partial(function, **kwargs)
    try:
        future, thread = _submit(name, _functools.partial(_spawn, context, with_keywords, args, finished, handover))
    except BaseException:
        # Interrupted (KeyboardInterrupt) while handing the call over: it may have started.
        _cancel_handover(handover, finished)
        raise
    try:
        return _cast(_T, future.result())
    except _futures.CancelledError:
        raise RuntimeError(
            f"aiograd.sync.{name}() was cancelled on aiograd.sync's event loop (by "
            "aiograd.sync.shutdown(cancel=True), interpreter exit, or a CancelledError raised "
            "inside the backward)"
        ) from None
    except BaseException as exc:
        # Interrupted while waiting (KeyboardInterrupt, ...): stop the GraphTask, and wait until
        # it has, so that no .grad changes after the caller got the exception. A call that is
        # already done (its own error is being re-raised) cannot be cancelled.
        if future.cancel():
            while not finished.wait(0.1) and thread.is_alive():
                pass
        # The future holds the error and the frames that ran it hold the future: cleared, so
        # the failed graph is freed by reference counting alone.
        _release_frames(exc.__traceback__, _BRIDGE_MODULES)
        del future
        raise


def _blocking(name: str, function: _Callable[_P, _Coroutine[_Any, _Any, _T]]) -> _Callable[_P, _T]:
    """``aiograd.<name>``, blocking: a function with ``function``'s parameters (to type checkers
    through ``_P``; to ``inspect.signature`` and the docs through ``__signature__``) that hands
    its arguments as given to ``await function(...)`` on the background loop, and waits. (Not
    ``__wrapped__``: the docs would unwrap it and show the async function instead.)"""

    def blocking(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        return _call(name, function, *args, **kwargs)

    blocking.__name__ = name.rpartition(".")[2]
    blocking.__qualname__ = name
    blocking.__doc__ = _blocking_doc(name, function)
    blocking.__signature__ = _inspect.signature(function)  # type: ignore[attr-defined]
    return blocking


def _blocking_doc(name: str, function: _Callable[..., _Any]) -> str:
    """The async function's summary (its docstring's first paragraph), then what differs."""
    summary = (_inspect.getdoc(function) or "").partition("\n\n")[0]
    return (
        f"{summary}\n\n``await aiograd.{name}(...)``, blocking, for code with no running event "
        f"loop: the same arguments, results and errors (see ``aiograd.{name}``), and "
        "``RuntimeError`` when called from a thread whose event loop is running (await the "
        "async function there)."
    )


backward = _blocking("backward", _autograd.backward)
grad = _blocking("grad", _autograd.grad)


class _Functional:
    """``aiograd.sync.functional``: the functions of ``aiograd.functional`` (PyTorch's
    ``torch.autograd.functional``), blocking, for code with no running event loop::

        jac = aiograd.sync.functional.jacobian(f, x, vectorize=True)

    Same arguments, results and errors as the awaitable ones; ``f`` runs on aiograd.sync's
    background loop, so it must not call ``aiograd.sync`` itself (it may be ``async def`` and
    await ``aiograd.grad``)."""

    __slots__ = ()

    vjp = staticmethod(_blocking("functional.vjp", _functional.vjp))
    jvp = staticmethod(_blocking("functional.jvp", _functional.jvp))
    jacobian = staticmethod(_blocking("functional.jacobian", _functional.jacobian))
    hessian = staticmethod(_blocking("functional.hessian", _functional.hessian))
    hvp = staticmethod(_blocking("functional.hvp", _functional.hvp))
    vhp = staticmethod(_blocking("functional.vhp", _functional.vhp))


#: ``aiograd.functional``, blocking (see ``_Functional``).
functional: _Functional = _Functional()
