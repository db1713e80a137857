"""Elementwise arithmetic and comparisons: ``add``, ``sub``, ``mul``, ``div``, ``pow`` (and the
operators), ``where``, ``eq``... with broadcasting.

Gradients of broadcast operands are summed back to each operand's shape (``reduce_grad``).
Python numbers stay Python numbers, so numpy's weak typing keeps a float32 tensor float32.
Outputs follow PyTorch's TensorIterator device rule (``casting.place``). Each op registers its
backward with ``@backward`` next to the forward. The unary ops are rows of ``unary_math.UNARY``;
``clamp``, ``maximum`` and ``minimum`` are in ``pointwise``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .._base._dtypes import get_default_dtype, is_array
from ._registry import backward, op, register, variant
from ._util import (
    CPU,
    Tensor,
    attach,
    broadcast_error,
    data_of,
    edge_of,
    first_order,
    like,
    needs_grad,
    save,
    saved,
    wrap,
)
from .casting import place, place2, result_type
from .integer_power import bool_exponent, bool_power, power_error
from .operands import BOOL, floating, operands, promoted, refuse_bool_sub
from .operands import array_module as _xp
from .operands import operand_shape as _shape
from .quiet import quietly, quietly1, quietly2
from .rounded_division import rounded_div
from .shape import reduce_grad
from .unary_math import log

if TYPE_CHECKING:
    from .._core._types import TensorLike

__all__ = ["add", "sub", "mul", "div", "divide", "true_divide", "pow", "where", "eq", "ne", "lt", "le", "gt", "ge",
           "not_equal", "less", "less_equal", "greater", "greater_equal"]


def _binary_edges(a: Any, b: Any) -> tuple[Any, Any]:
    return (edge_of(a), edge_of(b))


# ------------------------------------------------------------------------------ arithmetic
def _add(a: Any, b: Any, alpha: float) -> Any:
    return a + (b if alpha == 1 else alpha * b)


@backward(batched=True)
def AddBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, Any]:
    g = grads[0]
    ea, eb = self.next_edges
    gb = None
    if eb is not None:
        gb = reduce_grad(g if self.alpha == 1 else g * self.alpha, self.b_shape, batch)
    return (reduce_grad(g, self.a_shape, batch) if ea is not None else None, gb)


@op(AddBackward0)
def add(input: TensorLike, other: TensorLike, *, alpha: float = 1) -> Tensor:
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
        if other._device is not dev or (dt is not None and b.dtype is not dt) or (dt is None and _int_with_float(input, b)):
            dev = None
    elif type(other) is float or type(other) is int:
        b = other
        if type(b) is float and dt is not None and dt.kind in "biu":  # the default dtype, below
            dev = None
    else:
        b, dev = other, None
    if dev is None:  # a device, dtype or operand out of the ordinary: see ``operands.operands``
        input, other, a, b = operands(input, other, "add")
    if alpha.__class__ is not int:  # (off the hot path)
        _check_alpha(a, b, alpha)
    try:
        out = wrap(a + (b if alpha == 1 else alpha * b))
    except RuntimeWarning:  # numpy's warning made an error (inf - inf): quietly, as torch
        out = wrap(quietly(_add, a, b, alpha))
    except ValueError as e:  # numpy's broadcast error: PyTorch's
        raise broadcast_error(e, a, b) from None
    if dev is not CPU:
        input, other = place2(out, input, other)
    if needs_grad(input, other):
        node: Any = attach(AddBackward0(_binary_edges(input, other)), out)
        node.a_shape, node.b_shape, node.alpha = _shape(input), _shape(other), alpha
    return out


def _check_alpha(a: Any, b: Any, alpha: Any, sub: bool = False) -> None:
    """PyTorch's ``alpha_check`` for ``add``/``sub`` of the operands ``a`` and ``b`` (arrays or
    numbers): a bool ``alpha`` only for a bool result, a float one not for an integral result
    (a subtraction of bools is refused first)."""
    kind = np.dtype(result_type(a, b)).kind
    if sub and kind == "b":
        refuse_bool_sub(a, b)
    if isinstance(alpha, (bool, np.bool_)):
        if kind != "b":
            raise RuntimeError("Boolean alpha only supported for Boolean results.")
    elif isinstance(alpha, (float, np.floating)) and kind in "biu":
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")


def _int_with_float(input: Any, b: Any) -> bool:
    """``number + tensor`` with a Python float and an integer or bool tensor: off the hot path,
    as the result is the default dtype (``operands.operands``), where numpy's is float64."""
    return type(input) is float and b.dtype.kind in "biu"


