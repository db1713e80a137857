"""Dtype names as torch spells them; they are numpy dtypes (``aiograd.float32 == np.float32``).

Also the one gate for data coming into a tensor (``numeric_array``): numbers only, as PyTorch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["float16", "float32", "float64", "half", "double", "int32", "int64", "uint8", "bool_"]

float16: np.dtype[Any] = np.dtype(np.float16)
half: np.dtype[Any] = float16
float32: np.dtype[Any] = np.dtype(np.float32)
float64: np.dtype[Any] = np.dtype(np.float64)
double: np.dtype[Any] = float64
int32: np.dtype[Any] = np.dtype(np.int32)
int64: np.dtype[Any] = np.dtype(np.int64)
uint8: np.dtype[Any] = np.dtype(np.uint8)
bool_: np.dtype[Any] = np.dtype(np.bool_)


# ------------------------------------------------------------------------------ numeric data only
#: The array kinds a tensor may hold: bool, integers, floats, complex (no objects, strings, dates).
NUMERIC_KINDS = frozenset("biufc")
_SUPPORTED = (
    "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint64, "
    "uint32, uint16, uint8, and bool"
)


def cant_convert(dtype: np.dtype[Any]) -> TypeError:
    """PyTorch's error for an array of a dtype no tensor can hold (``torch.from_numpy``'s)."""
    return TypeError(
        f"can't convert np.ndarray of type numpy.{dtype.type.__name__}. The only supported types "
        f"are: {_SUPPORTED}."
    )


def type_name(obj: Any) -> str:
    """CPython's ``tp_name`` of ``type(obj)``, which PyTorch's messages quote: the bare name for a
    class written in Python or a builtin, ``module.name`` for other C types (``decimal.Decimal``)."""
    cls = type(obj)
    if cls.__flags__ & (1 << 9) or cls.__module__ == "builtins":  # Py_TPFLAGS_HEAPTYPE
        return cls.__name__
    return f"{cls.__module__}.{cls.__qualname__}"


def _is_number(obj: Any) -> bool:
    """What can be stored as one element: a number, a numeric numpy scalar or 0-dim array, or
    anything else numpy reads as an array (a 0-dim tensor)."""
    if isinstance(obj, (np.ndarray, np.generic)):
        return obj.dtype.kind in NUMERIC_KINDS
    return isinstance(obj, (bool, int, float, complex)) or hasattr(obj, "__array__")


def _is_sequence(obj: Any) -> bool:
    if isinstance(obj, np.ndarray):
        return obj.ndim > 0
    return isinstance(obj, (list, tuple, range, str, bytes, bytearray))


def _refuse(data: Any, infer: bool) -> None:
    """Raise PyTorch's error for ``torch.tensor(data)`` when ``data`` holds something that is not
    a number, in the order PyTorch finds it (torch/csrc/utils/tensor_new.cpp): the sizes follow
    the first elements (a string there has "too many dimensions"), then, unless a dtype was given
    (``infer`` False), every element's type is inferred, then the elements are stored (the
    nesting must be regular, each element a number). Returns if it finds nothing wrong."""
    if isinstance(data, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type_name(data)}'")
    sizes: list[int] = []
    seq = data
    while _is_sequence(seq):
        if isinstance(seq, str):
            raise ValueError("too many dimensions 'str'")
        sizes.append(len(seq))
        if not len(seq):
            break
        seq = seq[0]

    def infer_type(obj: Any) -> None:
        if isinstance(obj, (np.ndarray, np.generic)):  # np.str_ too: numpy's, then a str
            if obj.dtype.kind not in NUMERIC_KINDS:
                raise cant_convert(obj.dtype)
            return
        if isinstance(obj, (str, bytes)):
            raise TypeError(f"new(): invalid data type '{type_name(obj)}'")
        if isinstance(obj, (bool, int, float, complex)) or hasattr(obj, "__array__"):
            return
        if _is_sequence(obj):
            for item in obj:
                infer_type(item)
            return
        raise RuntimeError(f"Could not infer dtype of {type_name(obj)}")

    if infer:
        infer_type(data)

    def store(obj: Any, dim: int) -> None:
        if dim == len(sizes):
            if _is_sequence(obj) or not _is_number(obj):
                raise TypeError(f"must be real number, not {type_name(obj)}")
            return
        if not _is_sequence(obj):
            raise TypeError("not a sequence")
        if len(obj) != sizes[dim]:
            raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got {len(obj)})")
        for item in obj:
            store(item, dim + 1)

    store(data, 0)


# ------------------------------------------------------------------------------ device arrays
#: The array types of the device types whose arrays are not numpy's (``cupy.ndarray``), added
#: by each such type when it loads (``register_device_array_type``). A set: telling a device
#: array from a number or a numpy scalar is one hash lookup, cheap enough for the hot paths.
DEVICE_ARRAY_TYPES: set[type] = set()


def register_device_array_type(cls: type) -> None:
    """Make ``cls`` (a device type's array class) known to the ops as an array."""
    DEVICE_ARRAY_TYPES.add(cls)


def is_device_array(x: Any) -> bool:
    """True for an array of a device type's own array module, not numpy's (a ``cupy.ndarray``).
    Such an array refuses to become a numpy array implicitly; ``.get()`` copies it to the host."""
    return type(x) in DEVICE_ARRAY_TYPES


def is_array(x: Any) -> bool:
    """True for a numpy array or a device array (``is_device_array``)."""
    return isinstance(x, np.ndarray) or type(x) in DEVICE_ARRAY_TYPES


def numeric_array(data: Any, dtype: Any = None, copy: bool = True) -> np.ndarray[Any, Any]:
    """``data`` as a numeric numpy array (a copy unless ``copy`` is False and no conversion is
    needed), refusing objects, strings, None and ragged nesting with PyTorch's errors. A device
    array (CuPy's) is copied to the host first."""
    if type(data) in DEVICE_ARRAY_TYPES or (
        not isinstance(data, (np.ndarray, list, tuple, int, float)) and hasattr(type(data), "__cuda_array_interface__")
    ):
        data = data.get()  # (CuPy's arrays, also before any CUDA device registered their type)
    if isinstance(data, np.ndarray):
        if data.dtype.kind not in NUMERIC_KINDS:
            raise cant_convert(data.dtype)
        return np.array(data, dtype=dtype) if copy else np.asarray(data, dtype=dtype)
    try:
        # Inferred first, cast after: with a dtype, numpy would parse "1.5" or turn None to nan.
        arr = np.array(data)
    except (ValueError, TypeError):
        _refuse(data, dtype is None)
        raise
    if arr.dtype.kind not in NUMERIC_KINDS:
        _refuse(data, dtype is None)
        raise cant_convert(arr.dtype)
    return arr if dtype is None else arr.astype(dtype, copy=False)


# ------------------------------------------------------------------------------ PyTorch's names
# PyTorch names dtypes two ways in its messages: the C++ type of the elements (``typeid`` names,
# "double", "long int") and the ScalarType ("Double", "Long").
_CPP_TYPE_NAMES = {
    "float16": "c10::Half", "float32": "float", "float64": "double", "int8": "signed char",
    "int16": "short int", "int32": "int", "int64": "long int", "uint8": "unsigned char", "bool": "bool",
}
_SCALAR_TYPE_NAMES = {
    "float16": "Half", "float32": "Float", "float64": "Double", "int8": "Char", "int16": "Short",
    "int32": "Int", "int64": "Long", "uint8": "Byte", "bool": "Bool",
}


def cpp_type_name(dtype: Any) -> str:
    """``dtype`` as PyTorch's messages name its C++ element type (``double``, ``long int``)."""
    name = np.dtype(dtype).name
    return _CPP_TYPE_NAMES.get(name, name)


def scalar_type_name(dtype: Any) -> str:
    """``dtype`` as PyTorch's ScalarType (``Double``, ``Long``)."""
    name = np.dtype(dtype).name
    return _SCALAR_TYPE_NAMES.get(name, name)
