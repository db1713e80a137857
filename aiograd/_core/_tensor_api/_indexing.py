"""Tensor's methods bound from ``aiograd._ops.indexing``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from collections.abc import Sequence
    from typing import Any, TypeAlias

    from numpy.typing import NDArray

    from .._tensor import Tensor
    from .._types import Index

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _bool: TypeAlias = builtins.bool
    _int: TypeAlias = builtins.int

    class IndexingMethods:
        """Declared from ``aiograd._ops.indexing``."""

        def __getitem__(self, index: Index | tuple[Index, ...]) -> Tensor:
            """``input[index]``: ints, slices (any step), None, Ellipsis, boolean masks, integer
            arrays, lists or tensors, and tuples of them, with PyTorch's (= numpy's) semantics."""
            ...
        def index_select(self, dim: _int, index: Tensor | Sequence[_int] | NDArray[Any]) -> Tensor:
            """The entries of ``input`` at positions ``index`` (a vector of ints) along ``dim``."""
            ...
        def gather(
            self, dim: _int, index: Tensor | NDArray[Any], *, sparse_grad: _bool = False
        ) -> Tensor:
            """``out[i][j][k] = input[index[i][j][k]][j][k]`` for ``dim=0`` (and so on for other
            dims)."""
            ...
