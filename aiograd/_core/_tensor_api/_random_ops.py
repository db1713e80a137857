"""Tensor's methods bound from ``aiograd._ops.random_ops``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from typing import TypeAlias

    from ..._base import _random
    from .._tensor import Tensor

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _bool: TypeAlias = builtins.bool
    _float: TypeAlias = builtins.float
    _int: TypeAlias = builtins.int

    class RandomOpsMethods:
        """Declared from ``aiograd._ops.random_ops``."""

        def uniform_(
            self, from_: _float = 0, to: _float = 1, *, generator: _random.Generator | None = None
        ) -> Tensor:
            """Fill with samples from U[from_, to) (torch's ``from``, a Python keyword here)."""
            ...
        def normal_(
            self, mean: _float = 0, std: _float = 1, *, generator: _random.Generator | None = None
        ) -> Tensor:
            """Fill with samples from N(mean, std**2)."""
            ...
        def exponential_(
            self, lambd: _float = 1, *, generator: _random.Generator | None = None
        ) -> Tensor:
            """Fill with samples from the exponential distribution of rate ``lambd``."""
            ...
        def random_(
            self,
            from_: _int | None = None,
            to: _int | None = None,
            *,
            generator: _random.Generator | None = None,
        ) -> Tensor:
            """Fill with integers drawn uniformly from ``[from_, to)`` (``random_(to)``: from 0; no
            bound: every integer the dtype holds exactly)."""
            ...
        def bernoulli_(
            self, p: _float | Tensor = 0.5, *, generator: _random.Generator | None = None
        ) -> Tensor:
            """Fill with 1 where a uniform sample falls below ``p`` (a number, or a tensor that
            broadcasts to this shape), else 0."""
            ...
        def bernoulli(
            self, p: _float | None = None, *, generator: _random.Generator | None = None
        ) -> Tensor:
            """1 with probability ``input`` (elementwise), else 0, in ``input``'s dtype; with ``p``,
            with probability ``p`` everywhere."""
            ...
        def multinomial(
            self,
            num_samples: _int,
            replacement: _bool = False,
            *,
            generator: _random.Generator | None = None,
        ) -> Tensor:
            """``num_samples`` indices drawn from each row of ``input`` (1-D or 2-D: weights, not
            necessarily normalised), with or without ``replacement``; int64."""
            ...
