"""Tensor's methods bound from ``aiograd._ops.scans_more``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from typing import Any, TypeAlias

    from .._tensor import Tensor

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _bool: TypeAlias = builtins.bool
    _int: TypeAlias = builtins.int

    class ScansMoreMethods:
        """Declared from ``aiograd._ops.scans_more``."""

        def cummax(self, dim: _int) -> Any:
            """The running maximum along ``dim`` and where it was taken: a ``(values, indices)``
            namedtuple; of equal values the latest index, and NaN once one is met, as PyTorch's."""
            ...
        def cummin(self, dim: _int) -> Any:
            """The running minimum along ``dim`` and its indices: see :func:`cummax`."""
            ...
        def logcumsumexp(self, dim: _int) -> Tensor:
            """``log(cumsum(exp(input), dim))``, without overflow; floating point only."""
            ...
        def aminmax(self, *, dim: _int | None = None, keepdim: _bool = False) -> Any:
            """The smallest and largest values (over ``dim``, or all of them): a ``(min, max)``
            namedtuple, as ``torch.aminmax``."""
            ...
