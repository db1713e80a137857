"""Tensor's methods bound from ``aiograd._ops.shape``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from collections.abc import Sequence
    from typing import TypeAlias, overload

    from .._tensor import Tensor
    from .._types import Dims

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _int: TypeAlias = builtins.int

    class ShapeMethods:
        """Declared from ``aiograd._ops.shape``."""

        def swapdims(self, dim0: _int, dim1: _int) -> Tensor:
            """Swap two dimensions."""
            ...
        def reshape(self, *shape: Dims) -> Tensor:
            """The same data with a new shape (one dim may be -1): a view when numpy can make one,
            else a copy."""
            ...
        def view(self, *shape: Dims) -> Tensor:
            """A view with a new shape (one dim may be -1); RuntimeError if the strides do not allow
            one."""
            ...
        def flatten(self, start_dim: _int = 0, end_dim: _int = -1) -> Tensor:
            """Merge dims ``start_dim`` to ``end_dim`` into one."""
            ...
        def transpose(self, dim0: _int, dim1: _int) -> Tensor:
            """Swap two dimensions."""
            ...
        def permute(self, *dims: Dims) -> Tensor:
            """Reorder the dimensions."""
            ...
        @overload
        def squeeze(self) -> Tensor: ...
        @overload
        def squeeze(self, dim: _int | Sequence[_int]) -> Tensor: ...
        def squeeze(self, dim: _int | Sequence[_int] = ...) -> Tensor:
            """Remove dimensions of size 1 (all, or those in ``dim`` that have size 1)."""
            ...
        def unsqueeze(self, dim: _int) -> Tensor:
            """Insert a dimension of size 1 at ``dim``."""
            ...
        def expand(self, *sizes: Dims) -> Tensor:
            """Broadcast to ``sizes`` without copying; -1 keeps a dimension's size."""
            ...
        def broadcast_to(self, shape: Sequence[_int]) -> Tensor:
            """Broadcast to ``shape`` (numpy's rules), as ``expand``."""
            ...
        def sum_to_size(self, *size: Dims) -> Tensor:
            """Sum broadcast dimensions away so that the result has shape ``size`` (broadcast's
            adjoint)."""
            ...
        def repeat(self, *sizes: Dims) -> Tensor:
            """Tile the tensor ``sizes[i]`` times along dim ``i`` (torch's ``Tensor.repeat``)."""
            ...
        @property
        def T(self) -> Tensor:
            """``Tensor.T``: all dimensions reversed (the transpose, for a matrix); a view recorded
            as ``PermuteBackward0``."""
            ...
        @property
        def mT(self) -> Tensor:
            """``Tensor.mT``: the last two dimensions swapped (on a 0-D tensor: the tensor itself,
            with PyTorch's deprecation warning)."""
            ...
