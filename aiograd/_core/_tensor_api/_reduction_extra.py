"""Tensor's methods bound from ``aiograd._ops.reduction_extra``. GENERATED: do not edit.

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
    _bool: TypeAlias = builtins.bool
    _float: TypeAlias = builtins.float
    _int: TypeAlias = builtins.int

    class ReductionExtraMethods:
        """Declared from ``aiograd._ops.reduction_extra``."""

        def amax(self, dim: _int | Sequence[_int] = (), keepdim: _bool = False) -> Tensor:
            """The largest value over ``dim`` (an int or a tuple; all dims by default), as
            ``torch.amax``."""
            ...
        def amin(self, dim: _int | Sequence[_int] = (), keepdim: _bool = False) -> Tensor:
            """The smallest value over ``dim``, as ``torch.amin``: see :func:`amax`."""
            ...
        def all(self, dim: _int | Sequence[_int] | None = None, keepdim: _bool = False) -> Tensor:
            """True where every element over ``dim`` (int, tuple, or None for all) is non-zero; bool
            (uint8 for a uint8 input), not differentiable, as ``torch.all``."""
            ...
        def any(self, dim: _int | Sequence[_int] | None = None, keepdim: _bool = False) -> Tensor:
            """True where some element over ``dim`` is non-zero, as ``torch.any``: see
            :func:`all`."""
            ...
        def count_nonzero(self, dim: _int | Sequence[_int] | None = None) -> Tensor:
            """How many elements over ``dim`` (int, tuple, or None for all) are non-zero; int64, as
            ``torch.count_nonzero`` (which has no ``keepdim``)."""
            ...
        def histc(self, bins: _int = 100, min: _float = 0, max: _float = 0) -> Tensor:
            """The histogram of ``input``'s elements: ``bins`` equal-width bins over ``[min, max]``
            (the data's range where ``min == max``, widened by one each way if that is a point);
            elements outside are ignored, the last bin includes ``max``."""
            ...
        def bincount(self, weights: Tensor | None = None, minlength: _int = 0) -> Tensor:
            """How often each value ``0..max(input)`` occurs in the 1-D non-negative integer
            ``input`` (at least ``minlength`` counts); with ``weights``, their sums instead (float64
            for integer weights)."""
            ...
