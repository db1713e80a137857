"""torch.nn.functional's ``normalize`` and ``cosine_similarity``: composites of aiograd ops
(norm, clamp, division, sum), so their nodes and derivatives (to any order) are those of their
parts, as in PyTorch (``DivBackward0``, ``SumBackward1``)."""

from __future__ import annotations

from .._base._dtypes import scalar_type_name
from .._base._grad_mode import no_grad
from .._ops._registry import op
from .._ops._util import Tensor, infer_size, not_tensor
from .._ops.casting import result_type, to
from .._ops.convenience import LinalgVectorNormBackward0, norm
from .._ops.elementwise import DivBackward0, MulBackward0
from .._ops.pointwise import ClampBackward1
from .._ops.reduction import SumBackward1
from .._ops.shape import ExpandBackward0, broadcast_to
from .._ops.unary_math import CloneBackward0, clone

__all__ = ["cosine_similarity", "normalize"]


@op(DivBackward0, LinalgVectorNormBackward0, ClampBackward1, ExpandBackward0, family="distance")
def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Tensor | None = None) -> Tensor:
    """``input / max(||input||_p, eps)`` along ``dim`` (torch.nn.functional.normalize).

    With ``out``, the result is written there (no input may require grad then, as in PyTorch).
    """
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("normalize", input)
    denom = norm(input, p, dim, keepdim=True).clamp(min=eps).expand_as(input)
    if out is None:
        return input / denom
    if input.requires_grad:
        raise RuntimeError(
            "div(): functions with out=... arguments don't support automatic differentiation, but "
            "one of the arguments requires grad."
        )
    return out.copy_(input / denom)  # type: ignore[no-any-return]


@op(
    SumBackward1,
    MulBackward0,
    DivBackward0,
    CloneBackward0,
    LinalgVectorNormBackward0,
    ExpandBackward0,
    family="distance",
)
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Cosine similarity along ``dim``, as PyTorch 2.13 computes it (ATen's Distance.cpp):
    ``sum((x1 / max(||x1||, eps)) * (x2 / max(||x2||, eps)), dim)`` after broadcasting the two.

    Each vector is divided by its own norm first (no overflow of ``<x1, x2>``, a result within
    [-1, 1]). The norms are clamped at ``eps`` in place without recording, so the gradient flows
    through the norm as if unclamped, as in PyTorch.
    """
    if not isinstance(x1, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("cosine_similarity", x1, 1, "x1")
    dtype = result_type(x1, x2)
    if dtype.kind != "f":
        raise RuntimeError(
            f"expected common dtype to be floating point, yet common dtype is {scalar_type_name(dtype)}"
        )
    # (integer operands go to the common dtype; floating ones keep theirs, as PyTorch's)
    x1, x2 = (x if x.data.dtype.kind == "f" else to(x, dtype) for x in (x1, x2))
    shape = infer_size(x1.data.shape, x2.data.shape)
    if x1.data.shape != shape:
        x1 = broadcast_to(x1, shape)
    if x2.data.shape != shape:
        x2 = broadcast_to(x2, shape)
    n1, n2 = clone(norm(x1, 2, dim, keepdim=True)), clone(norm(x2, 2, dim, keepdim=True))
    with no_grad():
        n1.clamp_(min=eps)
        n2.clamp_(min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)  # type: ignore[no-any-return]
