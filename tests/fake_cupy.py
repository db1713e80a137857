"""A CuPy stand-in on the CPU, so that CI (no GPU) runs every op on arrays that are not numpy's.

``FakeArray`` wraps a numpy array and behaves as a ``cupy.ndarray`` does where it matters to
aiograd's ops: it is not a ``numpy.ndarray``; it refuses implicit conversion to one
(``np.asarray(a)`` raises CuPy's TypeError, so a silent copy to the host fails loudly); its
reductions return 0-d arrays, never numpy scalars; mixing a numpy array into its arithmetic or
functions raises CuPy's TypeError (numbers and numpy scalars are fine, and numpy index arrays
are, as CuPy converts them); numpy functions called on it dispatch to the stand-in
(``__array_ufunc__``/``__array_function__``, as CuPy's); ``.get()`` copies to the host; and the
class has ``__cuda_array_interface__``, as CuPy's does.

``xp`` is the stand-in module (``cupy``): numpy's functions, taking and returning FakeArrays.
``device_type()`` is a device type (the interface of ``aiograd._devices._device``) whose array module is
``xp``: tests register it under a name of their own.
"""

from __future__ import annotations

import contextlib
import types
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from aiograd._base._dtypes import register_device_array_type
from aiograd.executors import InlineExecutor

_NO_IMPLICIT = "Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a NumPy array explicitly."


def _refuse_host(x: Any) -> None:
    raise TypeError(f"Unsupported type {type(x)}")


def _unwrap(x: Any, allow_host: bool = False) -> Any:
    """FakeArrays to their numpy arrays, inside lists and tuples too; a numpy array (even a 0-d
    one: CuPy's kernels take numbers and numpy scalars, not numpy arrays) is refused unless
    ``allow_host``."""
    if type(x) is FakeArray:
        return x._a
    if isinstance(x, np.ndarray):
        if not allow_host:
            _refuse_host(x)
        return x
    if isinstance(x, (list, tuple)):
        return type(x)(_unwrap(y, allow_host) for y in x)
    return x


#: id of a numpy array -> its live FakeArray: one wrapper per array, so identity tests on device
#: arrays (``view.base is data``, as numpy and CuPy collapse ``base`` to the owner) hold.
_WRAPPERS: weakref.WeakValueDictionary[int, FakeArray] = weakref.WeakValueDictionary()


def _wrap(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        known = _WRAPPERS.get(id(x))
        if known is not None and known._a is x:
            return known
        wrapper = _WRAPPERS[id(x)] = FakeArray(x)
        return wrapper
    if isinstance(x, np.generic):  # CuPy returns 0-d arrays where numpy returns scalars
        return FakeArray(np.asarray(x))
    if isinstance(x, tuple):
        return tuple(_wrap(y) for y in x)
    if isinstance(x, list):
        return [_wrap(y) for y in x]
    return x


def _call(fn: Callable[..., Any], args: Any, kwargs: Any, allow_host: bool = False) -> Any:
    return _wrap(fn(*_unwrap(list(args), allow_host), **{k: _unwrap(v, allow_host) for k, v in kwargs.items()}))


class _Pointer:
    __slots__ = ("ptr",)

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


class FakeArray:
    """A device array: a numpy array behind CuPy's manners (see the module docstring)."""

    __slots__ = ("_a", "__weakref__")
    __cuda_array_interface__ = property(lambda self: {"shape": self._a.shape, "version": 3})
    __array_priority__ = 100

    def __init__(self, a: np.ndarray[Any, Any]) -> None:
        self._a = a

    # ---------------------------------------------------------------- host transfers
    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(_NO_IMPLICIT)

    def get(self) -> np.ndarray[Any, Any]:
        return self._a.copy()

    # ---------------------------------------------------------------- numpy's protocols
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return _call(getattr(ufunc, method), inputs, kwargs)

    def __array_function__(self, func: Any, types_: Any, args: Any, kwargs: Any) -> Any:
        return _call(func, args, kwargs)

    # ---------------------------------------------------------------- attributes
    @property
    def data(self) -> _Pointer:
        return _Pointer(int(self._a.__array_interface__["data"][0]))

    @property
    def T(self) -> FakeArray:
        return _wrap(self._a.T)

    @property
    def mT(self) -> FakeArray:
        return _wrap(np.swapaxes(self._a, -1, -2))

    @property
    def real(self) -> FakeArray:
        return _wrap(self._a.real)

    @property
    def imag(self) -> FakeArray:
        return _wrap(self._a.imag)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # no __array_interface__, buffer, ...: numpy must not see in
            raise AttributeError(name)
        value = getattr(self._a, name)
        if callable(value):
            return lambda *args, **kwargs: _call(value, args, kwargs)
        return _wrap(value) if isinstance(value, np.ndarray) else value

    # ---------------------------------------------------------------- indexing
    def __getitem__(self, index: Any) -> Any:
        index = _unwrap(index, allow_host=True)
        out = self._a[index]
        if isinstance(out, np.generic):  # CuPy gives a 0-d view where numpy gives a scalar
            out = self._a[(*index, Ellipsis) if type(index) is tuple else (index, Ellipsis)]
        return _wrap(out)

    def __setitem__(self, index: Any, value: Any) -> None:
        if isinstance(value, np.ndarray) and value.ndim and not isinstance(index, (np.ndarray, list)):
            _refuse_host(value)
        self._a[_unwrap(index, allow_host=True)] = _unwrap(value, allow_host=True)

    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self) -> Any:
        return (_wrap(x) for x in self._a)

    # ---------------------------------------------------------------- conversions to numbers
    def __bool__(self) -> bool:
        return bool(self._a)

    def __float__(self) -> float:
        return float(self._a)

    def __int__(self) -> int:
        return int(self._a)

    def __index__(self) -> int:
        return self._a.__index__()

    def __complex__(self) -> complex:
        return complex(self._a)

    def __repr__(self) -> str:
        return f"fake_cupy.array({self._a!r})"

    __hash__ = None  # type: ignore[assignment]


