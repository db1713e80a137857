"""Elementwise ops: arithmetic with broadcasting, unary math, comparisons, where, clamp, casts.

Gradients of broadcast operands are summed back to each operand's shape (``reduce_grad``).
Python numbers stay Python numbers, so numpy's weak typing keeps a float32 tensor float32.

Devices follow PyTorch's TensorIterator rule (``_operands``): the output lives on the first
non-CPU device among the tensor operands; a 0-dim CPU tensor next to it is a scalar, moved there
(differentiably, by ``to``); any other tensor elsewhere is an error.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._device import CPU, device, enable_devices, mixed_devices_error, placement, watch
from ._util import (
    Node,
    Tensor,
    attach,
    data_of,
    edge_of,
    grad_enabled,
    needs_grad,
    save,
    saved,
    to_tensor,
    wrap,
)
from .shape import _sum_to, reduce_grad

DEVICES = False
watch(globals())

__all__ = [
    "add", "sub", "mul", "div", "true_divide", "pow", "neg", "exp", "log", "log1p", "sqrt", "abs",
    "sign", "sin", "cos", "tanh", "sigmoid", "relu", "clamp", "clip", "maximum", "minimum", "where",
    "clone", "eq", "ne", "lt", "le", "gt", "ge",
]


def _shape(x: Any) -> tuple[int, ...]:
    if isinstance(x, Tensor):
        return x.data.shape
    return x.shape if isinstance(x, np.ndarray) else ()


def _binary_edges(a: Any, b: Any) -> tuple[Any, Any]:
    return (edge_of(a), edge_of(b))


def _operands(out: Tensor, *xs: Any) -> Any:
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


def _binary(out: Tensor, a: Any, b: Any) -> Any:
    """``_operands`` for two operands, fast where they agree (or one is a constant)."""
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
    return _operands(out, a, b)


def _like(data: Any, grad: Tensor) -> Tensor:
    """Wrap a backward formula's result on ``grad``'s device."""
    out = wrap(data)
    if DEVICES and grad._device is not CPU:
        out._device = grad._device
    return out


# ------------------------------------------------------------------------------ arithmetic
class AddBackward0(Node):
    def apply(self, grads):  # type: ignore[no-untyped-def]
        g = grads[0]
        ea, eb = self.next_edges
        if self.alpha == 1 and not grad_enabled():
            gd = g.data
            return (
                (g if gd.shape == self.a_shape else _like(_sum_to(gd, self.a_shape), g)) if ea is not None else None,
                (g if gd.shape == self.b_shape else _like(_sum_to(gd, self.b_shape), g)) if eb is not None else None,
            )
        gb = None
        if eb is not None:
            gb = reduce_grad(g if self.alpha == 1 else g * self.alpha, self.b_shape)
        return (reduce_grad(g, self.a_shape) if ea is not None else None, gb)


def add(input: Any, other: Any, *, alpha: float = 1) -> Tensor:
    """``input + alpha * other`` with broadcasting."""
    a = input.data if isinstance(input, Tensor) else input
    b = other.data if isinstance(other, Tensor) else other
    out = wrap(a + (b if alpha == 1 else alpha * b))
    if DEVICES:
        input, other = _binary(out, input, other)
    if needs_grad(input, other):
        node = attach(AddBackward0(_binary_edges(input, other)), out)
        node.a_shape, node.b_shape, node.alpha = _shape(input), _shape(other), alpha
    return out


class SubBackward0(Node):
    def apply(self, grads):  # type: ignore[no-untyped-def]
        g = grads[0]
        ea, eb = self.next_edges
        gb = None
        if eb is not None:
            gb = reduce_grad(-g if self.alpha == 1 else g * -self.alpha, self.b_shape)
        return (reduce_grad(g, self.a_shape) if ea is not None else None, gb)


class RsubBackward1(SubBackward0):
    """``number - tensor`` (the reflected form), named as PyTorch names it."""


def sub(input: Any, other: Any, *, alpha: float = 1) -> Tensor:
    """``input - alpha * other`` with broadcasting."""
    a = input.data if isinstance(input, Tensor) else input
    b = other.data if isinstance(other, Tensor) else other
    out = wrap(a - (b if alpha == 1 else alpha * b))
    if DEVICES:
        input, other = _binary(out, input, other)
    if needs_grad(input, other):
        cls = SubBackward0 if isinstance(input, Tensor) else RsubBackward1
        node = attach(cls(_binary_edges(input, other)), out)
        node.a_shape, node.b_shape, node.alpha = _shape(input), _shape(other), alpha
    return out


class MulBackward0(Node):
    _saved = ("a", "b")

    def apply(self, grads):  # type: ignore[no-untyped-def]
        g = grads[0]
        ea, eb = self.next_edges
        if not grad_enabled():
            gd = g.data
            ga = gb = None
            if ea is not None:
                ga = wrap(_sum_to(gd * data_of(saved(self, self.b)), self.a_shape))
                if DEVICES and g._device is not CPU:
                    ga._device = g._device
            if eb is not None:
                gb = wrap(_sum_to(gd * data_of(saved(self, self.a)), self.b_shape))
                if DEVICES and g._device is not CPU:
                    gb._device = g._device
            return (ga, gb)
        ga = reduce_grad(g * saved(self, self.b), self.a_shape) if ea is not None else None
        gb = reduce_grad(g * saved(self, self.a), self.b_shape) if eb is not None else None
        return (ga, gb)


def _keep(x: Any) -> Any:
    """Save a tensor operand for backward; numbers are kept as they are."""
    return save(x) if isinstance(x, Tensor) else x


def mul(input: Any, other: Any) -> Tensor:
    """Elementwise product with broadcasting."""
    a = input.data if isinstance(input, Tensor) else input
    b = other.data if isinstance(other, Tensor) else other
    out = wrap(a * b)
    if DEVICES:
        input, other = _binary(out, input, other)
    if needs_grad(input, other):
        node = attach(MulBackward0(_binary_edges(input, other)), out)
        ea, eb = node.next_edges
        node.a = _keep(input) if eb is not None else None
        node.b = _keep(other) if ea is not None else None
        node.a_shape, node.b_shape = _shape(input), _shape(other)
    return out


class DivBackward0(Node):
    _saved = ("a", "b")

    def apply(self, grads):  # type: ignore[no-untyped-def]
        g = grads[0]
        ea, eb = self.next_edges
        b = saved(self, self.b)
        ga = reduce_grad(g / b, self.a_shape) if ea is not None else None
        gb = None
        if eb is not None:
            gb = reduce_grad(-g * saved(self, self.a) / (b * b), self.b_shape)
        return (ga, gb)


def div(input: Any, other: Any) -> Tensor:
    """Elementwise true division with broadcasting."""
    out = wrap(np.true_divide(data_of(input), data_of(other)))
    if DEVICES:
        input, other = _binary(out, input, other)
    if needs_grad(input, other):
        node = attach(DivBackward0(_binary_edges(input, other)), out)
        node.a = _keep(input) if node.next_edges[1] is not None else None
        node.b = _keep(other)
        node.a_shape, node.b_shape = _shape(input), _shape(other)
    return out


true_divide = div


class PowBackward0(Node):
    """``tensor ** number``."""

    _saved = ("a",)

    def apply(self, grads):  # type: ignore[no-untyped-def]
        e = self.exponent
        if e == 0:
            return (grads[0] * 0.0,)
        a = self.a.unpack(self)
        return (grads[0] * e * a ** (e - 1),)


class PowBackward1(Node):
    """``tensor ** tensor``."""

    _saved = ("a", "b", "result")

    def apply(self, grads):  # type: ignore[no-untyped-def]
        g = grads[0]
        ea, eb = self.next_edges
        a, b = saved(self, self.a), saved(self, self.b)
        ga = gb = None
        if ea is not None:
            # PyTorch defines d/da a**b as 0 where b == 0 (at a == 0 too, where it is 0 * inf);
            # the exponent is patched there so that no 0 ** -1 is computed.
            b_zero = data_of(b) == 0
            if np.any(b_zero):
                patched = where(b_zero, 1.0, b) if isinstance(b, Tensor) else np.where(b_zero, 1.0, b)
                ga = where(b_zero, 0.0, g * b * a ** (patched - 1))
            else:
                ga = g * b * a ** (b - 1)
            ga = reduce_grad(ga, self.a_shape)
        if eb is not None:
            a_data = data_of(a)
            result = self.result.unpack(self)
            # d/db a**b = a**b * log(a); PyTorch defines it as 0 where a == 0 and b >= 0.
            if isinstance(a, Tensor):
                safe_log = log(where(a_data == 0, 1.0, a))
            else:  # a number or array base is a constant: log it in the result's dtype
                safe_log = np.log(np.where(a_data == 0, 1, a_data)).astype(result.data.dtype)
            gb = g * result * safe_log
            mask = (a_data == 0) & (data_of(b) >= 0)
            if np.any(mask):
                gb = where(mask, 0.0, gb)
            gb = reduce_grad(gb, self.b_shape)
        return (ga, gb)


class PowBackward2(PowBackward1):
    """``number ** tensor``, named as PyTorch names it."""


def pow(input: Any, exponent: Any) -> Tensor:
    """``input ** exponent`` with broadcasting; either side may be a number."""
    a, b = data_of(input), data_of(exponent)
    out = wrap(np.power(a, b))
    if DEVICES:
        input, exponent = _binary(out, input, exponent)
    if not needs_grad(input, exponent):
        return out
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


class NegBackward0(Node):
    def apply(self, grads):  # type: ignore[no-untyped-def]
        return (-grads[0],)


def neg(input: Tensor) -> Tensor:
    """``-input``."""
    out = wrap(np.negative(input.data))
    if DEVICES and input._device is not CPU:
        out._device = input._device
    if needs_grad(input):
        attach(NegBackward0((edge_of(input),)), out)
    return out


# ------------------------------------------------------------------------------ unary math
class ExpBackward0(Node):
    _saved = ("result",)

    def apply(self, grads):  # type: ignore[no-untyped-def]
        if not grad_enabled():
            g = grads[0]
            out = wrap(g.data * self.result.unpack(self).data)
            if DEVICES and g._device is not CPU:
                out._device = g._device
            return (out,)
        return (grads[0] * self.result.unpack(self),)


def exp(input: Tensor) -> Tensor:
    """Elementwise ``e ** input``."""
    out = wrap(np.exp(input.data))
    if DEVICES and input._device is not CPU:
        out._device = input._device
    if needs_grad(input):
        # attach, then save: a saved output must already require grad (for create_graph)
        node = attach(ExpBackward0((edge_of(input),)), out)
        node.result = save(out, is_output=True)
    return out


class LogBackward0(Node):
    _saved = ("x",)

    def apply(self, grads):  # type: ignore[no-untyped-def]
        return (grads[0] / self.x.unpack(self),)


def log(input: Tensor) -> Tensor:
    """Natural logarithm."""
    out = wrap(np.log(input.data))
    if DEVICES and input._device is not CPU:
        out._device = input._device
    if needs_grad(input):
        attach(LogBackward0((edge_of(input),)), out).x = save(input)
    return out


class Log1PBackward0(Node):
    _saved = ("x",)

    def apply(self, grads):  # type: ignore[no-untyped-def]
        return (grads[0] / (self.x.unpack(self) + 1.0),)


def log1p(input: Tensor) -> Tensor:
    """``log(1 + input)``, accurate near zero."""
    out = wrap(np.log1p(input.data))
    if DEVICES and input._device is not CPU:
        out._device = input._device
    if needs_grad(input):
        attach(Log1PBackward0((edge_of(input),)), out).x = save(input)
    return out


class SqrtBackward0(Node):
    _saved = ("result",)

    def apply(self, grads):  # type: ignore[no-untyped-def]
        return (grads[0] / (self.result.unpack(self) * 2.0),)


def sqrt(input: Tensor) -> Tensor:
    """Elementwise square root."""
    out = wrap(np.sqrt(input.data))
    if DEVICES and input._device is not CPU:
        out._device = input._device
    if needs_grad(input):
        node = attach(SqrtBackward0((edge_of(input),)), out)
        node.result = save(out, is_output=True)
    return out


class AbsBackward0(Node):
    _saved = ("x",)

    def apply(self, grads):  # type: ignore[no-untyped-def]
        return (grads[0] * sign(self.x.unpack(self)),)


def abs(input: Tensor) -> Tensor:
    """Elementwise absolute value (gradient 0 at 0, as PyTorch)."""
    out = wrap(np.abs(input.data))
    if DEVICES and input._device is not CPU:
        out._device = input._device
    if needs_grad(input):
        attach(AbsBackward0((edge_of(input),)), out).x = save(input)
    return out


class SignBackward0(Node):
    def apply(self, grads):  # type: ignore[no-untyped-def]
        return (grads[0] * 0.0,)


def sign(input: Tensor) -> Tensor:
    """Elementwise sign: -1, 0 or 1 (gradient zero everywhere)."""
    out = wrap(np.sign(input.data))
    if DEVICES and input._device is not CPU:
        out._device = input._device
    if needs_grad(input):
        attach(SignBackward0((edge_of(input),)), out)
    return out


class SinBackward0(Node):
    _saved = ("x",)

    def apply(self, grads):  # type: ignore[no-untyped-def]
        return (grads[0] * cos(self.x.unpack(self)),)


def sin(input: Tensor) -> Tensor:
    """Elementwise sine."""
    out = wrap(np.sin(input.data))
    if DEVICES and input._device is not CPU:
        out._device = input._device
    if needs_grad(input):
        attach(SinBackward0((edge_of(input),)), out).x = save(input)
    return out


class CosBackward0(Node):
    _saved = ("x",)

    def apply(self, grads):  # type: ignore[no-untyped-def]
        return (grads[0] * -sin(self.x.unpack(self)),)


def cos(input: Tensor) -> Tensor:
    """Elementwise cosine."""
    out = wrap(np.cos(input.data))
    if DEVICES and input._device is not CPU:
        out._device = input._device
    if needs_grad(input):
        attach(CosBackward0((edge_of(input),)), out).x = save(input)
    return out


class TanhBackward0(Node):
    _saved = ("result",)

    def apply(self, grads):  # type: ignore[no-untyped-def]
        y = self.result.unpack(self)
        if not grad_enabled():
            yd = y.data
            g = grads[0]
            out = wrap(g.data * (1.0 - yd * yd))
            if DEVICES and g._device is not CPU:
                out._device = g._device
            return (out,)
        return (grads[0] * (1.0 - y * y),)


def tanh(input: Tensor) -> Tensor:
    """Elementwise hyperbolic tangent."""
    out = wrap(np.tanh(input.data))
    if DEVICES and input._device is not CPU:
        out._device = input._device
    if needs_grad(input):
        node = attach(TanhBackward0((edge_of(input),)), out)
        node.result = save(out, is_output=True)
    return out


class SigmoidBackward0(Node):
    _saved = ("result",)

    def apply(self, grads):  # type: ignore[no-untyped-def]
        y = self.result.unpack(self)
        if not grad_enabled():
            yd = y.data
            g = grads[0]
            out = wrap(g.data * (yd * (1.0 - yd)))
            if DEVICES and g._device is not CPU:
                out._device = g._device
            return (out,)
        return (grads[0] * (y * (1.0 - y)),)


def sigmoid(input: Tensor) -> Tensor:
    """Elementwise logistic function ``1 / (1 + exp(-x))``, computed without overflow."""
    x = input.data
    # exp(-|x|) cannot overflow, and for x < 0 the form z / (1 + z) keeps tiny results accurate
    # (0.5 * tanh(x / 2) + 0.5 rounds sigmoid(-40) to 0); Python numbers keep the dtype.
    z = np.exp(-np.abs(x))
    out = wrap(np.where(x >= 0, 1.0, z) / (1.0 + z))
    if DEVICES and input._device is not CPU:
        out._device = input._device
    if needs_grad(input):
        node = attach(SigmoidBackward0((edge_of(input),)), out)
        node.result = save(out, is_output=True)
    return out


class ReluBackward0(Node):
    _saved = ("result",)

    def apply(self, grads):  # type: ignore[no-untyped-def]
        positive = self.result.unpack(self).data > 0
        g = grads[0]
        if not grad_enabled():
            out = wrap(g.data * positive)
            if DEVICES and g._device is not CPU:
                out._device = g._device
            return (out,)
        return (g * positive,)


def relu(input: Tensor) -> Tensor:
    """Elementwise ``max(x, 0)`` (gradient 0 at 0, as PyTorch)."""
    out = wrap(np.maximum(input.data, 0))
    if DEVICES and input._device is not CPU:
        out._device = input._device
    if needs_grad(input):
        node = attach(ReluBackward0((edge_of(input),)), out)
        node.result = save(out, is_output=True)
    return out


class ClampBackward1(Node):
    _saved = ("x",)

    def apply(self, grads):  # type: ignore[no-untyped-def]
        x = self.x.unpack(self).data
        inside = np.ones(x.shape, dtype=bool)
        if self.min is not None:
            inside &= x >= self.min
        if self.max is not None:
            inside &= x <= self.max
        return (grads[0] * inside,)


def clamp(input: Tensor, min: float | None = None, max: float | None = None) -> Tensor:
    """Limit values to ``[min, max]``; the gradient passes where ``min <= x <= max``."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out_t = input if min is None else maximum(input, to_tensor(min, input))
        return out_t if max is None else minimum(out_t, to_tensor(max, input))
    out = wrap(np.clip(input.data, min, max))
    if DEVICES and input._device is not CPU:
        out._device = input._device
    if needs_grad(input):
        node = attach(ClampBackward1((edge_of(input),)), out)
        node.x, node.min, node.max = save(input), min, max
    return out


