"""Tensor's methods bound from ``aiograd._ops.rearrange``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from collections.abc import Sequence
    from typing import SupportsIndex, TypeAlias

    from .._tensor import Tensor
    from .._types import Dims

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _int: TypeAlias = builtins.int

    class RearrangeMethods:
        """Declared from ``aiograd._ops.rearrange``."""

        def flip(self, *dims: Dims) -> Tensor:
            """A copy with the order of the entries along ``dims`` reversed (``torch.flip(input,
            dims)``; ``t.flip(0, 1)`` or ``t.flip((0, 1))``)."""
            ...
        def roll(
            self, shifts: _int | Sequence[_int], dims: _int | Sequence[_int] | None = None
        ) -> Tensor:
            """A copy with the entries shifted by ``shifts`` along ``dims`` (cyclically: what falls
            off one end comes back at the other); without ``dims``, along the flattened tensor."""
            ...
        def narrow(self, dim: _int, start: _int | Tensor, length: _int) -> Tensor:
            """A view of ``length`` entries along ``dim`` from ``start`` (negative counts from the
            end)."""
            ...
        def select(self, dim: _int, index: SupportsIndex) -> Tensor:
            """The view ``input[..., index, ...]`` with ``index`` at dimension ``dim`` (that dim
            removed)."""
            ...
        def movedim(
            self, source: _int | Sequence[_int], destination: _int | Sequence[_int]
        ) -> Tensor:
            """The view with dims ``source`` moved to positions ``destination`` (the others keep
            their order): a permute."""
            ...
        def moveaxis(
            self, source: _int | Sequence[_int], destination: _int | Sequence[_int]
        ) -> Tensor:
            """Alias of ``movedim`` (numpy's name)."""
            ...
        def unflatten(self, dim: _int, sizes: Sequence[_int]) -> Tensor:
            """The view with dim ``dim`` split into ``sizes`` (one of them may be -1)."""
            ...
        def tril(self, diagonal: _int = 0) -> Tensor:
            """A copy with the entries above diagonal ``diagonal`` of the last two dims zeroed."""
            ...
        def triu(self, diagonal: _int = 0) -> Tensor:
            """A copy with the entries below diagonal ``diagonal`` of the last two dims zeroed."""
            ...
        def tril_(self, diagonal: _int = 0) -> Tensor:
            """``tril`` in place."""
            ...
        def triu_(self, diagonal: _int = 0) -> Tensor:
            """``triu`` in place."""
            ...
        def diagonal(self, offset: _int = 0, dim1: _int = 0, dim2: _int = 1) -> Tensor:
            """The view of the diagonal ``offset`` (above the main one if positive) of the 2-D
            slices over ``dim1`` and ``dim2``; those dims are removed and the diagonal is the last
            dim."""
            ...
        def diag(self, diagonal: _int = 0) -> Tensor:
            """A vector's square matrix with the vector on diagonal ``diagonal``, or a copy of a
            matrix's diagonal ``diagonal`` as a vector."""
            ...
        def tile(self, *dims: Dims) -> Tensor:
            """``input`` repeated ``dims[i]`` times along dim ``i``; fewer ``dims`` than dims are
            padded with 1s in front (``torch.tile(input, dims)``; ``t.tile(2, 1)`` or ``t.tile((2,
            1))``)."""
            ...
