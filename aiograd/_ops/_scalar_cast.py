"""A Python number written into a tensor (``fill_``, ``masked_fill``, ``scatter(value=)``,
``t[i] = 3.5``), converted to the tensor's dtype as PyTorch converts a Scalar
(``c10::checked_convert``): a value out of the type's range (NaN or an infinity for an integer
type, 300 for uint8, 1e39 for float32, an imaginary part for a real type) is refused with
PyTorch's RuntimeError, where numpy would raise its own error or write a wrapped or infinite
value. Bool takes anything; an unsigned type takes a negative integer down to minus its
maximum, wrapped (-1 is 255 in uint8), as PyTorch does.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["F64", "scalar_to"]

F64 = np.dtype(np.float64)

#: PyTorch's C++ names of the element types in its overflow message.
_C_NAMES = {
    "int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t", "uint8": "uint8_t",
    "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
    "float16": "c10::Half", "float32": "float", "float64": "double",
}


def _overflow(dtype: np.dtype[Any]) -> RuntimeError:
    name = _C_NAMES.get(dtype.name, dtype.name)
    return RuntimeError(f"value cannot be converted to type {name} without overflow")


def scalar_to(value: Any, dtype: Any) -> Any:
    """``value`` (a Python or numpy number; anything else is returned as is) ready to be
    written into an array of ``dtype``; PyTorch's RuntimeError where it does not fit."""
    dtype = np.dtype(dtype)
    kind = dtype.kind
    if kind in "bcOUSV" or not isinstance(value, (int, float, complex, np.number, np.bool_)):
        return value
    if isinstance(value, (bool, np.bool_)):
        return value
    if isinstance(value, (complex, np.complexfloating)):
        if value.imag != 0:
            raise _overflow(dtype)
        value = value.real
    if isinstance(value, (int, np.integer)):
        value = int(value)
        if value >= 2**64:  # (PyTorch's argument parser: a Scalar is at most a uint64)
            raise OverflowError("int too big to convert")
        if value < -(2**63):
            raise OverflowError("can't convert negative int to unsigned")
    if kind == "f":
        if dtype is not F64 and math.isfinite(value) and abs(value) > float(np.finfo(dtype).max):
            raise _overflow(dtype)
        return value
    # an integer type: a float must lie in its range (NaN does not); an int may also be
    # negative for an unsigned type, down to minus its maximum
    info = np.iinfo(dtype)
    if isinstance(value, (float, np.floating)):
        if not info.min <= value <= info.max:
            raise _overflow(dtype)
    elif value > info.max or value < (-info.max if kind == "u" else info.min):
        raise _overflow(dtype)
    value = int(value)  # (truncated toward zero, as C++'s cast)
    if value < 0 and kind == "u":
        value %= 1 << (8 * dtype.itemsize)
    return value
