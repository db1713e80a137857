"""Tensor's methods bound from ``aiograd._ops.statistics``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from collections.abc import Sequence
    from typing import Any, TypeAlias

    from numpy.typing import DTypeLike

    from .._tensor import Tensor

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _bool: TypeAlias = builtins.bool
    _int: TypeAlias = builtins.int

    class StatisticsMethods:
        """Declared from ``aiograd._ops.statistics``."""

        def nansum(
            self,
            dim: _int | Sequence[_int] | None = None,
            keepdim: _bool = False,
            *,
            dtype: DTypeLike | None = None,
        ) -> Tensor:
            """The sum over ``dim`` with NaNs counted as zero, as ``torch.nansum``."""
            ...
        def nanmean(
            self,
            dim: _int | Sequence[_int] | None = None,
            keepdim: _bool = False,
            *,
            dtype: DTypeLike | None = None,
        ) -> Tensor:
            """The mean over ``dim`` of the elements that are not NaN, as ``torch.nanmean``
            (``nansum / count``: NaN where a slice is all NaN)."""
            ...
        def nanmedian(self, dim: _int = ..., keepdim: _bool = ...) -> Any:
            """The lower median of the elements that are not NaN (NaN where all are), as
            ``torch.nanmedian``; with ``dim``, a ``(values, indices)`` named tuple per slice."""
            ...
        def mode(self, dim: _int = -1, keepdim: _bool = False) -> Any:
            """The most frequent value of each slice along ``dim`` and its index, as ``torch.mode``:
            of equally frequent values the smallest, and the index of its last occurrence (PyTorch's
            CPU rule)."""
            ...
