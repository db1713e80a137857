"""``torch.jit``'s decorators and queries, so that model code written for TorchScript runs
eagerly on aiograd unchanged: timm and Hugging Face models branch on ``torch.jit.is_scripting()``
and decorate helpers with ``@torch.jit.ignore`` or ``@torch.jit.script``.

aiograd has no compiler: ``script`` and ``trace`` return what they are given (a module or a
function, run eagerly as before), the decorators return their function unchanged, and
``is_scripting()``/``is_tracing()`` are False, which is what they are in torch's eager mode too.
Saving or loading a TorchScript archive (``torch.jit.save``/``load``) has no meaning here and
raises.
"""

from __future__ import annotations

from collections.abc import Callable as _Callable
from typing import Any as _Any
from typing import Final
from typing import TypeVar as _TypeVar

__all__ = [
    "Final", "annotate", "export", "ignore", "interface", "is_scripting", "is_tracing", "load", "save",
    "script", "script_if_tracing", "trace", "unused",
]

_T = _TypeVar("_T")


def is_scripting() -> bool:
    """False: aiograd never compiles (torch's eager answer); code guarded by ``if not
    torch.jit.is_scripting():`` runs."""
    return False


def is_tracing() -> bool:
    """False: aiograd never traces (torch's answer outside ``torch.jit.trace``)."""
    return False


def script(obj: _T, optimize: None = None, _frames_up: int = 0, _rcb: _Callable[[str], _Any] | None = None,
           example_inputs: _Any = None) -> _T:
    """``torch.jit.script``: returns ``obj`` (a module, function or class) unchanged; it runs
    eagerly."""
    return obj


def trace(func: _T, example_inputs: _Any = None, optimize: None = None, check_trace: bool = True,
          check_inputs: _Any = None, check_tolerance: float = 1e-05, strict: bool = True, **kwargs: _Any) -> _T:
    """``torch.jit.trace``: returns ``func`` unchanged (it is not run on ``example_inputs``); the
    result computes what torch's traced module would for the inputs it was traced with, and, unlike
    a trace, follows data-dependent control flow for any other input."""
    return func


def script_if_tracing(fn: _T) -> _T:
    """``torch.jit.script_if_tracing``: ``fn`` unchanged."""
    return fn


def ignore(drop: _Any = False, **kwargs: _Any) -> _Any:
    """``@torch.jit.ignore`` and ``@torch.jit.ignore(drop=...)``: the function unchanged."""
    if callable(drop):  # used bare: @ignore
        return drop

    def decorator(fn: _T) -> _T:
        return fn

    return decorator


def unused(fn: _T) -> _T:
    """``@torch.jit.unused``: ``fn`` unchanged."""
    return fn


def export(fn: _T) -> _T:
    """``@torch.jit.export``: ``fn`` unchanged."""
    return fn


def interface(obj: _T) -> _T:
    """``@torch.jit.interface``: the class unchanged."""
    return obj


def annotate(the_type: _Any, the_value: _T) -> _T:
    """``torch.jit.annotate(type, value)``: ``value`` (the type is for the TorchScript compiler)."""
    return the_value


def save(m: _Any, f: _Any, _extra_files: _Any = None) -> None:
    """``torch.jit.save``: raises; a TorchScript archive needs torch's compiler. Save the weights
    with ``aiograd.save(model.state_dict(), path)``."""
    raise NotImplementedError("torch.jit.save: aiograd has no TorchScript; save the state_dict with aiograd.save")


def load(f: _Any, map_location: _Any = None, _extra_files: _Any = None, _restore_shapes: bool = False) -> _Any:
    """``torch.jit.load``: raises; a TorchScript archive holds a compiled program aiograd cannot
    run. Load a ``state_dict`` saved by ``torch.save`` with ``aiograd.load`` instead."""
    raise NotImplementedError("torch.jit.load: aiograd cannot run TorchScript archives; load a state_dict with aiograd.load")


def _assert(condition: _Any, message: str) -> None:
    """``torch._assert(condition, message)``: an AssertionError with ``message`` where
    ``condition`` is false (a one-element tensor counts by its value)."""
    if not condition:  # (not an assert statement: pytest rewrites those in aiograd's modules)
        raise AssertionError(message)


