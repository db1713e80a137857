"""In-place ops: ``add_``, ``sub_``, ``mul_``, ``div_``, ``pow_``, ``neg_``, ``exp_``, ``relu_``,
``clamp_``, ``zero_``, ``fill_``, ``copy_``, ``__setitem__`` and ``+=``, ``-=``, ``*=``, ``/=``,
``**=``. The graph surgery they need (``rebase_inplace``, ``CopySlices``, view regeneration) is
in aiograd/_ops/rebase.py.

Every op modifies the array in place with numpy (so the views of the tensor, which share it, see
the change for free) and bumps the version counter, under no_grad too. Nothing else happens when
no gradient is involved: that path is a numpy call and an increment.

When a gradient is involved (grad mode on, and the tensor or an operand requires grad):

- PyTorch's checks come first: a leaf that requires grad, a view of one, and a view made under
  no_grad refuse to be modified.
- The op is recorded as its out-of-place twin applied to the *old* version of the tensor: an alias
  that carries the tensor's current history (``_alias``; a copy of the data where the backward
  formula needs the old values, as PyTorch's ``original_self``). The twin's node (``MulBackward0``
  for ``mul_``, ...) is then the tensor's new grad_fn, its edge 0 leading to the old one: PyTorch
  reads ``x.op_()`` as ``x = x.op()``. Saved tensors of earlier nodes that saved the tensor now
  fail their version check.
- ``rebase_inplace`` moves the tensor to the new node. For a view it rebases the base instead,
  with PyTorch's ``CopySlices``: the base's new grad_fn hands the gradient of the view's region
  through the in-place op's node and lets the rest pass; the view's grad_fn becomes a view of the
  base's new history (``AsStridedBackward0``, made by ``regenerate``), as does every other view's
  when it is next read (see aiograd/_views.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._device import CPU, mixed_devices_error
from .._views import View
from ._registry import backward, op
from ._util import Node, Tensor, edge_of, grad_enabled, like, save
from .elementwise import (
    AddBackward0,
    ClampBackward1,
    DivBackward0,
    ExpBackward0,
    MulBackward0,
    NegBackward0,
    PowBackward0,
    PowBackward1,
    ReluBackward0,
    SubBackward0,
    add,
    clamp,
    div,
    exp,
    mul,
    neg,
    pow,
    relu,
    sub,
    to,
    where,
)
from .indexing import (
    IndexBackward0,
    _normalize,
    _take,
    _torch_message,
    check_index_devices,
)
from .rebase import AsStridedBackward0, CopySlices, _save_result, rebase_inplace
from .shape import sum_to_size

__all__ = [
    "add_", "sub_", "mul_", "div_", "pow_", "neg_", "exp_", "relu_", "clamp_", "zero_", "fill_",
    "copy_", "setitem", "rebase_inplace", "CopySlices", "AsStridedBackward0",
]

LEAF_ERROR = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_ERROR = "a view of a leaf Variable that requires grad is being used in an in-place operation."
NO_GRAD_VIEW_ERROR = (
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
    "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your "
    "code by moving both the view and the inplace either both inside the no_grad block (if you "
    "don't want the inplace to be tracked) or both outside (if you want the inplace to be "
    "tracked)."
)
MULTI_OUTPUT_VIEW_ERROR = (
    " is a view and is being modified inplace. This view is the output of a function that "
    "returns multiple views. Such functions do not allow the output views to be modified "
    "inplace. You should replace the inplace operation by an out-of-place one."
)
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
        if rec or base._requires_grad:
            if self._no_grad_view:  # type: ignore[attr-defined]
                raise RuntimeError(NO_GRAD_VIEW_ERROR)
            if self._multi_output is not None:  # type: ignore[attr-defined]
                raise RuntimeError(self._multi_output + MULTI_OUTPUT_VIEW_ERROR)  # type: ignore[attr-defined]
            if base.grad_fn is None and (base._requires_grad or self._requires_grad):
                raise RuntimeError(VIEW_OF_LEAF_ERROR)
    elif rec and self._requires_grad and self.grad_fn is None:
        raise RuntimeError(LEAF_ERROR)
    return rec


def _dtype_name(dtype: Any) -> str:
    return _TORCH_DTYPE_NAMES.get(np.dtype(dtype).name, str(dtype))


def _overlapping(data: np.ndarray[Any, Any]) -> bool:
    return any(s == 0 and n > 1 for n, s in zip(data.shape, data.strides))


def _broadcast_message(out_shape: tuple[int, ...], shape: tuple[int, ...]) -> str | None:
    """PyTorch's message when ``shape`` cannot be written into ``out_shape``; None if it can."""
    for i in range(1, min(len(out_shape), len(shape)) + 1):
        a, b = out_shape[-i], shape[-i]
        if a != b and a != 1 and b != 1:
            return (
                f"The size of tensor a ({a}) must match the size of tensor b ({b}) at non-singleton "
                f"dimension {max(len(out_shape), len(shape)) - i}"
            )
    full = np.broadcast_shapes(out_shape, shape)
    if full != out_shape:
        return f"output with shape {list(out_shape)} doesn't match the broadcast shape {list(full)}"
    return None