clip = clamp


class MaximumBackward0(Node):
    """Shared by maximum and minimum: ``self.pick_a`` says where the gradient goes to ``a``."""

    _saved = ("a", "b")

    def apply(self, grads):  # type: ignore[no-untyped-def]
        g = grads[0]
        a, b = data_of(saved(self, self.a)), data_of(saved(self, self.b))
        tie = a == b
        to_a = np.where(tie, 0.5, (a > b) if self.pick_a_larger else (a < b))
        ea, eb = self.next_edges
        ga = reduce_grad(g * to_a.astype(g.data.dtype), self.a_shape) if ea is not None else None
        gb = None
        if eb is not None:
            gb = reduce_grad(g * (1.0 - to_a).astype(g.data.dtype), self.b_shape)
        return (ga, gb)


class MinimumBackward0(MaximumBackward0):
    pass


def _extremum(input: Any, other: Any, larger: bool) -> Tensor:
    # Numbers stay numbers, as in mul: a 0-d float64 array would make a float32 result float64.
    out = wrap((np.maximum if larger else np.minimum)(data_of(input), data_of(other)))
    if DEVICES:
        input, other = _binary(out, input, other)
    if needs_grad(input, other):
        cls = MaximumBackward0 if larger else MinimumBackward0
        node = attach(cls(_binary_edges(input, other)), out)
        node.a, node.b, node.pick_a_larger = _keep(input), _keep(other), larger
        node.a_shape, node.b_shape = _shape(input), _shape(other)
    return out


