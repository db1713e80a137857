"""Tensor's methods bound from ``aiograd._ops.special``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._tensor import Tensor

    class SpecialMethods:
        """Declared from ``aiograd._ops.special``."""

        def erf(self) -> Tensor:
            """The error function ``2/sqrt(pi) * integral_0^x exp(-t**2) dt``, elementwise."""
            ...
        def erfc(self) -> Tensor:
            """The complementary error function ``1 - erf(input)``, accurate in the tail."""
            ...
