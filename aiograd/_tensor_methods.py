"""Binds the op functions to Tensor as methods, operators and properties (one table per family)."""

from __future__ import annotations

from . import _hooks
from ._autograd import tensor_backward
from ._ops import convenience, elementwise, indexing, inplace, joining, linalg, reduction, shape
from ._tensor import Tensor

_FAMILIES = (elementwise, indexing, joining, linalg, reduction, shape, convenience, inplace, _hooks)

for _family in _FAMILIES:
    for _name, _fn in getattr(_family, "TENSOR_METHODS", {}).items():
        setattr(Tensor, _name, _fn)
    for _name, _fn in getattr(_family, "TENSOR_PROPERTIES", {}).items():
        setattr(Tensor, _name, property(_fn, doc=_fn.__doc__))

Tensor.backward = tensor_backward  # type: ignore[attr-defined]
