"""The in-place variants made from the out-of-place ops: ``sin_``, ``sqrt_``, ``atan2_``,
``lerp_``, ``masked_fill_``, ``cumsum_``, ``eq_``, ``t_``, ``squeeze_``... (PyTorch's in-place
Tensor methods whose out-of-place op aiograd has; those with a kernel of their own, ``add_``,
``mul_``, ``exp_``, ``copy_``..., are in aiograd/_ops/inplace.py, assign.py, rearrange.py, scatter.py).

Each is one row of ``VARIANTS`` (``Variant``): the in-place name, the out-of-place op it is
made from (read from the registry, ``OPS``: its forward, signature and nodes), and what its
backward needs of the old ``self``. ``make`` turns a row into the method, as PyTorch's autograd
codegen turns ``sin`` into ``sin_``:

- ``"values"`` (elementwise math, scans, ``masked_fill``): PyTorch's ``check_inplace`` errors
  first (``_inplace_util._recording``: a leaf or a view of a leaf that requires grad, the views
  that may not be modified), then PyTorch's internal-overlap error for a broadcast (expanded)
  tensor; the out-of-place op runs on the tensor's current version (``_alias``, a copy of the
  data where the formula reads the old values: PyTorch's ``original_self = self.clone()``), its
  result is written into ``self``'s array (so its views and base see it) under PyTorch's dtype
  rule (cast to ``self``'s dtype, "result type Float can't be cast to the desired output type
  Long" where that is not a same-kind cast), the version counter is bumped and the op's node
  (``SinBackward0``...) becomes ``self``'s history (``rebase_inplace``: ``CopySlices`` on the
  base for a view). A node that saves its result (``exp``, ``sqrt``, ``tanh``...) saves ``self``
  instead, so that a later in-place change of ``self`` fails its version check, as PyTorch's.
- ``"compare"`` (``eq_``, ``lt_``...): the comparison written as 0/1 in ``self``'s dtype,
  recorded as PyTorch does, with zero gradients (``EqBackward0`` for a number, ``EqBackward1``
  for a tensor).
- ``"view"`` (``t_``, ``transpose_``, ``squeeze_``, ``unsqueeze_``): ``self`` becomes the view
  the out-of-place op makes (same memory, new shape); no data moves, the version counter is
  bumped and the op's node, under PyTorch's name for the in-place variant (``TBackward1``,
  ``TransposeBackward1``, ``SqueezeBackward3/4/5``, ``UnsqueezeBackward1``), becomes ``self``'s
  grad_fn (a view keeps its base; no ``CopySlices``).
"""

from __future__ import annotations

import inspect
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .._base._dtypes import cpp_type_name
from .._core._views import View
from . import (  # noqa: F401
    binary_math,
    convenience,
    elementwise,
    pointwise,
    scans,
    shape,
    special,
    special_gamma,
    unary_math,
)
from ._inplace_util import (
    OVERLAP_ERROR,
    _alias,
    _bump,
    _cast_grads_to,
    _dtype_name,
    _overlapping,
    _recording,
    _unlock,
    _write_overlapping,
)
from ._registry import OPS, backward, register, variant
from ._util import Node, Tensor, broadcast_error, edge_of, like
from .casting import result_type
from .rebase import _save_result, rebase_inplace

if TYPE_CHECKING:  # (names the signatures copied from the out-of-place ops use)
    from collections.abc import Sequence  # noqa: F401

    from numpy.typing import DTypeLike  # noqa: F401

    from .._core._types import TensorLike  # noqa: F401

__all__ = ["VARIANTS", "Variant", "TENSOR_METHODS"]


# ------------------------------------------------------------------------------ the nodes
@backward(batched=True)
def _ComparisonBackward(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, ...]:
    """An in-place comparison's backward, as PyTorch's ``eq_``: zeros for ``self`` and for a
    tensor ``other`` (the result does not depend on either, almost everywhere)."""
    g = grads[0]
    lead = g.data.shape[:batch]
    xp = g._device.xp
    return tuple(
        None if edge is None else like(xp.zeros(lead + shape, dtype=dtype), g)
        for edge, (shape, dtype) in zip(self.next_edges, self.metas)
    )


