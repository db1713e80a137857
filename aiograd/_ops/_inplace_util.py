"""What the in-place ops share: PyTorch's checks and error messages, the version bump, and the
recording of an in-place op as its out-of-place twin on the old version (``_alias``,
``_commit``). See aiograd/_ops/inplace.py.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from .._base._dtypes import get_default_dtype, is_array, type_name
from .._core._views import View, view_index, view_rebase_error
from .._devices._device import CPU, mixed_devices_error
from ._util import Node, Tensor, grad_enabled, infer_size, like
from .casting import result_type, to
from .operands import NUMBERS, constant
from .rebase import rebase_inplace

LEAF_ERROR = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_ERROR = "a view of a leaf Variable that requires grad is being used in an in-place operation."
OVERLAP_ERROR = (
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation."
)

_TORCH_DTYPE_NAMES = {
    "float16": "Half", "float32": "Float", "float64": "Double", "int8": "Char", "int16": "Short",
    "int32": "Int", "int64": "Long", "uint8": "Byte", "bool": "Bool",
    "complex64": "ComplexFloat", "complex128": "ComplexDouble",
}


# ------------------------------------------------------------------------------ checks, errors
def _recording(self: Tensor, *operands: Any) -> bool:
    """PyTorch's ``check_inplace``; True when the op must be recorded."""
    if not grad_enabled():
        return False
    rec = self._requires_grad
    if not rec:
        for o in operands:
            if isinstance(o, Tensor) and o._requires_grad:
                rec = True
                break
    if type(self) is View:
        base: Tensor = self._base  # type: ignore[assignment]
        if rec or base._requires_grad:  # (in PyTorch a view requires grad with its base)
            if self._creation:  # type: ignore[attr-defined]
                raise RuntimeError(view_rebase_error(self, False))  # type: ignore[arg-type]
            if base.grad_fn is None and (base._requires_grad or self._requires_grad):
                raise RuntimeError(VIEW_OF_LEAF_ERROR)
    elif rec and self._requires_grad and self.grad_fn is None:
        raise RuntimeError(LEAF_ERROR)
    return rec


def _dtype_name(dtype: Any) -> str:
    return _TORCH_DTYPE_NAMES.get(np.dtype(dtype).name, str(dtype))


def _overlapping(data: np.ndarray[Any, Any]) -> bool:
    """Whether elements share memory (a stride 0 over a dim of 2 or more: ``expand``). An empty
    array has none to share, whatever strides numpy gives it (often 0)."""
    return data.size > 0 and any(s == 0 and n > 1 for n, s in zip(data.shape, data.strides))


class _Memory:
    """Memory described by an array interface, kept alive by ``base`` (as numpy's
    ``as_strided`` builds its arrays)."""

    def __init__(self, interface: dict[str, Any], base: Any) -> None:
        self.__array_interface__ = interface
        self.base = base


def _unlock(self: Tensor, exc: Exception) -> bool:
    """After numpy refused to write into ``self`` (a read-only array): where PyTorch would
    write, make ``self.data`` a writeable array over the same memory and return True (the
    caller writes again). That is a view of a writeable base whose elements share no memory
    (PyTorch's ``has_internal_overlap`` says no): an expand to a size 0 or 1 sliced, a slice of
    an expanded tensor that keeps one element per location. Off the hot path: only numpy's
    error leads here."""
    data = self.data
    if not isinstance(exc, ValueError) or type(data) is not np.ndarray or data.flags.writeable:
        return False
    base = self._base if type(self) is View else None
    if base is None or not base.data.flags.writeable or _overlapping(data):
        return False
    view_index(data, base.data)  # (checks that the memory lies inside the base's)
    interface = dict(data.__array_interface__)
    interface["data"] = (interface["data"][0], False)
    self.data = np.asarray(_Memory(interface, base.data))
    return True


