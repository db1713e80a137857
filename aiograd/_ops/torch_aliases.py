"""PyTorch's other spellings of existing ops where the signature or the node differs, so that a
registry alias (``aliases=``) cannot stand for them: ``swapaxes`` (``axis0``/``axis1``),
``adjoint`` (the last two dims swapped), ``ravel``, ``clamp_min``/``clamp_max`` (PyTorch's
``ClampMinBackward0``... nodes) and ``rsub`` (``other - alpha * input``, ``RsubBackward0``).

Each calls the op it spells and, where PyTorch names the node differently, records it under
PyTorch's name: a ``variant`` of the same rule.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from ._registry import op, variant
from ._util import Tensor, not_tensor
from .convenience import contiguous
from .elementwise import RsubBackward1, SubBackward0, sub
from .pointwise import ClampBackward0, ClampBackward1, clamp
from .shape import TransposeBackward0, ViewBackward0, transpose, view

if TYPE_CHECKING:
    from .._core._types import TensorLike

__all__ = ["adjoint", "clamp_max", "clamp_min", "ravel", "rsub", "swapaxes"]


@op(TransposeBackward0)
def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """Swap two dimensions: ``transpose(input, axis0, axis1)`` (numpy's name)."""
    if not isinstance(input, Tensor):
        raise not_tensor("swapaxes", input)
    return transpose(input, axis0, axis1)


@op(TransposeBackward0)
def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of the last two dims: for real tensors ``transpose(input, -2, -1)``."""
    if not isinstance(input, Tensor):
        raise not_tensor("adjoint", input)
    if input.data.ndim == 0:  # PyTorch's: the tensor itself, with a deprecation warning
        warnings.warn("adjoint() is deprecated on 0-D tensors. Consider using x.conj().", UserWarning, stacklevel=2)
        return input
    if input.data.ndim < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. "
                           f"Got {input.data.ndim}-D tensor.")
    return transpose(input, -2, -1)


@op(ViewBackward0)
def ravel(input: Tensor) -> Tensor:
    """The elements as a 1-d tensor: a view when ``input`` is contiguous, else of a copy."""
    if not isinstance(input, Tensor):
        raise not_tensor("ravel", input)
    return view(contiguous(input), -1)  # type: ignore[arg-type]


ClampMinBackward0 = variant("ClampMinBackward0", ClampBackward1, "``clamp_min`` with a number bound.", module=__name__)
ClampMinBackward1 = variant("ClampMinBackward1", ClampBackward0, "``clamp_min`` with a tensor bound.", module=__name__)
ClampMaxBackward0 = variant("ClampMaxBackward0", ClampBackward1, "``clamp_max`` with a number bound.", module=__name__)
ClampMaxBackward1 = variant("ClampMaxBackward1", ClampBackward0, "``clamp_max`` with a tensor bound.", module=__name__)
_RENAMED = {"clamp_min": {ClampBackward1: ClampMinBackward0, ClampBackward0: ClampMinBackward1},
            "clamp_max": {ClampBackward1: ClampMaxBackward0, ClampBackward0: ClampMaxBackward1}}


def _renamed(out: Tensor, fname: str) -> Tensor:
    node = out.grad_fn
    if node is not None and type(node) in _RENAMED[fname]:
        node.__class__ = _RENAMED[fname][type(node)]  # (the same rule, under PyTorch's name)
    return out


@op(ClampMinBackward0, ClampMinBackward1)
def clamp_min(input: Tensor, min: TensorLike) -> Tensor:
    """``clamp(input, min=min)``: values below ``min`` raised to it."""
    if not isinstance(input, Tensor):
        raise not_tensor("clamp_min", input)
    return _renamed(clamp(input, min=min), "clamp_min")  # type: ignore[arg-type]


@op(ClampMaxBackward0, ClampMaxBackward1)
def clamp_max(input: Tensor, max: TensorLike) -> Tensor:
    """``clamp(input, max=max)``: values above ``max`` lowered to it."""
    if not isinstance(input, Tensor):
        raise not_tensor("clamp_max", input)
    return _renamed(clamp(input, max=max), "clamp_max")  # type: ignore[arg-type]


RsubBackward0 = variant("RsubBackward0", SubBackward0, "``rsub(input, other)``: ``other - alpha * input``.", module=__name__)


@op(RsubBackward0, RsubBackward1)
def rsub(input: Tensor, other: TensorLike, *, alpha: float = 1) -> Tensor:
    """``other - alpha * input`` (``sub`` with the operands swapped), as ``torch.rsub``."""
    if not isinstance(input, Tensor):
        raise not_tensor("rsub", input)
    out = sub(other, input, alpha=alpha)
    node: Any = out.grad_fn
    if node is not None and type(node) is SubBackward0:
        node.__class__ = RsubBackward0
    return out


TENSOR_METHODS: dict[str, Any] = {
    "swapaxes": swapaxes, "adjoint": adjoint, "ravel": ravel, "clamp_min": clamp_min, "clamp_max": clamp_max,
}
