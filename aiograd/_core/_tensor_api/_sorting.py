"""Tensor's methods bound from ``aiograd._ops.sorting``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from typing import Any, TypeAlias, overload

    from .._tensor import Tensor
    from .._types import ValuesIndices

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _bool: TypeAlias = builtins.bool
    _int: TypeAlias = builtins.int

    class SortingMethods:
        """Declared from ``aiograd._ops.sorting``."""

        @overload
        def sort(self, dim: _int = -1, descending: _bool = False) -> ValuesIndices: ...
        @overload
        def sort(
            self, *, stable: _bool | None, dim: _int = -1, descending: _bool = False
        ) -> ValuesIndices: ...
        def sort(self, *args: Any, **kwargs: Any) -> ValuesIndices:
            """The values sorted along ``dim`` and the indices they came from: a ``(values,
            indices)`` named tuple, as ``torch.sort``."""
            ...
        @overload
        def argsort(self, dim: _int = -1, descending: _bool = False) -> Tensor: ...
        @overload
        def argsort(
            self, *, stable: _bool, dim: _int = -1, descending: _bool = False
        ) -> Tensor: ...
        def argsort(self, *args: Any, **kwargs: Any) -> Tensor:
            """The indices that sort ``input`` along ``dim`` (int64, not differentiable), as
            ``torch.argsort``; always stable."""
            ...
        def topk(
            self, k: _int, dim: _int = -1, largest: _bool = True, sorted: _bool = True
        ) -> ValuesIndices:
            """The ``k`` largest (``largest=False``: smallest) values along ``dim`` and their
            indices, a ``(values, indices)`` named tuple, as ``torch.topk``."""
            ...
        def kthvalue(self, k: _int, dim: _int = -1, keepdim: _bool = False) -> ValuesIndices:
            """The ``k``-th smallest value (1-based) along ``dim`` and its index, a ``(values,
            indices)`` named tuple, as ``torch.kthvalue``; NaN counts as the largest value."""
            ...
        @overload
        def median(self) -> Tensor: ...
        @overload
        def median(self, dim: _int, keepdim: _bool = False) -> ValuesIndices: ...
        def median(self, dim: _int = ..., keepdim: _bool = ...) -> Tensor | ValuesIndices:
            """The median, as ``torch.median``: the lower of the two middle values for an even
            count."""
            ...
        def unique(
            self,
            sorted: _bool = True,
            return_inverse: _bool = False,
            return_counts: _bool = False,
            dim: _int | None = None,
        ) -> Any:
            """The distinct elements of ``input`` (the distinct slices along ``dim``), in ascending
            order (also with ``sorted=False``, as PyTorch's CPU kernel); with ``return_inverse``
            each element's index among them, with ``return_counts`` how often each occurs."""
            ...
        def unique_consecutive(
            self,
            return_inverse: _bool = False,
            return_counts: _bool = False,
            dim: _int | None = None,
        ) -> Any:
            """``input`` with each run of equal neighbours (slices along ``dim``) kept once; with
            ``return_inverse`` each element's run, with ``return_counts`` each run's length."""
            ...
