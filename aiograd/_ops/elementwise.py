"""Elementwise ops: arithmetic with broadcasting, unary math, comparisons, where, clamp.

Gradients of broadcast operands are summed back to each operand's shape (``reduce_grad``).
Python numbers stay Python numbers, so numpy's weak typing keeps a float32 tensor float32.
Outputs follow PyTorch's TensorIterator device rule (``casting.place``). Unary ops are rows of
one table (``UNARY``); the others register their backward with ``@backward`` next to the
forward.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from .._base._dtypes import DEVICE_ARRAY_TYPES, is_array
from ._registry import Unary, UnaryOp, backward, op, register, unary, variant
from ._util import (
    CPU,
    Tensor,
    attach,
    data_of,
    edge_of,
    grad_enabled,
    like,
    needs_grad,
    save,
    saved,
    wrap,
)
from .casting import bool_, cpu, cuda, double, float_, long, place, place2, to
from .operands import BOOL, NEG_BOOL_ERROR, operands, promoted, refuse_bool_sub
from .quiet import quietly, quietly1, quietly2
from .shape import _sum_to, reduce_grad

__all__ = [
    "add", "sub", "mul", "div", "true_divide", "pow", "neg", "exp", "log", "log1p", "sqrt", "abs",
    "sign", "sin", "cos", "tanh", "sigmoid", "relu", "clamp", "clip", "maximum", "minimum", "where",
    "clone", "eq", "ne", "lt", "le", "gt", "ge",
]


def _shape(x: Any) -> tuple[int, ...]:
    if isinstance(x, Tensor):
        return x.data.shape
    if type(x) is float or type(x) is int:  # the common constant, first
        return ()
    return x.shape if isinstance(x, np.ndarray) or type(x) in DEVICE_ARRAY_TYPES else ()


def _binary_edges(a: Any, b: Any) -> tuple[Any, Any]:
    return (edge_of(a), edge_of(b))


def _xp(*xs: Any) -> Any:
    """The array module of the first tensor among ``xs`` (numpy for numbers and arrays)."""
    for x in xs:
        if isinstance(x, Tensor):
            return x._device.xp
    return np


# ------------------------------------------------------------------------------ arithmetic
def _summed(gd: Any, shape: tuple[int, ...], batch: int) -> Any:
    """``_sum_to`` without numpy's warning (inf + -inf) turned error."""
    try:
        return _sum_to(gd, shape, batch)
    except RuntimeWarning:
        return quietly(_sum_to, gd, shape, batch)


def _add(a: Any, b: Any, alpha: float) -> Any:
    return a + (b if alpha == 1 else alpha * b)


@backward(batched=True)
def AddBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, Any]:
    g = grads[0]
    ea, eb = self.next_edges
    if self.alpha == 1 and not grad_enabled():
        gd = g.data
        return (
            (g if gd.shape == self.a_shape else like(_summed(gd, self.a_shape, batch), g)) if ea is not None else None,
            (g if gd.shape == self.b_shape else like(_summed(gd, self.b_shape, batch), g)) if eb is not None else None,
        )
    gb = None
    if eb is not None:
        gb = reduce_grad(g if self.alpha == 1 else g * self.alpha, self.b_shape, batch)
    return (reduce_grad(g, self.a_shape, batch) if ea is not None else None, gb)


@op(AddBackward0)
def add(input: Any, other: Any, *, alpha: float = 1) -> Tensor:
    """``input + alpha * other`` with broadcasting."""
    # The device test rides on the unwrapping (this is the hottest path there is): ``dev`` stays
    # the CPU only if every tensor operand is on it.
    if isinstance(input, Tensor):
        a, dev = input.data, input._device
        dt = a.dtype
    elif type(input) is float or type(input) is int:
        a, dev, dt = input, CPU, None
    else:
        a, dev, dt = input, None, None
    if isinstance(other, Tensor):
        b = other.data
        if other._device is not dev or (dt is not None and b.dtype is not dt):
            dev = None
    elif type(other) is float or type(other) is int:
        b = other
    else:
        b, dev = other, None
    if dev is None:  # a device, dtype or operand out of the ordinary: see ``operands.operands``
        input, other, a, b = operands(input, other, "add")
    try:
        out = wrap(a + (b if alpha == 1 else alpha * b))
    except RuntimeWarning:  # numpy's warning made an error (inf - inf): quietly, as torch
        out = wrap(quietly(_add, a, b, alpha))
    if dev is not CPU:
        input, other = place2(out, input, other)
    if needs_grad(input, other):
        node: Any = attach(AddBackward0(_binary_edges(input, other)), out)
        node.a_shape, node.b_shape, node.alpha = _shape(input), _shape(other), alpha
    return out


