"""The type aliases of the ops' signatures: what an operand, an index or a shape may be.

The op functions (``aiograd._ops``) are annotated with them, and ``_tensor_api`` declares Tensor's
methods from those signatures (it is generated from them), so both import them from here: the
graph core, because ``_tensor_api`` may import nothing from the ops above it. They exist for type
checkers only: everything below is under ``if TYPE_CHECKING:``, as is every import of this module,
so at run time it defines nothing and imports nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence
    from types import EllipsisType
    from typing import Any, NamedTuple, SupportsIndex, TypeAlias

    import numpy as np
    from numpy.typing import NDArray

    from ._tensor import Tensor

    #: What an arithmetic operand may be besides a tensor or an array: a Python number.
    Number: TypeAlias = int | float | bool
    #: An operand of the elementwise ops: a tensor, a number, or a numpy array or scalar.
    TensorLike: TypeAlias = Tensor | Number | NDArray[Any] | np.generic
    #: What ``t[index]`` accepts: numpy's (= PyTorch's) basic and advanced indices.
    Index: TypeAlias = SupportsIndex | slice | EllipsisType | None | Tensor | NDArray[Any] | Sequence[Any]
    #: A shape given as separate ints or one sequence: ``t.reshape(2, 3)`` or ``t.reshape((2, 3))``.
    Dims: TypeAlias = int | Sequence[int]

    #: A gradient hook: ``hook(grad)``, sync or ``async def``; a returned tensor replaces the grad.
    GradHook: TypeAlias = Callable[[Tensor], Tensor | None] | Callable[[Tensor], Awaitable[Tensor | None]]
    #: A post-accumulate-grad hook: ``hook(tensor)``, sync or ``async def``, returning None.
    PostAccumulateGradHook: TypeAlias = Callable[[Tensor], None] | Callable[[Tensor], Awaitable[None]]

    class ValuesIndices(NamedTuple):
        """``max``/``min``/``sort``... along a dimension: the values and the index of each."""

        values: Tensor
        indices: Tensor

    __all__ = ["Dims", "GradHook", "Index", "Number", "PostAccumulateGradHook", "TensorLike", "ValuesIndices"]
