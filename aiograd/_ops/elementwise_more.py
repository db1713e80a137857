"""More of PyTorch's elementwise math: ``exp2``, ``deg2rad``, ``rad2deg``, ``sinc``, ``sgn``,
``logit``, ``float_power``, ``copysign``, ``fmax``, ``fmin``, ``heaviside``, ``nextafter``,
``signbit`` and ``positive``, with PyTorch's dtype rules, nodes and derivatives.

The unary ones are ``Unary`` rows (``unary_math``'s table machinery); the binary ones go through
``binary_math``'s ``_binary`` (promotion, broadcasting, PyTorch's scalar nodes). ``heaviside`` has
no derivative in PyTorch (its ``NotImplemented`` node raises in backward); ``nextafter``'s passes
the gradient to ``input`` and none to ``other``, as PyTorch's.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .._base._dtypes import get_default_dtype
from ._division_util import record_not_implemented, refuse_kinds
from ._registry import Unary, UnaryOp, backward, op, unary, variant
from ._util import Tensor, attach, broadcast_error, edge_of, like, needs_grad, not_tensor, save
from .binary_math import _binary, _tensor_only, operand_grads, saved_operands
from .elementwise import PowBackward0, PowBackward1, PowBackward2, pow, where
from .operands import floating, promoted
from .quiet import quietly
from .unary_math import cos, sin

if TYPE_CHECKING:
    from .._core._types import TensorLike

__all__ = ["copysign", "deg2rad", "exp2", "float_power", "fmax", "fmin", "heaviside", "logit", "nextafter",
           "positive", "rad2deg", "sgn", "signbit", "sinc"]

_DEG = math.pi / 180.0
_RAD = 180.0 / math.pi


def _sinc(xp: Any, x: Any) -> Any:
    return quietly(xp.sinc, x)


def _sinc_vjp(g: Any, x: Any) -> Any:
    """PyTorch's: ``(pi x cos(pi x) - sin(pi x)) / (pi x x)``, 0 where ``x == 0`` (and where the
    denominator underflows to 0, a subnormal ``x``, as PyTorch's kernel gives)."""
    pix = x * math.pi
    denominator = pix * x
    return g * where(denominator == 0, 0.0, (pix * cos(pix) - sin(pix)) / denominator)


def _zeros(g: Any) -> Any:
    """Zeros like ``g`` (PyTorch's ``zeros_like``: no NaN where ``g`` is infinite)."""
    return like(g._device.xp.zeros_like(g.data), g)


def _sign(xp: Any, x: Any) -> Any:
    return x.copy() if x.dtype.kind == "b" else xp.where(xp.isnan(x), 0, xp.sign(x))


UNARY = [
    Unary("exp2", "Exp2Backward0", lambda xp, x: quietly(xp.exp2, x), lambda g, y: g * (y * math.log(2.0)), "result",
          doc="Elementwise ``2 ** input``."),
    Unary("deg2rad", "Deg2RadBackward0", lambda xp, x: x * _DEG, lambda g, _: g * _DEG,
          doc="Degrees to radians: ``input * pi / 180``."),
    Unary("rad2deg", "Rad2DegBackward0", lambda xp, x: x * _RAD, lambda g, _: g * _RAD,
          doc="Radians to degrees: ``input * 180 / pi``."),
    Unary("sinc", "SincBackward0", _sinc, _sinc_vjp, "input",
          doc="The normalized sinc, ``sin(pi x) / (pi x)`` (1 at 0); its gradient is 0 at 0, as PyTorch's."),
    Unary("sgn", "SgnBackward0", _sign, lambda g, _: _zeros(g),
          doc="The sign of real ``input`` (as ``sign``), under PyTorch's ``SgnBackward0``."),
]
_MADE = {row.name: unary(row, __name__) for row in UNARY}
exp2: UnaryOp
deg2rad: UnaryOp
rad2deg: UnaryOp
sinc: UnaryOp
sgn: UnaryOp
exp2, Exp2Backward0 = _MADE["exp2"]
deg2rad, Deg2RadBackward0 = _MADE["deg2rad"]
rad2deg, Rad2DegBackward0 = _MADE["rad2deg"]
sinc, SincBackward0 = _MADE["sinc"]
sgn, SgnBackward0 = _MADE["sgn"]