@backward(batched=True)
def SubBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, Any]:
    g = grads[0]
    ea, eb = self.next_edges
    gb = None
    if eb is not None:
        gb = reduce_grad(-g if self.alpha == 1 else g * -self.alpha, self.b_shape, batch)
    return (reduce_grad(g, self.a_shape, batch) if ea is not None else None, gb)


RsubBackward1 = variant("RsubBackward1", SubBackward0, "``number - tensor`` (the reflected form).")


@op(SubBackward0, RsubBackward1)
def sub(input: Any, other: Any, *, alpha: float = 1) -> Tensor:
    """``input - alpha * other`` with broadcasting."""
    # (the device test rides on the unwrapping, as in ``add``)
    if isinstance(input, Tensor):
        a, dev = input.data, input._device
        dt = a.dtype
    elif type(input) is float or type(input) is int:
        a, dev, dt = input, CPU, None
    else:
        a, dev, dt = input, None, None
    if isinstance(other, Tensor):
        b = other.data
        if other._device is not dev or (dt is not None and b.dtype is not dt) or (dt is None and b.dtype is BOOL):
            dev = None
    elif type(other) is float or type(other) is int:
        b = other
        if a.dtype is BOOL:  # PyTorch refuses it; numpy would subtract
            dev = None
    else:
        b, dev = other, None
    if dev is None:  # a device, dtype or operand out of the ordinary: see ``operands.operands``
        input, other, a, b = operands(input, other, "sub")
    try:
        out = wrap(a - (b if alpha == 1 else alpha * b))
    except TypeError:  # numpy refuses bool - bool
        refuse_bool_sub(a, b)
        raise
    except RuntimeWarning:  # numpy's warning made an error (inf - inf): quietly, as torch
        out = wrap(quietly(_add, a, b, -alpha))
    if dev is not CPU:
        input, other = place2(out, input, other)
    if needs_grad(input, other):
        cls = SubBackward0 if isinstance(input, Tensor) else RsubBackward1
        node: Any = attach(cls(_binary_edges(input, other)), out)
        node.a_shape, node.b_shape, node.alpha = _shape(input), _shape(other), alpha
    return out


@backward(saved=("a", "b"), batched=True)
def MulBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, Any]:
    g = grads[0]
    ea, eb = self.next_edges
    if not grad_enabled():
        gd = g.data
        ga = gb = None
        dev = g._device
        # (the try blocks inline, not a helper's: this is the hottest backward path)
        if ea is not None:
            b = data_of(saved(self, self.b))
            try:
                ga = wrap(_sum_to(gd * b, self.a_shape, batch))
            except RuntimeWarning:  # numpy's warning made an error (0 * inf): quietly
                ga = wrap(_product_summed(gd, b, self.a_shape, batch))
            if dev is not CPU:
                ga._device = dev
        if eb is not None:
            a = data_of(saved(self, self.a))
            try:
                gb = wrap(_sum_to(gd * a, self.b_shape, batch))
            except RuntimeWarning:
                gb = wrap(_product_summed(gd, a, self.b_shape, batch))
            if dev is not CPU:
                gb._device = dev
        return (ga, gb)
    ga = reduce_grad(g * saved(self, self.b), self.a_shape, batch) if ea is not None else None
    gb = reduce_grad(g * saved(self, self.a), self.b_shape, batch) if eb is not None else None
    return (ga, gb)


def _product_summed(gd: Any, other: Any, shape: tuple[int, ...], batch: int) -> Any:
    """``_sum_to(gd * other, shape, batch)``, quietly."""
    return quietly(lambda: _sum_to(gd * other, shape, batch))


def _keep(x: Any) -> Any:
    """Save a tensor operand for backward; numbers are kept as they are."""
    return save(x) if isinstance(x, Tensor) else x