def _error(exc: Exception, self: Tensor, operand: Any = None) -> Exception:
    """numpy's complaint about an in-place write, in PyTorch's words where it has some."""
    data = self.data
    if not data.flags.writeable and _overlapping(data):
        return RuntimeError(OVERLAP_ERROR)
    if isinstance(exc, TypeError) and operand is not None:
        result = np.result_type(data, operand)
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


def _ufunc(ufunc: Any, self: Tensor, operand: Any) -> None:
    """``self.data = ufunc(self.data, operand)`` in place, then the version bump."""
    data = self.data
    try:
        ufunc(data, operand, out=data)
    except (ValueError, TypeError) as e:
        raise _error(e, self, operand) from None
    _bump(self)


def _unary(ufunc: Any, self: Tensor) -> None:
    data = self.data
    try:
        ufunc(data, out=data)
    except (ValueError, TypeError) as e:
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


def _commit(self: Tensor, out: Tensor) -> Node | None:
    """Write the out-of-place result into ``self``, bump, and make its node ``self``'s history."""
    data = self.data
    if out.data.shape != data.shape:
        raise RuntimeError(
            f"output with shape {list(data.shape)} doesn't match the broadcast shape {list(out.data.shape)}"
        )
    try:
        np.copyto(data, out.data, casting="same_kind")
    except (ValueError, TypeError) as e:
        if isinstance(e, TypeError):
            e = RuntimeError(
                f"result type {_dtype_name(out.data.dtype)} can't be cast to the desired output "
                f"type {_dtype_name(data.dtype)}"
            )
        raise _error(e, self) from None
    _bump(self)
    node = out.grad_fn
    if node is not None:
        rebase_inplace(self, node, 0)
    return node


def _check_shape(self: Tensor, other: Any) -> None:
    """The broadcast errors of a binary in-place op, before anything is computed."""
    if isinstance(other, (Tensor, np.ndarray)):
        shape = other.shape
        if shape != self.data.shape:
            message = _broadcast_message(self.data.shape, shape)
            if message is not None:
                raise RuntimeError(message)


def _operand(self: Tensor, other: Any) -> Any:
    """An in-place op's tensor operand on ``self``'s device (PyTorch's TensorIterator rule: a
    0-dim CPU tensor is a scalar, moved there, differentiably); PyTorch's error otherwise."""
    if isinstance(other, Tensor) and other._device is not self._device:
        if other._device is not CPU or other.data.ndim or self._device is CPU:
            raise mixed_devices_error((self._device, other._device))
        return to(other, self._device)
    return other


def _needs_old_self(other: Any) -> bool:
    """``mul_``/``div_`` save the old ``self`` only for the other operand's gradient."""
    return isinstance(other, Tensor) and other._requires_grad


# ------------------------------------------------------------------------------ arithmetic
@op(AddBackward0)
def add_(self: Tensor, other: Any, *, alpha: float = 1) -> Tensor:
    """``self += alpha * other`` in place."""
    other = _operand(self, other)
    if _recording(self, other):
        _check_shape(self, other)
        _commit(self, add(_alias(self, False), other, alpha=alpha))
        return self
    b = other.data if isinstance(other, Tensor) else other
    _ufunc(np.add, self, b if alpha == 1 else alpha * b)
    return self


