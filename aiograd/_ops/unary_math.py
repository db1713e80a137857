"""Unary elementwise math, as PyTorch's: ``neg``, ``exp``, ``log``, ``log1p``, ``sqrt``,
``abs``, ``sign``, ``sin``, ``cos``, ``tanh``, ``sigmoid``, ``relu`` and ``clone``; ``expm1``,
``log2``, ``log10``, ``rsqrt``, ``reciprocal``, the other trigonometric and hyperbolic functions,
and the rounding functions (``round``, which takes ``decimals``, is in ``rounding``).

Each op is a row of one table (``UNARY``, see ``_registry.Unary``): one forward, one PyTorch node
and its derivative; every derivative is written with differentiable ops, so double backward
works. The rounding functions have a zero gradient (PyTorch's ``FloorBackward0``... return
zeros); ``frac`` passes the gradient through. On an integer tensor the rounding functions return
a copy, as PyTorch's do, instead of numpy's float result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._division_util import refuse_kinds
from ._registry import Unary, UnaryOp, backward, op, register, unary
from ._util import Tensor, attach, edge_of, like, needs_grad, not_tensor, save
from .operands import BOOL, NEG_BOOL_ERROR
from .quiet import quietly, quietly1, quietly2

__all__ = [
    "neg", "exp", "log", "log1p", "sqrt", "abs", "sign", "sin", "cos", "tanh", "sigmoid", "relu",
    "clone", "expm1", "log2", "log10", "rsqrt", "reciprocal", "tan", "asin", "acos", "atan", "sinh",
    "cosh", "floor", "ceil", "trunc", "frac", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "nan_to_num",
]

# PyTorch's constants (derivatives.yaml), to the last bit: ln(10) there is one ulp below
# ``math.log(10)``, which would move log10's gradient by an ulp.
_LN2 = 0.6931471805599453
_LN10 = 2.3025850929940456


def _negative(xp: Any, x: Any) -> Any:
    if getattr(x, "dtype", None) is BOOL:  # PyTorch refuses it (numpy's words differ)
        raise RuntimeError(NEG_BOOL_ERROR)
    return xp.negative(x)


def _abs(xp: Any, x: Any) -> Any:
    refuse_kinds("abs", x.dtype, "b")  # PyTorch's abs_cpu has no bool kernel
    return xp.abs(x)


def _relu(xp: Any, x: Any) -> Any:
    if x.dtype.kind == "b":
        raise RuntimeError("Boolean inputs not supported for relu")
    if x.dtype.kind == "f" and x.ndim:
        # against an array of zeros, not the number 0: numpy's SIMD loop takes two arrays, and
        # a scalar operand falls to its scalar loop (2-3x slower); the same values, -0.0 and
        # NaN (its sign too) passed through as ``maximum(0, x)`` does
        return xp.maximum(xp.zeros(x.shape, x.dtype), x)
    return xp.maximum(0, x)


def _relu_vjp(g: Any, y: Any) -> Any:
    """``g * (y != 0)`` on arrays: the mask made a float array of ``g``'s dtype first, then
    multiplied in place (numpy's bool-by-float product casts element by element, slower)."""
    mask = y != 0
    if g.dtype.kind != "f" or g.shape != y.shape:
        return g * mask
    out = mask.astype(g.dtype)
    out *= g
    return out


def _sigmoid(xp: Any, x: Any) -> Any:
    # exp(-|x|) cannot overflow, and for x < 0 the form z / (1 + z) keeps tiny results accurate
    # (0.5 * tanh(x / 2) + 0.5 rounds sigmoid(-40) to 0); Python numbers keep the dtype.
    if x.dtype.kind == "b":  # (numpy has no bool negative; PyTorch's bool sigmoid is its float's)
        x = x.astype(xp.int64)  # (then as an integer input: the default float dtype)
    z = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1.0, z) / (1.0 + z)


