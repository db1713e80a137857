"""Moving and casting tensors (``to``, ``cpu``, ``float`` ...), the device rule of the
elementwise ops (``place``), which moves a CPU scalar tensor with ``to``, and their dtype rule
(``result_type``, ``promote``).

PyTorch's TensorIterator rule: an op's output lives on the first non-CPU device among its tensor
operands; a 0-dim CPU tensor next to it is a scalar, moved there (differentiably, by ``to``);
any other tensor elsewhere is an error.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._base._dtypes import get_default_dtype, is_array, numeric_array
from .._core._format import _LEGACY_NAMES, legacy_type_name
from .._devices._device import CPU, device, device_type, mixed_devices_error, placement
from ._registry import backward, op
from ._util import Tensor, attach, edge_of, needs_grad, wrap
from .quiet import quietly2

__all__ = [
    "bool_", "byte", "char", "cpu", "cuda", "double", "element_size", "float_", "half", "int_", "join_devices",
    "long", "new_empty", "new_full", "new_ones", "new_tensor", "new_zeros", "place", "place2", "promote",
    "result_type", "short", "to", "type_",
]


def place(out: Tensor, *xs: Any) -> Any:
    """Place ``out`` on its operands' device (PyTorch's TensorIterator rule, see the module
    docstring); returns the operands, a CPU scalar tensor moved to that device."""
    common = CPU
    for x in xs:
        if isinstance(x, Tensor) and x._device is not CPU:
            common = x._device
            break
    if common is CPU:
        return xs
    out._device = common
    moved = list(xs)
    for i, x in enumerate(xs):
        if isinstance(x, Tensor) and x._device is not common:
            if x._device is not CPU or x.data.ndim:
                raise mixed_devices_error(y._device for y in xs if isinstance(y, Tensor))
            moved[i] = to(x, common)
    return moved


def join_devices(xs: tuple[Any, ...]) -> tuple[Any, ...]:
    """``place``'s rule applied before computing, for devices whose arrays are not numpy's: a
    CPU scalar tensor moved to the common device (``to``), PyTorch's error for any other tensor
    elsewhere. CuPy cannot compute with a host array, so the move (or the error) must come
    first; on numpy devices ``place`` does it after computing, and ``xs`` is returned as it is."""
    common = next((x._device for x in xs if isinstance(x, Tensor) and x._device is not CPU), None)
    if common is None or common.xp is np:
        return xs
    moved = list(xs)
    for i, x in enumerate(xs):
        if isinstance(x, Tensor) and x._device is not common:
            if x._device is not CPU or x.data.ndim:
                raise mixed_devices_error(y._device for y in xs if isinstance(y, Tensor))
            moved[i] = to(x, common)
    return tuple(moved)


def place2(out: Tensor, a: Any, b: Any) -> Any:
    """``place`` for two operands, fast where they agree (or one is a constant)."""
    da = a._device if isinstance(a, Tensor) else None
    db = b._device if isinstance(b, Tensor) else None
    if da is db or db is None:
        if da is not CPU and da is not None:
            out._device = da
        return a, b
    if da is None:
        if db is not CPU:
            out._device = db
        return a, b
    return place(out, a, b)


# ------------------------------------------------------------------------------ type promotion
def _category(dtype: np.dtype[Any]) -> int:
    """bool < integer < floating point: the order of PyTorch's type categories."""
    kind = dtype.kind
    return 0 if kind == "b" else 2 if kind in "fc" else 1