@op(SubBackward0)
def sub_(self: Tensor, other: Any, *, alpha: float = 1) -> Tensor:
    """``self -= alpha * other`` in place."""
    other = _operand(self, other)
    if _recording(self, other):
        _check_shape(self, other)
        _commit(self, sub(_alias(self, False), other, alpha=alpha))
        return self
    b = other.data if isinstance(other, Tensor) else other
    _ufunc(np.subtract, self, b if alpha == 1 else alpha * b)
    return self


@op(MulBackward0)
def mul_(self: Tensor, other: Any) -> Tensor:
    """``self *= other`` in place."""
    other = _operand(self, other)
    if _recording(self, other):
        _check_shape(self, other)
        _commit(self, mul(_alias(self, _needs_old_self(other)), other))
        return self
    _ufunc(np.multiply, self, other.data if isinstance(other, Tensor) else other)
    return self


@op(DivBackward0)
def div_(self: Tensor, other: Any) -> Tensor:
    """``self /= other`` in place (true division)."""
    other = _operand(self, other)
    if _recording(self, other):
        _check_shape(self, other)
        _commit(self, div(_alias(self, _needs_old_self(other)), other))
        return self
    _ufunc(np.true_divide, self, other.data if isinstance(other, Tensor) else other)
    return self


@op(PowBackward0, PowBackward1)
def pow_(self: Tensor, exponent: Any) -> Tensor:
    """``self **= exponent`` in place."""
    exponent = _operand(self, exponent)
    if _recording(self, exponent):
        _check_shape(self, exponent)
        node = _commit(self, pow(_alias(self, True), exponent))
        if node is not None and hasattr(node, "result"):
            node.result = _save_result(self)  # PowBackward1 saves the output: now ``self``
        return self
    _ufunc(np.power, self, exponent.data if isinstance(exponent, Tensor) else exponent)
    return self


@op(NegBackward0)
def neg_(self: Tensor) -> Tensor:
    """``self = -self`` in place."""
    if _recording(self):
        _commit(self, neg(_alias(self, False)))
        return self
    _unary(np.negative, self)
    return self


@op(ExpBackward0)
def exp_(self: Tensor) -> Tensor:
    """``self = exp(self)`` in place."""
    if _recording(self):
        node = _commit(self, exp(_alias(self, False)))
        node.result = _save_result(self)  # type: ignore[union-attr]
        return self
    _unary(np.exp, self)
    return self


@op(ReluBackward0)
def relu_(self: Tensor) -> Tensor:
    """``self = max(self, 0)`` in place."""
    if _recording(self):
        node = _commit(self, relu(_alias(self, False)))
        node.result = _save_result(self)  # type: ignore[union-attr]
        return self
    _ufunc(np.maximum, self, 0)
    return self


@backward(saved=("x", "lo", "hi"))
def ClampBackward0(self: Any, grads: list[Any]) -> Any:
    """``clamp_`` with tensor bounds: the gradient goes to whichever of self, min and max
    the output took its value from (PyTorch's ``clamp_backward_min_max``)."""
    g = grads[0]
    x = self.x.unpack(self).data
    lo = None if self.lo is None else self.lo.unpack(self).data
    hi = None if self.hi is None else self.hi.unpack(self).data
    e_self, e_lo, e_hi = self.next_edges
    zero = np.zeros((), dtype=g.data.dtype)  # a device-less constant
    if lo is not None and hi is not None:
        take_self = (x >= lo) & (x <= hi)
        take_lo = (x < lo) & (lo < hi)
        take_hi = (x > hi) | (hi < lo)
    elif lo is not None:
        take_self, take_lo, take_hi = x >= lo, x < lo, None
    else:
        take_self, take_lo, take_hi = x <= hi, None, x > hi
    out = [None, None, None]
    if e_self is not None:
        out[0] = where(take_self, g, zero)
    if e_lo is not None:
        out[1] = _grad_to(where(take_lo, g, zero), self.lo_shape, self.lo_dtype)
    if e_hi is not None:
        out[2] = _grad_to(where(take_hi, g, zero), self.hi_shape, self.hi_dtype)
    return tuple(out)


