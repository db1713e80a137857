"""Tensor's methods bound from ``aiograd._ops.torch_aliases``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from typing import TypeAlias

    from .._tensor import Tensor
    from .._types import TensorLike

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _int: TypeAlias = builtins.int

    class TorchAliasesMethods:
        """Declared from ``aiograd._ops.torch_aliases``."""

        def swapaxes(self, axis0: _int, axis1: _int) -> Tensor:
            """Swap two dimensions: ``transpose(input, axis0, axis1)`` (numpy's name)."""
            ...
        def adjoint(self) -> Tensor:
            """The conjugate transpose of the last two dims: for real tensors ``transpose(input, -2,
            -1)``."""
            ...
        def ravel(self) -> Tensor:
            """The elements as a 1-d tensor: a view when ``input`` is contiguous, else of a copy."""
            ...
        def clamp_min(self, min: TensorLike) -> Tensor:
            """``clamp(input, min=min)``: values below ``min`` raised to it."""
            ...
        def clamp_max(self, max: TensorLike) -> Tensor:
            """``clamp(input, max=max)``: values above ``max`` lowered to it."""
            ...