def maximum(input: Any, other: Any) -> Tensor:
    """Elementwise maximum; at ties the gradient is split evenly, as in PyTorch."""
    return _extremum(input, other, True)


def minimum(input: Any, other: Any) -> Tensor:
    """Elementwise minimum; at ties the gradient is split evenly, as in PyTorch."""
    return _extremum(input, other, False)


class WhereBackward0(Node):
    def apply(self, grads):  # type: ignore[no-untyped-def]
        g = grads[0]
        _, ea, eb = self.next_edges
        zero = np.zeros((), dtype=g.data.dtype)  # a device-less constant
        ga = reduce_grad(where(self.cond, g, zero), self.a_shape) if ea is not None else None
        gb = reduce_grad(where(self.cond, zero, g), self.b_shape) if eb is not None else None
        return (None, ga, gb)


def where(condition: Any, input: Any, other: Any) -> Tensor:
    """Pick ``input`` where ``condition`` holds, ``other`` elsewhere (broadcasting all three)."""
    cond = np.asarray(data_of(condition))
    if cond.dtype != np.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype {cond.dtype}")
    out = wrap(np.where(cond, data_of(input), data_of(other)))
    if DEVICES:
        _, input, other = _operands(out, condition, input, other)
    if needs_grad(input, other):
        node = attach(WhereBackward0((None, edge_of(input), edge_of(other))), out)
        node.cond, node.a_shape, node.b_shape = cond, _shape(input), _shape(other)
    return out


