"""Tensor's methods bound from ``aiograd._ops.predicates``. GENERATED: do not edit.

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
    _bool: TypeAlias = builtins.bool
    _float: TypeAlias = builtins.float

    class PredicatesMethods:
        """Declared from ``aiograd._ops.predicates``."""

        def isclose(
            self,
            other: Tensor,
            rtol: _float = 1e-05,
            atol: _float = 1e-08,
            equal_nan: _bool = False,
        ) -> Tensor:
            """Elementwise ``|input - other| <= atol + rtol * |other|`` (or equal; NaNs equal only
            with ``equal_nan``): a bool tensor."""
            ...
        def allclose(
            self,
            other: Tensor,
            rtol: _float = 1e-05,
            atol: _float = 1e-08,
            equal_nan: _bool = False,
        ) -> _bool:
            """Whether :func:`isclose` holds everywhere: a Python bool."""
            ...
        def equal(self, other: Tensor) -> _bool:
            """Whether the two tensors have the same shape and equal elements (in their promoted
            dtype; NaN is not equal to itself): a Python bool."""
            ...
        def is_complex(self) -> _bool:
            """True for complex dtypes."""
            ...
