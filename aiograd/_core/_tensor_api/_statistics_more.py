"""Tensor's methods bound from ``aiograd._ops.statistics_more``. GENERATED: do not edit.

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
    _int: TypeAlias = builtins.int

    class StatisticsMoreMethods:
        """Declared from ``aiograd._ops.statistics_more``."""

        def quantile(
            self,
            q: _float | Tensor,
            dim: _int | None = None,
            keepdim: _bool = False,
            *,
            interpolation: str = 'linear',
        ) -> Tensor:
            """The ``q``-th quantiles (``q`` a number or a 1-D tensor in [0, 1]) over ``dim`` (all
            elements by default), as ``torch.quantile``: between sorted values by ``interpolation``
            (linear, lower, higher, midpoint or nearest); NaN where a slice has a NaN."""
            ...
        def nanquantile(
            self,
            q: _float | Tensor,
            dim: _int | None = None,
            keepdim: _bool = False,
            *,
            interpolation: str = 'linear',
        ) -> Tensor:
            """``quantile`` of the elements that are not NaN (NaN where a slice is all NaN), as
            ``torch.nanquantile``."""
            ...
        def cov(
            self,
            *,
            correction: _int = 1,
            fweights: Tensor | None = None,
            aweights: Tensor | None = None,
        ) -> Tensor:
            """The covariance matrix of the variables in ``input``'s rows (observations in columns),
            as ``torch.cov``: ``correction`` (1: Bessel's), integer frequency weights ``fweights``
            and floating observation weights ``aweights``."""
            ...
        def corrcoef(self) -> Tensor:
            """The Pearson correlation coefficients of the variables in ``input``'s rows, as
            ``torch.corrcoef`` (``cov`` normalised by the standard deviations, clipped to [-1,
            1])."""
            ...
