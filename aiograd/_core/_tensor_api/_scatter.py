"""Tensor's methods bound from ``aiograd._ops.scatter``. GENERATED: do not edit.

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
    from .._types import Number

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _bool: TypeAlias = builtins.bool
    _int: TypeAlias = builtins.int

    class ScatterMethods:
        """Declared from ``aiograd._ops.scatter``."""

        def scatter(
            self,
            dim: _int,
            index: Tensor | NDArray[Any],
            src: Tensor | Number | None = None,
            *,
            value: Tensor | Number | None = None,
        ) -> Tensor:
            """A copy of ``input`` with ``src[i][j][k]`` written at ``[index[i][j][k]][j][k]`` for
            ``dim=0`` (and so on for other dims); ``src`` is a tensor or a number (also as
            ``value=``)."""
            ...
        def scatter_add(self, dim: _int, index: Tensor | NDArray[Any], src: Tensor) -> Tensor:
            """A copy of ``input`` with ``src[i][j][k]`` added at ``[index[i][j][k]][j][k]`` for
            ``dim=0`` (and so on); entries that ``index`` sends to one position all add up."""
            ...
        def index_add(
            self,
            dim: _int,
            index: Tensor | Sequence[_int] | NDArray[Any],
            source: Tensor,
            *,
            alpha: Number = 1,
        ) -> Tensor:
            """A copy of ``input`` with ``alpha * source[..., i, ...]`` added at ``index[i]`` along
            ``dim`` (repeated indices add up)."""
            ...
        def masked_select(self, mask: Tensor | NDArray[Any]) -> Tensor:
            """The entries of ``input`` where the boolean ``mask`` (broadcast with it) is true, as a
            1-D tensor (a copy)."""
            ...
        def take_along_dim(self, indices: Tensor | NDArray[Any], dim: _int | None = None) -> Tensor:
            """The entries of ``input`` at ``indices`` along ``dim``, the two broadcast against each
            other except along ``dim``; without ``dim``, of the flattened input."""
            ...
        def nonzero(self, *, as_tuple: _bool = False) -> Tensor | tuple[Tensor, ...]:
            """The indices of the nonzero entries: an int64 tensor of shape ``(count, ndim)``, or
            with ``as_tuple=True`` one int64 vector per dim (a 0-d input counts as 1-D there, as in
            torch)."""
            ...
        def scatter_(
            self,
            dim: _int,
            index: Tensor | NDArray[Any],
            src: Tensor | Number | None = None,
            *,
            value: Tensor | Number | None = None,
        ) -> Tensor:
            """``scatter`` in place."""
            ...
        def scatter_add_(self, dim: _int, index: Tensor | NDArray[Any], src: Tensor) -> Tensor:
            """``scatter_add`` in place."""
            ...
        def index_add_(
            self,
            dim: _int,
            index: Tensor | Sequence[_int] | NDArray[Any],
            source: Tensor,
            *,
            alpha: Number = 1,
        ) -> Tensor:
            """``index_add`` in place."""
            ...
