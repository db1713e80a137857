"""The operands of the elementwise ops, off their hot path: non-tensors checked (numbers, numeric
arrays; PyTorch's TypeError for anything else, so no object array is ever made), arrays of
different dtypes promoted by PyTorch's rule (``casting.promote``), and PyTorch's refusal of a
subtraction with a bool."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._base._dtypes import (
    DEVICE_ARRAY_TYPES,
    NUMERIC_KINDS,
    cant_convert,
    get_default_dtype,
    is_array,
    numeric_array,
    type_name,
)
from .._devices._device import device_type
from ._util import Tensor, data_of
from .casting import join_devices, promote, to

__all__ = ["BOOL", "NEG_BOOL_ERROR", "constant", "floating", "operands", "promoted", "refuse_bool_sub"]

NUMBERS = (bool, int, float, complex, np.number, np.bool_)


def constant(x: Any, fname: str, position: int) -> Any:
    """A non-tensor operand, checked: a number, a numeric array (or a list of numbers, made
    one); anything else raises PyTorch's TypeError rather than making an object array."""
    if isinstance(x, np.generic) and x.dtype.kind in NUMERIC_KINDS:
        return x.item()  # a numpy scalar counts as a Python number, as in PyTorch
    if isinstance(x, NUMBERS):
        return x
    if is_array(x):  # numpy's, or a device array (CuPy's)
        if x.dtype.kind not in NUMERIC_KINDS:
            raise cant_convert(x.dtype)
        return x
    if isinstance(x, (list, tuple)):
        return numeric_array(x)
    arg = "other" if position == 2 else "input"
    raise TypeError(
        f"{fname}(): argument '{arg}' (position {position}) must be Tensor, not {type_name(x)}"
    )


def promoted(*xs: Any, fname: str) -> Any:
    """``xs`` (non-tensors checked by ``constant``) cast to PyTorch's result dtype
    (``casting.promote``) if arrays among them differ in dtype (numpy would promote them
    otherwise: int64 with float32 to float64, say)."""
    if len(xs) == 2 and isinstance(xs[0], Tensor):  # the common cases, without the general walk
        b = xs[1]
        if isinstance(b, Tensor) and b.data.dtype is xs[0].data.dtype and b._device is xs[0]._device:
            return xs
        if type(b) is int or (type(b) is float and xs[0].data.dtype.kind in "fc"):
            return xs
    xs = tuple(x if isinstance(x, Tensor) else constant(x, fname, i + 1) for i, x in enumerate(xs))
    xs = join_devices(_host_arrays_to_device(xs))
    datas = tuple(map(data_of, xs))
    dtypes = {x.dtype for x in datas if is_array(x)}
    return promote(*xs) if len(dtypes) > 1 or _float_number_with_integers(datas) else xs


def _float_number_with_integers(datas: tuple[Any, ...]) -> bool:
    """True when a Python float meets integer or bool arrays only: the result is the default
    dtype (``int_tensor * 2.5`` is float32 in torch), where numpy would say float64."""
    kinds = {x.dtype.kind for x in datas if is_array(x)}
    return bool(kinds) and kinds <= set("biu") and any(isinstance(x, float) for x in datas)


def floating(*xs: Any) -> tuple[Any, ...]:
    """The (promoted) operands of an op whose result is floating (true division, atan2), with
    integer and bool arrays cast to the default dtype when none is floating: torch computes
    ``int_tensor / 2`` in float32 (the default), numpy would in float64."""
    datas = tuple(map(data_of, xs))
    if any(isinstance(x, (float, complex)) or (is_array(x) and x.dtype.kind in "fc") for x in datas):
        return xs
    dtype = get_default_dtype()
    return tuple(to(x, dtype) if isinstance(x, Tensor) else x.astype(dtype) if is_array(x) else x for x in xs)


def operands(input: Any, other: Any, fname: str) -> tuple[Any, Any, Any, Any]:
    """The operands of add, sub or mul off their hot path: non-tensors checked (``constant``),
    a subtraction with a bool refused, arrays of different dtypes promoted as PyTorch; returns
    them and their arrays. (Devices are placed afterwards, by ``place2``.)"""
    if not isinstance(input, Tensor):
        input = constant(input, fname, 1)
    if not isinstance(other, Tensor):
        other = constant(other, fname, 2)
    if type(input) is np.ndarray or type(other) is np.ndarray:
        input, other = _host_arrays_to_device((input, other))
    if isinstance(input, Tensor) and isinstance(other, Tensor) and input._device is not other._device:
        input, other = join_devices((input, other))
    a, b = data_of(input), data_of(other)
    if fname == "sub" and (_is_bool(a) or _is_bool(b)):
        refuse_bool_sub(a, b)
    if (is_array(a) and is_array(b) and a.dtype != b.dtype) or _float_number_with_integers((a, b)):
        input, other = promote(input, other)
        a, b = data_of(input), data_of(other)
    return input, other, a, b


def _host_arrays_to_device(xs: tuple[Any, ...]) -> tuple[Any, ...]:
    """Numpy array constants next to a tensor whose device's arrays are not numpy's (CUDA):
    copied into that device's memory, as device-less constants must be there to compute with."""
    dev = next((x._device for x in xs if isinstance(x, Tensor) and x._device.xp is not np), None)
    if dev is None:
        return xs
    move = device_type(dev.type).to_device
    return tuple(move(x, dev.index) if type(x) is np.ndarray else x for x in xs)


BOOL = np.dtype(np.bool_)


def _is_bool(x: Any) -> bool:
    return x.dtype.kind == "b" if is_array(x) else isinstance(x, (bool, np.bool_))


NEG_BOOL_ERROR = (
    "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a "
    "mask, use the `~` or `logical_not()` operator instead."
)


def refuse_bool_sub(a: Any, b: Any) -> None:
    """PyTorch's errors for a subtraction with a bool operand (numpy would give numbers)."""
    if _is_bool(a) and _is_bool(b):
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
            "or `logical_xor()` operator instead."
        )
    raise RuntimeError(
        "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
        "to invert a mask, use the `~` or `logical_not()` operator instead."
    )


def operand_shape(x: Any) -> tuple[int, ...]:
    """An operand's shape: a tensor's or an array's; () for a number."""
    if isinstance(x, Tensor):
        return x.data.shape
    if type(x) is float or type(x) is int:  # the common constant, first
        return ()
    return x.shape if isinstance(x, np.ndarray) or type(x) in DEVICE_ARRAY_TYPES else ()


def array_module(*xs: Any) -> Any:
    """The array module of the first tensor among ``xs`` (numpy for numbers and arrays)."""
    for x in xs:
        if isinstance(x, Tensor):
            return x._device.xp
    return np
