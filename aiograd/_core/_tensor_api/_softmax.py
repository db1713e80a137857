"""Tensor's methods bound from ``aiograd._ops.softmax``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from collections.abc import Sequence
    from typing import TypeAlias

    from numpy.typing import DTypeLike

    from .._tensor import Tensor

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _bool: TypeAlias = builtins.bool
    _int: TypeAlias = builtins.int

    class SoftmaxMethods:
        """Declared from ``aiograd._ops.softmax``."""

        def logsumexp(self, dim: _int | Sequence[_int], keepdim: _bool = False) -> Tensor:
            """``log(sum(exp(input), dim))``, computed without overflow; integer inputs give
            float32."""
            ...
        def softmax(self, dim: _int, dtype: DTypeLike | None = None) -> Tensor:
            """``exp(x) / sum(exp(x), dim)``, computed without overflow (``dtype`` casts first)."""
            ...
        def log_softmax(self, dim: _int, dtype: DTypeLike | None = None) -> Tensor:
            """``x - logsumexp(x, dim)``, computed without overflow (``dtype`` casts first)."""
            ...