def _write_overlapping(self: Tensor, result: Any) -> None:
    """Write ``result`` into ``self``, a tensor whose elements share memory (an expanded view),
    as PyTorch's kernels that allow it do (``zero_``, ``fill_``, ``tril_``, ``masked_fill_``):
    the elements that change are written into the base's memory, so that of the elements that
    share a location, one that changes wins over one that keeps its value. A tensor that is no
    view has no writeable memory to write into: PyTorch's internal-overlap error."""
    base = self._base if type(self) is View else None
    if base is None or not base.data.flags.writeable:
        raise RuntimeError(OVERLAP_ERROR)
    data, xp = self.data, self._device.xp
    changed = result != data
    if data.dtype.kind in "fc":  # (a NaN kept is no change)
        changed &= ~(xp.isnan(result) & xp.isnan(data))
    flat, _ = view_index(data, base.data)
    xp.put(base.data, xp.asarray(flat)[changed], result[changed])


def _broadcast_message(out_shape: tuple[int, ...], shape: tuple[int, ...]) -> str | None:
    """PyTorch's message when ``shape`` cannot be written into ``out_shape``; None if it can."""
    try:
        full = infer_size(out_shape, shape)
    except RuntimeError as exc:
        return str(exc)
    if full != out_shape:
        return f"output with shape {list(out_shape)} doesn't match the broadcast shape {list(full)}"
    return None


def _error(exc: Exception, self: Tensor, operand: Any = None, true_division: bool = False) -> Exception:
    """numpy's complaint about an in-place write, in PyTorch's words where it has some. The
    result type is PyTorch's (``casting.result_type``: int64 with float32 is Float, where numpy
    says Double); a true division of integers gives the default float dtype."""
    data = self.data
    if not data.flags.writeable and _overlapping(data):
        return RuntimeError(OVERLAP_ERROR)
    if isinstance(exc, TypeError) and operand is not None:
        result = result_type(data, operand)
        if true_division and result.kind in "biu":
            result = get_default_dtype()
        return RuntimeError(
            f"result type {_dtype_name(result)} can't be cast to the desired output type "
            f"{_dtype_name(data.dtype)}"
        )
    if isinstance(exc, ValueError) and operand is not None:
        message = _broadcast_message(data.shape, np.shape(operand))
        if message is not None:
            return RuntimeError(message)
    return exc


def _bump(self: Tensor) -> None:
    vc = self._vc
    if vc is None:
        self._vc = [1]
    else:
        vc[0] += 1


def _ufunc(name: str, self: Tensor, operand: Any) -> None:
    """``self.data = xp.<name>(self.data, operand)`` in place (``xp``: the tensor's array
    module), then the version bump."""
    data = self.data
    try:
        getattr(self._device.xp, name)(data, operand, out=data)
    except RuntimeWarning:
        pass  # numpy's warning made an error (inf - inf): the result is written, as torch's
    except (ValueError, TypeError) as e:
        if _unlock(self, e):
            return _ufunc(name, self, operand)
        raise _error(e, self, operand, name == "true_divide") from None
    _bump(self)


def _unary(name: str, self: Tensor) -> None:
    """``self.data = xp.<name>(self.data)`` in place, then the version bump."""
    data = self.data
    try:
        getattr(self._device.xp, name)(data, out=data)
    except RuntimeWarning:
        pass  # numpy's warning made an error (exp overflowed): the result is written, as torch's
    except (ValueError, TypeError) as e:
        if _unlock(self, e):
            return _unary(name, self)
        raise _error(e, self, 1.0) from None  # (1.0: a float result, for the cast message)
    _bump(self)


# ------------------------------------------------------------------------------ recording
def _alias(self: Tensor, copy: bool) -> Tensor:
    """The tensor's current version as a separate Tensor with the same history: what the
    out-of-place twin of an in-place op takes as input. ``copy`` gives it its own array, for
    formulas that save it (the old values must survive the write)."""
    alias = like(self.data.copy() if copy else self.data, self)
    fn = self.grad_fn
    if fn is not None:
        alias.grad_fn = fn
        alias._requires_grad = True
        nr = self.output_nr
        if nr:
            alias.output_nr = nr
    return alias