EqBackward0 = variant(
    "EqBackward0", _ComparisonBackward, "Backward of ``eq_`` with a number: zeros.", module=__name__
)
EqBackward1 = variant(
    "EqBackward1", _ComparisonBackward, "Backward of ``eq_`` with a tensor: zeros.", module=__name__
)
NeBackward0 = variant(
    "NeBackward0", _ComparisonBackward, "Backward of ``ne_`` with a number: zeros.", module=__name__
)
NeBackward1 = variant(
    "NeBackward1", _ComparisonBackward, "Backward of ``ne_`` with a tensor: zeros.", module=__name__
)
LtBackward0 = variant(
    "LtBackward0", _ComparisonBackward, "Backward of ``lt_`` with a number: zeros.", module=__name__
)
LtBackward1 = variant(
    "LtBackward1", _ComparisonBackward, "Backward of ``lt_`` with a tensor: zeros.", module=__name__
)
LeBackward0 = variant(
    "LeBackward0", _ComparisonBackward, "Backward of ``le_`` with a number: zeros.", module=__name__
)
LeBackward1 = variant(
    "LeBackward1", _ComparisonBackward, "Backward of ``le_`` with a tensor: zeros.", module=__name__
)
GtBackward0 = variant(
    "GtBackward0", _ComparisonBackward, "Backward of ``gt_`` with a number: zeros.", module=__name__
)
GtBackward1 = variant(
    "GtBackward1", _ComparisonBackward, "Backward of ``gt_`` with a tensor: zeros.", module=__name__
)
GeBackward0 = variant(
    "GeBackward0", _ComparisonBackward, "Backward of ``ge_`` with a number: zeros.", module=__name__
)
GeBackward1 = variant(
    "GeBackward1", _ComparisonBackward, "Backward of ``ge_`` with a tensor: zeros.", module=__name__
)
_COMPARISON_NODES = {
    "eq": (EqBackward0, EqBackward1),
    "ne": (NeBackward0, NeBackward1),
    "lt": (LtBackward0, LtBackward1),
    "le": (LeBackward0, LeBackward1),
    "gt": (GtBackward0, GtBackward1),
    "ge": (GeBackward0, GeBackward1),
}

# The in-place view ops' nodes: the out-of-place rule under PyTorch's in-place name.
TBackward1 = variant("TBackward1", shape.TBackward0, "Backward of ``t_()``: the transpose back.", module=__name__)
TransposeBackward1 = variant(
    "TransposeBackward1", shape.TransposeBackward0, "Backward of ``transpose_``.", module=__name__
)
SqueezeBackward3 = variant(
    "SqueezeBackward3", shape.SqueezeBackward0, "Backward of ``squeeze_()``.", module=__name__
)
SqueezeBackward5 = variant(
    "SqueezeBackward5", shape.SqueezeBackward0, "Backward of ``squeeze_(dims)``.", module=__name__
)
UnsqueezeBackward1 = variant(
    "UnsqueezeBackward1", shape.UnsqueezeBackward0, "Backward of ``unsqueeze_``.", module=__name__
)
_VIEW_NODES: dict[type[Node], type[Node]] = {
    shape.TBackward0: TBackward1,
    shape.TransposeBackward0: TransposeBackward1,
    shape.SqueezeBackward0: SqueezeBackward3,
    shape.SqueezeBackward1: shape.SqueezeBackward4,
    shape.SqueezeBackward2: SqueezeBackward5,
    shape.UnsqueezeBackward0: UnsqueezeBackward1,
}


# ------------------------------------------------------------------------------ the rows
Kind = Literal["values", "compare", "view"]


@dataclass(frozen=True)
class Variant:
    """One in-place variant: ``name`` (``"sin_"``) made from the registered op ``of`` (``"sin"``).

    ``old_self`` says whether the backward reads the values ``self`` had before the op (then
    the op runs on a copy of them, which its node saves, as PyTorch's ``original_self``): a
    bool, or a predicate on the op's other arguments; None: whenever one of the op's nodes
    saves anything but its result (``SinBackward0`` saves the input; ``ExpBackward0`` only the
    result, which is ``self`` after the op). ``check(self, *args, **kwargs)`` raises PyTorch's
    errors that only the in-place form has."""

    name: str
    of: str
    kind: Kind = "values"
    old_self: bool | Callable[..., bool] | None = None
    check: Callable[..., None] | None = None
    #: Writes into an expanded tensor with PyTorch's deprecation warning (``masked_fill_``),
    #: where every other op raises PyTorch's internal-overlap error.
    writes_expanded: bool = False
    #: ``(self, args, kwargs) -> (args, kwargs)``: the arguments the out-of-place op is given.
    arguments: Callable[..., tuple[tuple[Any, ...], dict[str, Any]]] | None = None


