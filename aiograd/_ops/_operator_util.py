"""Tensor operators made from binary ops (``%``, ``//``, ``&``, ``|``, ``^``, ``<<``, ``>>``): the
operator, its reflected form and its in-place form, as PyTorch's.

As PyTorch's, an operator answers ``NotImplemented`` to an operand that is not a tensor, a number
or an array (``t % "x"``: Python's own TypeError, "unsupported operand type(s) for %"). The
in-place form (``t %= other``) computes the op out of place and writes the result into ``t``:
PyTorch's checks first (a leaf that requires grad, a view of one: ``_inplace_util._recording``),
then its casting rule (a float result cannot be written into an integer tensor, nor a non-bool
one into a bool tensor), and, where a gradient is involved, the op's node becomes ``t``'s history
(``_inplace_util._commit``), as ``add_`` records ``AddBackward0``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .._base._dtypes import is_array
from ._inplace_util import (
    _alias,
    _bump,
    _check_shape,
    _commit,
    _dtype_name,
    _error,
    _operand,
    _recording,
)
from ._util import Tensor, data_of
from .casting import result_type
from .operands import NUMBERS

if TYPE_CHECKING:
    from .._core._types import TensorLike

__all__ = ["binary_operator", "inplace_operator", "operand_ok", "torch_can_cast"]


def operand_ok(other: Any) -> bool:
    """True for an operand an operator computes with: a tensor, a number, an array."""
    return isinstance(other, (Tensor, *NUMBERS)) or is_array(other)


def binary_operator(fn: Callable[..., Tensor], reflected: bool = False) -> Callable[..., Any]:
    """The operator of ``fn`` (``__mod__`` of ``remainder``), or its reflected form
    (``__rmod__``: ``fn(other, self)``)."""
    if reflected:

        def operator(self: Tensor, other: TensorLike) -> Tensor:
            if not operand_ok(other):
                return NotImplemented  # type: ignore[no-any-return]
            return fn(other, self)

        operator.__doc__ = f"``{fn.__name__}(other, self)``: a number or an array on the left."
    else:

        def operator(self: Tensor, other: TensorLike) -> Tensor:
            if not operand_ok(other):
                return NotImplemented  # type: ignore[no-any-return]
            return fn(self, other)

        operator.__doc__ = f"``{fn.__name__}(self, other)``."
    return operator


def torch_can_cast(src: Any, dst: Any) -> bool:
    """PyTorch's ``canCast``: no float into an integer or bool, no complex into a real, no
    non-bool into a bool; anything else (narrowing included) may be written."""
    s, d = np.dtype(src).kind, np.dtype(dst).kind
    if s in "fc" and d in "iub":
        return False
    if s == "c" and d == "f":
        return False
    return not (s != "b" and d == "b")


def inplace_operator(fn: Callable[..., Tensor]) -> Callable[..., Any]:
    """The in-place operator of ``fn`` (``__imod__`` of ``remainder``): ``self`` takes the
    result of ``fn(self, other)``, recorded as ``fn``'s node where a gradient is involved."""

    def operator(self: Tensor, other: TensorLike) -> Tensor:
        if not operand_ok(other):
            return NotImplemented  # type: ignore[no-any-return]
        other = _operand(self, other)
        recording = _recording(self, other)
        dtype = result_type(self.data, data_of(other))
        if not torch_can_cast(dtype, self.data.dtype):
            raise RuntimeError(
                f"result type {_dtype_name(dtype)} can't be cast to the desired output type "
                f"{_dtype_name(self.data.dtype)}"
            )
        _check_shape(self, other)
        if recording:
            _commit(self, fn(_alias(self, True), other))
            return self
        out = fn(self, other)
        data = self.data
        try:  # (PyTorch's casting rule was checked above: narrowing integers wrap, as there)
            self._device.xp.copyto(data, out.data, casting="unsafe")
        except (ValueError, TypeError) as e:
            raise _error(e, self) from None
        _bump(self)
        return self

    operator.__doc__ = f"``self = {fn.__name__}(self, other)`` in place."
    return operator
