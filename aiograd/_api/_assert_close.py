"""``assert_close`` (``torch.testing.assert_close``): tensors, numpy arrays, numbers and nested
sequences and mappings of them compared elementwise, ``|actual - expected| <= atol + rtol *
|expected|``, with torch's default tolerances per dtype and torch's failure messages (the number
of mismatches, the greatest absolute and relative differences and where; the item of a nested
input where it failed), so a test ported from torch fails with the same words."""

from __future__ import annotations

import collections.abc
from collections.abc import Callable
from typing import Any

import numpy as np

from .._core._tensor import Tensor
from .._devices._device import device_type

__all__ = ["assert_close"]

#: torch's ``_DTYPE_PRECISIONS``: (rtol, atol) by dtype; other dtypes compare exactly.
_PRECISIONS: dict[str, tuple[float, float]] = {
    "float16": (0.001, 1e-5), "bfloat16": (0.016, 1e-5), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7),
    "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7),
}
_NUMBER_DTYPES = {bool: np.dtype(np.bool_), int: np.dtype(np.int64), float: np.dtype(np.float64), complex: np.dtype(np.complex128)}


class _Failure(Exception):
    """A mismatch found deep in the inputs: the exception type and message, and where."""

    def __init__(self, kind: type[Exception], message: str, where: tuple[Any, ...] = ()) -> None:
        super().__init__(message)
        self.kind, self.message, self.where = kind, message, where


