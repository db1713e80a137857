"""``Size`` (``torch.Size``): a tensor's shape, a tuple of ints that prints as ``aiograd.Size([2,
3])``, counts its elements (``numel``) and stays a ``Size`` when sliced; equal to the plain
tuple of the same ints, as torch's."""

from __future__ import annotations

import math
from typing import Any, SupportsIndex, overload

__all__ = ["Size"]


class Size(tuple[int, ...]):
    """A shape: ``Tensor.shape`` and ``Tensor.size()``; ``Size([2, 3])`` builds one."""

    __slots__ = ()

    def __new__(cls, sizes: Any = ()) -> Size:
        return super().__new__(cls, (int(s) for s in sizes))

    def __repr__(self) -> str:
        return f"aiograd.Size({list(self)})"

    __str__ = __repr__

    def numel(self) -> int:
        """The number of elements a tensor of this shape holds (1 for ``Size([])``)."""
        return math.prod(self)

    @overload
    def __getitem__(self, index: SupportsIndex) -> int: ...

    @overload
    def __getitem__(self, index: slice) -> Size: ...

    def __getitem__(self, index: SupportsIndex | slice) -> int | Size:
        item = super().__getitem__(index)
        return Size(item) if isinstance(index, slice) else item

    def __add__(self, other: tuple[Any, ...]) -> Size:  # type: ignore[override]
        return Size(tuple(self) + tuple(other))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Size, (tuple(self),))
