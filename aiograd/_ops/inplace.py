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
  when it is next read (see aiograd/_core/_views.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._base._dtypes import cpp_type_name, is_array, type_name
from ._inplace_util import (
    OVERLAP_ERROR,
    _alias,
    _bump,
    _check_shape,
    _commit,
    _dtype_name,
    _error,
    _needs_old_self,
    _operand,
    _overlapping,
    _recording,
    _ufunc,
    _unary,
    _unlock,
)
from ._registry import op
from ._util import Tensor, data_of
from .assign import copy_, fill_, setitem, zero_
from .casting import result_type
from .elementwise import (
    AddBackward0,
    DivBackward0,
    MulBackward0,
    PowBackward0,
    PowBackward1,
    SubBackward0,
    _check_alpha,
    add,
    div,
    mul,
    pow,
    sub,
)
from .operands import BOOL, NEG_BOOL_ERROR, NUMBERS, refuse_bool_sub
from .pointwise import ClampBackward0, ClampBackward1, clamp
from .rebase import CopySlices, _save_result, rebase_inplace
from .unary_math import ExpBackward0, NegBackward0, ReluBackward0, exp, neg, relu

if TYPE_CHECKING:
    from .._core._types import TensorLike

__all__ = [
    "add_", "sub_", "mul_", "div_", "pow_", "neg_", "exp_", "relu_", "clamp_", "zero_", "fill_",
    "copy_", "setitem", "rebase_inplace", "CopySlices",
]

# ------------------------------------------------------------------------------ arithmetic
@op(AddBackward0)
def add_(self: Tensor, other: TensorLike, *, alpha: float = 1) -> Tensor:
    """``self += alpha * other`` in place."""
    other = _operand(self, other, "add_")
    if alpha.__class__ is not int:  # PyTorch's alpha check (off the hot path)
        _check_alpha(self.data, data_of(other), alpha)
    if _recording(self, other):
        _check_shape(self, other)
        _commit(self, add(_alias(self, False), other, alpha=alpha))
        return self
    b = other.data if isinstance(other, Tensor) else other
    _ufunc("add", self, b if alpha == 1 else alpha * b)
    return self


@op(SubBackward0)
def sub_(self: Tensor, other: TensorLike, *, alpha: float = 1) -> Tensor:
    """``self -= alpha * other`` in place."""
    other = _operand(self, other, "sub_")
    if self.data.dtype is BOOL or (other.dtype if isinstance(other, Tensor) or is_array(other) else np.asarray(other).dtype) is BOOL:
        refuse_bool_sub(self.data, data_of(other))  # PyTorch's words (numpy would subtract)
    if alpha.__class__ is not int:  # PyTorch's alpha check (off the hot path)
        _check_alpha(self.data, data_of(other), alpha)
    if _recording(self, other):
        _check_shape(self, other)
        _commit(self, sub(_alias(self, False), other, alpha=alpha))
        return self
    b = other.data if isinstance(other, Tensor) else other
    _ufunc("subtract", self, b if alpha == 1 else alpha * b)
    return self


@op(MulBackward0)
def mul_(self: Tensor, other: TensorLike) -> Tensor:
    """``self *= other`` in place."""
    other = _operand(self, other, "mul_")
    if _recording(self, other):
        _check_shape(self, other)
        _commit(self, mul(_alias(self, _needs_old_self(other)), other))
        return self
    _ufunc("multiply", self, other.data if isinstance(other, Tensor) else other)
    return self


@op(DivBackward0)
def div_(self: Tensor, other: TensorLike) -> Tensor:
    """``self /= other`` in place (true division)."""
    other = _operand(self, other, "div_")
    if _recording(self, other):
        _check_shape(self, other)
        _commit(self, div(_alias(self, _needs_old_self(other)), other))
        return self
    _ufunc("true_divide", self, other.data if isinstance(other, Tensor) else other)
    return self


@op(PowBackward0, PowBackward1)
def pow_(self: Tensor, exponent: TensorLike) -> Tensor:
    """``self **= exponent`` in place."""
    if not isinstance(exponent, (Tensor, np.ndarray, np.generic, *NUMBERS)):
        raise TypeError(_invalid_arguments("pow_", ("Tensor exponent", "Number exponent"), exponent))
    exponent = _operand(self, exponent)
    if _recording(self, exponent):
        _check_shape(self, exponent)
        node = _commit(self, pow(_alias(self, True), exponent))
        if node is not None and hasattr(node, "result"):
            node.result = _save_result(self)  # PowBackward1 saves the output: now ``self``
        return self
    if self.data.dtype.kind in "biu":
        # pow's rules for integers (a negative number exponent refused before the cast check,
        # negative tensor exponents, Bool; an expanded self and the shapes first), then the cast
        if _overlapping(self.data):
            raise RuntimeError(OVERLAP_ERROR)
        _check_shape(self, exponent)
        _commit(self, pow(self, exponent))
        return self
    _ufunc("power", self, exponent.data if isinstance(exponent, Tensor) else exponent)
    return self


@op(NegBackward0)
def neg_(self: Tensor) -> Tensor:
    """``self = -self`` in place."""
    if self.data.dtype is BOOL:
        raise RuntimeError(NEG_BOOL_ERROR)
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


@op(ClampBackward0, ClampBackward1)
def clamp_(self: Tensor, min: TensorLike | None = None, max: TensorLike | None = None) -> Tensor:
    """Limit the values to ``[min, max]`` in place (bounds: numbers or tensors)."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    for bound in (min, max):
        if bound is not None and not (isinstance(bound, (Tensor, np.generic, *NUMBERS)) or is_array(bound)):
            raise TypeError(_invalid_arguments("clamp_", _CLAMP_SIGNATURES, min, max))
    tensor_min, tensor_max = isinstance(min, Tensor) or is_array(min), isinstance(max, Tensor) or is_array(max)
    if (tensor_min and max is not None and not tensor_max) or (tensor_max and min is not None and not tensor_min):
        min, max = _number_bounds(min, max)
    if self.data.dtype is BOOL and all(b is None or b.__class__ is bool for b in (min, max)):
        # (a Bool result: PyTorch's number kernels have none, even for an empty tensor)
        kernel = "clamp_scalar" if min is not None and max is not None else "clamp_min_scalar" if max is None else "clamp_max_scalar"
        raise NotImplementedError(f'"{kernel}_cpu" not implemented for \'Bool\'')
    min, max = _operand(self, min), _operand(self, max)
    if _recording(self, min, max):
        # The out-of-place clamp's node (ClampBackward1 for number bounds, ClampBackward0 for
        # tensor ones) on a copy of the old values, which it saves.
        for b in (min, max):
            if isinstance(b, Tensor) or is_array(b):
                _check_shape(self, b)
        _commit(self, clamp(_alias(self, True), min, max))
        return self
    _clip(self, data_of(min), data_of(max))
    return self


_CLAMP_SIGNATURES = ("Tensor min = None, Tensor max = None", "Number min = None, Number max = None")


def _number_bounds(min: Any, max: Any) -> tuple[Any, Any]:
    """A tensor bound with a number bound: PyTorch's parser takes the ``Number`` signature, to
    which a 0-d tensor that requires no grad binds as its value (so ``ClampBackward1``); any
    other tensor matches neither signature (its TypeError)."""
    bounds = []
    for bound in (min, max):
        if isinstance(bound, Tensor) or is_array(bound):
            data = bound.data if isinstance(bound, Tensor) else np.asarray(bound)
            if data.ndim or (isinstance(bound, Tensor) and bound.requires_grad):
                raise TypeError(_invalid_arguments("clamp_", _CLAMP_SIGNATURES, min, max))
            bound = data.item()
        bounds.append(bound)
    return bounds[0], bounds[1]


def _invalid_arguments(fname: str, signatures: tuple[str, ...], *args: Any) -> str:
    """PyTorch's argument parser's message for arguments that match no signature. The given
    arguments read as positional (``x.pow_("a")``, ``x.clamp_("a")``), but a lone ``max`` as the
    keyword it must be; the parser explains each signature only when every argument was given."""
    given = [a for a in args if a is not None] or [None]
    if len(args) == 2 and args[0] is None and args[1] is not None:
        names = f"max={type_name(args[1])}, "
    else:
        names = ", ".join(type_name(a) for a in given)
    marked = ", ".join(f"!{type_name(a)}!" for a in given)
    lines = [f"{fname}() received an invalid combination of arguments - got ({names}), but expected one of:"]
    for signature in signatures:
        lines.append(f" * ({signature})")
        if len(given) == len(args):
            lines.append(f"      didn't match because some of the arguments have invalid types: ({marked})")
    return "\n".join(lines) + "\n"


def _clip(self: Tensor, lo: Any, hi: Any) -> None:
    data, xp = self.data, self._device.xp
    try:
        if lo is not None and hi is not None and not (np.isscalar(lo) and np.isscalar(hi)):
            # PyTorch's order: max with min first, then min with max (min wins if min > max).
            xp.minimum(xp.maximum(data, lo), hi, out=data)
        else:
            xp.clip(data, lo, hi, out=data)
    except TypeError:
        # (clamp_ with number bounds names the output type in C, as PyTorch's kernel does)
        bounds = [b for b in (lo, hi) if b is not None]
        result = _dtype_name(result_type(data, *bounds))
        target = data.dtype.name
        if not any(is_array(b) for b in bounds):
            target = cpp_type_name(target)
        else:
            target = _dtype_name(data.dtype)
        raise RuntimeError(f"result type {result} can't be cast to the desired output type {target}") from None
    except ValueError as e:
        if _unlock(self, e):
            return _clip(self, lo, hi)
        if lo is not None and hi is not None and np.ndim(lo) > np.ndim(hi):
            raise _error(e, self, lo) from None  # (the bound that does not fit names the shape)
        raise _error(e, self, lo if hi is None else hi) from None
    _bump(self)


TENSOR_METHODS: dict[str, Any] = {
    "add_": add_, "sub_": sub_, "mul_": mul_, "div_": div_, "pow_": pow_, "neg_": neg_,
    "exp_": exp_, "relu_": relu_, "clamp_": clamp_, "clip_": clamp_, "zero_": zero_,
    "fill_": fill_, "copy_": copy_, "__setitem__": setitem,
    "__iadd__": add_, "__isub__": sub_,
    "__imul__": mul_, "__itruediv__": div_, "__ipow__": pow_,
}
