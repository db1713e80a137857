"""Anomaly mode: record where each node came from, report it when its backward fails, check NaNs.

Held in a ContextVar like grad mode. Nodes created while it is on keep the forward traceback (and,
for nodes created by a backward under create_graph, the node whose backward created them) in
``node.metadata``; the engine warns with that history when the node's backward raises, and checks
every node's outputs for NaN when ``check_nan`` is on.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import traceback
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from ._node import Node

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled"]

#: (enabled, check_nan)
_anomaly: contextvars.ContextVar[tuple[bool, bool]] = contextvars.ContextVar(
    "aiograd_anomaly", default=(False, False)
)
anomaly_state = _anomaly.get

#: The node whose backward is running (set by the engine only in anomaly mode): a node created
#: meanwhile records it as its parent.
current_node: contextvars.ContextVar[Node | None] = contextvars.ContextVar(
    "aiograd_current_node", default=None
)

F = TypeVar("F", bound=Callable[..., Any])

TRACEBACK_KEY = "traceback_"
PARENT_KEY = "parent_"


def is_anomaly_enabled() -> bool:
    """True inside ``detect_anomaly()`` / after ``set_detect_anomaly(True)``."""
    return _anomaly.get()[0]


def is_anomaly_check_nan_enabled() -> bool:
    """True when anomaly mode also checks backward outputs for NaN."""
    enabled, check_nan = _anomaly.get()
    return enabled and check_nan


class _AnomalyMode:
    def __init__(self, enabled: bool, check_nan: bool) -> None:
        self._state = (enabled, check_nan)
        self._tokens: list[contextvars.Token[tuple[bool, bool]]] = []

    def __enter__(self) -> None:
        self._tokens.append(_anomaly.set(self._state))

    def __exit__(self, *exc: object) -> None:
        _anomaly.reset(self._tokens.pop())

    def __call__(self, fn: F) -> F:
        state = self._state
        if inspect.iscoroutinefunction(fn):
            # A directly awaited coroutine shares its caller's context, and the caller is
            # suspended meanwhile: setting the variable around the await is enough.
            @functools.wraps(fn)
            async def run_coroutine(*args: Any, **kwargs: Any) -> Any:
                token = _anomaly.set(state)
                try:
                    return await fn(*args, **kwargs)
                finally:
                    _anomaly.reset(token)

            return run_coroutine  # type: ignore[return-value]

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            token = _anomaly.set(state)
            try:
                return fn(*args, **kwargs)
            finally:
                _anomaly.reset(token)

        return run  # type: ignore[return-value]


class detect_anomaly(_AnomalyMode):
    """Context manager (and decorator) that turns anomaly detection on for its block.

    Nodes created inside remember the forward code that created them; if a backward formula
    fails, the error comes with a warning showing that forward traceback. With ``check_nan``
    (default), a backward output containing NaN raises ``RuntimeError("Function 'XBackward0'
    returned nan values in its 0th output.")``.
    """

    def __init__(self, check_nan: bool = True) -> None:
        super().__init__(True, check_nan)

    def __enter__(self) -> None:
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and should "
            "only be enabled for debugging.",
            UserWarning,
            stacklevel=2,
        )
        super().__enter__()


class set_detect_anomaly(_AnomalyMode):
    """Turn anomaly detection on or off: at once as a call, for a block as a context manager."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        super().__init__(bool(mode), check_nan)
        self._prev = _anomaly.get()
        _anomaly.set(self._state)

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        _anomaly.set(self._prev)

    def __call__(self, fn: F) -> F:
        # Used as a decorator, the constructor's immediate effect must not outlive the decoration.
        _anomaly.set(self._prev)
        return super().__call__(fn)


def record_creation(node: Node) -> None:
    """Called for every node created while anomaly mode is on."""
    metadata = node.metadata
    metadata[TRACEBACK_KEY] = "".join(traceback.format_stack()[:-3])
    parent = current_node.get()
    if parent is not None:
        metadata[PARENT_KEY] = parent


def warn_with_history(node: Node) -> None:
    """PyTorch's anomaly report for a node whose backward failed."""
    metadata = node._metadata or {}
    stack = metadata.get(TRACEBACK_KEY)
    if stack is None:
        message = (
            f"Error detected in {node.name()}. No forward pass information available. Enable "
            "detect anomaly during forward pass for more information."
        )
    else:
        message = f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n{stack}"
        parent = metadata.get(PARENT_KEY)
        while parent is not None:
            parent_meta = parent._metadata or {}
            message += (
                f"\n\nPrevious calculation was induced by {parent.name()}. Traceback of forward "
                f"call that induced the previous calculation:\n{parent_meta.get(TRACEBACK_KEY, '')}"
            )
            parent = parent_meta.get(PARENT_KEY)
    warnings.warn(message, UserWarning, stacklevel=2)
