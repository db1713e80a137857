"""Tensor's methods bound from ``aiograd._ops.scans``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from typing import TypeAlias

    from numpy.typing import DTypeLike

    from .._tensor import Tensor

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _int: TypeAlias = builtins.int

    class ScansMethods:
        """Declared from ``aiograd._ops.scans``."""

        def cumsum(self, dim: _int, *, dtype: DTypeLike | None = None) -> Tensor:
            """Cumulative sum along ``dim``, as ``torch.cumsum``; bool and integer inputs give int64
            unless ``dtype`` says otherwise (the input is cast to ``dtype`` first)."""
            ...
        def cumprod(self, dim: _int, *, dtype: DTypeLike | None = None) -> Tensor:
            """Cumulative product along ``dim``, as ``torch.cumprod`` (bool and integer inputs give
            int64); its gradient is exact also where the input has zeros."""
            ...
