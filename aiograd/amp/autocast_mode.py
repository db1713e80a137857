"""``autocast``, as ``torch.amp.autocast``, for scripts written with mixed precision optional.

aiograd computes every op in its operands' own dtypes and has no autocast: ``autocast(...,
enabled=False)`` (the common ``autocast(device_type, enabled=use_amp)``) is a no-op context
manager and decorator, and an enabled one raises NotImplementedError rather than silently
computing in full precision. As torch, ``device_type="cuda"`` where CUDA is not available warns
and disables itself instead.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from types import TracebackType
from typing import Any, Literal, TypeVar

import numpy as np

from .. import cuda as _cuda
from .._base._dtypes import float16

__all__ = ["autocast", "is_autocast_available"]

F = TypeVar("F", bound=Callable[..., Any])

#: The device types torch's device strings name (torch's error lists them).
_DEVICE_TYPES = (
    "cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga",
    "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone",
)

NOT_IMPLEMENTED = (
    "aiograd has no autocast (mixed precision): every op computes in its operands' own dtypes. "
    "Use autocast(..., enabled=False), or cast the model and inputs yourself (model.half(), "
    "x.half())."
)


def is_autocast_available(device_type: str) -> bool:
    """False for every device type: aiograd has no autocast."""
    return False


class autocast:  # noqa: N801  (torch's name)
    """``autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``: a context
    manager and decorator that does nothing when disabled; NotImplementedError when enabled
    (aiograd has no mixed-precision autocast). ``device_type="cuda"`` without CUDA warns and
    disables itself, as torch. ``fast_dtype`` is ``dtype``, else float16 (aiograd has no
    bfloat16, torch's CPU default)."""

    def __init__(
        self,
        device_type: str,
        dtype: Any = None,
        enabled: bool = True,
        cache_enabled: bool | None = None,
    ) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        base = device_type.split(":")[0]
        if base not in _DEVICE_TYPES:
            raise RuntimeError(
                f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of device string: {device_type}"
            )
        self.device = base
        self.fast_dtype: np.dtype[Any] = np.dtype(dtype) if dtype is not None else np.dtype(float16)
        self._cache_enabled = True if cache_enabled is None else bool(cache_enabled)
        self._enabled = bool(enabled)
        if self._enabled and base == "cuda" and not _cuda.is_available():
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
            self._enabled = False
        if self._enabled:
            raise NotImplementedError(NOT_IMPLEMENTED)

    def __enter__(self) -> None:
        """Nothing to switch: a disabled autocast."""
        return None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> Literal[False]:
        """Nothing to restore; exceptions propagate."""
        return False

    async def __aenter__(self) -> None:
        """``async with`` works too (nothing to switch)."""
        return None

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> Literal[False]:
        """Nothing to restore; exceptions propagate."""
        return False

    def __call__(self, func: F) -> F:
        """As a decorator: ``func`` itself (a disabled autocast changes nothing), plain or
        ``async def``."""
        return func
