"""Tensor's methods bound from ``aiograd._ops.joining_more``. GENERATED: do not edit.

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
    _int: TypeAlias = builtins.int

    class JoiningMoreMethods:
        """Declared from ``aiograd._ops.joining_more``."""

        def tensor_split(
            self, indices_or_sections: Tensor | _int | Sequence[_int], dim: _int = 0
        ) -> tuple[Tensor, ...]:
            """Views of ``input`` split along ``dim`` into ``sections`` nearly equal pieces (the
            first ``size % sections`` one longer), or at the ``indices`` (a list, or a 1-D int64
            tensor; a 0-d one is a number of sections)."""
            ...
        def fliplr(self) -> Tensor:
            """A copy with the columns (dim 1) in reverse order; at least 2-D."""
            ...
        def flipud(self) -> Tensor:
            """A copy with the rows (dim 0) in reverse order; at least 1-D."""
            ...
        def rot90(self, k: _int = 1, dims: Sequence[_int] = (0, 1)) -> Tensor:
            """A copy rotated by ``k`` quarter turns in the plane of ``dims``, from the first
            towards the second."""
            ...
        def diag_embed(self, offset: _int = 0, dim1: _int = -2, dim2: _int = -1) -> Tensor:
            """Zeros with the last dim of ``input`` on diagonal ``offset`` of the 2-D slices over
            the new dims ``dim1`` and ``dim2``."""
            ...
        def kron(self, other: Tensor) -> Tensor:
            """The Kronecker product: every entry of ``input`` times the whole of ``other``."""
            ...
        def diff(
            self,
            n: _int = 1,
            dim: _int = -1,
            prepend: Tensor | None = None,
            append: Tensor | None = None,
        ) -> Tensor:
            """The ``n``-th forward difference along ``dim`` (``prepend``/``append`` joined first);
            ``!=`` (xor) of neighbours for bool tensors."""
            ...
