"""PyTorch's comparisons of whole tensors and its dtype questions: ``isclose`` and ``isin`` (bool
tensors, registered ops without a gradient); ``allclose`` and ``equal`` (Python bools);
``result_type``, ``promote_types``, ``can_cast`` (by ``casting``'s promotion rules, PyTorch's),
``typename``, and the tensor questions ``is_floating_point``, ``is_complex``, ``numel`` and
``detach`` as functions (``torch.numel(t)``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._base._dtypes import get_default_dtype, scalar_type_name
from ._registry import op
from ._util import Tensor, broadcast_error, like, not_tensor
from .casting import _promote_types
from .casting import result_type as _result_type
from .convenience import is_floating_point as _is_floating
from .operands import promoted
from .quiet import quietly

__all__ = ["allclose", "can_cast", "detach", "equal", "is_complex", "is_floating_point", "isclose", "isin",
           "numel", "promote_types", "result_type", "typename"]


def _close(fname: str, input: Any, other: Any, rtol: float, atol: float, equal_nan: bool) -> Any:
    """PyTorch's isclose on arrays: equal, or both NaN (``equal_nan``), or finite and
    ``|input - other| <= atol + |rtol * other|``; integers compared in the default dtype."""
    if not isinstance(input, Tensor):
        raise not_tensor(fname, input)
    if not isinstance(other, Tensor):
        raise not_tensor(fname, other, 2, "other")
    a, b = input.data, other.data
    if a.dtype != b.dtype:
        raise RuntimeError(f"{scalar_type_name(a.dtype)} did not match {scalar_type_name(b.dtype)}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol:g}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol:g}")
    xp = input._device.xp
    try:
        a, b = xp.broadcast_arrays(a, b)
    except ValueError as e:  # numpy's broadcast error: PyTorch's
        raise broadcast_error(e, input, other) from None
    close = a == b
    if a.dtype.kind == "b":
        return close
    if a.dtype.kind in "iu":
        a, b = a.astype(get_default_dtype()), b.astype(get_default_dtype())
    if equal_nan:
        close = close | (xp.isnan(a) & xp.isnan(b))
    if rtol == 0 and atol == 0:
        return close
    def within(a: Any, b: Any) -> Any:
        actual = xp.abs(a - b)
        return xp.isfinite(actual) & (actual <= a.dtype.type(atol) + xp.abs(a.dtype.type(rtol) * b))
    return close | quietly(within, a, b)


@op()
def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """Elementwise ``|input - other| <= atol + rtol * |other|`` (or equal; NaNs equal only with
    ``equal_nan``): a bool tensor. Both tensors of one dtype, as PyTorch's."""
    return like(_close("isclose", input, other, rtol, atol, equal_nan), input)


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Whether :func:`isclose` holds everywhere: a Python bool."""
    return bool(_close("allclose", input, other, rtol, atol, equal_nan).all())


def equal(input: Tensor, other: Tensor) -> bool:
    """Whether the two tensors have the same shape and equal elements (in their promoted dtype;
    NaN is not equal to itself): a Python bool."""
    if not isinstance(input, Tensor):
        raise not_tensor("equal", input)
    if not isinstance(other, Tensor):
        raise not_tensor("equal", other, 2, "other")
    if tuple(input.data.shape) != tuple(other.data.shape):
        return False
    a, b = promoted(input, other, fname="equal")
    return bool((a.data == b.data).all())


@op()
def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False, invert: bool = False) -> Tensor:
    """Whether each of ``elements`` is among ``test_elements`` (``not`` with ``invert``): a bool
    tensor of ``elements``' shape. Either may be a number (not both), as ``torch.isin``."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError(f"isin() received an invalid combination of arguments - got ({type(elements).__name__}, "
                        f"{type(test_elements).__name__})")
    a, b = promoted(elements, test_elements, fname="isin")
    ref = a if isinstance(a, Tensor) else b
    xp = ref._device.xp
    data = xp.asarray(a.data if isinstance(a, Tensor) else a)
    found = xp.isin(data, xp.asarray(b.data if isinstance(b, Tensor) else b), assume_unique=assume_unique,
                    invert=invert)
    return like(xp.asarray(found, dtype=bool).reshape(data.shape), ref)


# ------------------------------------------------------------------------------ dtypes
def result_type(tensor: Any, other: Any) -> Any:
    """The dtype an elementwise op over ``tensor`` and ``other`` (tensors or numbers) gives, by
    PyTorch's promotion (``torch.result_type``)."""
    return np.dtype(_result_type(tensor, other))


def promote_types(type1: Any, type2: Any) -> Any:
    """The smallest dtype both ``type1`` and ``type2`` cast to, by PyTorch's rule (a float beats
    any integer: int64 with float32 is float32)."""
    return np.dtype(_promote_types(np.dtype(type1), np.dtype(type2)))


def can_cast(from_: Any, to: Any) -> bool:
    """Whether PyTorch's type promotion allows the cast: not complex to real, not floating to
    integer, not anything but bool to bool."""
    a, b = np.dtype(from_).kind, np.dtype(to).kind
    if a == "c" and b != "c":
        return False
    if a in "fc" and b in "biu":
        return False
    return not (a != "b" and b == "b")


def typename(obj: Any) -> str:
    """The type of ``obj`` as a string: a tensor's ``type()`` (``'aiograd.FloatTensor'``), else
    the module-qualified name of its type, as ``torch.typename``."""
    if isinstance(obj, Tensor):
        return obj.type()  # type: ignore[no-any-return, attr-defined]
    module, name = "", ""
    if hasattr(obj, "__module__") and obj.__module__ != "builtins" and obj.__module__ != "__builtin__" \
            and obj.__module__ is not None:
        module = obj.__module__ + "."
    if hasattr(obj, "__qualname__"):
        name = obj.__qualname__
    elif hasattr(obj, "__name__"):
        name = obj.__name__
    else:
        name = obj.__class__.__name__
    return module + name


def is_complex(input: Tensor) -> bool:
    """True for complex dtypes."""
    if not isinstance(input, Tensor):
        raise not_tensor("is_complex", input)
    return input.data.dtype.kind == "c"


def is_floating_point(input: Tensor) -> bool:
    """True for floating point dtypes."""
    if not isinstance(input, Tensor):
        raise not_tensor("is_floating_point", input)
    return _is_floating(input)


def numel(input: Tensor) -> int:
    """The number of elements of ``input``."""
    if not isinstance(input, Tensor):
        raise not_tensor("numel", input)
    return int(input.data.size)


def detach(input: Tensor) -> Tensor:
    """``input.detach()``: the same data, out of the graph."""
    if not isinstance(input, Tensor):
        raise not_tensor("detach", input)
    return input.detach()


TENSOR_METHODS: dict[str, Any] = {
    "isclose": isclose, "allclose": allclose, "equal": equal, "is_complex": is_complex,
}
