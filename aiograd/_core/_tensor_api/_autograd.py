"""Tensor's methods bound from ``aiograd._api._autograd``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from collections.abc import Sequence
    from typing import Any, TypeAlias

    import numpy as np

    from .._graph import GradientEdge
    from .._tensor import Tensor

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _bool: TypeAlias = builtins.bool
    _float: TypeAlias = builtins.float

    class AutogradMethods:
        """Declared from ``aiograd._api._autograd``."""

        async def backward(
            self,
            gradient: Tensor | _float | np.ndarray[Any, Any] | np.generic | None = None,
            retain_graph: _bool | None = None,
            create_graph: _bool = False,
            inputs: Tensor | GradientEdge | Sequence[Tensor | GradientEdge] | None = None,
            *,
            atomic: _bool = False,
        ) -> None:
            """Awaitable: accumulate the gradient of this tensor into the leaves' ``.grad``."""
            ...
