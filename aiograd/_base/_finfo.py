"""``finfo`` and ``iinfo``: the numerical limits of a dtype, as ``torch.finfo``/``torch.iinfo``.

numpy knows the limits (``np.finfo``/``np.iinfo``); these give them torch's way: Python numbers
rather than numpy scalars (``max`` of float32 is the float ``3.4028234663852886e+38``), the dtype
as a string (``"float32"``), torch's ``resolution`` (an exact power of ten) and torch's errors.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._dtypes import get_default_dtype

__all__ = ["finfo", "iinfo"]

_MISSING: Any = object()


def _as_dtype(value: Any, fname: str) -> np.dtype[Any]:
    """``value`` as a dtype: a dtype, or a type that names one (``np.float32``; Python's
    ``float``, ``int`` and ``bool``, which torch reads as float64, int64 and bool too)."""
    if isinstance(value, np.dtype):
        return value
    if isinstance(value, type) and (issubclass(value, np.generic) or value in (bool, int, float, complex)):
        return np.dtype(value)
    raise TypeError(f"{fname}(): argument 'type' (position 1) must be dtype, not {type(value).__name__}")


class finfo:
    """The limits of a floating point dtype (the default dtype when none is given), as
    ``torch.finfo``: ``bits``, ``eps``, ``max``, ``min``, ``tiny`` (= ``smallest_normal``),
    ``resolution`` and ``dtype`` (its name). A complex dtype gives its parts' (complex64:
    float32's)."""

    bits: int
    eps: float
    max: float
    min: float
    tiny: float
    smallest_normal: float
    resolution: float
    dtype: str

    def __init__(self, type: Any = _MISSING) -> None:
        dtype = get_default_dtype() if type is _MISSING else _as_dtype(type, "finfo")
        if dtype.kind not in "fc":
            raise TypeError(
                "aiograd.finfo() requires a floating point input type. Use aiograd.iinfo to handle 'aiograd.finfo'"
            )  # (torch's words, which name the wrong function)
        info = np.finfo(dtype)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        # torch's: 10 ** -(the decimal digits the dtype keeps), exactly (numpy's is rounded to it).
        self.resolution = 10.0 ** -int(info.precision)
        self.dtype = str(info.dtype)

    def _key(self) -> tuple[Any, ...]:
        return (self.bits, self.eps, self.max, self.min, self.tiny, self.resolution, self.dtype)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, finfo) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (
            f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
            f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})"
        )


class iinfo:
    """The limits of an integer dtype, as ``torch.iinfo``: ``bits``, ``max``, ``min`` (Python
    ints) and ``dtype`` (its name). bool is refused, as by torch."""

    bits: int
    max: int
    min: int
    dtype: str

    def __init__(self, type: Any = _MISSING) -> None:
        if type is _MISSING:
            raise TypeError('iinfo() missing 1 required positional arguments: "type"')  # torch's words
        dtype = _as_dtype(type, "iinfo")
        if dtype.kind == "b":
            raise TypeError("aiograd.bool is not supported by aiograd.iinfo")
        if dtype.kind not in "iu":
            raise TypeError(
                "aiograd.iinfo() requires an integer input type. Use aiograd.finfo to handle 'aiograd.iinfo'"
            )
        info = np.iinfo(dtype)
        self.bits, self.max, self.min, self.dtype = int(info.bits), int(info.max), int(info.min), str(info.dtype)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, iinfo) and (self.bits, self.min, self.dtype) == (other.bits, other.min, other.dtype)

    def __hash__(self) -> int:
        return hash((self.bits, self.min, self.dtype))

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
