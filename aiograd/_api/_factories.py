"""Tensor factories with torch's names; dtypes are numpy's, and floats are the default dtype
(``get_default_dtype``: float32 unless ``set_default_dtype`` changed it), as in torch.

``device=`` places the new tensor (``"cpu"``, ``"sim:0"``, an ``aiograd.device``); by default
the CPU, or the device set by ``set_default_device`` or ``with aiograd.device(...)``, except for
the ``*_like`` factories, which default to their input's device.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._base import _random, _sampling
from .._base._dtypes import (
    default_complex_dtype,
    get_default_dtype,
    numeric_array,
    scalar_type_name,
)
from .._base._random import initial_seed, manual_seed, seed
from .._core._tensor import Tensor
from .._devices._device import device_type
from .._ops._util import new_leaf
from .._ops.random_ops import (
    Generator,
    bernoulli,
    get_rng_state,
    multinomial,
    normal,
    set_rng_state,
)

__all__ = [
    "tensor", "as_tensor", "zeros", "ones", "full", "empty", "arange", "linspace", "eye", "rand",
    "randn", "zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like",
    "manual_seed", "seed", "initial_seed", "randint", "randperm", "randint_like",
    # re-exported here, with the factories, for the package's ``__init__``
    "Generator", "bernoulli", "get_rng_state", "multinomial", "normal", "set_rng_state",
]

def _finish(data: np.ndarray[Any, Any], requires_grad: bool, device: Any) -> Tensor:
    """A leaf of ``data`` (made on the host) on ``device`` (``_ops._util.new_leaf``)."""
    return new_leaf(data, device, requires_grad)


def _host_data(t: Tensor) -> np.ndarray[Any, Any]:
    """``t``'s data as a numpy array (copied to the host from a CUDA device)."""
    data = t.data
    return data if type(data) is np.ndarray else device_type(t._device.type).to_host(data)


def _host_like(t: Tensor) -> np.ndarray[Any, Any]:
    """What the ``*_like`` factories take shape, dtype and layout from: ``t``'s numpy array, or
    an uninitialised host array of its shape and dtype for a CUDA tensor."""
    data = t.data
    return data if type(data) is np.ndarray else np.empty(data.shape, data.dtype)


def _like_device(input: Tensor, device: Any) -> Any:
    """``*_like`` factories default to their input's device."""
    return input._device if device is None else device


def _size(size: Sequence[Any]) -> tuple[int, ...]:
    if len(size) == 1 and not isinstance(size[0], (int, np.integer)):
        size = tuple(size[0])
    return tuple(int(s) for s in size)


def tensor(data: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A new leaf tensor holding a copy of ``data`` (numbers, nested lists, arrays, tensors)."""
    if isinstance(data, Tensor):
        if device is None:
            device = data._device
        data = _host_data(data)
    return _finish(numeric_array(data, dtype), requires_grad, device)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """A tensor sharing ``data``'s memory where possible (a tensor is returned as it is when its
    dtype and device already match, else converted with ``to``)."""
    if isinstance(data, Tensor):
        # As torch: the tensor itself when nothing changes, else ``to`` (recorded).
        return data.to(device=device, dtype=dtype)  # type: ignore[attr-defined, no-any-return]
    return _finish(numeric_array(data, dtype, copy=False), False, device)


_FROM_NUMPY_KINDS = "biufc"


def from_numpy(ndarray: np.ndarray[Any, Any]) -> Tensor:
    """A CPU tensor sharing ``ndarray``'s memory, as ``torch.from_numpy``: writes through either
    show in the other, and its dtype is kept (a float64 array stays float64, whatever the default
    dtype)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if ndarray.dtype.kind not in _FROM_NUMPY_KINDS or ndarray.dtype.itemsize > 16:
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{ndarray.dtype.type.__name__}. The only supported types "
            "are: float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint64, "
            "uint32, uint16, uint8, and bool."
        )
    return Tensor(ndarray)


def from_dlpack(ext_tensor: Any) -> Tensor:
    """A CPU tensor sharing the memory of any object with ``__dlpack__`` (a torch or JAX CPU
    tensor, a numpy array), as ``torch.from_dlpack``: no copy."""
    if not hasattr(ext_tensor, "__dlpack__"):
        raise TypeError(f"from_dlpack: expected an object with __dlpack__, got {type(ext_tensor).__name__}")
    return Tensor(np.from_dlpack(ext_tensor))


