"""Tensor's methods bound from ``aiograd._ops.convenience``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from collections.abc import Sequence
    from typing import TypeAlias

    from numpy.typing import DTypeLike

    from .._tensor import Tensor

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _bool: TypeAlias = builtins.bool
    _float: TypeAlias = builtins.float
    _int: TypeAlias = builtins.int

    class ConvenienceMethods:
        """Declared from ``aiograd._ops.convenience``."""

        def t(self) -> Tensor:
            """Transpose a tensor of at most 2 dimensions (``input.t()``): a view, recorded as
            ``TBackward0`` (a 0-D or 1-D tensor's is a view of it unchanged, as PyTorch's)."""
            ...
        def expand_as(self, other: Tensor) -> Tensor:
            """``input.expand(other.shape)``."""
            ...
        def view_as(self, other: Tensor) -> Tensor:
            """``input.view(other.shape)``: PyTorch's error where no view exists (``reshape_as``
            copies)."""
            ...
        def reshape_as(self, other: Tensor) -> Tensor:
            """``input.reshape(other.shape)``."""
            ...
        def contiguous(self) -> Tensor:
            """``input`` itself when its array is C-contiguous, else a recorded contiguous copy."""
            ...
        def is_contiguous(self) -> _bool:
            """True if the array is C-contiguous."""
            ...
        def is_floating_point(self) -> _bool:
            """True for floating point dtypes."""
            ...
        def type_as(self, other: Tensor) -> Tensor:
            """``input`` cast to ``other``'s dtype (differentiable)."""
            ...
        def square(self) -> Tensor:
            """Elementwise ``input ** 2``."""
            ...
        def std(
            self,
            dim: _int | Sequence[_int] | _bool | None = ...,
            unbiased: _bool = ...,
            keepdim: _bool = ...,
            *,
            correction: _float | None = ...,
        ) -> Tensor:
            """Standard deviation: ``sqrt(var(...))`` with ``var``'s arguments (one node, as
            PyTorch)."""
            ...
        def norm(
            self,
            p: _float | str | None = 'fro',
            dim: _int | Sequence[_int] | None = None,
            keepdim: _bool = False,
            dtype: DTypeLike | None = None,
        ) -> Tensor:
            """The vector p-norm over ``dim`` (all elements by default), as ``Tensor.norm`` (whose
            fourth argument is ``dtype``; ``torch.norm``'s is ``out``): see :func:`norm`."""
            ...
        def __pos__(self) -> Tensor:
            """``+input``: the tensor itself."""
            ...
