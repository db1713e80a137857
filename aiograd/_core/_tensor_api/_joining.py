"""Tensor's methods bound from ``aiograd._ops.joining``. GENERATED: do not edit.

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

    class JoiningMethods:
        """Declared from ``aiograd._ops.joining``."""

        def split(
            self, split_size_or_sections: _int | Sequence[_int], dim: _int = 0
        ) -> tuple[Tensor, ...]:
            """Split into chunks of ``split_size`` along ``dim`` (the last may be smaller), or into
            pieces of the sizes in a list."""
            ...
        def split_with_sizes(
            self, split_sizes: Sequence[_int], dim: _int = 0
        ) -> tuple[Tensor, ...]:
            """Split into pieces of the given sizes along ``dim`` (they must add up to its size)."""
            ...
        def chunk(self, chunks: _int, dim: _int = 0) -> tuple[Tensor, ...]:
            """Split into at most ``chunks`` equal pieces along ``dim`` (the last may be smaller,
            and there may be fewer pieces, as in PyTorch)."""
            ...
        def unbind(self, dim: _int = 0) -> tuple[Tensor, ...]:
            """The slices along ``dim``, that dimension removed."""
            ...
        def repeat_interleave(
            self,
            repeats: Tensor | _int | None = None,
            dim: _int | None = None,
            *,
            output_size: _int | None = None,
        ) -> Tensor:
            """``repeat_interleave(self, repeats, dim)``: each element (along ``dim``; of the
            flattened tensor without one) repeated ``repeats`` times (a number, or a tensor of one
            count per element)."""
            ...