@backward(batched=True)
def SubBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, Any]:
    g = grads[0]
    ea, eb = self.next_edges
    gb = None
    if eb is not None:
        gb = reduce_grad(-g if self.alpha == 1 else g * -self.alpha, self.b_shape, batch)
    return (reduce_grad(g, self.a_shape, batch) if ea is not None else None, gb)


RsubBackward1 = variant("RsubBackward1", SubBackward0, "``number - tensor`` (the reflected form).")


@op(SubBackward0, RsubBackward1, aliases=("subtract",))
def sub(input: TensorLike, other: TensorLike, *, alpha: float = 1) -> Tensor:
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
        if other._device is not dev or (dt is not None and b.dtype is not dt) or (dt is None and b.dtype is BOOL) or (dt is None and _int_with_float(input, b)):
            dev = None
    elif type(other) is float or type(other) is int:
        b = other
        if a.dtype is BOOL or (type(b) is float and a.dtype.kind in "iu"):  # PyTorch refuses bool; numpy would subtract
            dev = None  # (and an integer tensor with a float is of the default dtype, below)
    else:
        b, dev = other, None
    if dev is None:  # a device, dtype or operand out of the ordinary: see ``operands.operands``
        input, other, a, b = operands(input, other, "sub")
    if alpha.__class__ is not int:  # (off the hot path)
        _check_alpha(a, b, alpha, sub=True)
    try:
        out = wrap(a - (b if alpha == 1 else alpha * b))
    except TypeError:  # numpy refuses bool - bool
        refuse_bool_sub(a, b)
        raise
    except RuntimeWarning:  # numpy's warning made an error (inf - inf): quietly, as torch
        out = wrap(quietly(_add, a, b, -alpha))
    except ValueError as e:  # numpy's broadcast error: PyTorch's
        raise broadcast_error(e, a, b) from None
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
    # A tensor times a number (``x * 0.9``, ``2 * x``): the gradient times the number, on arrays
    # (the Tensor product's dispatch and a second node check cost more than the product of a
    # small tensor).
    other = self.b if eb is None else self.a if ea is None else None
    if other.__class__ is float or other.__class__ is int:
        gd = g.data
        if gd.shape == (self.a_shape if eb is None else self.b_shape) and first_order():
            try:
                product = gd * other
            except RuntimeWarning:  # 0 * inf made an error by -W error: torch is silent
                product = quietly(np.multiply, gd, other)
            return (like(product, g), None) if eb is None else (None, like(product, g))
    ga = reduce_grad(g * saved(self, self.b), self.a_shape, batch) if ea is not None else None
    gb = reduce_grad(g * saved(self, self.a), self.b_shape, batch) if eb is not None else None
    return (ga, gb)


def _keep(x: Any) -> Any:
    """Save a tensor operand for backward; numbers are kept as they are."""
    return save(x) if isinstance(x, Tensor) else x


@op(MulBackward0, aliases=("multiply",))
def mul(input: TensorLike, other: TensorLike) -> Tensor:
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
        if other._device is not dev or (dt is not None and b.dtype is not dt) or (dt is None and _int_with_float(input, b)):
            dev = None
    elif type(other) is float or type(other) is int:
        b = other
        if type(b) is float and dt is not None and dt.kind in "biu":  # the default dtype, below
            dev = None
    else:
        b, dev = other, None
    if dev is None:  # a device, dtype or operand out of the ordinary: see ``operands.operands``
        input, other, a, b = operands(input, other, "mul")
    try:
        out = wrap(a * b)
    except RuntimeWarning:  # numpy's warning made an error (0 * inf): quietly, as torch
        out = wrap(quietly(np.multiply, a, b))
    except ValueError as e:  # numpy's broadcast error: PyTorch's
        raise broadcast_error(e, a, b) from None
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