@op(MulBackward0)
def mul(input: Any, other: Any) -> Tensor:
    """Elementwise product with broadcasting."""
    # (the device test rides on the unwrapping, as in ``add``)
    if isinstance(input, Tensor):
        a, dev = input.data, input._device
        dt = a.dtype
    elif type(input) is float or type(input) is int:
        a, dev, dt = input, CPU, None
    else:
        a, dev, dt = input, None, None
    if isinstance(other, Tensor):
        b = other.data
        if other._device is not dev or (dt is not None and b.dtype is not dt):
            dev = None
    elif type(other) is float or type(other) is int:
        b = other
    else:
        b, dev = other, None
    if dev is None:  # a device, dtype or operand out of the ordinary: see ``operands.operands``
        input, other, a, b = operands(input, other, "mul")
    try:
        out = wrap(a * b)
    except RuntimeWarning:  # numpy's warning made an error (0 * inf): quietly, as torch
        out = wrap(quietly(np.multiply, a, b))
    if dev is not CPU:
        input, other = place2(out, input, other)
    if needs_grad(input, other):
        node: Any = attach(MulBackward0(_binary_edges(input, other)), out)
        ea, eb = node.next_edges
        node.a = _keep(input) if eb is not None else None
        node.b = _keep(other) if ea is not None else None
        node.a_shape, node.b_shape = _shape(input), _shape(other)
    return out


@backward(saved=("a", "b"), batched=True)
def DivBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, Any]:
    g = grads[0]
    ea, eb = self.next_edges
    b = saved(self, self.b)
    ga = reduce_grad(g / b, self.a_shape, batch) if ea is not None else None
    gb = None
    if eb is not None:
        # PyTorch's form: (a / b) / b, as b * b underflows for tiny b (0 / 0 would be NaN)
        gb = reduce_grad(-g * ((saved(self, self.a) / b) / b), self.b_shape, batch)
    return (ga, gb)


@op(DivBackward0)
def div(input: Any, other: Any) -> Tensor:
    """Elementwise true division with broadcasting."""
    input, other = promoted(input, other, fname="div")
    out = wrap(quietly2(_xp(input, other).true_divide, data_of(input), data_of(other)))
    input, other = place2(out, input, other)
    if needs_grad(input, other):
        node: Any = attach(DivBackward0(_binary_edges(input, other)), out)
        node.a = _keep(input) if node.next_edges[1] is not None else None
        node.b = _keep(other)
        node.a_shape, node.b_shape = _shape(input), _shape(other)
    return out


@op(DivBackward0)
def true_divide(input: Any, other: Any) -> Tensor:
    """Elementwise true division with broadcasting; the same as :func:`div`."""
    return div(input, other)


@backward(saved=("a",), batched=True)
def PowBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """``tensor ** number``."""
    e = self.exponent
    if e == 0:
        return (grads[0] * 0.0,)
    a = self.a.unpack(self)
    return (grads[0] * e * a ** (e - 1),)


@backward(saved=("a", "b", "result"), batched=True)
def PowBackward1(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, Any]:
    """``tensor ** tensor``."""
    g = grads[0]
    ea, eb = self.next_edges
    a, b = saved(self, self.a), saved(self, self.b)
    ga = gb = None
    if ea is not None:
        # PyTorch defines d/da a**b as 0 where b == 0 (at a == 0 too, where it is 0 * inf);
        # the exponent is patched there so that no 0 ** -1 is computed.
        b_zero = data_of(b) == 0
        if b_zero.any():
            patched = where(b_zero, 1.0, b) if isinstance(b, Tensor) else np.where(b_zero, 1.0, b)
            ga = where(b_zero, 0.0, g * b * a ** (patched - 1))
        else:
            ga = g * b * a ** (b - 1)
        ga = reduce_grad(ga, self.a_shape, batch)
    if eb is not None:
        a_data = data_of(a)
        result = self.result.unpack(self)
        # d/db a**b = a**b * log(a); PyTorch defines it as 0 where a == 0 and b >= 0, and
        # log(0) is -inf (so 0 ** b for b < 0 gives -inf), without numpy's divide warning.
        zero = a_data == 0
        mask = zero & (data_of(b) >= 0)
        # log(0) = -inf, or 0 where masked below anyway (no 0 * -inf warning)
        at_zero = np.where(mask, 0.0, -np.inf).astype(result.data.dtype)
        if isinstance(a, Tensor):
            safe_log = where(zero, at_zero, log(where(zero, 1.0, a)))
        else:  # a number or array base is a constant: log it in the result's dtype
            safe_log = np.where(zero, at_zero, quietly1(np.log, np.where(zero, 1, a_data))).astype(result.data.dtype)
        gb = g * result * safe_log
        if mask.any():
            gb = where(mask, 0.0, gb)
        gb = reduce_grad(gb, self.b_shape, batch)
    return (ga, gb)