class CloneBackward0(Node):
    def apply(self, grads):  # type: ignore[no-untyped-def]
        return (grads[0],)


def clone(input: Tensor) -> Tensor:
    """A copy of the data, recorded in the graph (its gradient passes through unchanged)."""
    out = wrap(input.data.copy())
    if DEVICES and input._device is not CPU:
        out._device = input._device
    if needs_grad(input):
        attach(CloneBackward0((edge_of(input),)), out)
    return out


class ToCopyBackward0(Node):
    """Backward of ``to``: the gradient goes back to the source's device and dtype."""

    def apply(self, grads):  # type: ignore[no-untyped-def]
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
    if dtype is not None and dtype != data.dtype:
        data = data.astype(dtype)
    elif dev is not src or copy:
        data = data.copy()
    else:
        return input
    out = wrap(data)
    if dev is not CPU:
        out._device = dev
        if not DEVICES:
            enable_devices()
    if needs_grad(input):
        node = attach(ToCopyBackward0((edge_of(input),)), out)
        node.src_device, node.dtype = src, input.data.dtype
    return out


def cpu(input: Tensor) -> Tensor:
    """``input`` on the CPU (itself if it is there already); differentiable."""
    return input if input._device is CPU else to(input, CPU)


def float_(input: Tensor) -> Tensor:
    """Cast to float32."""
    return to(input, np.float32)