# ------------------------------------------------------------------------------ logit
@backward(saved=("x",), batched=True)
def LogitBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """PyTorch's logit_backward: ``grad / (x (1 - x))``; without ``eps`` NaN outside [0, 1],
    with it 0 outside ``[eps, 1 - eps]``."""
    g, x = grads[0], self.x.unpack(self)
    d = g / (x * (1.0 - x) + 0.0)  # (+ 0.0: at -0.0 PyTorch's ``grad * inf``, not ``-inf``)
    if self.eps is None:
        return (where((x < 0.0) | (x > 1.0), math.nan, d),)
    return (where((x < self.eps) | (x > 1.0 - self.eps), 0.0, d),)


@op(LogitBackward0)
def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """``log(p / (1 - p))``, ``p`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given."""
    if not isinstance(input, Tensor):
        raise not_tensor("logit", input)
    x = input.data
    if x.dtype.kind in "biu":
        x = x.astype(get_default_dtype())
    xp = input._device.xp
    if eps is not None:
        lo, hi = x.dtype.type(eps), x.dtype.type(1.0 - eps)
        x = xp.where(x < lo, lo, xp.where(x > hi, hi, x))
    out = like(quietly(lambda z: xp.log(z / (1 - z)), x).astype(x.dtype, copy=False), input)
    if needs_grad(input):
        node: Any = attach(LogitBackward0((edge_of(input),)), out)
        node.x, node.eps = save(input), eps
    return out


# ------------------------------------------------------------------------------ float_power
def _float64(x: Any) -> Any:
    """``x`` in double precision (complex128 if complex), as ``float_power`` computes."""
    if isinstance(x, Tensor):
        dtype = np.complex128 if x.data.dtype.kind == "c" else np.float64
        return x if x.data.dtype == dtype else x.to(dtype)  # type: ignore[attr-defined]
    if isinstance(x, (bool, int, float, np.number)):
        return float(x)
    return x


@op(PowBackward0, PowBackward1, PowBackward2)
def float_power(input: TensorLike, exponent: TensorLike) -> Tensor:
    """``input ** exponent`` in double precision: the result is float64 whatever the operands'
    dtypes (complex128 for complex ones), as ``torch.float_power``."""
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError(f"float_power(): argument 'exponent' (position 2) must be Tensor, not {type(exponent).__name__}")
    return pow(_float64(input), _float64(exponent))


# ------------------------------------------------------------------------------ copysign
@backward(saved=("x0", "result"), batched=True)
def CopysignBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, Any]:
    """PyTorch's copysign_tensor_self_backward: ``grad * result / input`` (0 where ``input``
    is 0); zeros for ``other``."""
    g = grads[0]
    x, result = saved_operands(self)[0], self.result.unpack(self)
    zero = g._device.xp.zeros((), dtype=g.data.dtype)
    return operand_grads(self, batch, lambda: g * where(x == 0, zero, result / x), lambda: _zeros(g))


CopysignBackward1 = variant("CopysignBackward1", CopysignBackward0, "``copysign(tensor, number)``.")


@op(CopysignBackward0, CopysignBackward1)
def copysign(input: Tensor, other: TensorLike) -> Tensor:
    """``input``'s magnitude with ``other``'s sign, elementwise; a floating result (the default
    dtype for integer operands)."""
    if not isinstance(input, Tensor):
        raise not_tensor("copysign", input)
    input, other = floating(*promoted(input, other, fname="copysign"))
    return _binary("copysign", input, other, lambda xp, a, b: xp.copysign(a, b),
                   (CopysignBackward0, CopysignBackward1, CopysignBackward1), keep_result=True)


# ------------------------------------------------------------------------------ fmax, fmin
@backward(saved=("x0", "x1"), batched=True)
def FmaxBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, Any]:
    """PyTorch's: the gradient goes to ``input`` where ``input >= other`` or ``other`` is NaN,
    else to ``other`` (``<=`` for ``fmin``)."""
    g = grads[0]
    a, b = saved_operands(self)
    takes = (a >= b if self.largest else a <= b) | (b != b)
    zero = g._device.xp.zeros((), dtype=g.data.dtype)
    return operand_grads(self, batch, lambda: where(takes, g, zero), lambda: where(takes, zero, g))