def _other_requires_grad(other: Any, *args: Any, **kwargs: Any) -> bool:
    """``true_divide_`` saves the old ``self`` only for the gradient of a tensor ``other``."""
    return isinstance(other, Tensor) and other._requires_grad


def _same_dtype(self: Tensor, dim: Any = None, *, dtype: Any = None, fname: str = "cumsum") -> None:
    """``cumsum_``/``cumprod_``: PyTorch's checks in its order: ``dim`` in range, a ``dtype``
    other than ``self``'s refused, and a Bool tensor of one element or more (no kernel writes
    Bool)."""
    if isinstance(dim, int) and not isinstance(dim, bool):
        shape._dim(dim, self.data.ndim)
    if dtype is None and self.data.dtype.kind == "b" and self.data.ndim and self.data.size:
        raise NotImplementedError(f'"{fname}_out_cpu" not implemented for \'Bool\'')
    if dtype is not None:
        target = np.dtype(dtype)
        if target != self.data.dtype:
            raise RuntimeError(
                f"Bad in-place call: input tensor dtype {cpp_type_name(self.data.dtype)} and output "
                f"tensor dtype {cpp_type_name(target)} should match"
            )


_UNARY = (
    "abs",
    "acos",
    "asin",
    "atan",
    "ceil",
    "cos",
    "cosh",
    "digamma",
    "erf",
    "erfc",
    "erfinv",
    "expm1",
    "floor",
    "frac",
    "lgamma",
    "log",
    "log10",
    "log1p",
    "log2",
    "reciprocal",
    "rsqrt",
    "sigmoid",
    "sign",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "tan",
    "tanh",
    "trunc",
)