def _promote_types(a: Any, b: Any) -> Any:
    """PyTorch's ``promote_types``: numpy's, except that a float beats any integer or bool
    (int64 with float32 is float32, where numpy says float64)."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    ca, cb = _category(a), _category(b)
    if ca != cb:
        return a if ca > cb else b
    return np.promote_types(a, b)


def _combine(higher: Any, lower: Any) -> Any:
    """PyTorch's ``combine_categories``: a lower-priority operand counts only when it is of a
    higher category (a float 0-dim tensor next to an int tensor, say)."""
    if higher is None:
        return lower
    if lower is None or _category(higher) >= _category(lower):
        return higher if higher.kind != "b" else _promote_types(higher, lower)
    return _promote_types(higher, lower)


def result_type(*operands: Any) -> Any:
    """The dtype of an elementwise op over ``operands``, by PyTorch's rule (``at::result_type``):
    tensors with dimensions decide; 0-dim tensors, then Python numbers, count only when of a
    higher category (bool < int < float). A Python float stands for the default dtype
    (``get_default_dtype``), an int for int64. Arrays count as tensors."""
    dim = zero = wrapped = None
    for x in operands:
        data = x.data if isinstance(x, Tensor) else x
        if is_array(data):  # numpy's, or a device array (CuPy's)
            if data.ndim:
                dim = _promote_types(dim, data.dtype)
            else:
                zero = _promote_types(zero, data.dtype)
        elif isinstance(data, (bool, np.bool_)):
            wrapped = _promote_types(wrapped, np.dtype(np.bool_))
        elif isinstance(data, (int, np.integer)):
            wrapped = _promote_types(wrapped, np.dtype(np.int64))
        elif isinstance(data, (float, np.floating)):
            wrapped = _promote_types(wrapped, get_default_dtype())
    return _combine(dim, _combine(zero, wrapped))


def promote(*operands: Any) -> list[Any]:
    """``operands`` with every tensor and array cast to their ``result_type`` (numbers stay
    numbers). A tensor is cast with ``to``, which records ``ToCopyBackward0``: its gradient comes
    back in its own dtype, as PyTorch's engine casts each gradient to its input's dtype."""
    dtype = result_type(*operands)
    out: list[Any] = []
    for x in operands:
        if isinstance(x, Tensor):
            x = to(x, dtype)
        elif is_array(x) and x.dtype != dtype:
            x = x.astype(dtype)
        out.append(x)
    return out


@backward(batched=True)
def ToCopyBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Tensor]:
    """Backward of ``to``: the gradient goes back to the source's device and dtype."""
    return (to(grads[0], self.src_device, self.dtype),)


_TO_SIGNATURES = (
    "to() received an invalid combination of arguments - got ({}), but expected one of:\n"
    " * (aiograd.device device = None, dtype dtype = None, bool non_blocking = False, bool copy = False)\n"
    " * (dtype dtype, bool non_blocking = False, bool copy = False)\n"
    " * (Tensor tensor, bool non_blocking = False, bool copy = False)"
)


def _to_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, bool]:
    """``to``'s three signatures, parsed as PyTorch parses them: (device, dtype, copy)."""
    dev = dtype = None
    rest = list(args)
    first = rest[0] if rest else None
    if isinstance(first, Tensor):
        dev, dtype = first._device, first.data.dtype
        rest.pop(0)
    elif isinstance(first, (str, device, int)) and not isinstance(first, (bool, np.integer)):
        dev = placement(first)
        rest.pop(0)
        if rest and not isinstance(rest[0], bool):
            dtype = rest.pop(0)
    elif first is not None and not isinstance(first, bool):
        dtype = rest.pop(0)
    flags = {"non_blocking": False, "copy": False}
    for name, value in zip(("non_blocking", "copy"), rest):
        flags[name] = value
    if len(rest) > 2:
        raise TypeError(_TO_SIGNATURES.format(", ".join(type(a).__name__ for a in args)))
    for name, value in kwargs.items():
        if name == "device" and dev is None:
            dev = None if value is None else placement(value)
        elif name == "dtype" and dtype is None:
            dtype = value
        elif name in flags:
            flags[name] = value
        elif name != "memory_format":
            raise TypeError(f"to() got an unexpected keyword argument '{name}'")
    if dtype is not None:
        dtype = np.dtype(dtype)
    return dev, dtype, bool(flags["copy"])


def _cast(data: Any, dtype: Any) -> Any:
    # torch casts silently: a float64 value beyond float32's range becomes inf, one below its
    # smallest subnormal 0, a NaN cast to an integer whatever the CPU gives; numpy warns of
    # each (under np.seterr's "warn"; raises under "raise"), and a backward through a cast
    # would surface it.
    return quietly2(_astype, data, dtype)


def _astype(data: Any, dtype: Any) -> Any:
    return data.astype(dtype)