FminBackward0 = variant("FminBackward0", FmaxBackward0)


def _fextreme(fname: str, input: Any, other: Any, largest: bool) -> Tensor:
    if not isinstance(input, Tensor):
        raise not_tensor(fname, input)
    _tensor_only(fname, other)
    node = FmaxBackward0 if largest else FminBackward0

    def compute(xp: Any, a: Any, b: Any) -> Any:  # (of +-0 the first, as PyTorch's kernel)
        keep = (a >= b if largest else a <= b) | (b != b)
        return xp.where(keep, a, b)

    out = _binary(fname, input, other, compute, (node,) * 3)
    if out.grad_fn is not None:
        out.grad_fn.largest = largest  # type: ignore[attr-defined]
    return out


@op(FmaxBackward0)
def fmax(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise maximum, ignoring NaN: the other operand where one is NaN (NaN only where
    both are), as ``torch.fmax``."""
    return _fextreme("fmax", input, other, True)


@op(FminBackward0)
def fmin(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise minimum, ignoring NaN, as ``torch.fmin``: see :func:`fmax`."""
    return _fextreme("fmin", input, other, False)


# ------------------------------------------------------------------------------ heaviside, nextafter
@op()
def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """The Heaviside step: 0 where ``input < 0`` (and at NaN), 1 where ``input > 0``, ``values``
    where ``input == 0``. Both tensors of one dtype; no derivative, as in PyTorch."""
    if not isinstance(input, Tensor):
        raise not_tensor("heaviside", input)
    if not isinstance(values, Tensor):
        raise TypeError(f"heaviside(): argument 'values' (position 2) must be Tensor, not {type(values).__name__}")
    if input.data.dtype != values.data.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    xp = input._device.xp
    try:
        a, b = xp.broadcast_arrays(input.data, values.data)
    except ValueError as e:  # numpy's broadcast error: PyTorch's
        raise broadcast_error(e, input, values) from None
    out = like(xp.where(a == 0, b, (a > 0).astype(a.dtype)), input)
    record_not_implemented("heaviside", out, input, values)
    return out


@backward(saved=("x0", "x1"), batched=True)
def NextafterBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, Any]:
    """As PyTorch's: the gradient passes to ``input`` where ``input != other`` (where they are
    equal the result is ``other``); ``other`` gets zeros."""
    g = grads[0]
    a, b = saved_operands(self)
    zero = g._device.xp.zeros((), dtype=g.data.dtype)
    return operand_grads(self, batch, lambda: where(a == b, zero, g), lambda: _zeros(g))


@op(NextafterBackward0)
def nextafter(input: Tensor, other: Tensor) -> Tensor:
    """The next floating-point value after ``input`` towards ``other``, elementwise."""
    if not isinstance(input, Tensor):
        raise not_tensor("nextafter", input)
    _tensor_only("nextafter", other)
    input, other = promoted(input, other, fname="nextafter")
    refuse_kinds("nextafter", input.data.dtype, "biu")
    return _binary("nextafter", input, other, lambda xp, a, b: xp.nextafter(a, b), (NextafterBackward0,) * 3)


# ------------------------------------------------------------------------------ signbit, positive
@op()
def signbit(input: Tensor) -> Tensor:
    """Whether the sign bit is set (``-0.0`` included), elementwise: a bool tensor."""
    if not isinstance(input, Tensor):
        raise not_tensor("signbit", input)
    x, xp = input.data, input._device.xp
    return like(xp.zeros(x.shape, dtype=bool) if x.dtype.kind in "bu" else xp.signbit(x), input)


def positive(input: Tensor) -> Tensor:
    """``input`` itself (``+input``); refused for bool tensors, as PyTorch's."""
    if not isinstance(input, Tensor):
        raise not_tensor("positive", input)
    if input.data.dtype.kind == "b":
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


TENSOR_METHODS: dict[str, Any] = {name: fn for name, (fn, _) in _MADE.items()} | {
    "logit": logit, "float_power": float_power, "copysign": copysign, "fmax": fmax, "fmin": fmin,
    "heaviside": heaviside, "nextafter": nextafter, "signbit": signbit, "positive": positive,
}
