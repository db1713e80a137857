"""PyTorch's ``torch.*`` functions that are no registered op (so ``tools/gen_tensor_api.py`` does
not re-export them): Python results (``allclose``, ``equal``, ``result_type``, ``numel``...) and
``positive``, which returns its input; and ``cosine_similarity``/``pairwise_distance``, which torch
has at the top level as well as in ``nn.functional``. Re-exported from ``aiograd``."""

from __future__ import annotations

from .._ops.elementwise_more import positive
from .._ops.predicates import (
    allclose,
    can_cast,
    detach,
    equal,
    is_complex,
    is_floating_point,
    numel,
    promote_types,
    result_type,
    typename,
)
from ..nn.functional import cosine_similarity, pairwise_distance

__all__ = ["allclose", "can_cast", "cosine_similarity", "detach", "equal", "is_complex", "is_floating_point", "numel",
           "pairwise_distance", "positive", "promote_types", "result_type", "typename"]