def zeros(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of zeros (of the default dtype unless ``dtype`` says otherwise)."""
    return _finish(np.zeros(_size(size), dtype=dtype or get_default_dtype()), requires_grad, device)


def ones(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones."""
    return _finish(np.ones(_size(size), dtype=dtype or get_default_dtype()), requires_grad, device)


def full(size: Sequence[int], fill_value: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor filled with ``fill_value`` (its dtype follows the value: a float gives the
    default dtype, an int int64, a bool bool, as in torch)."""
    if dtype is None:
        dtype = _number_dtype(fill_value)
    return _finish(np.full(tuple(size), fill_value, dtype=dtype), requires_grad, device)


def _number_dtype(value: Any) -> Any:
    """The default dtype for a float ``value`` (the default complex dtype for a complex one),
    else None: numpy's inference (int64, bool) is torch's there."""
    if isinstance(value, (float, np.floating)):
        return get_default_dtype()
    if isinstance(value, (complex, np.complexfloating)):
        return default_complex_dtype()
    return None


def empty(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor."""
    return _finish(np.empty(_size(size), dtype=dtype or get_default_dtype()), requires_grad, device)


def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Values from ``start`` (default 0) up to ``end`` (excluded) by ``step``."""
    if end is None:
        start, end = 0, start
    data = np.arange(start, end, step, dtype=dtype)
    if dtype is None and data.dtype.kind == "f":  # a float bound or step: the default dtype
        data = data.astype(get_default_dtype(), copy=False)  # (values computed in float64, as torch's)
    return _finish(data, requires_grad, device)


def linspace(start: float, end: float, steps: int, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    data = np.linspace(start, end, steps, dtype=dtype)
    if dtype is None and data.dtype.kind == "f":
        data = data.astype(get_default_dtype(), copy=False)  # (computed in float64, then rounded)
    return _finish(data, requires_grad, device)


def eye(n: int, m: int | None = None, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """An ``n`` x ``m`` identity matrix."""
    return _finish(np.eye(n, m, dtype=dtype or get_default_dtype()), requires_grad, device)


def _float_dtype(kernel: str, dtype: Any) -> np.dtype[Any]:
    """``dtype`` (None: the default one) for a floating sampler, refused otherwise with the
    error of torch's ``kernel``."""
    resolved = np.dtype(dtype or get_default_dtype())
    if resolved.kind != "f":
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{scalar_type_name(resolved)}'")
    return resolved


def rand(
    *size: Any, generator: _random.Generator | None = None, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """Uniform samples in [0, 1), from ``generator`` (default: the default generator)."""
    data = _sampling.uniform(_random.resolve(generator), _size(size), _float_dtype("check_uniform_bounds", dtype))
    return _finish(data, requires_grad, device)


def randn(
    *size: Any, generator: _random.Generator | None = None, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """Standard normal samples, from ``generator`` (default: the default generator)."""
    data = _sampling.normal(_random.resolve(generator), _size(size), _float_dtype("normal_kernel_cpu", dtype))
    return _finish(data, requires_grad, device)


def zeros_like(input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Zeros with ``input``'s shape and dtype."""
    return _finish(np.zeros_like(_host_like(input), dtype=dtype), requires_grad, _like_device(input, device))


def ones_like(input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Ones with ``input``'s shape and dtype."""
    return _finish(np.ones_like(_host_like(input), dtype=dtype), requires_grad, _like_device(input, device))


def randn_like(
    input: Tensor, *, generator: _random.Generator | None = None, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """Standard normal samples with ``input``'s shape and dtype."""
    data = _sampling.normal(_random.resolve(generator), input.data.shape, _float_dtype("normal_kernel_cpu", dtype or input.data.dtype))
    return _finish(data, requires_grad, _like_device(input, device))


def full_like(input: Tensor, fill_value: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """``fill_value`` everywhere, with ``input``'s shape and dtype."""
    return _finish(np.full_like(_host_like(input), fill_value, dtype=dtype), requires_grad, _like_device(input, device))


def empty_like(input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor with ``input``'s shape and dtype."""
    return _finish(np.empty_like(_host_like(input), dtype=dtype), requires_grad, _like_device(input, device))


def rand_like(
    input: Tensor, *, generator: _random.Generator | None = None, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """Uniform samples in [0, 1) with ``input``'s shape and dtype."""
    data = _sampling.uniform(_random.resolve(generator), input.data.shape, _float_dtype("check_uniform_bounds", dtype or input.data.dtype))
    return _finish(data, requires_grad, _like_device(input, device))


def _randint_bounds(low: int, high: int) -> None:
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")


def randint(
    low: int = 0,
    high: Any = None,
    size: Any = None,
    *,
    generator: _random.Generator | None = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Integers drawn uniformly from ``[low, high)``, of shape ``size`` (a tuple or list):
    ``randint(high, size)`` or ``randint(low, high, size)``, as torch's; int64 unless ``dtype``."""
    if size is None and not isinstance(high, int):  # ``randint(high, size)``
        low, high, size = 0, low, high
    if high is None or not isinstance(size, (tuple, list)):
        raise TypeError(
            "randint() received an invalid combination of arguments - expected one of: "
            "(int high, tuple of ints size, *, ...) (int low, int high, tuple of ints size, *, ...)"
        )
    _randint_bounds(low, high)
    data = _sampling.random_from_to(_random.resolve(generator), _size(tuple(size)), low, high)
    return _finish(data.astype(dtype or np.int64, copy=False), requires_grad, device)


def randint_like(
    input: Tensor,
    low: int = 0,
    high: int | None = None,
    *,
    generator: _random.Generator | None = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Integers drawn uniformly from ``[low, high)`` (``randint_like(input, high)``: from 0),
    with ``input``'s shape and dtype."""
    if high is None:
        low, high = 0, low
    _randint_bounds(low, high)
    data = _sampling.random_from_to(_random.resolve(generator), input.data.shape, low, high)
    return _finish(data.astype(dtype or input.data.dtype, copy=False), requires_grad, _like_device(input, device))


def randperm(
    n: int, *, generator: _random.Generator | None = None, dtype: Any = np.int64, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """A random permutation of ``0 .. n - 1``."""
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    data = _sampling.randperm(_random.resolve(generator), n).astype(dtype or np.int64, copy=False)
    return _finish(data, requires_grad, device)