PowBackward2 = variant("PowBackward2", PowBackward1, "``number ** tensor``.")


@op(PowBackward0, PowBackward1, PowBackward2)
def pow(input: Any, exponent: Any) -> Tensor:
    """``input ** exponent`` with broadcasting; either side may be a number."""
    input, exponent = promoted(input, exponent, fname="pow")
    a, b = data_of(input), data_of(exponent)
    xp = _xp(input, exponent)
    if type(b) is float and (b == 0.5 or b == -0.5) and is_array(a) and a.dtype.kind == "f":
        # PyTorch computes these as sqrt and 1 / sqrt: sqrt(-0.0) is -0.0, sqrt(-inf) NaN
        out = wrap(quietly1(xp.sqrt, a) if b > 0 else quietly(lambda: 1.0 / xp.sqrt(a)))
    else:
        try:
            out = wrap(quietly2(xp.power, a, b))
        except ValueError as e:  # "Integers to negative integer powers are not allowed."
            raise RuntimeError(str(e)) from None
    input, exponent = place2(out, input, exponent)
    if not needs_grad(input, exponent):
        return out
    node: Any
    if not isinstance(exponent, Tensor) and np.ndim(exponent) == 0:
        node = attach(PowBackward0((edge_of(input),)), out)
        node.a, node.exponent = save(input), exponent
        return out
    # An array exponent is a constant operand, as a tensor that needs no grad.
    cls = PowBackward1 if isinstance(input, Tensor) else PowBackward2
    node = attach(cls(_binary_edges(input, exponent)), out)
    node.a, node.b = _keep(input), _keep(exponent)
    node.result = save(out, is_output=True)
    node.a_shape, node.b_shape = _shape(input), _shape(exponent)
    return out


# ------------------------------------------------------------------------------ unary table
def _negative(xp: Any, x: Any) -> Any:
    if getattr(x, "dtype", None) is BOOL:  # PyTorch refuses it (numpy's words differ)
        raise RuntimeError(NEG_BOOL_ERROR)
    return xp.negative(x)


def _sigmoid(xp: Any, x: Any) -> Any:
    # exp(-|x|) cannot overflow, and for x < 0 the form z / (1 + z) keeps tiny results accurate
    # (0.5 * tanh(x / 2) + 0.5 rounds sigmoid(-40) to 0); Python numbers keep the dtype.
    z = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1.0, z) / (1.0 + z)


def _quiet(name: str) -> Any:
    """The forward of a unary row that may meet numpy's warnings at ordinary inputs (log(0),
    sqrt(-1), exp(1000), sin(inf)): computed quietly (aiograd/_ops/quiet.py)."""

    def forward(xp: Any, x: Any) -> Any:
        return quietly1(getattr(xp, name), x)  # (the user's numpy state is left alone)

    forward.__name__ = name
    return forward


def _tanh_vjp(g: Any, y: Any) -> Any:
    try:  # (the hot path: no context entered, see aiograd/_ops/quiet.py)
        return g * (1.0 - y * y)
    except RuntimeWarning:
        return quietly(lambda: g * (1.0 - y * y))


def _sigmoid_vjp(g: Any, y: Any) -> Any:
    return g * (y * (1.0 - y))


def _exp_vjp(g: Any, y: Any) -> Any:
    return quietly2(np.multiply, g, y)  # (0 * inf where exp overflowed)


