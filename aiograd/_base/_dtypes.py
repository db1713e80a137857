"""Dtype names as torch spells them; they are numpy dtypes (``aiograd.float32 == np.float32``).

Also the one gate for data coming into a tensor (``numeric_array``): numbers only, as PyTorch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "float16", "float32", "float64", "half", "float_", "double", "int8", "int16", "short", "int32", "int_",
    "int64", "long", "uint8", "bool_", "get_default_dtype", "set_default_dtype",
]

# torch's other names are the same objects (``aiograd.long is aiograd.int64``). The ones that are
# Python builtins' names (``int``, ``float``, ``bool``) are spelled with a trailing underscore
# here, so as not to shadow the builtins in this module; ``aiograd`` exports them unadorned.
# (No bfloat16: numpy has none of its own, and ``ml_dtypes``' is not a dependency.)
float16: np.dtype[Any] = np.dtype(np.float16)
half: np.dtype[Any] = float16
float32: np.dtype[Any] = np.dtype(np.float32)
float_: np.dtype[Any] = float32  # ``aiograd.float``
float64: np.dtype[Any] = np.dtype(np.float64)
double: np.dtype[Any] = float64
int8: np.dtype[Any] = np.dtype(np.int8)
int16: np.dtype[Any] = np.dtype(np.int16)
short: np.dtype[Any] = int16
int32: np.dtype[Any] = np.dtype(np.int32)
int_: np.dtype[Any] = int32  # ``aiograd.int``
int64: np.dtype[Any] = np.dtype(np.int64)
long: np.dtype[Any] = int64
uint8: np.dtype[Any] = np.dtype(np.uint8)
bool_: np.dtype[Any] = np.dtype(np.bool_)  # ``aiograd.bool`` too


# ------------------------------------------------------------------------------ the default dtype
# Process-global, as torch's (``torch.set_default_dtype`` is not per thread or per task): the
# dtype of factories without ``dtype=``, of Python floats in ``tensor()``, of Python floats in
# type promotion and of integer tensors through float ops (``sqrt``, ``/``).
_default_dtype: np.dtype[Any] = float32
#: The complex dtype that goes with each default float dtype (torch: float64 -> complex128;
#: numpy has no complex32, so float16's is complex64).
_COMPLEX_OF: dict[np.dtype[Any], np.dtype[Any]] = {float16: np.dtype(np.complex64), float32: np.dtype(np.complex64), float64: np.dtype(np.complex128)}
_NOT_FLOATING = "only floating-point types are supported as the default type"


def get_default_dtype() -> np.dtype[Any]:
    """The default floating point dtype (``aiograd.float32`` unless ``set_default_dtype`` changed
    it), as ``torch.get_default_dtype``."""
    return _default_dtype


def default_complex_dtype() -> np.dtype[Any]:
    """The complex dtype of Python complex numbers under the default dtype."""
    return _COMPLEX_OF[_default_dtype]


def set_default_dtype(d: Any) -> None:
    """Set the default floating point dtype (float16, float32 or float64), for the whole
    process, as ``torch.set_default_dtype``; any other dtype raises torch's TypeError."""
    # aiograd's dtypes are numpy's, so a numpy scalar type (np.float64) names one too; strings,
    # Python's ``float`` and None are not dtype objects, as in torch.
    if isinstance(d, type) and issubclass(d, np.generic):
        d = np.dtype(d)
    if not isinstance(d, np.dtype):
        raise TypeError(f"invalid dtype object: {_NOT_FLOATING}")
    if d not in _COMPLEX_OF:
        raise TypeError(_NOT_FLOATING)
    global _default_dtype
    _default_dtype = next(k for k in _COMPLEX_OF if k == d)  # (the canonical instance)


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
    if _is_torch_tensor(data):
        data = data.detach().cpu().numpy()  # (its dtype kept, as torch.tensor keeps a tensor's)
    elif type(data) in DEVICE_ARRAY_TYPES or (
        not isinstance(data, (np.ndarray, list, tuple, int, float)) and hasattr(type(data), "__cuda_array_interface__")
        and hasattr(data, "get")
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
    if dtype is None and arr.dtype.kind in "fc":
        dtype = _inferred_float(data, arr.dtype)
    return arr if dtype is None else arr.astype(dtype, copy=False)


def _is_torch_tensor(data: Any) -> bool:
    """A torch tensor, told by duck typing (aiograd never imports torch). Its class has a
    ``__cuda_array_interface__`` even on the CPU, so it must not be taken for a CuPy array; and
    ``np.array`` of it refuses one that requires grad, where ``torch.tensor`` copies it."""
    return type(data).__module__.startswith("torch") and hasattr(data, "detach") and hasattr(data, "numpy")


def _inferred_float(data: Any, inferred: np.dtype[Any]) -> np.dtype[Any] | None:
    """torch's dtype for float or complex ``data`` that numpy inferred as ``inferred``: Python
    floats (and complex numbers) stand for the default dtype, numpy scalars, arrays and tensors
    among them keep theirs; None where numpy's is already right (saves the walk)."""
    if _default_dtype is float64 or isinstance(data, np.generic) or hasattr(data, "__array__"):
        return None  # float64 is numpy's choice for Python floats too; an array keeps its dtype
    wanted = default_complex_dtype() if inferred.kind == "c" else _default_dtype
    for leaf in _array_leaves(data):
        if leaf.kind in "fc":
            wanted = np.promote_types(wanted, leaf)
    return None if wanted == inferred else wanted


def _array_leaves(data: Any) -> Any:
    """The dtypes of the elements of nested ``data`` that are not Python numbers (numpy
    scalars, arrays, tensors): those keep their dtype in torch's inference."""
    if isinstance(data, (list, tuple)):
        for item in data:
            if type(item) is not float and type(item) is not int and type(item) is not bool:
                yield from _array_leaves(item)
    elif hasattr(data, "dtype") and isinstance(data.dtype, np.dtype):
        yield data.dtype


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
