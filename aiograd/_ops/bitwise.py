"""Bitwise and logical ops, as PyTorch's: ``bitwise_and``, ``bitwise_or``, ``bitwise_xor``,
``bitwise_not``, ``bitwise_left_shift``, ``bitwise_right_shift`` and the operators ``&``, ``|``,
``^``, ``~``, ``<<``, ``>>`` (reflected and in place too); ``logical_and``, ``logical_or``,
``logical_xor``, ``logical_not``. None has a gradient.

The bitwise ops take bool and integer operands in PyTorch's result dtype (``casting.result_type``:
``bool_tensor & 1`` is int64, ``uint8_tensor & 300`` wraps 300 into uint8 as PyTorch's scalars
do); a float result is PyTorch's NotImplementedError (``"bitwise_and_cpu" not implemented for
'Float'``), and so is a bool shift. On bool, ``~`` and ``bitwise_not`` are the logical not. A shift
by a negative count or by the width or more gives PyTorch's (and numpy's) numbers: 0 to the left;
0, or -1 for a negative signed value, to the right. The logical ops take tensors of any dtypes and
give bool tensors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._base._dtypes import type_name
from ._division_util import refuse_kinds
from ._operator_util import binary_operator, inplace_operator
from ._registry import op
from ._util import Tensor, broadcast_error, data_of, like, wrap
from .casting import join_devices, place2, result_type
from .operands import array_module as _xp
from .operands import promoted
from .rounded_division import operand_as, shapes_first

if TYPE_CHECKING:
    from .._core._types import TensorLike

__all__ = [
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift",
    "logical_and", "logical_or", "logical_xor", "logical_not",
]


def _bitwise(fname: str, kernel: str, ufunc: str, input: Any, other: Any, refused: str = "fc") -> Tensor:
    """``xp.<ufunc>`` of the operands in PyTorch's result dtype; PyTorch's NotImplementedError
    (``kernel``'s words) for a result dtype of a kind in ``refused``."""
    input, other = promoted(input, other, fname=fname)
    dtype = result_type(input, other)
    try:
        refuse_kinds(kernel, dtype, refused)
    except NotImplementedError as e:
        raise shapes_first(e, input, other) from None
    xp = _xp(input, other)
    a, b = operand_as(xp, data_of(input), dtype), operand_as(xp, data_of(other), dtype)
    try:
        data = getattr(xp, ufunc)(a, b)
    except ValueError as e:  # numpy's broadcast error: PyTorch's
        raise broadcast_error(e, input, other) from None
    out = wrap(data if data.dtype == dtype else data.astype(dtype))
    place2(out, input, other)
    return out


@op()
def bitwise_and(input: TensorLike, other: TensorLike) -> Tensor:
    """Elementwise AND of bool or integer operands (logical on bool); no gradient."""
    return _bitwise("bitwise_and", "bitwise_and", "bitwise_and", input, other)


@op()
def bitwise_or(input: TensorLike, other: TensorLike) -> Tensor:
    """Elementwise OR of bool or integer operands (logical on bool); no gradient."""
    return _bitwise("bitwise_or", "bitwise_or", "bitwise_or", input, other)


@op()
def bitwise_xor(input: TensorLike, other: TensorLike) -> Tensor:
    """Elementwise exclusive OR of bool or integer operands (logical on bool); no gradient."""
    return _bitwise("bitwise_xor", "bitwise_xor", "bitwise_xor", input, other)


@op()
def bitwise_left_shift(input: TensorLike, other: TensorLike) -> Tensor:
    """``input << other``, elementwise, for integer operands (0 where ``other`` is negative or
    the dtype's width or more); no gradient."""
    return _bitwise("bitwise_left_shift", "lshift", "left_shift", input, other, refused="bfc")


@op()
def bitwise_right_shift(input: TensorLike, other: TensorLike) -> Tensor:
    """``input >> other``, elementwise, for integer operands (arithmetic for signed ones; a
    negative or too large ``other`` gives 0, or -1 for a negative value); no gradient."""
    return _bitwise("bitwise_right_shift", "rshift", "right_shift", input, other, refused="bfc")


@op()
def bitwise_not(input: Tensor) -> Tensor:
    """Elementwise NOT of a bool or integer tensor (on bool the logical not); no gradient."""
    refuse_kinds("bitwise_not", input.data.dtype, "fc")
    return like(input._device.xp.invert(input.data), input)


def _invert(input: Tensor) -> Tensor:
    """``~input``: ``bitwise_not`` (the logical not on bool); floats are a TypeError."""
    if input.data.dtype.kind not in "biu":
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return bitwise_not(input)


# ------------------------------------------------------------------------------ logical
def _tensors(fname: str, input: Any, other: Any) -> tuple[Any, Any]:
    for arg, position, x in (("input", 1, input), ("other", 2, other)):
        if not isinstance(x, Tensor):
            raise TypeError(f"{fname}(): argument '{arg}' (position {position}) must be Tensor, not {type_name(x)}")
    return join_devices((input, other))  # type: ignore[return-value]


def _logical(fname: str, input: Any, other: Any) -> Tensor:
    input, other = _tensors(fname, input, other)
    try:
        out = wrap(getattr(_xp(input, other), fname)(input.data, other.data))
    except ValueError as e:  # numpy's broadcast error: PyTorch's
        raise broadcast_error(e, input, other) from None
    place2(out, input, other)
    return out


@op()
def logical_and(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise ``input and other`` (non-zero is true), any dtypes; a bool tensor."""
    return _logical("logical_and", input, other)


@op()
def logical_or(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise ``input or other`` (non-zero is true), any dtypes; a bool tensor."""
    return _logical("logical_or", input, other)


@op()
def logical_xor(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise exclusive or of the truth of ``input`` and ``other``; a bool tensor."""
    return _logical("logical_xor", input, other)


@op()
def logical_not(input: Tensor) -> Tensor:
    """Elementwise ``not input`` (zero is true); a bool tensor."""
    if not isinstance(input, Tensor):
        raise TypeError(f"logical_not(): argument 'input' (position 1) must be Tensor, not {type_name(input)}")
    return like(input._device.xp.logical_not(input.data), input)


#: Tensor methods and operators (bound by ``aiograd._api._tensor_methods``), as PyTorch's.
TENSOR_METHODS = {
    "bitwise_and": bitwise_and, "bitwise_or": bitwise_or, "bitwise_xor": bitwise_xor, "bitwise_not": bitwise_not,
    "bitwise_left_shift": bitwise_left_shift, "bitwise_right_shift": bitwise_right_shift,
    "logical_and": logical_and, "logical_or": logical_or, "logical_xor": logical_xor, "logical_not": logical_not,
    "__and__": binary_operator(bitwise_and), "__rand__": binary_operator(bitwise_and, reflected=True),
    "__iand__": inplace_operator(bitwise_and),
    "__or__": binary_operator(bitwise_or), "__ror__": binary_operator(bitwise_or, reflected=True),
    "__ior__": inplace_operator(bitwise_or),
    "__xor__": binary_operator(bitwise_xor), "__rxor__": binary_operator(bitwise_xor, reflected=True),
    "__ixor__": inplace_operator(bitwise_xor),
    "__lshift__": binary_operator(bitwise_left_shift),
    "__rlshift__": binary_operator(bitwise_left_shift, reflected=True),
    "__ilshift__": inplace_operator(bitwise_left_shift),
    "__rshift__": binary_operator(bitwise_right_shift),
    "__rrshift__": binary_operator(bitwise_right_shift, reflected=True),
    "__irshift__": inplace_operator(bitwise_right_shift),
    "__invert__": _invert,
}
