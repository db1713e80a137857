"""Tensor's methods bound from ``aiograd._ops.linalg``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._tensor import Tensor
    from .._types import TensorLike

    class LinalgMethods:
        """Declared from ``aiograd._ops.linalg``."""

        def matmul(self, other: Tensor) -> Tensor:
            """Matrix product with numpy's ``matmul`` rules (dot, mv, mm, batched mm), recording
            PyTorch's nodes (``at::native::_matmul_impl``): ``DotBackward0``, ``MvBackward0``,
            ``MmBackward0``; a vector times a matrix squeezed (``SqueezeBackward4``); batch dims
            folded into rows (``UnsafeViewBackward0``, or for a matrix times a batch the transpose
            back and its copy: ``TransposeBackward0``, ``CloneBackward0``); else ``bmm``
            (``UnsafeViewBackward0``)."""
            ...
        def mm(self, mat2: Tensor) -> Tensor:
            """Product of two 2-D matrices."""
            ...
        def __matmul__(self, other: Tensor) -> Tensor: ...
        def __rmatmul__(self, other: TensorLike) -> Tensor:
            """``other @ self``, ``other`` made a tensor first (an array, say)."""
            ...
