"""Tensor's methods bound from ``aiograd._ops.assign``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from typing import TypeAlias

    from .._tensor import Tensor
    from .._types import Index, TensorLike

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _bool: TypeAlias = builtins.bool

    class AssignMethods:
        """Declared from ``aiograd._ops.assign``."""

        def zero_(self) -> Tensor:
            """Set every element to 0 in place."""
            ...
        def fill_(self, value: TensorLike) -> Tensor:
            """Set every element to ``value`` (a number or a 0-dim tensor) in place."""
            ...
        def copy_(self, src: TensorLike, non_blocking: _bool = False) -> Tensor:
            """Copy ``src`` (broadcast to this shape, cast to this dtype, from any device) into this
            tensor in place."""
            ...
        def __setitem__(self, index: Index | tuple[Index, ...], value: TensorLike) -> None:
            """``self[index] = value``: a basic index copies ``value`` into the view
            ``self[index]``; an advanced one (masks, integer arrays) is PyTorch's ``index_put_`` (on
            the view of its basic part, if any)."""
            ...
