"""Tensor's methods bound from ``aiograd._ops.scatter_more``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from collections.abc import Sequence
    from typing import TypeAlias

    from .._tensor import Tensor

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _bool: TypeAlias = builtins.bool
    _float: TypeAlias = builtins.float
    _int: TypeAlias = builtins.int

    class ScatterMoreMethods:
        """Declared from ``aiograd._ops.scatter_more``."""

        def take(self, index: Tensor) -> Tensor:
            """The entries of the flattened ``input`` at ``index`` (negative ones count from the
            end), in ``index``'s shape."""
            ...
        def index_fill(self, dim: _int, index: Tensor, value: Tensor | _float) -> Tensor:
            """A copy of ``input`` with the slices at ``index`` along ``dim`` set to ``value`` (a
            number or a 0-d tensor)."""
            ...
        def index_fill_(self, dim: _int, index: Tensor, value: Tensor | _float) -> Tensor:
            """``index_fill`` in place."""
            ...
        def index_copy(self, dim: _int, index: Tensor, source: Tensor) -> Tensor:
            """A copy of ``input`` with the slices of ``source`` along ``dim`` written at
            ``index``."""
            ...
        def index_copy_(self, dim: _int, index: Tensor, source: Tensor) -> Tensor:
            """``index_copy`` in place."""
            ...
        def index_put(
            self, indices: Sequence[Tensor | None], values: Tensor, accumulate: _bool = False
        ) -> Tensor:
            """A copy of ``input`` with ``values`` (broadcast) written at ``input[indices]``, or
            added there (every repeat of an index adding) with ``accumulate=True``."""
            ...
        def index_put_(
            self, indices: Sequence[Tensor | None], values: Tensor, accumulate: _bool = False
        ) -> Tensor:
            """``index_put`` in place."""
            ...
        def masked_scatter(self, mask: Tensor, source: Tensor) -> Tensor:
            """A copy of ``input`` (broadcast with ``mask``) with the entries where ``mask`` is true
            taken from ``source``, in order."""
            ...
        def masked_scatter_(self, mask: Tensor, source: Tensor) -> Tensor:
            """``masked_scatter`` in place (``mask`` broadcast to ``input``'s shape)."""
            ...
        def slice_scatter(
            self,
            src: Tensor,
            dim: _int = 0,
            start: _int | None = None,
            end: _int | None = None,
            step: _int = 1,
        ) -> Tensor:
            """A copy of ``input`` with ``src`` written into the slice ``start:end:step`` along
            ``dim``."""
            ...
        def select_scatter(self, src: Tensor, dim: _int, index: _int) -> Tensor:
            """A copy of ``input`` with ``src`` written at ``index`` along ``dim``."""
            ...
        def diagonal_scatter(
            self, src: Tensor, offset: _int = 0, dim1: _int = 0, dim2: _int = 1
        ) -> Tensor:
            """A copy of ``input`` with ``src`` written on the diagonal ``offset`` over ``dim1``,
            ``dim2``."""
            ...
