"""Tensor's methods bound from ``aiograd._ops.distances``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from typing import TypeAlias

    from .._tensor import Tensor

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _float: TypeAlias = builtins.float
    _int: TypeAlias = builtins.int

    class DistancesMethods:
        """Declared from ``aiograd._ops.distances``."""

        def dist(self, other: Tensor, p: _float = 2) -> Tensor:
            """The ``p``-norm of ``input - other`` (broadcast), as ``torch.dist``."""
            ...
        def renorm(self, p: _float, dim: _int, maxnorm: _float) -> Tensor:
            """Each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled down to
            ``maxnorm`` (by ``maxnorm / (norm + 1e-7)``), as ``torch.renorm``."""
            ...
        def addr(
            self, vec1: Tensor, vec2: Tensor, *, beta: _float = 1, alpha: _float = 1
        ) -> Tensor:
            """``beta * input + alpha * outer(vec1, vec2)`` (``input`` broadcast to the outer
            product's shape; with ``beta=0`` it is ignored, NaN included), as ``torch.addr``."""
            ...