@op(DivBackward0, aliases=("divide",))
def div(input: TensorLike, other: TensorLike, *, rounding_mode: str | None = None) -> Tensor:
    """Elementwise true division with broadcasting; ``rounding_mode="trunc"`` rounds the
    quotient toward zero, ``"floor"`` down (``rounding.rounded_div``: zero gradients)."""
    if rounding_mode is not None:

        return rounded_div(input, other, rounding_mode)
    input, other = floating(*promoted(input, other, fname="div"))
    try:
        out = wrap(quietly2(_xp(input, other).true_divide, data_of(input), data_of(other)))
    except ValueError as e:  # numpy's broadcast error: PyTorch's
        raise broadcast_error(e, input, other) from None
    input, other = place2(out, input, other)
    if needs_grad(input, other):
        node: Any = attach(DivBackward0(_binary_edges(input, other)), out)
        node.a = _keep(input) if node.next_edges[1] is not None else None
        node.b = _keep(other)
        node.a_shape, node.b_shape = _shape(input), _shape(other)
    return out


divide = div


@op(DivBackward0)
def true_divide(input: TensorLike, other: TensorLike) -> Tensor:
    """Elementwise true division with broadcasting; the same as :func:`div`."""
    return div(input, other)


@backward(saved=("a",), batched=True)
def PowBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """``tensor ** number``."""
    e = self.exponent
    if e == 0 and e is not False:  # (PyTorch's ``exponent.equal(0.0)`` is false for a bool False:
        return (grads[0] * 0.0,)  # its general formula follows, NaN where 1 / input overflows)
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
        if getattr(self, "bool_exponent", False):  # PyTorch's ``exponent - 1``
            refuse_bool_sub(True, 1)
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
def pow(input: TensorLike, exponent: TensorLike) -> Tensor:
    """``input ** exponent`` with broadcasting; either side may be a number."""
    given = exponent
    input, exponent = promoted(input, exponent, fname="pow")
    a, b = data_of(input), data_of(exponent)
    xp = _xp(input, exponent)
    if type(b) is float and (b == 0.5 or b == -0.5) and is_array(a) and a.dtype.kind == "f":
        # PyTorch computes these as sqrt and 1 / sqrt: sqrt(-0.0) is -0.0, sqrt(-inf) NaN
        out = wrap(quietly1(xp.sqrt, a) if b > 0 else quietly(lambda: 1.0 / xp.sqrt(a)))
    elif (type(b) is bool or (type(b) is not float and type(b) is not int and bool_exponent(b))) and (
        data := bool_power(xp, a, b)
    ) is not None:
        out = wrap(data)  # a bool base and exponent (PyTorch's bool result, or its refusal)
    else:
        try:
            out = wrap(quietly2(xp.power, a, b))
        except ValueError as e:  # "Integers to negative integer powers are not allowed."
            error = broadcast_error(e, a, b)  # (or numpy's broadcast error: PyTorch's)
            if error is not e:
                raise error from None
            data = power_error(e, xp, a, b)  # (PyTorch's powi for an array exponent)
            if isinstance(data, Exception):
                raise data from None
            out = wrap(data)
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
    node.bool_exponent = isinstance(given, Tensor) and given.data.dtype.kind == "b"
    return out


@backward(batched=True)
def WhereBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[None, Any, Any]:
    g = grads[0]
    _, ea, eb = self.next_edges
    zero = g._device.xp.zeros((), dtype=g.data.dtype)  # a constant in the device's memory
    ga = reduce_grad(where(self.cond, g, zero), self.a_shape, batch) if ea is not None else None
    gb = reduce_grad(where(self.cond, zero, g), self.b_shape, batch) if eb is not None else None
    return (None, ga, gb)


def _numbers_with_a_float(a: Any, b: Any) -> bool:
    """Two Python numbers, one a float: torch's ``where`` makes them the default dtype."""
    numbers = (a, b)
    return all(isinstance(x, (int, float)) for x in numbers) and any(isinstance(x, float) for x in numbers)