def double(input: Tensor) -> Tensor:
    """Cast to float64."""
    return to(input, np.float64)


def long(input: Tensor) -> Tensor:
    """Cast to int64 (not differentiable)."""
    return to(input, np.int64)


def bool_(input: Tensor) -> Tensor:
    """Cast to bool."""
    return to(input, np.bool_)


# ------------------------------------------------------------------------------ comparisons
def _compare(ufunc: Any) -> Any:
    def compare(input: Any, other: Any) -> Tensor:
        out = wrap(ufunc(data_of(input), data_of(other)))
        if DEVICES:
            _binary(out, input, other)
        return out

    compare.__name__ = ufunc.__name__
    compare.__doc__ = f"Elementwise ``{ufunc.__name__}`` comparison; a bool tensor (no gradient)."
    return compare


eq, ne = _compare(np.equal), _compare(np.not_equal)
lt, le = _compare(np.less), _compare(np.less_equal)
gt, ge = _compare(np.greater), _compare(np.greater_equal)


def _reflected(fn: Any) -> Any:
    def reflected(self: Tensor, other: Any) -> Tensor:
        return fn(other, self)

    return reflected


TENSOR_METHODS = {
    "add": add, "sub": sub, "mul": mul, "div": div, "pow": pow, "neg": neg, "exp": exp,
    "log": log, "log1p": log1p, "sqrt": sqrt, "abs": abs, "sign": sign, "sin": sin, "cos": cos,
    "tanh": tanh, "sigmoid": sigmoid, "relu": relu, "clamp": clamp, "clip": clip,
    "maximum": maximum, "minimum": minimum, "clone": clone, "to": to, "cpu": cpu, "float": float_,
    "double": double, "long": long, "bool": bool_, "eq": eq, "ne": ne, "lt": lt, "le": le,
    "gt": gt, "ge": ge,
    "__add__": add, "__radd__": _reflected(add), "__sub__": sub, "__rsub__": _reflected(sub),
    "__mul__": mul, "__rmul__": _reflected(mul), "__truediv__": div,
    "__rtruediv__": _reflected(div), "__pow__": pow, "__rpow__": _reflected(pow),
    "__neg__": neg, "__abs__": abs, "__eq__": eq, "__ne__": ne, "__lt__": lt, "__le__": le,
    "__gt__": gt, "__ge__": ge,
}