# One row per op: name, PyTorch's node, forward (the name of the array-module function, or
# ``(xp, array) -> array``), vjp(grad, saved) on tensors, what the node saves ("input" as ``x``,
# "result" as ``result``), and optionally ``fast``: the vjp on arrays, for the backward with
# grad mode off (no tensors made on that hot path).
UNARY = [
    Unary("neg", "NegBackward0", _negative, lambda g, _: -g,
          doc="``-input``."),
    Unary("exp", "ExpBackward0", _quiet("exp"), lambda g, y: g * y, "result",
          fast=_exp_vjp, doc="Elementwise ``e ** input``."),
    Unary("log", "LogBackward0", _quiet("log"), lambda g, x: g / x, "input",
          doc="Natural logarithm."),
    Unary("log1p", "Log1PBackward0", _quiet("log1p"), lambda g, x: g / (x + 1.0), "input",
          doc="``log(1 + input)``, accurate near zero."),
    Unary("sqrt", "SqrtBackward0", _quiet("sqrt"), lambda g, y: g / (y * 2.0), "result",
          doc="Elementwise square root."),
    Unary("abs", "AbsBackward0", "abs", lambda g, x: g * sign(x), "input",
          doc="Elementwise absolute value (gradient 0 at 0, as PyTorch)."),
    Unary("sign", "SignBackward0", lambda xp, x: xp.where(xp.isnan(x), 0, xp.sign(x)), lambda g, _: g * 0.0,
          doc="Elementwise sign: -1, 0 or 1, and 0 at NaN as PyTorch (gradient zero everywhere)."),
    Unary("sin", "SinBackward0", _quiet("sin"), lambda g, x: g * cos(x), "input",
          doc="Elementwise sine."),
    Unary("cos", "CosBackward0", _quiet("cos"), lambda g, x: g * -sin(x), "input",
          doc="Elementwise cosine."),
    Unary("tanh", "TanhBackward0", "tanh", lambda g, y: g * (1.0 - y * y), "result",
          fast=_tanh_vjp, doc="Elementwise hyperbolic tangent."),
    Unary("sigmoid", "SigmoidBackward0", lambda xp, x: quietly2(_sigmoid, xp, x), lambda g, y: g * (y * (1.0 - y)), "result",
          fast=lambda g, y: quietly2(_sigmoid_vjp, g, y),
          doc="Elementwise logistic function ``1 / (1 + exp(-x))``, computed without overflow."),
    # maximum(0, x) returns x at a tie (-0.0 stays -0.0), and the gradient is zeroed where
    # y <= 0, so it passes at NaN, both as PyTorch (clamp_min, threshold_backward); y is >= 0
    # or NaN, so ``y != 0`` is that mask in one pass.
    Unary("relu", "ReluBackward0", lambda xp, x: xp.maximum(0, x), lambda g, y: g * (y.data != 0), "result",
          fast=lambda g, y: g * (y != 0), doc="Elementwise ``max(x, 0)`` (gradient 0 at 0, as PyTorch)."),
    Unary("clone", "CloneBackward0", lambda xp, x: x.copy(), lambda g, _: g,
          doc="A copy of the data, recorded in the graph (its gradient passes through unchanged)."),
]

_MADE = {row.name: unary(row, __name__) for row in UNARY}  # registered, by name
# Declared, so type checkers (and pyright --verifytypes) see each one's signature.
neg: UnaryOp
exp: UnaryOp
log: UnaryOp
log1p: UnaryOp
sqrt: UnaryOp
abs: UnaryOp
sign: UnaryOp
sin: UnaryOp
cos: UnaryOp
tanh: UnaryOp
sigmoid: UnaryOp
relu: UnaryOp
clone: UnaryOp
neg, NegBackward0 = _MADE["neg"]
exp, ExpBackward0 = _MADE["exp"]
log, LogBackward0 = _MADE["log"]
log1p, Log1PBackward0 = _MADE["log1p"]
sqrt, SqrtBackward0 = _MADE["sqrt"]
abs, AbsBackward0 = _MADE["abs"]
sign, SignBackward0 = _MADE["sign"]
sin, SinBackward0 = _MADE["sin"]
cos, CosBackward0 = _MADE["cos"]
tanh, TanhBackward0 = _MADE["tanh"]
sigmoid, SigmoidBackward0 = _MADE["sigmoid"]
relu, ReluBackward0 = _MADE["relu"]
clone, CloneBackward0 = _MADE["clone"]


