"""The padding layers (torch/nn/modules/padding.py): ``ZeroPad{1,2,3}d``,
``ConstantPad{1,2,3}d``, ``ReflectionPad{1,2,3}d``, ``ReplicationPad{1,2,3}d`` and
``CircularPad{1,2,3}d``, each ``F.pad`` with its mode. ``padding`` is an int (every side) or a
tuple ``(left, right[, top, bottom[, front, back]])``, as torch normalises it; a wrong input rank
gets torch's error (the circular ones check it themselves, the others in ``F.pad``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import repeat
from typing import Any

from ..._core._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = [
    "CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
    "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
]


def _ntuple(n: int) -> Callable[[Any], tuple[int, ...]]:
    def parse(x: Any) -> tuple[int, ...]:
        if isinstance(x, Iterable):
            return tuple(x)
        return tuple(repeat(x, n))

    return parse


_pair = _ntuple(2)
_quadruple = _ntuple(4)
_sextuple = _ntuple(6)


class _PadNd(Module):
    """``F.pad(input, padding, mode)``; ``repr`` shows the padding tuple."""

    padding: tuple[int, ...]
    _mode = "constant"

    def _check_input_dim(self, input: Tensor) -> None:
        pass

    def forward(self, input: Tensor) -> Tensor:
        """``F.pad(input, padding, mode)``."""
        self._check_input_dim(input)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        """The padding tuple."""
        return f"{self.padding}"


class _ConstantPadNd(Module):
    padding: tuple[int, ...]

    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        """``F.pad(input, padding, "constant", value)``."""
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        """``padding=..., value=...``."""
        return f"padding={self.padding}, value={self.value}"


class _ReflectionPadNd(_PadNd):
    _mode = "reflect"


class _ReplicationPadNd(_PadNd):
    _mode = "replicate"


class _CircularPadNd(_PadNd):
    _mode = "circular"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last 1 dim(s) of (C, W) or (N, C, W) with ``value``: ``padding`` an int or a 2-tuple."""

    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(value)
        self.padding = _pair(padding)


class ConstantPad2d(_ConstantPadNd):
    """Pad the last 2 dim(s) of (C, H, W) or (N, C, H, W) with ``value``: ``padding`` an int or a 4-tuple."""

    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(value)
        self.padding = _quadruple(padding)


class ConstantPad3d(_ConstantPadNd):
    """Pad the last 3 dim(s) of (C, D, H, W) or (N, C, D, H, W) with ``value``: ``padding`` an int or a 6-tuple."""

    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(value)
        self.padding = _sextuple(padding)


class ZeroPad1d(ConstantPad1d):
    """Pad the last 1 dim(s) of (C, W) or (N, C, W) with zeros: ``padding`` an int or a 2-tuple."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        """The padding tuple."""
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pad the last 2 dim(s) of (C, H, W) or (N, C, H, W) with zeros: ``padding`` an int or a 4-tuple."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        """The padding tuple."""
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """Pad the last 3 dim(s) of (C, D, H, W) or (N, C, D, H, W) with zeros: ``padding`` an int or a 6-tuple."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        """The padding tuple."""
        return f"{self.padding}"


class ReflectionPad1d(_ReflectionPadNd):
    """Pad the last 1 dim(s) of (C, W) or (N, C, W) with the reflection of the input boundary: ``padding`` an int or a 2-tuple."""

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _pair(padding)


class ReflectionPad2d(_ReflectionPadNd):
    """Pad the last 2 dim(s) of (C, H, W) or (N, C, H, W) with the reflection of the input boundary: ``padding`` an int or a 4-tuple."""

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _quadruple(padding)


class ReflectionPad3d(_ReflectionPadNd):
    """Pad the last 3 dim(s) of (C, D, H, W) or (N, C, D, H, W) with the reflection of the input boundary: ``padding`` an int or a 6-tuple."""

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _sextuple(padding)


class ReplicationPad1d(_ReplicationPadNd):
    """Pad the last 1 dim(s) of (C, W) or (N, C, W) with the replication of the input boundary: ``padding`` an int or a 2-tuple."""

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _pair(padding)


class ReplicationPad2d(_ReplicationPadNd):
    """Pad the last 2 dim(s) of (C, H, W) or (N, C, H, W) with the replication of the input boundary: ``padding`` an int or a 4-tuple."""

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _quadruple(padding)


class ReplicationPad3d(_ReplicationPadNd):
    """Pad the last 3 dim(s) of (C, D, H, W) or (N, C, D, H, W) with the replication of the input boundary: ``padding`` an int or a 6-tuple."""

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _sextuple(padding)


class CircularPad1d(_CircularPadNd):
    """Pad the last 1 dim(s) of (C, W) or (N, C, W) with circular padding (wrapping around): ``padding`` an int or a 2-tuple."""

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _pair(padding)

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class CircularPad2d(_CircularPadNd):
    """Pad the last 2 dim(s) of (C, H, W) or (N, C, H, W) with circular padding (wrapping around): ``padding`` an int or a 4-tuple."""

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _quadruple(padding)

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 3 and input.dim() != 4:
            raise ValueError(f"expected 3D or 4D input (got {input.dim()}D input)")


class CircularPad3d(_CircularPadNd):
    """Pad the last 3 dim(s) of (C, D, H, W) or (N, C, D, H, W) with circular padding (wrapping around): ``padding`` an int or a 6-tuple."""

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _sextuple(padding)

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 4 and input.dim() != 5:
            raise ValueError(f"expected 4D or 5D input (got {input.dim()}D input)")
