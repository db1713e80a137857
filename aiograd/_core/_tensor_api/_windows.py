"""Tensor's methods bound from ``aiograd._ops.windows``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from typing import Any, TypeAlias

    from .._tensor import Tensor

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _bool: TypeAlias = builtins.bool
    _float: TypeAlias = builtins.float
    _int: TypeAlias = builtins.int

    class WindowsMethods:
        """Declared from ``aiograd._ops.windows``."""

        def histogram(
            self,
            bins: _int | Tensor = 100,
            *,
            range: tuple[_float, _float] | None = None,
            weight: Tensor | None = None,
            density: _bool = False,
        ) -> Any:
            """``(hist, bin_edges)`` of ``input``'s elements, as ``torch.histogram``: ``bins`` equal
            bins over ``range`` (the data's by default, widened by 0.5 each way if a point) or the
            given increasing edges; the last bin includes its right edge; ``weight`` sums weights
            instead of counting, ``density`` normalises to unit area."""
            ...
