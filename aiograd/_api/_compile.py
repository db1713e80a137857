"""``aiograd.compile``: torch.compile's signature, without a compiler (aiograd has none)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["compile"]

F = TypeVar("F", bound=Callable[..., Any])


def compile(  # noqa: A001  (torch's name)
    model: F | None = None,
    *,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    backend: str | Callable[..., Any] | None = "inductor",
    mode: str | None = None,
    options: dict[str, Any] | None = None,
    disable: bool = False,
) -> F | Callable[[F], F]:
    """``torch.compile`` for scripts that call it: aiograd has no compiler, so this returns
    ``model`` (a module or a function) itself, unchanged, and runs it eagerly as before; every
    option is accepted and ignored. With ``model=None`` it is a decorator factory
    (``@aiograd.compile(mode="max-autotune")``). As torch, a RuntimeError where both ``mode`` and
    ``options`` are given, or where the decorator gets None. Unlike torch, a module is not
    wrapped in an ``OptimizedModule``: its ``state_dict`` keys have no ``_orig_mod.`` prefix."""
    if model is None:

        def decorator(model: F) -> F:
            if model is None:
                raise RuntimeError("Model can't be None")
            return compile(
                model, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                options=options, disable=disable,
            )  # type: ignore[return-value]

        return decorator
    if mode is not None and options is not None:
        raise RuntimeError(
            "Either mode or options can be specified, but both can't be specified at the same time."
        )
    return model