def _commit(self: Tensor, out: Tensor, overlap_ok: bool = False) -> Node | None:
    """Write the out-of-place result into ``self``, bump, and make its node ``self``'s history.
    ``overlap_ok``: an op that PyTorch lets write into an expanded tensor (``tril_``)."""
    data = self.data
    if out.data.shape != data.shape:
        raise RuntimeError(
            f"output with shape {list(data.shape)} doesn't match the broadcast shape {list(out.data.shape)}"
        )
    try:
        if overlap_ok and not data.flags.writeable and _overlapping(data):
            _write_overlapping(self, out.data)
        else:
            self._device.xp.copyto(data, out.data, casting="same_kind")
    except (ValueError, TypeError) as e:
        if _unlock(self, e):
            return _commit(self, out, overlap_ok)
        if isinstance(e, TypeError):
            e = RuntimeError(
                f"result type {_dtype_name(out.data.dtype)} can't be cast to the desired output "
                f"type {_dtype_name(data.dtype)}"
            )
        raise _error(e, self) from None
    _bump(self)
    node = out.grad_fn
    if node is not None:
        if out.data.dtype != data.dtype and data.dtype.kind == "f":
            _cast_grads_to(node, out.data.dtype)
        rebase_inplace(self, node, 0)
    return node


def _cast_grads_to(node: Node, dtype: Any) -> None:
    """An in-place op whose out-of-place twin computed in a wider dtype (``float32.add_(float64)``):
    ``self``'s gradient arrives in ``self``'s dtype, and is cast to the computation's before the
    node's formula runs, so each operand's gradient comes back in its own dtype, as PyTorch's
    validate_outputs makes it. This node's ``apply`` is wrapped (its class, and so its name and
    how it ships, stay its op's); the wrapper holds the node weakly, so no cycle keeps it."""
    formula, ref = type(node).apply, weakref.ref(node)

    def apply(grads: list[Any], *args: Any) -> Any:
        grads = [g if g is None or g.data.dtype == dtype else g.to(dtype) for g in grads]
        return formula(ref(), grads, *args)

    node.apply = apply  # type: ignore[method-assign]


def _check_shape(self: Tensor, other: Any) -> None:
    """The broadcast errors of a binary in-place op, before anything is computed."""
    if isinstance(other, Tensor) or is_array(other):
        shape = other.shape
        if shape != self.data.shape:
            message = _broadcast_message(self.data.shape, shape)
            if message is not None:
                raise RuntimeError(message)


def _operand(self: Tensor, other: Any, fname: str | None = None) -> Any:
    """An in-place op's tensor operand on ``self``'s device (PyTorch's TensorIterator rule: a
    0-dim CPU tensor is a scalar, moved there, differentiably); PyTorch's error otherwise. With
    ``fname`` (``add_`` ...), anything but a tensor, a number or a numeric array raises PyTorch's
    TypeError, as the out-of-place ops do (``operands.constant``)."""
    if fname is not None and not isinstance(other, Tensor) and type(other) is not float and type(other) is not int:
        if not isinstance(other, (np.ndarray, np.generic, *NUMBERS)):
            raise TypeError(f"{fname}(): argument 'other' (position 1) must be Tensor, not {type_name(other)}")
        other = constant(other, fname, 2)
    if isinstance(other, Tensor) and other._device is not self._device:
        if other._device is not CPU or other.data.ndim or self._device is CPU:
            raise mixed_devices_error((self._device, other._device))
        return to(other, self._device)
    return other


def _needs_old_self(other: Any) -> bool:
    """``mul_``/``div_`` save the old ``self`` only for the other operand's gradient."""
    return isinstance(other, Tensor) and other._requires_grad
