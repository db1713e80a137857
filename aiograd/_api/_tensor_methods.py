"""Binds the op functions to Tensor as methods, operators and properties (one table per family).

Type checkers cannot follow these ``setattr`` calls: the package ``_core/_tensor_api/`` declares the
same names for them, generated from ``BOUND_METHODS`` and ``BOUND_PROPERTIES`` (each function's own
signature, overloads and docstring) by ``python3 tools/gen_tensor_api.py``; ``tests/test_typing.py``
fails while its files are not what the generator writes. A new Tensor method is an op function,
annotated, in its family's ``TENSOR_METHODS`` table (a new family module goes in ``_FAMILIES``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._core import _hooks
from .._core._tensor import Tensor
from .._ops import (
    binary_math,
    bitwise,
    casting,
    convenience,
    distances,
    elementwise,
    elementwise_more,
    indexing,
    inplace,
    inplace_variants,
    joining,
    joining_more,
    linalg,
    linalg_compat,
    padding,
    pointwise,
    predicates,
    products,
    random_ops,
    random_poisson,
    rearrange,
    reduction,
    reduction_extra,
    rounding,
    scans,
    scans_more,
    scatter,
    scatter_more,
    scatter_reduce,
    search,
    shape,
    softmax,
    sorting,
    special,
    special_gamma,
    statistics,
    statistics_more,
    torch_aliases,
    unary_math,
    vector_products,
    windows,
)
from ._autograd import tensor_backward

__all__ = ["BOUND_METHODS", "BOUND_PROPERTIES"]

_FAMILIES = (
    elementwise, unary_math, casting, binary_math, pointwise, indexing, joining, linalg, reduction, softmax,
    shape, convenience, inplace, inplace_variants, _hooks,
    products,  # linear algebra
    special,  # erf, erfc
    special_gamma,  # erfinv, lgamma, digamma, polygamma, mvlgamma
    reduction_extra, scans, sorting,
    rearrange, scatter, padding,  # shape and indexing
    rounding, bitwise, vector_products,  # rounding divisions, bitwise and logical ops, mv/addmv/vdot/inner
    random_ops,  # the in-place fills (uniform_, normal_, ...), bernoulli, multinomial
    joining_more, scatter_more, scatter_reduce, search,  # hstack..diff, take..diagonal_scatter, searchsorted
)
_FAMILIES += (statistics, statistics_more, windows, distances, linalg_compat)  # torch.* statistics, distances, old linalg
_FAMILIES += (random_poisson,)  # poisson (no Tensor method: registered by the import)


# torch.* aliases and more elementwise math, predicates, scans (exp2, isclose, cummax, swapaxes...)
_FAMILIES += (elementwise_more, predicates, scans_more, torch_aliases)

#: Every method and operator bound onto Tensor here: name -> function (a later family wins).
BOUND_METHODS: dict[str, Callable[..., Any]] = {}
#: Every property bound onto Tensor here: name -> getter.
BOUND_PROPERTIES: dict[str, Callable[..., Any]] = {}

for _family in _FAMILIES:
    BOUND_METHODS.update(getattr(_family, "TENSOR_METHODS", {}))
    BOUND_PROPERTIES.update(getattr(_family, "TENSOR_PROPERTIES", {}))
BOUND_METHODS["backward"] = tensor_backward

for _name, _fn in BOUND_METHODS.items():
    setattr(Tensor, _name, _fn)
for _name, _fn in BOUND_PROPERTIES.items():
    setattr(Tensor, _name, property(_fn, doc=_fn.__doc__))
