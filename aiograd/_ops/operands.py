"""The operands of the elementwise ops, off their hot path: non-tensors checked (numbers, numeric
arrays; PyTorch's TypeError for anything else, so no object array is ever made), arrays of
different dtypes promoted by PyTorch's rule (``casting.promote``), and PyTorch's refusal of a
subtraction with a bool."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._base._dtypes import NUMERIC_KINDS, cant_convert, is_array, numeric_array, type_name
from .._devices._device import device_type
from ._util import Tensor, data_of
from .casting import join_devices, promote

__all__ = ["BOOL", "NEG_BOOL_ERROR", "constant", "operands", "promoted", "refuse_bool_sub"]

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
        if type(b) is float or type(b) is int:
            return xs
    xs = tuple(x if isinstance(x, Tensor) else constant(x, fname, i + 1) for i, x in enumerate(xs))
    xs = join_devices(_host_arrays_to_device(xs))
    dtypes = {x.dtype for x in map(data_of, xs) if is_array(x)}
    return promote(*xs) if len(dtypes) > 1 else xs


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
    if is_array(a) and is_array(b) and a.dtype != b.dtype:
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
