"""``pow``'s cases numpy's ``power`` does not answer as PyTorch: integers to negative integer
powers from a tensor exponent (PyTorch's ``powi``: 1 and -1 keep their magnitude, every other
base gives 0; a number exponent is refused, as there), and bool bases (``bool_tensor ** True``
is a bool tensor; a bool tensor exponent is PyTorch's NotImplementedError). ``pow`` calls these
only off its common path: ``power_error`` from its ``except``, ``bool_power`` for a bool exponent.
"""

from __future__ import annotations

from typing import Any

from .._base._dtypes import is_array

__all__ = ["bool_exponent", "bool_power", "power_error"]


def bool_exponent(b: Any) -> bool:
    """Whether ``pow``'s (promoted) exponent is a bool: a Python bool or a bool array."""
    return type(b) is bool or (is_array(b) and b.dtype.kind == "b")


def bool_power(xp: Any, a: Any, b: Any) -> Any:
    """``a ** b`` for a bool exponent: PyTorch's bool result (``x ** True`` is ``x``, ``x ** False``
    all True) for a bool tensor ``a`` and a Python bool ``b``; its NotImplementedError for a
    bool tensor ``b`` and a bool ``a``; numpy's power otherwise (an integer or float base)."""
    a_bool = type(a) is bool or (is_array(a) and a.dtype.kind == "b")
    if not a_bool:
        return None
    if type(b) is not bool:
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")
    return xp.asarray(a).copy() if b else xp.ones(xp.shape(a), dtype=bool)


def power_error(error: ValueError, xp: Any, a: Any, b: Any) -> Any:
    """The integer power numpy refused (``error``: "Integers to negative integer powers are not
    allowed.") for an array exponent, as PyTorch's ``powi``; PyTorch's RuntimeError for a number
    exponent. Another error is returned as it is (a broadcast error: the caller's)."""
    if "negative integer powers" not in str(error):
        return error
    if not is_array(b):
        return RuntimeError(str(error))
    negative = b < 0
    out = xp.power(a, xp.where(negative, 0, b).astype(b.dtype))  # (0 ** 0 is 1; patched below)
    base = xp.asarray(a)
    # PyTorch's powi for b < 0: 1 for a == 1, +-1 for a == -1 (by b's parity), else 0
    at_negative = xp.where(base == 1, 1, xp.where(base == -1, 1 - 2 * (b & 1), 0)).astype(out.dtype)
    return xp.where(negative, at_negative, out)