@op(ClampBackward0, ClampBackward1)
def clamp_(self: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """Limit the values to ``[min, max]`` in place (bounds: numbers or tensors)."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    min, max = _operand(self, min), _operand(self, max)
    tensor_bounds = isinstance(min, Tensor) or isinstance(max, Tensor)
    lo = min.data if isinstance(min, Tensor) else min
    hi = max.data if isinstance(max, Tensor) else max
    if _recording(self, min, max):
        if not tensor_bounds:
            _commit(self, clamp(_alias(self, True), min, max))
            return self
        bounds = [b if b is None or isinstance(b, Tensor) else _constant(b, self) for b in (min, max)]
        for b in bounds:
            if b is not None:
                _check_shape(self, b)
        node = ClampBackward0((edge_of(self), edge_of(bounds[0]), edge_of(bounds[1])))
        node.x = save(Tensor._wrap(self.data.copy()))
        node.lo = None if bounds[0] is None else save(bounds[0])
        node.hi = None if bounds[1] is None else save(bounds[1])
        node.lo_shape, node.lo_dtype = (None, None) if bounds[0] is None else (bounds[0].shape, bounds[0].dtype)
        node.hi_shape, node.hi_dtype = (None, None) if bounds[1] is None else (bounds[1].shape, bounds[1].dtype)
        _clip(self, lo, hi)
        rebase_inplace(self, node, 0)
        return self
    _clip(self, lo, hi)
    return self


def _clip(self: Tensor, lo: Any, hi: Any) -> None:
    data = self.data
    try:
        if lo is not None and hi is not None and not (np.isscalar(lo) and np.isscalar(hi)):
            # PyTorch's order: max with min first, then min with max (min wins if min > max).
            np.minimum(np.maximum(data, lo), hi, out=data)
        else:
            np.clip(data, lo, hi, out=data)
    except (ValueError, TypeError) as e:
        raise _error(e, self, lo if hi is None else hi) from None
    _bump(self)


# ------------------------------------------------------------------------------ zero_, fill_, copy_
def _grad_to(g: Tensor, shape: tuple[int, ...], dtype: Any) -> Tensor:
    """A gradient brought back to an operand that was broadcast (and cast) into the output."""
    if g.data.shape != shape:
        if len(shape) > g.data.ndim:
            g = g.reshape((1,) * (len(shape) - g.data.ndim) + g.data.shape)
        g = sum_to_size(g, shape)
    if g.data.dtype != dtype:
        g = g.to(dtype)
    return g


def _zeros_grad(g: Tensor) -> Tensor:
    return like(g._device.xp.zeros(g.data.shape, dtype=g.data.dtype), g)


def _constant(value: Any, device_of: Tensor) -> Tensor:
    """A number or array as a tensor on ``device_of``'s device."""
    return like(device_of._device.xp.asarray(value), device_of)


@backward()
def ZeroBackward0(self: Any, grads: list[Any]) -> Any:
    return (_zeros_grad(grads[0]),)


@backward()
def FillBackward2(self: Any, grads: list[Any]) -> Any:
    """``fill_`` with a number."""
    return (_zeros_grad(grads[0]),)


@backward()
def FillBackward3(self: Any, grads: list[Any]) -> Any:
    """``fill_`` with a 0-dim tensor: every element's gradient goes to the value."""
    g = grads[0]
    e_self, e_value = self.next_edges
    value_grad = None
    if e_value is not None:
        value_grad = _grad_to(g.sum(), (), self.dtype)
        if value_grad._device is not self.src_device:
            value_grad = to(value_grad, self.src_device)
    return (_zeros_grad(g) if e_self is not None else None, value_grad)


@backward()
def CopyBackwards(self: Any, grads: list[Any]) -> Any:
    """``copy_``: the old values are gone (zero gradient); ``src`` gets the gradient, summed
    over the broadcast, cast to its dtype and moved to its device."""
    g = grads[0]
    e_self, e_src = self.next_edges
    grad_src = None
    if e_src is not None:
        grad_src = _grad_to(g, self.shape, self.dtype)
        if grad_src._device is not self.src_device:
            grad_src = to(grad_src, self.src_device)
    return (_zeros_grad(g) if e_self is not None else None, grad_src)


def _fill(self: Tensor, value: Any) -> None:
    data = self.data
    try:
        data.fill(value)
    except (ValueError, TypeError) as e:
        raise _error(e, self) from None
    _bump(self)


@op(ZeroBackward0)
def zero_(self: Tensor) -> Tensor:
    """Set every element to 0 in place."""
    if _recording(self):
        node = ZeroBackward0((edge_of(self),))
        _fill(self, 0)
        rebase_inplace(self, node, 0)
        return self
    _fill(self, 0)
    return self


@op(FillBackward2, FillBackward3)
def fill_(self: Tensor, value: Any) -> Tensor:
    """Set every element to ``value`` (a number or a 0-dim tensor) in place."""
    if isinstance(value, Tensor) and value.data.ndim:
        raise RuntimeError(
            f"fill_ only supports 0-dimension value tensor but got tensor with {value.data.ndim} dimensions."
        )
    if _recording(self, value):
        if isinstance(value, Tensor):
            node: Node = FillBackward3((edge_of(self), edge_of(value)))
            node.dtype, node.src_device = value.data.dtype, value._device
        else:
            node = FillBackward2((edge_of(self),))
        _fill(self, value.data if isinstance(value, Tensor) else value)
        rebase_inplace(self, node, 0)
        return self
    _fill(self, value.data if isinstance(value, Tensor) else value)
    return self


def _assign(self: Tensor, src: Any) -> None:
    data = self.data
    try:
        np.copyto(data, src, casting="unsafe")
    except (ValueError, TypeError) as e:
        raise _error(e, self, src) from None
    _bump(self)


@op(CopyBackwards)
def copy_(self: Tensor, src: Any, non_blocking: bool = False) -> Tensor:
    """Copy ``src`` (broadcast to this shape, cast to this dtype, from any device) into this
    tensor in place."""
    s = src.data if isinstance(src, Tensor) else np.asarray(src)
    if _recording(self, src):
        _check_shape(self, s)
        node = CopyBackwards((edge_of(self), edge_of(src)))
        node.shape, node.dtype = s.shape, s.dtype
        node.src_device = src._device if isinstance(src, Tensor) else self._device
        _assign(self, s)
        rebase_inplace(self, node, 0)
        return self
    _assign(self, s)
    return self


# ------------------------------------------------------------------------------ __setitem__
@backward()
def IndexPutBackward0(self: Any, grads: list[Any]) -> Any:
    """``self[indices] = values``: the overwritten positions get no gradient; ``values`` gets
    the gradient at those positions (summed over its broadcast)."""
    g = grads[0]
    e_self, e_values = self.next_edges
    adv = self.index
    grad_self = grad_values = None
    if e_self is not None:
        if grad_enabled():
            keep = np.ones(g.data.shape, dtype=bool)
            keep[adv] = False
            grad_self = g * keep
        else:
            z = g.data.copy()
            z[adv] = 0
            grad_self = like(z, g)
    if e_values is not None:
        taken = _take(g, (None, adv, self.accumulate), IndexBackward0)
        grad_values = _grad_to(taken, self.values_shape, self.values_dtype)
    return (grad_self, grad_values)


def index_put_(self: Tensor, adv: tuple[Any, ...], values: Any, accumulate: bool = False) -> Tensor:
    """``self[adv] = values`` for a normalised advanced index (see ``indexing._normalize``)."""
    values = _operand(self, values)
    v = values.data if isinstance(values, Tensor) else values
    rec = _recording(self, values)
    if rec:
        node = IndexPutBackward0((edge_of(self), edge_of(values)))
        node.index, node.accumulate = adv, accumulate
        node.values_shape, node.values_dtype = np.shape(v), getattr(v, "dtype", None)
    data = self.data
    try:
        data[adv] = v
    except (ValueError, TypeError) as e:
        raise _error(e, self) from None
    _bump(self)
    if rec:
        rebase_inplace(self, node, 0)
    return self


def _value_message(target: tuple[int, ...], value: tuple[int, ...], basic: bool) -> str | None:
    """PyTorch's message when ``value`` cannot be written at an index whose result has shape
    ``target``; None if it can."""
    trimmed = tuple(value)
    while len(trimmed) > len(target) and trimmed[0] == 1:
        trimmed = trimmed[1:]  # leading 1s are dropped, as in PyTorch
    if not basic:
        try:
            if np.broadcast_shapes(trimmed, target) == target:
                return None
        except ValueError:
            pass
        return (
            f"shape mismatch: value tensor of shape {list(value)} cannot be broadcast to indexing "
            f"result of shape {list(target)}"
        )
    if len(trimmed) > len(target):
        return (
            f"expand(aiograd.Tensor{{{list(value)}}}, size={list(target)}): the number of sizes "
            f"provided ({len(target)}) must be greater or equal to the number of dimensions in the "
            f"tensor ({len(value)})"
        )
    lead = len(target) - len(trimmed)
    for i, size in enumerate(trimmed):
        if size != 1 and size != target[lead + i]:
            return (
                f"The expanded size of the tensor ({target[lead + i]}) must match the existing size "
                f"({size}) at non-singleton dimension {lead + i}.  Target sizes: {list(target)}.  "
                f"Tensor sizes: {list(trimmed)}"
            )
    return None


def _check_value(target: np.ndarray[Any, Any], adv: Any, value: Any) -> None:
    shape = target.shape if adv is None else target[adv].shape
    message = _value_message(shape, np.shape(value), adv is None)
    if message is not None:
        raise RuntimeError(message)


def _full(basic: tuple[Any, ...], shape: tuple[int, ...]) -> bool:
    """True if the basic index takes everything (only full slices and Ellipsis)."""
    consumed = sum(1 for it in basic if it is not Ellipsis)
    d = 0
    for it in basic:
        if it is Ellipsis:
            d += len(shape) - consumed
        elif isinstance(it, slice) and d < len(shape) and it.indices(shape[d]) == (0, shape[d], 1):
            d += 1
        else:
            return False
    return True


@op(IndexPutBackward0, CopySlices, name="setitem")
def setitem(self: Tensor, index: Any, value: Any) -> None:
    """``self[index] = value``: a basic index copies ``value`` into the view ``self[index]``; an
    advanced one (masks, integer arrays) is PyTorch's ``index_put_`` (on the view of its basic
    part, if any). Gradients flow to ``value`` when it requires grad."""
    data = self.data
    check_index_devices(self, index)
    try:
        (basic, adv, accumulate), cls = _normalize(data, index)
    except IndexError as e:
        msg = _torch_message(str(e), data.ndim, index)
        if msg == str(e):
            raise
        raise IndexError(msg) from None
    if adv is not None:
        value = _operand(self, value)  # index_put_'s rule; a basic index copies from any device
    v = value.data if isinstance(value, Tensor) else value
    if grad_enabled() and (
        self._requires_grad
        or (isinstance(value, Tensor) and value._requires_grad)
        or (type(self) is View and self._base._requires_grad)  # type: ignore[union-attr]
    ):
        # PyTorch's sequence, so that the checks and the graph are PyTorch's: the basic part is
        # a view (none for an index of full slices), written with copy_ (fill_ for one value)
        # or index_put_.
        if basic is None or _full(basic, data.shape):
            target = self
        else:
            target = _take(self, (basic, None, False), cls)
        _check_value(target.data, adv, v)
        if adv is not None:
            index_put_(target, adv, value, accumulate)
        elif np.shape(v) == () and target.data.ndim:
            fill_(target, value if isinstance(value, Tensor) else _constant(v, target))
        else:
            copy_(target, value)
        return
    try:
        if adv is None:
            data[basic] = v
        else:
            (data if basic is None else data[basic])[adv] = v
    except (ValueError, TypeError) as e:
        if isinstance(e, ValueError) and not (not data.flags.writeable and _overlapping(data)):
            target = data if basic is None else data[basic]
            _check_value(target if type(target) is np.ndarray else np.asarray(target), adv, v)
        raise _error(e, self) from None
    _bump(self)


TENSOR_METHODS: dict[str, Any] = {
    "add_": add_, "sub_": sub_, "mul_": mul_, "div_": div_, "pow_": pow_, "neg_": neg_,
    "exp_": exp_, "relu_": relu_, "clamp_": clamp_, "clip_": clamp_, "zero_": zero_,
    "fill_": fill_, "copy_": copy_, "__setitem__": setitem,
    "__iadd__": add_, "__isub__": sub_,
    "__imul__": mul_, "__itruediv__": div_, "__ipow__": pow_,
}