@op(ToCopyBackward0, top_level=False)
def to(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """Move to a device and/or cast to a dtype, as ``torch.Tensor.to``: ``t.to("sim:0")``,
    ``t.to(np.float32)``, ``t.to(device, dtype)``, ``t.to(other)`` (its device and dtype),
    keywords ``device``, ``dtype``, ``non_blocking`` (ignored) and ``copy``.

    Returns ``input`` itself when nothing changes (and ``copy`` is False), as PyTorch does;
    otherwise a new tensor with its own array, recorded as ``ToCopyBackward0`` (whose backward
    moves the gradient back to the source's device and dtype).
    """
    dev, dtype, copy = _to_args(args, kwargs)
    src = input._device
    if dev is None:
        dev = src
    data = input.data
    if dev is not src:
        # Out of one device's memory and into the other's, through their device types (a copy
        # between numpy devices; host and device memory for an accelerator).
        data = device_type(dev.type).to_device(device_type(src.type).to_host(data), dev.index)
        if dtype is not None and dtype != data.dtype:
            data = _cast(data, dtype)
    elif dtype is not None and dtype != data.dtype:
        data = _cast(data, dtype)
    elif copy:
        data = data.copy()
    else:
        return input
    out = wrap(data)
    if dev is not CPU:
        out._device = dev
    if needs_grad(input):
        node = attach(ToCopyBackward0((edge_of(input),)), out)
        node.src_device, node.dtype = src, input.data.dtype
    return out


@op(ToCopyBackward0, top_level=False)
def cpu(input: Tensor) -> Tensor:
    """``input`` on the CPU (itself if it is there already); differentiable."""
    return input if input._device is CPU else to(input, CPU)


def cuda(input: Tensor, device: Any = None, non_blocking: bool = False) -> Tensor:
    """``input`` on a CUDA device (``cuda:0`` by default, as ``to("cuda")``; an index or
    ``"cuda:1"`` picks another), itself if it is there already; differentiable (``to``, which
    records ``ToCopyBackward0``). ``non_blocking`` is accepted and ignored, as by ``to``.

    Not an op of its own in the registry: it only names ``to``'s destination."""
    if device is None:
        dev = placement("cuda")
    elif isinstance(device, int) and not isinstance(device, bool):
        dev = placement(f"cuda:{device}")
    else:
        dev = placement(device)
        if dev.type != "cuda":
            raise RuntimeError("Invalid device, must be cuda device")  # torch's words
    return input if input._device is dev else to(input, dev)


@op(ToCopyBackward0, name="float", top_level=False)
def float_(input: Tensor) -> Tensor:
    """Cast to float32."""
    return to(input, np.float32)


@op(ToCopyBackward0, top_level=False)
def double(input: Tensor) -> Tensor:
    """Cast to float64."""
    return to(input, np.float64)


@op(top_level=False)
def long(input: Tensor) -> Tensor:
    """Cast to int64 (not differentiable)."""
    return to(input, np.int64)


@op(name="bool", top_level=False)
def bool_(input: Tensor) -> Tensor:
    """Cast to bool."""
    return to(input, np.bool_)


@op(ToCopyBackward0, top_level=False)
def half(input: Tensor) -> Tensor:
    """Cast to float16."""
    return to(input, np.float16)


@op(name="int", top_level=False)
def int_(input: Tensor) -> Tensor:
    """Cast to int32 (not differentiable)."""
    return to(input, np.int32)


@op(top_level=False)
def short(input: Tensor) -> Tensor:
    """Cast to int16 (not differentiable)."""
    return to(input, np.int16)


@op(top_level=False)
def char(input: Tensor) -> Tensor:
    """Cast to int8 (not differentiable)."""
    return to(input, np.int8)


@op(top_level=False)
def byte(input: Tensor) -> Tensor:
    """Cast to uint8 (not differentiable)."""
    return to(input, np.uint8)


#: ``Tensor.type``'s names for dtypes, torch's legacy tensor types (``FloatTensor``).
_LEGACY_DTYPES = {name: np.dtype(dt) for dt, name in _LEGACY_NAMES.items() if dt != "bfloat16"}


def _legacy_type(name: str) -> tuple[Any, np.dtype[Any]]:
    """The device and dtype that a type string names: ``aiograd.DoubleTensor`` (the CPU),
    ``aiograd.sim.FloatTensor``; ``torch.`` for ``aiograd.`` is understood too, so that a ported
    script's strings keep working. PyTorch's ValueError for anything else."""
    parts = name.split(".")
    if len(parts) in (2, 3) and parts[0] in ("aiograd", "torch") and parts[-1] in _LEGACY_DTYPES:
        if len(parts) == 2:
            return CPU, _LEGACY_DTYPES[parts[-1]]
        try:
            return placement(parts[1]), _LEGACY_DTYPES[parts[-1]]
        except (RuntimeError, ValueError):
            pass
    raise ValueError(f"invalid type: '{name}'")


@op(ToCopyBackward0, name="type", top_level=False)
def type_(input: Tensor, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    """``input``'s type name with no ``dtype`` (``"aiograd.FloatTensor"``, ``"aiograd.sim.FloatTensor"``
    off the CPU: PyTorch's ``torch.FloatTensor`` with aiograd's name), else ``input`` cast to
    ``dtype`` (a dtype, or a type name as returned, ``torch.`` accepted for ``aiograd.``), as
    ``torch.Tensor.type``: ``input`` itself when it is of that type already; differentiable
    (``to``). ``non_blocking`` is accepted and ignored, as by ``to``."""
    if dtype is None:
        return legacy_type_name(input)
    dev = input._device
    if isinstance(dtype, str):
        dev, dtype = _legacy_type(dtype)
    elif isinstance(dtype, type) and not issubclass(dtype, np.generic):
        raise ValueError(f"invalid type: '{dtype.__name__}'")  # (torch's, for Python's float)
    elif not isinstance(dtype, (np.dtype, type)):
        raise TypeError("dtype must be a type, str, or dtype object")
    return to(input, dev, np.dtype(dtype))


def element_size(input: Tensor) -> int:
    """The size of one element in bytes (4 for float32)."""
    return int(input.data.dtype.itemsize)


# ------------------------------------------------------------------------------ new_* factories
# ``input.new_zeros(...)``: a new leaf with ``input``'s dtype and device unless told otherwise.
# Not ops (they record nothing); built here rather than from aiograd's factories, which sit in the
# API layer above the ops.
def _new(input: Tensor, make: Any, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    dtype = input.data.dtype if dtype is None else np.dtype(dtype)
    dev = input._device if device is None else placement(device)
    out = Tensor(make(dtype), requires_grad=requires_grad)  # (made on the host, as the factories)
    if dev is not CPU:
        if dev.xp is not np:
            out.data = device_type(dev.type).to_device(out.data, dev.index)
        out._device = dev
    return out


def _shape(size: tuple[Any, ...]) -> tuple[int, ...]:
    """``new_zeros(2, 3)`` and ``new_zeros((2, 3))`` alike."""
    if len(size) == 1 and not isinstance(size[0], (int, np.integer)):
        size = tuple(size[0])
    return tuple(int(s) for s in size)


def new_zeros(input: Tensor, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of zeros of ``size``, with ``input``'s dtype and device by default."""
    return _new(input, lambda dt: np.zeros(_shape(size), dt), dtype, device, requires_grad)


def new_ones(input: Tensor, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones of ``size``, with ``input``'s dtype and device by default."""
    return _new(input, lambda dt: np.ones(_shape(size), dt), dtype, device, requires_grad)


def new_empty(input: Tensor, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor of ``size``, with ``input``'s dtype and device by default."""
    return _new(input, lambda dt: np.empty(_shape(size), dt), dtype, device, requires_grad)


def new_full(
    input: Tensor, size: Sequence[int], fill_value: Any, *, dtype: Any = None, device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value``, with ``input``'s dtype (not the value's)
    and device by default."""
    return _new(input, lambda dt: np.full(_shape((size,)), fill_value, dt), dtype, device, requires_grad)


def new_tensor(input: Tensor, data: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A new leaf holding a copy of ``data``, with ``input``'s dtype (not ``data``'s) and device
    by default. A tensor as ``data`` is copied detached, with PyTorch's warning."""
    if isinstance(data, Tensor):
        warnings.warn(
            "To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
            "sourceTensor.detach().clone().requires_grad_(True), rather than tensor.new_tensor(sourceTensor).",
            UserWarning,
            stacklevel=2,
        )
        data = data.data if type(data.data) is np.ndarray else device_type(data._device.type).to_host(data.data)
    return _new(input, lambda dt: numeric_array(data, dt), dtype, device, requires_grad)


#: Tensor methods (bound by ``aiograd._api._tensor_methods``), as PyTorch's.
TENSOR_METHODS = {
    "to": to, "cpu": cpu, "cuda": cuda, "float": float_, "double": double, "half": half, "long": long,
    "int": int_, "short": short, "char": char, "byte": byte, "bool": bool_, "type": type_,
    "element_size": element_size, "new_zeros": new_zeros, "new_ones": new_ones, "new_empty": new_empty,
    "new_full": new_full, "new_tensor": new_tensor,
}