def _binary(name: str) -> Callable[..., Any]:
    def method(self: FakeArray, other: Any) -> Any:
        return _wrap(getattr(self._a, name)(_unwrap(other)))

    method.__name__ = name
    return method


def _unary(name: str) -> Callable[..., Any]:
    def method(self: FakeArray) -> Any:
        return _wrap(getattr(self._a, name)())

    method.__name__ = name
    return method


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
              "lshift", "rshift"):
    for _form in (f"__{_name}__", f"__r{_name}__", f"__i{_name}__"):
        setattr(FakeArray, _form, _binary(_form))
for _form in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
    setattr(FakeArray, _form, _binary(_form))
for _form in ("__neg__", "__pos__", "__abs__", "__invert__"):
    setattr(FakeArray, _form, _unary(_form))


# ------------------------------------------------------------------------------ the module
class _Ufunc:
    """A numpy ufunc taking and returning FakeArrays (with ``at``, ``reduce``, ...)."""

    def __init__(self, ufunc: Any) -> None:
        self._ufunc = ufunc

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _call(self._ufunc, args, kwargs)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._ufunc, name)
        if name == "at":  # CuPy's ``ufunc.at`` converts host index arrays, as its indexing does
            return lambda a, indices, b=None: attr(_unwrap(a), _unwrap(indices, allow_host=True), _unwrap(b))
        return (lambda *args, **kwargs: _call(attr, args, kwargs)) if callable(attr) else attr


#: Functions that take host data explicitly, as CuPy's do (``cupy.asarray(numpy_array)``).
_FROM_HOST = {"asarray", "array", "ascontiguousarray", "asanyarray"}


class _Module(types.ModuleType):
    """``cupy``: numpy's names, on FakeArrays."""

    ndarray = FakeArray

    def __getattr__(self, name: str) -> Any:
        value = getattr(np, name)
        if isinstance(value, np.ufunc):
            return _Ufunc(value)
        if isinstance(value, type) or not callable(value):
            return value  # dtypes and scalar types, constants (nan, inf, newaxis)
        allow_host = name in _FROM_HOST

        def fn(*args: Any, **kwargs: Any) -> Any:
            if allow_host and args and type(args[0]) is FakeArray:
                return _wrap(np.array(args[0]._a, *args[1:], **kwargs) if name == "array" else value(args[0]._a, *args[1:], **kwargs))
            return _call(value, args, kwargs, allow_host)

        fn.__name__ = name
        return fn

    @staticmethod
    def asnumpy(a: Any) -> np.ndarray[Any, Any]:
        return a.get() if type(a) is FakeArray else np.asarray(a)


xp = _Module("fake_cupy")


def device_type() -> types.SimpleNamespace:
    """A device type (aiograd._devices._device's interface) holding FakeArrays, with no streams; its
    array class is registered with the ops, as the cuda type registers CuPy's."""
    register_device_array_type(FakeArray)

    def to_device(host: Any, index: Any) -> FakeArray:
        return _wrap(np.array(host._a if type(host) is FakeArray else host, copy=True))

    def to_host(array: Any) -> np.ndarray[Any, Any]:
        return array.get() if type(array) is FakeArray else array

    return types.SimpleNamespace(
        array_module=xp, indexed=True, default_executor=InlineExecutor,
        to_device=to_device, to_host=to_host, synchronize=lambda index: None,
        has_streams=False, current_stream=lambda index: None, default_stream=lambda index: None,
        stream_scope=lambda stream: contextlib.nullcontext(), record_event=lambda stream: None,
        wait_event=lambda stream, event: None, call_when_done=lambda event, callback: callback(),
        ran_on=lambda stream, reads, writes: None,
    )
