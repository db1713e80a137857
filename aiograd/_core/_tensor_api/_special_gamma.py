"""Tensor's methods bound from ``aiograd._ops.special_gamma``. GENERATED: do not edit.

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
    _int: TypeAlias = builtins.int

    class SpecialGammaMethods:
        """Declared from ``aiograd._ops.special_gamma``."""

        def erfinv(self) -> Tensor:
            """The inverse error function on ``(-1, 1)`` (+-inf at +-1, NaN outside),
            elementwise."""
            ...
        def lgamma(self) -> Tensor:
            """``log|Gamma(input)|``, elementwise (inf at 0 and the negative integers)."""
            ...
        def digamma(self) -> Tensor:
            """The digamma function ``Gamma'(input) / Gamma(input)``, elementwise."""
            ...
        def polygamma(self, n: _int) -> Tensor:
            """``Tensor.polygamma(n)``: ``polygamma(n, self)``."""
            ...
        def mvlgamma(self, p: _int) -> Tensor:
            """The multivariate log-gamma function of dimension ``p``: ``p(p-1)/4 log(pi) +
            sum_{j<p} lgamma(input - j/2)`` (defined where every element exceeds ``(p - 1)/2``)."""
            ...