@backward(saved=("x",), batched=True)
def ClampBackward1(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    g = grads[0]
    x = self.x.unpack(self).data
    inside = g._device.xp.ones(x.shape, dtype=bool)
    if self.min is not None:
        inside &= x >= self.min
    if self.max is not None:
        inside &= x <= self.max
    return (g * inside,)


@backward(saved=("x", "lo", "hi"), batched=True)
def ClampBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """``clamp`` with tensor bounds: the gradient goes to whichever of input, min and max the
    output took its value from (PyTorch's ``clamp_backward_min_max``; none of them at a NaN)."""
    g = grads[0]
    x, lo, hi = (None if v is None else data_of(saved(self, v)) for v in (self.x, self.lo, self.hi))
    if lo is not None and hi is not None:
        masks = ((x >= lo) & (x <= hi), (x < lo) & (lo < hi), (x > hi) | (hi < lo))
    elif lo is not None:
        masks = (x >= lo, x < lo, None)
    else:
        masks = (x <= hi, None, x > hi)
    zero = g._device.xp.zeros((), dtype=g.data.dtype)  # a constant in the device's memory
    return tuple(
        None if e is None else reduce_grad(where(m, g, zero), shape, batch)
        for e, m, shape in zip(self.next_edges, masks, self.shapes)
    )


def _clamp_tensors(input: Tensor, min: Any, max: Any) -> Tensor:
    """``clamp`` with a tensor bound: max with ``min`` first, then min with ``max`` (so ``max``
    wins where ``min > max``), in the operands' promoted dtype."""
    operands = promoted(*(v for v in (input, min, max) if v is not None), fname="clamp")
    it = iter(operands)
    input, min, max = next(it), None if min is None else next(it), None if max is None else next(it)
    xp, data = input._device.xp, input.data
    if min is not None:  # (a +-0 tie returns the bound, as PyTorch's vectorized loop)
        data = xp.maximum(data, data_of(min))
    if max is not None:
        data = xp.minimum(data, data_of(max))
    out = wrap(data)
    input, min, max = place(out, input, min, max)
    if needs_grad(input, min, max):
        node: Any = attach(ClampBackward0((edge_of(input), edge_of(min), edge_of(max))), out)
        node.x, node.lo, node.hi = save(input), _keep(min), _keep(max)
        node.shapes = (_shape(input), _shape(min), _shape(max))
    return out


@op(ClampBackward1, ClampBackward0)
def clamp(input: Tensor, min: float | None = None, max: float | None = None) -> Tensor:
    """Limit values to ``[min, max]``; the gradient passes where ``min <= x <= max``."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        return _clamp_tensors(input, min, max)
    xp, data = input._device.xp, input.data
    # As PyTorch: max with min, then min with max (max wins if min > max); the bound first, so
    # that a tie returns x (clamp(-0.0, min=0.0) is -0.0); a NaN bound gives NaN.
    if min is not None:
        data = xp.maximum(min, data)
    if max is not None:
        data = xp.minimum(max, data)
    out = like(data, input)
    if needs_grad(input):
        node: Any = attach(ClampBackward1((edge_of(input),)), out)
        node.x, node.min, node.max = save(input), min, max
    return out


@op(ClampBackward1)
def clip(input: Tensor, min: float | None = None, max: float | None = None) -> Tensor:
    """Limit values to ``[min, max]``; the same as :func:`clamp`."""
    return clamp(input, min, max)


@backward(saved=("a", "b"), batched=True)
def MaximumBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, Any]:
    """Shared by maximum and minimum: ``self.pick_a_larger`` says where the gradient goes to ``a``."""
    g = grads[0]
    a, b = data_of(saved(self, self.a)), data_of(saved(self, self.b))
    xp, tie = g._device.xp, a == b
    # PyTorch's rule: halved at a tie, zero where the other operand wins, and so whole to both
    # where either is NaN.
    a_loses, b_loses = (a < b, a > b) if self.pick_a_larger else (a > b, a < b)
    ea, eb = self.next_edges
    ga = gb = None
    if ea is not None:
        ga = reduce_grad(g * xp.where(tie, 0.5, ~a_loses).astype(g.data.dtype), self.a_shape, batch)
    if eb is not None:
        gb = reduce_grad(g * xp.where(tie, 0.5, ~b_loses).astype(g.data.dtype), self.b_shape, batch)
    return (ga, gb)


MinimumBackward0 = variant("MinimumBackward0", MaximumBackward0)


def _extremum(input: Any, other: Any, larger: bool) -> Tensor:
    # Numbers stay numbers, as in mul: a 0-d float64 array would make a float32 result float64.
    input, other = promoted(input, other, fname="maximum" if larger else "minimum")
    xp = _xp(input, other)
    # (At a tie of +0 and -0 numpy returns ``other``, as PyTorch's vectorized loop does; its
    # scalar loop, for the last few elements, returns ``input``.)
    out = wrap((xp.maximum if larger else xp.minimum)(data_of(input), data_of(other)))
    input, other = place2(out, input, other)
    if needs_grad(input, other):
        cls = MaximumBackward0 if larger else MinimumBackward0
        node: Any = attach(cls(_binary_edges(input, other)), out)
        node.a, node.b, node.pick_a_larger = _keep(input), _keep(other), larger
        node.a_shape, node.b_shape = _shape(input), _shape(other)
    return out


@op(MaximumBackward0)
def maximum(input: Any, other: Any) -> Tensor:
    """Elementwise maximum; at ties the gradient is split evenly, as in PyTorch."""
    return _extremum(input, other, True)


@op(MinimumBackward0)
def minimum(input: Any, other: Any) -> Tensor:
    """Elementwise minimum; at ties the gradient is split evenly, as in PyTorch."""
    return _extremum(input, other, False)


@backward(batched=True)
def WhereBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[None, Any, Any]:
    g = grads[0]
    _, ea, eb = self.next_edges
    zero = g._device.xp.zeros((), dtype=g.data.dtype)  # a constant in the device's memory
    ga = reduce_grad(where(self.cond, g, zero), self.a_shape, batch) if ea is not None else None
    gb = reduce_grad(where(self.cond, zero, g), self.b_shape, batch) if eb is not None else None
    return (None, ga, gb)


@op(WhereBackward0)
def where(condition: Any, input: Any, other: Any) -> Tensor:
    """Pick ``input`` where ``condition`` holds, ``other`` elsewhere (broadcasting all three)."""
    xp = _xp(condition, input, other)
    cond = xp.asarray(data_of(condition))
    if cond.dtype != np.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype {cond.dtype}")
    input, other = promoted(input, other, fname="where")
    out = wrap(xp.where(cond, data_of(input), data_of(other)))
    _, input, other = place(out, condition, input, other)
    if needs_grad(input, other):
        node: Any = attach(WhereBackward0((None, edge_of(input), edge_of(other))), out)
        node.cond, node.a_shape, node.b_shape = cond, _shape(input), _shape(other)
    return out


# ------------------------------------------------------------------------------ comparisons
class Comparison(Protocol):
    """The signature of a comparison op: ``eq(input, other) -> Tensor`` (bool)."""

    def __call__(self, input: Any, other: Any) -> Tensor: ...


def _compare(name: str, ufunc: str) -> Comparison:
    def compare(input: Any, other: Any) -> Tensor:
        input, other = promoted(input, other, fname=name)  # compared in the common dtype
        out = wrap(getattr(_xp(input, other), ufunc)(data_of(input), data_of(other)))
        place2(out, input, other)
        return out

    compare.__name__ = compare.__qualname__ = ufunc
    compare.__doc__ = f"Elementwise ``{ufunc}`` comparison; a bool tensor (no gradient)."
    return register(name, compare, family="elementwise")


eq: Comparison = _compare("eq", "equal")
ne: Comparison = _compare("ne", "not_equal")
lt: Comparison = _compare("lt", "less")
le: Comparison = _compare("le", "less_equal")
gt: Comparison = _compare("gt", "greater")
ge: Comparison = _compare("ge", "greater_equal")


def _reflected(fn: Any) -> Any:
    def reflected(self: Tensor, other: Any) -> Tensor:
        return fn(other, self)

    return reflected


TENSOR_METHODS = {
    "add": add, "sub": sub, "mul": mul, "div": div, "pow": pow, "neg": neg, "exp": exp,
    "log": log, "log1p": log1p, "sqrt": sqrt, "abs": abs, "sign": sign, "sin": sin, "cos": cos,
    "tanh": tanh, "sigmoid": sigmoid, "relu": relu, "clamp": clamp, "clip": clip,
    "maximum": maximum, "minimum": minimum, "clone": clone, "to": to, "cpu": cpu, "cuda": cuda,
    "float": float_, "double": double, "long": long, "bool": bool_, "eq": eq, "ne": ne, "lt": lt, "le": le,
    "gt": gt, "ge": ge,
    "__add__": add, "__radd__": _reflected(add), "__sub__": sub, "__rsub__": _reflected(sub),
    "__mul__": mul, "__rmul__": _reflected(mul), "__truediv__": div,
    "__rtruediv__": _reflected(div), "__pow__": pow, "__rpow__": _reflected(pow),
    "__neg__": neg, "__abs__": abs, "__eq__": eq, "__ne__": ne, "__lt__": lt, "__le__": le,
    "__gt__": gt, "__ge__": ge,
}