def _tolerances(dtypes: list[np.dtype[Any]], rtol: float | None, atol: float | None) -> tuple[float, float]:
    if (rtol is None) != (atol is None):
        missing = "atol" if atol is None else "rtol"
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {missing}.")
    if rtol is not None and atol is not None:
        return rtol, atol
    pairs = [_PRECISIONS.get(d.name, (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _dtype_name(dtype: np.dtype[Any], tensor: bool) -> str:
    return f"aiograd.{dtype.name}" if tensor else repr(dtype)


def _host(x: Any) -> np.ndarray[Any, Any]:
    if isinstance(x, Tensor):
        data = x.detach().data
        return np.asarray(data if type(data) is np.ndarray else device_type(x._device.type).to_host(data))
    return np.asarray(x)


def _scalar_message(actual: Any, expected: Any, rtol: float, atol: float) -> str:
    equality = rtol == 0 and atol == 0
    abs_diff = abs(actual - expected)
    rel_diff = abs_diff / abs(expected) if expected != 0 else (float("inf") if abs_diff else float("nan"))
    message = f"Scalars are not {'equal' if equality else 'close'}!\n\nExpected {expected} but got {actual}.\n"
    message += f"Absolute difference: {abs_diff}" + ("" if equality else f" (up to {atol} allowed)") + "\n"
    message += f"Relative difference: {rel_diff}" + ("" if equality else f" (up to {rtol} allowed)")
    return message


def _tensor_message(actual: np.ndarray[Any, Any], expected: np.ndarray[Any, Any], matches: np.ndarray[Any, Any], rtol: float, atol: float) -> str:
    equality = rtol == 0 and atol == 0
    total = matches.size
    mismatched = total - int(matches.sum())
    if actual.dtype.kind not in "fc":
        actual, expected = actual.astype(np.int64), expected.astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        abs_diff = np.abs(actual - expected).reshape(-1)
        abs_diff[matches.reshape(-1)] = 0
        rel_diff = abs_diff / np.abs(expected.reshape(-1))
    rel_diff[matches.reshape(-1)] = 0
    if abs_diff.dtype.kind != "f":
        rel_diff = rel_diff.astype(np.float32)  # (torch divides int64 tensors into float32)

    def greatest(diff: np.ndarray[Any, Any]) -> tuple[Any, tuple[int, ...]]:
        nan = np.isnan(diff) if diff.dtype.kind == "f" else np.zeros(diff.shape, bool)
        flat = int(np.argmax(nan)) if nan.any() else int(np.argmax(diff))  # (torch's max: NaN wins)
        return diff[flat].item(), tuple(int(i) for i in np.unravel_index(flat, matches.shape))

    abs_value, abs_index = greatest(abs_diff)
    rel_value, rel_index = greatest(rel_diff)
    message = f"Tensor-likes are not {'equal' if equality else 'close'}!\n\n"
    message += f"Mismatched elements: {mismatched} / {total} ({mismatched / total:.1%})\n"
    message += f"Greatest absolute difference: {abs_value} at index {abs_index}" + ("" if equality else f" (up to {atol} allowed)") + "\n"
    message += f"Greatest relative difference: {rel_value} at index {rel_index}" + ("" if equality else f" (up to {rtol} allowed)")
    return message


def _compare_tensors(actual: Any, expected: Any, rtol: float | None, atol: float | None, equal_nan: bool,
                     check_device: bool, check_dtype: bool) -> None:
    tensors = isinstance(actual, Tensor)
    a, e = _host(actual), _host(expected)
    if a.shape != e.shape:
        name = (lambda s: f"aiograd.Size({list(s)})") if tensors else (lambda s: str(s))
        raise _Failure(AssertionError, f"The values for attribute 'shape' do not match: {name(a.shape)} != {name(e.shape)}.")
    if tensors and check_device and str(actual.device) != str(expected.device):
        raise _Failure(AssertionError, f"The values for attribute 'device' do not match: {actual.device} != {expected.device}.")
    if check_dtype and a.dtype != e.dtype:
        raise _Failure(AssertionError, f"The values for attribute 'dtype' do not match: {_dtype_name(a.dtype, tensors)} != {_dtype_name(e.dtype, tensors)}.")
    rtol, atol = _tolerances([a.dtype, e.dtype], rtol, atol)
    if a.dtype != e.dtype:
        common = np.promote_types(a.dtype, e.dtype)
        a, e = a.astype(common), e.astype(common)
    if a.dtype.kind == "b":
        a, e = a.astype(np.int64), e.astype(np.int64)
    with np.errstate(invalid="ignore", over="ignore"):
        if a.dtype.kind in "fc":
            matches = a == e
            finite = np.isfinite(e) & np.isfinite(a)
            dtype = a.dtype.type
            matches |= finite & (np.abs(a - e) <= dtype(atol) + dtype(rtol) * np.abs(e))
            if equal_nan:
                matches |= np.isnan(a) & np.isnan(e)
        else:
            matches = np.abs(a.astype(np.float64) - e.astype(np.float64)) <= atol + rtol * np.abs(e.astype(np.float64))
    if bool(matches.all()):
        return
    if a.ndim == 0:
        raise _Failure(AssertionError, _scalar_message(a.item(), e.item(), rtol, atol))
    raise _Failure(AssertionError, _tensor_message(a, e, matches, rtol, atol))


def _number_type(x: Any) -> type | None:
    for kind in (bool, int, float, complex):  # (bool before int: True is an int)
        if isinstance(x, kind) or isinstance(x, np.generic) and np.dtype(type(x)).kind == {bool: "b", int: "i", float: "f", complex: "c"}[kind]:
            return kind
    return None


def _compare_numbers(actual: Any, expected: Any, rtol: float | None, atol: float | None, equal_nan: bool, check_dtype: bool) -> None:
    a_type, e_type = _number_type(actual), _number_type(expected)
    assert a_type is not None and e_type is not None
    if check_dtype and a_type is not e_type:
        raise _Failure(AssertionError, f"The (d)types do not match: {a_type} != {e_type}.")
    if a_type is bool and e_type is bool:
        if bool(actual) != bool(expected):
            raise _Failure(AssertionError, f"Booleans mismatch: {actual} is not {expected}")
        return
    rtol, atol = _tolerances([_NUMBER_DTYPES[a_type], _NUMBER_DTYPES[e_type]], rtol, atol)
    a, e = complex(actual) if a_type is complex else actual, expected
    if a == e or (equal_nan and a != a and e != e):
        return
    if abs(a - e) <= atol + rtol * abs(e):
        return
    raise _Failure(AssertionError, _scalar_message(actual, expected, rtol, atol))


def _is_array(x: Any) -> bool:
    return isinstance(x, np.ndarray)


def _compare(actual: Any, expected: Any, where: tuple[Any, ...], **options: Any) -> None:
    if actual is None and expected is None:
        return
    sequence = (collections.abc.Sequence,)
    if isinstance(actual, sequence) and isinstance(expected, sequence) and not isinstance(actual, str) and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise _Failure(AssertionError, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}", where)
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, (*where, i), **options)
        return
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
        keys_a, keys_e = set(actual), set(expected)
        if keys_a != keys_e:
            missing, extra = sorted(keys_e - keys_a, key=repr), sorted(keys_a - keys_e, key=repr)
            raise _Failure(AssertionError, "The keys of the mappings do not match:\n"
                           f"Missing keys in the actual mapping: {missing}\nAdditional keys in the actual mapping: {extra}", where)
        for key in sorted(actual, key=repr) if not all(isinstance(k, str) for k in actual) else actual:
            _compare(actual[key], expected[key], (*where, key), **options)
        return
    try:
        if isinstance(actual, Tensor) and isinstance(expected, Tensor) or _is_array(actual) and _is_array(expected):
            _compare_tensors(actual, expected, options["rtol"], options["atol"], options["equal_nan"],
                             options["check_device"], options["check_dtype"])
            return
        if _number_type(actual) is not None and _number_type(expected) is not None:
            _compare_numbers(actual, expected, options["rtol"], options["atol"], options["equal_nan"], options["check_dtype"])
            return
    except _Failure as failure:
        failure.where = where
        raise
    raise TypeError(f"No comparison pair was able to handle inputs of type {_type_name(actual)} and {_type_name(expected)}.")


def _type_name(x: Any) -> str:
    """``<class '...'>``, with aiograd's public name for a tensor (as torch's ``torch.Tensor``)."""
    return "<class 'aiograd.Tensor'>" if type(x) is Tensor else str(type(x))


def assert_close(
    actual: Any,
    expected: Any,
    *,
    allow_subclasses: bool = True,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = False,
    check_device: bool = True,
    check_dtype: bool = True,
    check_layout: bool = True,
    check_stride: bool = False,
    msg: str | Callable[[str], str] | None = None,
) -> None:
    """Raise ``AssertionError`` unless ``actual`` and ``expected`` are close, as
    ``torch.testing.assert_close``: aiograd tensors (or numpy arrays, or numbers) compared
    elementwise with ``|actual - expected| <= atol + rtol * |expected|`` (defaults by dtype:
    float32 ``1.3e-6``/``1e-5``, float64 ``1e-7``/``1e-7``, float16 ``1e-3``/``1e-5``, exact for
    integers and bools), after checking shapes, devices and dtypes; nested sequences and mappings
    item by item. ``equal_nan`` makes NaNs equal; ``msg`` (a string, or a function of torch's
    message) replaces the message. ``allow_subclasses``, ``check_layout`` and ``check_stride``
    are accepted for torch's signature (aiograd tensors are strided and not subclassed)."""
    del allow_subclasses, check_layout, check_stride
    try:
        _compare(actual, expected, (), rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device,
                 check_dtype=check_dtype)
    except _Failure as failure:
        message = failure.message
        if failure.where:
            message += f"\n\nThe failure occurred for item {''.join(f'[{k!r}]' for k in failure.where)}"
        if callable(msg):
            message = msg(message)
        elif msg is not None:
            message = msg
        raise failure.kind(message) from None
