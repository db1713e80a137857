"""In-place ops: ``add_``, ``sub_``, ``mul_``, ``div_``, ``pow_``, ``neg_``, ``exp_``, ``relu_``,
``clamp_``, ``zero_``, ``fill_``, ``copy_``, ``__setitem__`` and ``+=``, ``-=``, ``*=``, ``/=``,
``**=``. The graph surgery they need (``rebase_inplace``, ``CopySlices``, view regeneration) is
in aiograd/_ops/rebase.py.

Every op modifies the array in place with numpy (so the views of the tensor, which share it, see
the change for free) and bumps the version counter, under no_grad too. Nothing else happens when
no gradient is involved: that path is a numpy call and an increment.

When a gradient is involved (grad mode on, and the tensor or an operand requires grad):

- PyTorch's checks come first: a leaf that requires grad and a view of one refuse to be
  modified, and so do the views PyTorch forbids (made under no_grad, by split/chunk/unbind, by a
  custom Function, or views of those: ``_views.view_rebase_error``).
- The op is recorded as its out-of-place twin applied to the *old* version of the tensor: an alias
  that carries the tensor's current history (``_alias``; a copy of the data where the backward
  formula needs the old values, as PyTorch's ``original_self``). The twin's node (``MulBackward0``
  for ``mul_``, ...) is then the tensor's new grad_fn, its edge 0 leading to the old one: PyTorch
  reads ``x.op_()`` as ``x = x.op()``. Saved tensors of earlier nodes that saved the tensor now
  fail their version check.
- ``rebase_inplace`` moves the tensor to the new node. For a view it rebases the base instead,
  with PyTorch's ``CopySlices``: the base's new grad_fn hands the gradient of the view's region
  through the in-place op's node and lets the rest pass; the view's grad_fn becomes a view of the
  base's new history (``AsStridedBackward0``, made by ``_views.regenerate_grad_fn``), as does every other view's
  when it is next read (see aiograd/_views.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._inplace_util import (
    _alias,
    _bump,
    _check_shape,
    _commit,
    _error,
    _needs_old_self,
    _operand,
    _recording,
    _ufunc,
    _unary,
)
from ._registry import backward, op
from ._util import Tensor, edge_of, save
from .assign import _constant, _grad_to, copy_, fill_, setitem, zero_
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
    where,
)
from .rebase import CopySlices, _save_result, rebase_inplace

__all__ = [
    "add_", "sub_", "mul_", "div_", "pow_", "neg_", "exp_", "relu_", "clamp_", "zero_", "fill_",
    "copy_", "setitem", "rebase_inplace", "CopySlices",
]

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
    _ufunc("add", self, b if alpha == 1 else alpha * b)
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
    _ufunc("subtract", self, b if alpha == 1 else alpha * b)
    return self


@op(MulBackward0)
def mul_(self: Tensor, other: Any) -> Tensor:
    """``self *= other`` in place."""
    other = _operand(self, other)
    if _recording(self, other):
        _check_shape(self, other)
        _commit(self, mul(_alias(self, _needs_old_self(other)), other))
        return self
    _ufunc("multiply", self, other.data if isinstance(other, Tensor) else other)
    return self


@op(DivBackward0)
def div_(self: Tensor, other: Any) -> Tensor:
    """``self /= other`` in place (true division)."""
    other = _operand(self, other)
    if _recording(self, other):
        _check_shape(self, other)
        _commit(self, div(_alias(self, _needs_old_self(other)), other))
        return self
    _ufunc("true_divide", self, other.data if isinstance(other, Tensor) else other)
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
    _ufunc("power", self, exponent.data if isinstance(exponent, Tensor) else exponent)
    return self


@op(NegBackward0)
def neg_(self: Tensor) -> Tensor:
    """``self = -self`` in place."""
    if _recording(self):
        _commit(self, neg(_alias(self, False)))
        return self
    _unary("negative", self)
    return self


@op(ExpBackward0)
def exp_(self: Tensor) -> Tensor:
    """``self = exp(self)`` in place."""
    if _recording(self):
        node = _commit(self, exp(_alias(self, False)))
        node.result = _save_result(self)  # type: ignore[union-attr]
        return self
    _unary("exp", self)
    return self


@op(ReluBackward0)
def relu_(self: Tensor) -> Tensor:
    """``self = max(self, 0)`` in place."""
    if _recording(self):
        node = _commit(self, relu(_alias(self, False)))
        node.result = _save_result(self)  # type: ignore[union-attr]
        return self
    _ufunc("maximum", self, 0)
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
    data, xp = self.data, self._device.xp
    try:
        if lo is not None and hi is not None and not (np.isscalar(lo) and np.isscalar(hi)):
            # PyTorch's order: max with min first, then min with max (min wins if min > max).
            xp.minimum(xp.maximum(data, lo), hi, out=data)
        else:
            xp.clip(data, lo, hi, out=data)
    except (ValueError, TypeError) as e:
        raise _error(e, self, lo if hi is None else hi) from None
    _bump(self)


TENSOR_METHODS: dict[str, Any] = {
    "add_": add_, "sub_": sub_, "mul_": mul_, "div_": div_, "pow_": pow_, "neg_": neg_,
    "exp_": exp_, "relu_": relu_, "clamp_": clamp_, "clip_": clamp_, "zero_": zero_,
    "fill_": fill_, "copy_": copy_, "__setitem__": setitem,
    "__iadd__": add_, "__isub__": sub_,
    "__imul__": mul_, "__itruediv__": div_, "__ipow__": pow_,
}
