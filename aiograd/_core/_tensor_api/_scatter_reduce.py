"""Tensor's methods bound from ``aiograd._ops.scatter_reduce``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from typing import Any, TypeAlias

    from numpy.typing import NDArray

    from .._tensor import Tensor

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _bool: TypeAlias = builtins.bool
    _int: TypeAlias = builtins.int

    class ScatterReduceMethods:
        """Declared from ``aiograd._ops.scatter_reduce``."""

        def scatter_reduce(
            self,
            dim: _int,
            index: Tensor | NDArray[Any],
            src: Tensor,
            reduce: str,
            *,
            include_self: _bool = True,
        ) -> Tensor:
            """A copy of ``input`` with each ``src[i][j][k]`` reduced (``reduce``) into the entry
            ``[index[i][j][k]][j][k]`` for ``dim=0`` (and so on for other dims); with
            ``include_self=False`` the reduced entries forget their own values first."""
            ...
        def scatter_reduce_(
            self,
            dim: _int,
            index: Tensor | NDArray[Any],
            src: Tensor,
            reduce: str,
            *,
            include_self: _bool = True,
        ) -> Tensor:
            """``scatter_reduce`` in place."""
            ...