@op(WhereBackward0)
def where(condition: Any, input: Any, other: Any) -> Tensor:
    """Pick ``input`` where ``condition`` holds, ``other`` elsewhere (broadcasting all three)."""
    xp = _xp(condition, input, other)
    cond = xp.asarray(data_of(condition))
    if cond.dtype != np.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype {cond.dtype}")
    input, other = promoted(input, other, fname="where")
    try:
        out = wrap(xp.where(cond, data_of(input), data_of(other)))
    except ValueError as e:  # numpy's broadcast error: PyTorch's
        raise broadcast_error(e, cond, input, other) from None
    if _numbers_with_a_float(input, other):
        out.data = out.data.astype(get_default_dtype())  # two numbers, one a float: the default dtype
    _, input, other = place(out, condition, input, other)
    if needs_grad(input, other):
        node: Any = attach(WhereBackward0((None, edge_of(input), edge_of(other))), out)
        node.cond, node.a_shape, node.b_shape = cond, _shape(input), _shape(other)
    return out


def _where_method(input: Tensor, condition: Any, other: Any) -> Tensor:
    """``where(condition, self, other)``: ``self`` where ``condition`` holds, ``other`` elsewhere."""
    return where(condition, input, other)


# ------------------------------------------------------------------------------ comparisons
class Comparison(Protocol):
    """The signature of a comparison op: ``eq(input, other) -> Tensor`` (bool)."""

    def __call__(self, input: TensorLike, other: TensorLike) -> Tensor: ...


def _compare(name: str, ufunc: str, alias: str = "") -> Comparison:
    def compare(input: TensorLike, other: TensorLike) -> Tensor:
        input, other = promoted(input, other, fname=name)  # compared in the common dtype
        try:
            out = wrap(getattr(_xp(input, other), ufunc)(data_of(input), data_of(other)))
        except ValueError as e:  # numpy's broadcast error: PyTorch's
            raise broadcast_error(e, input, other) from None
        place2(out, input, other)
        return out

    compare.__name__ = compare.__qualname__ = ufunc
    compare.__doc__ = f"Elementwise ``{ufunc}`` comparison; a bool tensor (no gradient)."
    return register(name, compare, family="elementwise", aliases=(alias,) if alias else ())


eq: Comparison = _compare("eq", "equal")
ne: Comparison = _compare("ne", "not_equal", "not_equal")
lt: Comparison = _compare("lt", "less", "less")
le: Comparison = _compare("le", "less_equal", "less_equal")
gt: Comparison = _compare("gt", "greater", "greater")
ge: Comparison = _compare("ge", "greater_equal", "greater_equal")
# PyTorch's aliases
not_equal: Comparison = ne
less: Comparison = lt
less_equal: Comparison = le
greater: Comparison = gt
greater_equal: Comparison = ge


def _reflected(fn: Any) -> Any:
    """The reflected operator of ``fn`` (``__radd__`` of ``add``): ``fn`` with the operands swapped."""

    def reflected(self: Tensor, other: TensorLike) -> Tensor:
        return fn(other, self)

    reflected.__doc__ = f"``{fn.__name__}(other, self)``: a number or an array on the left."
    return reflected


def _rtruediv(self: Tensor, other: TensorLike) -> Tensor:
    """``other / self``, as torch's ``Tensor.__rtruediv__``: ``self.reciprocal() * other``
    (``MulBackward0`` over ``ReciprocalBackward0``; so ``0 / x`` is NaN where ``1 / x``
    overflows, a subnormal ``x``, as there)."""
    from .unary_math import reciprocal  # (it imports this module's neighbours)

    return mul(reciprocal(self), other)


multiply = mul  # PyTorch's aliases
subtract = sub

TENSOR_METHODS = {
    "add": add, "sub": sub, "mul": mul, "div": div, "pow": pow, "multiply": mul, "subtract": sub,
    "divide": div, "true_divide": true_divide, "where": _where_method,
    "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge,
    "not_equal": ne, "less": lt, "less_equal": le, "greater": gt, "greater_equal": ge,
    "__add__": add, "__radd__": _reflected(add), "__sub__": sub, "__rsub__": _reflected(sub),
    "__mul__": mul, "__rmul__": _reflected(mul), "__truediv__": div,
    "__rtruediv__": _rtruediv, "__pow__": pow, "__rpow__": _reflected(pow),
    "__eq__": eq, "__ne__": ne, "__lt__": lt, "__le__": le, "__gt__": gt, "__ge__": ge,
}