def _masked_fill_arguments(self: Tensor, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``masked_fill_`` of a tensor of a non floating dtype with a value that requires grad:
    PyTorch computes it (where the out-of-place op refuses "Autograd not support dtype"), so
    the out-of-place op is given the value detached (its node could not flow into ``self``)."""
    if self.data.dtype.kind not in "fc":
        if len(args) == 2 and isinstance(args[1], Tensor):
            args = (args[0], args[1].detach())
        elif isinstance(kwargs.get("value"), Tensor):
            kwargs = {**kwargs, "value": kwargs["value"].detach()}
    return args, kwargs


def _scan_arguments(self: Tensor, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``cumsum_``/``cumprod_`` of a Bool tensor (0-d or empty: ``_same_dtype`` refuses any
    other) scan in Bool, as PyTorch's (``self``'s dtype), not in the out-of-place op's int64."""
    if self.data.dtype.kind == "b" and kwargs.get("dtype") is None:
        kwargs = {**kwargs, "dtype": self.data.dtype}
    return args, kwargs


VARIANTS: list[Variant] = [
    *(Variant(f"{name}_", name) for name in _UNARY),
    Variant("atan2_", "atan2"),
    Variant("hypot_", "hypot"),
    Variant("fmod_", "fmod"),
    Variant("xlogy_", "xlogy"),
    Variant("true_divide_", "true_divide", old_self=_other_requires_grad),
    Variant("lerp_", "lerp"),
    Variant("nan_to_num_", "nan_to_num"),
    # (their formulas read only tensor1 and tensor2)
    Variant("addcmul_", "addcmul", old_self=False),
    Variant("addcdiv_", "addcdiv", old_self=False),
    Variant("masked_fill_", "masked_fill", writes_expanded=True, arguments=_masked_fill_arguments),
    Variant("cumsum_", "cumsum", check=_same_dtype, arguments=_scan_arguments),
    Variant(
        "cumprod_", "cumprod", check=lambda self, *a, **k: _same_dtype(self, *a, **k, fname="cumprod"),
        arguments=_scan_arguments,
    ),
    *(Variant(f"{name}_", name, "compare") for name in _COMPARISON_NODES),
    Variant("t_", "t", "view"),
    Variant("transpose_", "transpose", "view"),
    Variant("squeeze_", "squeeze", "view"),
    Variant("unsqueeze_", "unsqueeze", "view"),
]
"""Every in-place variant made here, one row each."""


# ------------------------------------------------------------------------------ the methods
def _call(
    row: Variant,
    forward: Callable[..., Any],
    self: Tensor,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """The out-of-place forward on ``self``; its errors name the in-place op (``atan2_():
    argument 'other' ...``), as PyTorch's do."""
    try:
        return forward(self, *args, **kwargs)
    except NotImplementedError:
        # PyTorch checks that the result type can be written into ``self`` before it looks for
        # a kernel of that type
        operand = args[0] if args else None
        if isinstance(operand, Tensor) and operand.data.ndim > self.data.ndim:
            try:
                shape = np.broadcast_shapes(self.data.shape, operand.data.shape)
            except ValueError:
                raise broadcast_error(ValueError("could not be broadcast"), self, operand) from None
            raise RuntimeError(
                f"output with shape {list(self.data.shape)} doesn't match the broadcast shape {list(shape)}"
            ) from None
        operands = [a.data if isinstance(a, Tensor) else a for a in args if isinstance(a, (Tensor, bool, int, float))]
        if operands:
            result = result_type(self.data, *operands)
            if not np.can_cast(result, self.data.dtype, "same_kind"):
                raise RuntimeError(
                    f"result type {_dtype_name(result)} can't be cast to the desired output type "
                    f"{_dtype_name(self.data.dtype)}"
                ) from None
        raise
    except (TypeError, RuntimeError, IndexError) as e:
        message = str(e)
        if type(e) in (TypeError, RuntimeError, IndexError) and message.startswith(row.of + "("):
            # (a method's arguments are counted after ``self``)
            message = re.sub(
                r"\(position (\d+)\)", lambda m: f"(position {int(m.group(1)) - 1})", message
            )
            raise type(e)(row.name + message[len(row.of) :]) from None
        raise


EXPANDED_MASKED_FILL = (
    "Use of masked_fill_ on expanded tensors is deprecated. Please clone() the tensor before "
    "performing this operation. This also applies to advanced indexing e.g. tensor[mask] = scalar"
)


def _write(self: Tensor, result: Any, expanded: bool = False) -> None:
    """Write an op's result array into ``self``'s array with PyTorch's checks (the broadcast
    shape, a same-kind cast to ``self``'s dtype), then bump the version counter. ``expanded``:
    ``self`` is an expanded view (``masked_fill_``'s case) whose changed elements are written
    into its base, as PyTorch's kernel writes them (with its deprecation warning)."""
    data = self.data
    if result.shape != data.shape:
        raise RuntimeError(
            f"output with shape {list(data.shape)} doesn't match the broadcast shape {list(result.shape)}"
        )
    if result.dtype != data.dtype and not np.can_cast(result.dtype, data.dtype, "same_kind"):
        raise RuntimeError(
            f"result type {_dtype_name(result.dtype)} can't be cast to the desired output type "
            f"{_dtype_name(data.dtype)}"
        )
    if expanded:
        if type(self) is View:
            warnings.warn(EXPANDED_MASKED_FILL, UserWarning, stacklevel=3)
        _write_overlapping(self, result)
    else:
        try:
            self._device.xp.copyto(data, result, casting="unsafe")
        except ValueError as e:
            if not _unlock(self, e):
                raise
            self._device.xp.copyto(self.data, result, casting="unsafe")
    _bump(self)


def _refuse_overlap(self: Tensor, allowed: bool = False) -> bool:
    """PyTorch's error for a write into a tensor whose elements share memory (``expand``);
    where ``allowed``, whether it is such a tensor."""
    overlapping = _overlapping(self.data)
    if overlapping and not allowed:
        raise RuntimeError(OVERLAP_ERROR)
    return overlapping


def _tensors(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Tensor]:
    return [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]


def _values(
    row: Variant, forward: Callable[..., Any], nodes: tuple[type[Node], ...]
) -> Callable[..., Tensor]:
    old_self = row.old_self
    if old_self is None:
        old_self = any(field != "result" for node in nodes for field in node._saved)
    check, writes_expanded, arguments = row.check, row.writes_expanded, row.arguments

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if check is not None:
            check(self, *args, **kwargs)
        if arguments is not None:
            args, kwargs = arguments(self, args, kwargs)
        recording = _recording(self, *_tensors(args, kwargs))
        expanded = _refuse_overlap(self, writes_expanded)
        if not recording:
            _write(self, _call(row, forward, self, args, kwargs).data, expanded)
            return self
        copy = old_self(*args, **kwargs) if callable(old_self) else old_self
        out = _call(row, forward, _alias(self, copy), args, kwargs)
        _write(self, out.data, expanded)
        node = out.grad_fn
        if node is not None:
            if out.data.dtype != self.data.dtype and self.data.dtype.kind == "f":
                _cast_grads_to(node, out.data.dtype)
            rebase_inplace(self, node, 0)
            if "result" in node._saved and getattr(node, "result", None) is not None:
                node.result = _save_result(self)  # the op's output is ``self`` now
        return self

    return method


def _compare(row: Variant, forward: Callable[..., Any]) -> Callable[..., Tensor]:
    by_number, by_tensor = _COMPARISON_NODES[row.of]

    def method(self: Tensor, other: Any) -> Tensor:
        recording = _recording(self, *_tensors((other,), {}))
        _refuse_overlap(self)
        if not recording:
            _write(self, _call(row, forward, self, (other,), {}).data)
            return self
        result = _call(row, forward, self, (other,), {}).data
        if isinstance(other, Tensor):
            node: Any = by_tensor((edge_of(self), edge_of(other)))
            node.metas = ((self.data.shape, self.data.dtype), (other.data.shape, other.data.dtype))
        else:
            node = by_number((edge_of(self),))
            node.metas = ((self.data.shape, self.data.dtype),)
        _write(self, result)
        rebase_inplace(self, node, 0)
        return self

    return method


def _view(row: Variant, forward: Callable[..., Any]) -> Callable[..., Tensor]:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        recording = _recording(self)
        if not recording:
            self.data = _call(row, forward, self, args, kwargs).data
            _bump(self)
            return self
        out = _call(row, forward, _alias(self, False), args, kwargs)
        node = out.grad_fn
        node.__class__ = _VIEW_NODES[type(node)]  # (the same rule, under the in-place name)
        old_nr = self.output_nr
        self.data = out.data
        _bump(self)
        self.grad_fn = node  # (a view also records the version it was set at)
        if old_nr:
            self.output_nr = 0
        if type(self) is not View:
            self._requires_grad = True
        # (a retained grad stays with the old grad_fn, as PyTorch's for the in-place view ops:
        # ``.grad`` is then the gradient of the version before)
        return self

    return method


def _signature(forward: Callable[..., Any]) -> inspect.Signature:
    """The out-of-place op's signature as the in-place method's: ``self`` first, returns it."""
    sig = inspect.signature(forward)
    first, *rest = sig.parameters.values()
    return sig.replace(
        parameters=[first.replace(name="self", annotation="Tensor"), *rest],
        return_annotation="Tensor",
    )


def make(row: Variant) -> Callable[..., Tensor]:
    """The in-place method for ``row``, registered (``OPS[row.name]``, never top level)."""
    rule = OPS[row.of]
    if row.kind == "values":
        fn = _values(row, rule.forward, rule.nodes)
        nodes = rule.nodes
    elif row.kind == "compare":
        fn = _compare(row, rule.forward)
        nodes = _COMPARISON_NODES[row.of]
    else:
        fn = _view(row, rule.forward)
        nodes = tuple(_VIEW_NODES[n] for n in rule.nodes)
    fn.__name__ = fn.__qualname__ = row.name
    fn.__module__ = __name__
    fn.__doc__ = f"``{row.of}`` in place: the result is written into ``self``, which is returned."
    fn.__signature__ = _signature(rule.forward)  # type: ignore[attr-defined]
    return register(row.name, fn, *nodes, family="inplace", top_level=False)


_MADE = {row.name: make(row) for row in VARIANTS}

#: Tensor methods (bound by ``aiograd._api._tensor_methods``), as PyTorch's; ``arctan2_`` is
#: PyTorch's alias of ``atan2_``.
TENSOR_METHODS: dict[str, Callable[..., Tensor]] = {**_MADE, "arctan2_": _MADE["atan2_"]}