def preserve_format_copy(x: Any) -> Any:
    """A copy of the array ``x`` laid out as PyTorch's ``clone()`` (``torch.preserve_format``)
    lays out its result: a dense input's strides kept (a transpose's copy is a transpose, so
    ``flatten`` of it copies, as in torch), a strided or broadcast one's dims in the order of its
    strides, densely (ATen's ``infer_dense_strides``); C order when that is all it is."""
    if x.flags.c_contiguous:
        return x.copy()
    shape, strides, n = x.shape, [s // x.itemsize for s in x.strides], x.ndim
    big = [s for s, k in zip(strides, shape) if k > 1]
    if all(s > 0 for s in big) and len(set(big)) == len(big):
        return x.copy(order="K")  # numpy's order is then ATen's (no ties, no broadcast dims)
    perm = list(range(n - 1, -1, -1))  # innermost first

    def order(d0: int, d1: int) -> int:  # ATen's should_swap: 0 is ambiguous (stride 0)
        s0, s1 = strides[d0], strides[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 != s1:
            return -1 if s0 < s1 else 1
        return 1 if shape[d0] > shape[d1] else 0

    for i in range(1, n):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = order(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    outer = perm[::-1]  # outermost first
    if outer == list(range(n)):
        return x.copy()
    inverse = [0] * n
    for i, d in enumerate(outer):
        inverse[d] = i
    # (a copy of the permuted view is C-ordered in that order; transposed back, it has the
    # strides sought, and numpy's order="K" copy keeps them in an array of its own)
    return x.transpose(outer).copy().transpose(inverse).copy(order="K")


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


def _via_float64(name: str) -> Any:
    """A forward computed in float64 for a narrower float input, then rounded back: numpy's
    float32 ``log10``/``log2`` are off by an ulp at exact powers (``log10(100) = 2.0000002``),
    PyTorch's are not."""
    quiet = _quiet(name)

    def forward(xp: Any, x: Any) -> Any:
        if x.dtype.kind == "f" and x.dtype.itemsize < 8:
            return quiet(xp, x.astype(xp.float64)).astype(x.dtype)
        return quiet(xp, x)

    return forward


def _rounding(name: str) -> Any:
    """A rounding forward: an integer array is returned as a copy (numpy would make floats);
    a bool one is refused, as PyTorch's ``<name>_vml_cpu`` kernel does."""

    def forward(xp: Any, x: Any) -> Any:
        refuse_kinds(f"{name}_vml", x.dtype, "b")
        return x.copy() if x.dtype.kind in "iu" else getattr(xp, name)(x)

    return forward


def _reciprocal(xp: Any, x: Any) -> Any:
    # ``1.0 / x``: an integer input gives the default float dtype, not numpy's integer division.
    return quietly(lambda: 1.0 / x)


def _rsqrt(xp: Any, x: Any) -> Any:
    return quietly(lambda: 1.0 / xp.sqrt(x))


def _frac(xp: Any, x: Any) -> Any:
    refuse_kinds("frac", x.dtype, "biu")  # PyTorch's frac is for floats only
    return quietly(lambda: x - xp.trunc(x))  # PyTorch's frac: the sign follows the input


def _zero(g: Any, _: Any) -> Any:
    return g * 0.0


# One row per op: name, PyTorch's node, forward (the name of the array-module function, or
# ``(xp, array) -> array``), vjp(grad, saved) on tensors, what the node saves ("input" as ``x``,
# "result" as ``result``), and optionally ``fast``: the vjp on arrays, for the backward with
# grad mode off (no tensors made on that hot path).
UNARY = [
    Unary("neg", "NegBackward0", _negative, lambda g, _: -g,
          doc="``-input``.", aliases=("negative",)),
    Unary("exp", "ExpBackward0", _quiet("exp"), lambda g, y: g * y, "result",
          doc="Elementwise ``e ** input``."),
    Unary("log", "LogBackward0", _quiet("log"), lambda g, x: g / x, "input",
          doc="Natural logarithm."),
    Unary("log1p", "Log1PBackward0", _quiet("log1p"), lambda g, x: g / (x + 1.0), "input",
          doc="``log(1 + input)``, accurate near zero."),
    Unary("sqrt", "SqrtBackward0", _quiet("sqrt"), lambda g, y: g / (y * 2.0), "result",
          doc="Elementwise square root."),
    Unary("abs", "AbsBackward0", _abs, lambda g, x: g * sign(x), "input",
          doc="Elementwise absolute value (gradient 0 at 0, as PyTorch).", aliases=("absolute",)),
    Unary("sign", "SignBackward0", lambda xp, x: x.copy() if x.dtype.kind == "b" else xp.where(xp.isnan(x), 0, xp.sign(x)), lambda g, _: g * 0.0,
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
    Unary("relu", "ReluBackward0", _relu, lambda g, y: g * (y.data != 0), "result",
          fast=_relu_vjp, doc="Elementwise ``max(x, 0)`` (gradient 0 at 0, as PyTorch)."),
    Unary("clone", "CloneBackward0", lambda xp, x: preserve_format_copy(x), lambda g, _: g,
          doc="A copy of the data, recorded in the graph (its gradient passes through unchanged)."),
    Unary("expm1", "Expm1Backward0", _quiet("expm1"), lambda g, y: g * (y + 1.0), "result",
          doc="``exp(input) - 1``, accurate near zero."),
    Unary("log2", "Log2Backward0", _via_float64("log2"), lambda g, x: g / (x * _LN2), "input",
          doc="Base-2 logarithm."),
    Unary("log10", "Log10Backward0", _via_float64("log10"), lambda g, x: g / (x * _LN10), "input",
          doc="Base-10 logarithm."),
    Unary("rsqrt", "RsqrtBackward0", _rsqrt, lambda g, y: g * (y * y * y) * -0.5, "result",
          doc="``1 / sqrt(input)``."),
    Unary("reciprocal", "ReciprocalBackward0", _reciprocal, lambda g, y: g * -(y * y), "result",
          doc="``1 / input``."),
    Unary("tan", "TanBackward0", _quiet("tan"), lambda g, y: g * (y * y + 1.0), "result",
          doc="Elementwise tangent."),
    Unary("asin", "AsinBackward0", _quiet("arcsin"), lambda g, x: g / sqrt(1.0 - x * x), "input",
          doc="Elementwise arcsine (NaN outside [-1, 1], as PyTorch)."),
    Unary("acos", "AcosBackward0", _quiet("arccos"), lambda g, x: -g / sqrt(1.0 - x * x), "input",
          doc="Elementwise arccosine (NaN outside [-1, 1], as PyTorch)."),
    Unary("atan", "AtanBackward0", _quiet("arctan"), lambda g, x: g / (x * x + 1.0), "input",
          doc="Elementwise arctangent."),
    Unary("sinh", "SinhBackward0", _quiet("sinh"), lambda g, x: g * cosh(x), "input",
          doc="Elementwise hyperbolic sine."),
    Unary("cosh", "CoshBackward0", _quiet("cosh"), lambda g, x: g * sinh(x), "input",
          doc="Elementwise hyperbolic cosine."),
    Unary("floor", "FloorBackward0", _rounding("floor"), _zero,
          doc="Round down (gradient zero, as PyTorch)."),
    Unary("ceil", "CeilBackward0", _rounding("ceil"), _zero,
          doc="Round up (gradient zero, as PyTorch)."),
    Unary("trunc", "TruncBackward0", _rounding("trunc"), _zero,
          doc="Round toward zero (gradient zero, as PyTorch).", aliases=("fix",)),
    Unary("frac", "FracBackward0", _frac, lambda g, _: g,
          doc="``input - trunc(input)``, the fractional part with the input's sign."),
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
expm1: UnaryOp
log2: UnaryOp
log10: UnaryOp
rsqrt: UnaryOp
reciprocal: UnaryOp
tan: UnaryOp
asin: UnaryOp
acos: UnaryOp
atan: UnaryOp
sinh: UnaryOp
cosh: UnaryOp
floor: UnaryOp
ceil: UnaryOp
trunc: UnaryOp
frac: UnaryOp
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
CloneBackward0.light = True  # (its gradient passes through: never worth a thread)
expm1, Expm1Backward0 = _MADE["expm1"]
log2, Log2Backward0 = _MADE["log2"]
log10, Log10Backward0 = _MADE["log10"]
rsqrt, RsqrtBackward0 = _MADE["rsqrt"]
reciprocal, ReciprocalBackward0 = _MADE["reciprocal"]
tan, TanBackward0 = _MADE["tan"]
asin, AsinBackward0 = _MADE["asin"]
acos, AcosBackward0 = _MADE["acos"]
atan, AtanBackward0 = _MADE["atan"]
sinh, SinhBackward0 = _MADE["sinh"]
cosh, CoshBackward0 = _MADE["cosh"]
floor, FloorBackward0 = _MADE["floor"]
ceil, CeilBackward0 = _MADE["ceil"]
trunc, TruncBackward0 = _MADE["trunc"]
frac, FracBackward0 = _MADE["frac"]

#: Tensor methods and operators (bound by ``aiograd._api._tensor_methods``), as PyTorch's.
TENSOR_METHODS = {name: fn for name, (fn, _) in _MADE.items()} | {"__neg__": neg, "__abs__": abs}
# PyTorch's aliases (registered as the rows' aliases)
negative: UnaryOp = neg
absolute: UnaryOp = abs
fix: UnaryOp = trunc
TENSOR_METHODS |= {"negative": neg, "absolute": abs, "fix": trunc}


# ------------------------------------------------------------------------------ isnan, isinf..., nan_to_num
def _float_check(name: str, test: Any, integer: bool) -> Callable[[Tensor], Tensor]:
    """The bool op ``name``: ``test(xp, data)`` on a floating tensor, ``integer`` everywhere on an
    integer or bool one (which holds no NaN or infinity)."""

    def check(input: Tensor) -> Tensor:
        if not isinstance(input, Tensor):
            raise not_tensor(name, input)
        xp, x = input._device.xp, input.data
        data = test(xp, x) if x.dtype.kind in "fc" else xp.full(x.shape, integer, dtype=bool)
        return like(data, input)

    check.__name__ = check.__qualname__ = name
    check.__doc__ = f"Elementwise ``{name}``: a bool tensor (no gradient); integer tensors hold no NaN or infinity."
    register(name, check, family="unary_math")
    return check


isnan: Callable[[Tensor], Tensor] = _float_check("isnan", lambda xp, x: xp.isnan(x), False)
isinf: Callable[[Tensor], Tensor] = _float_check("isinf", lambda xp, x: xp.isinf(x), False)
isfinite: Callable[[Tensor], Tensor] = _float_check("isfinite", lambda xp, x: xp.isfinite(x), True)
isposinf: Callable[[Tensor], Tensor] = _float_check("isposinf", lambda xp, x: xp.isposinf(x), False)
isneginf: Callable[[Tensor], Tensor] = _float_check("isneginf", lambda xp, x: xp.isneginf(x), False)


@backward(saved=("x",), batched=True)
def NanToNumBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """PyTorch's: ``grad * isfinite(input)`` (zero where a NaN or infinity was replaced)."""
    x = self.x.unpack(self)
    return (grads[0] * isfinite(x).to(grads[0].dtype),)


def _float_arg(value: Any, name: str) -> float | None:
    if value is not None and (isinstance(value, (str, bytes)) or not isinstance(value, (int, float, np.number))):
        raise TypeError(f"nan_to_num(): argument '{name}' must be float, not {type(value).__name__}")
    return value


@op(NanToNumBackward0)
def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
    """``input`` with NaN replaced by ``nan``, positive and negative infinity by ``posinf`` and
    ``neginf`` (by default the dtype's largest and smallest finite values); integer and bool
    tensors are copied."""
    if not isinstance(input, Tensor):
        raise not_tensor("nan_to_num", input)
    nan, posinf, neginf = (_float_arg(v, n) for v, n in ((nan, "nan"), (posinf, "posinf"), (neginf, "neginf")))
    xp, x = input._device.xp, input.data
    if x.dtype.kind not in "fc":
        return clone(input)
    replace = lambda a: xp.nan_to_num(a, nan=nan or 0.0, posinf=posinf, neginf=neginf)  # noqa: E731
    data = quietly1(replace, x).astype(x.dtype, copy=False)  # (a bound past the dtype's range: inf, as there)
    out = like(data, input)
    if needs_grad(input):
        node: Any = attach(NanToNumBackward0((edge_of(input),)), out)
        node.x = save(input)
    return out


TENSOR_METHODS.update(
    {"isnan": isnan, "isinf": isinf, "isfinite": isfinite, "isposinf": isposinf, "isneginf": isneginf,
     "nan_to_num": nan_to_num}
)
