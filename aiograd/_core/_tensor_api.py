"""Tensor's methods, operators and properties as type checkers see them. GENERATED: do not edit.

Written by ``python3 tools/gen_tensor_api.py`` from the functions that
``aiograd._api._tensor_methods`` binds onto ``Tensor`` with ``setattr``, which mypy and pyright
cannot follow; run it again after adding or changing a bound op (``tests/test_typing.py`` fails
while this file is not current). Each declaration is the bound function's signature (its first
parameter as ``self``), overloads and the first sentence of its docstring, in one class per module
of ops. ``Tensor`` derives from ``TensorMethods``, which derives from those classes for the
checkers only: at run time it is an empty class, so attribute lookups and the hot paths are as
before, and this module imports nothing from aiograd at run time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from collections.abc import Sequence
    from typing import Any, SupportsIndex, TypeAlias, overload

    import numpy as np
    from numpy.typing import DTypeLike, NDArray

    from ._graph import GradientEdge
    from ._node import RemovableHandle
    from ._tensor import Tensor
    from ._types import Dims, GradHook, Index, Number, PostAccumulateGradHook, TensorLike, ValuesIndices

    # Also Tensor methods: inside the classes these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _bool: TypeAlias = builtins.bool
    _float: TypeAlias = builtins.float

    class _Elementwise:
        """Declared from ``aiograd._ops.elementwise``."""

        def add(self, other: TensorLike, *, alpha: _float = 1) -> Tensor:
            """``input + alpha * other`` with broadcasting."""
            ...
        def sub(self, other: TensorLike, *, alpha: _float = 1) -> Tensor:
            """``input - alpha * other`` with broadcasting."""
            ...
        def mul(self, other: TensorLike) -> Tensor:
            """Elementwise product with broadcasting."""
            ...
        def div(self, other: TensorLike) -> Tensor:
            """Elementwise true division with broadcasting."""
            ...
        def pow(self, exponent: TensorLike) -> Tensor:
            """``input ** exponent`` with broadcasting; either side may be a number."""
            ...
        def eq(self, other: TensorLike) -> Tensor:
            """Elementwise ``equal`` comparison; a bool tensor (no gradient)."""
            ...
        def ne(self, other: TensorLike) -> Tensor:
            """Elementwise ``not_equal`` comparison; a bool tensor (no gradient)."""
            ...
        def lt(self, other: TensorLike) -> Tensor:
            """Elementwise ``less`` comparison; a bool tensor (no gradient)."""
            ...
        def le(self, other: TensorLike) -> Tensor:
            """Elementwise ``less_equal`` comparison; a bool tensor (no gradient)."""
            ...
        def gt(self, other: TensorLike) -> Tensor:
            """Elementwise ``greater`` comparison; a bool tensor (no gradient)."""
            ...
        def ge(self, other: TensorLike) -> Tensor:
            """Elementwise ``greater_equal`` comparison; a bool tensor (no gradient)."""
            ...
        def __add__(self, other: TensorLike, *, alpha: _float = 1) -> Tensor: ...
        def __radd__(self, other: TensorLike) -> Tensor:
            """``add(other, self)``: a number or an array on the left."""
            ...
        def __sub__(self, other: TensorLike, *, alpha: _float = 1) -> Tensor: ...
        def __rsub__(self, other: TensorLike) -> Tensor:
            """``sub(other, self)``: a number or an array on the left."""
            ...
        def __mul__(self, other: TensorLike) -> Tensor: ...
        def __rmul__(self, other: TensorLike) -> Tensor:
            """``mul(other, self)``: a number or an array on the left."""
            ...
        def __truediv__(self, other: TensorLike) -> Tensor: ...
        def __rtruediv__(self, other: TensorLike) -> Tensor:
            """``div(other, self)``: a number or an array on the left."""
            ...
        def __pow__(self, exponent: TensorLike) -> Tensor: ...
        def __rpow__(self, other: TensorLike) -> Tensor:
            """``pow(other, self)``: a number or an array on the left."""
            ...
        def __eq__(self, other: object) -> Tensor: ...  # type: ignore[override]  # pyright: ignore[reportIncompatibleMethodOverride]
        def __ne__(self, other: object) -> Tensor: ...  # type: ignore[override]  # pyright: ignore[reportIncompatibleMethodOverride]
        def __lt__(self, other: TensorLike) -> Tensor: ...
        def __le__(self, other: TensorLike) -> Tensor: ...
        def __gt__(self, other: TensorLike) -> Tensor: ...
        def __ge__(self, other: TensorLike) -> Tensor: ...

    class _UnaryMath:
        """Declared from ``aiograd._ops.unary_math``."""

        def neg(self) -> Tensor:
            """``-input``."""
            ...
        def exp(self) -> Tensor:
            """Elementwise ``e ** input``."""
            ...
        def log(self) -> Tensor:
            """Natural logarithm."""
            ...
        def log1p(self) -> Tensor:
            """``log(1 + input)``, accurate near zero."""
            ...
        def sqrt(self) -> Tensor:
            """Elementwise square root."""
            ...
        def abs(self) -> Tensor:
            """Elementwise absolute value (gradient 0 at 0, as PyTorch)."""
            ...
        def sign(self) -> Tensor:
            """Elementwise sign: -1, 0 or 1, and 0 at NaN as PyTorch (gradient zero everywhere)."""
            ...
        def sin(self) -> Tensor:
            """Elementwise sine."""
            ...
        def cos(self) -> Tensor:
            """Elementwise cosine."""
            ...
        def tanh(self) -> Tensor:
            """Elementwise hyperbolic tangent."""
            ...
        def sigmoid(self) -> Tensor:
            """Elementwise logistic function ``1 / (1 + exp(-x))``, computed without overflow."""
            ...
        def relu(self) -> Tensor:
            """Elementwise ``max(x, 0)`` (gradient 0 at 0, as PyTorch)."""
            ...
        def clone(self) -> Tensor:
            """A copy of the data, recorded in the graph (its gradient passes through unchanged)."""
            ...
        def expm1(self) -> Tensor:
            """``exp(input) - 1``, accurate near zero."""
            ...
        def log2(self) -> Tensor:
            """Base-2 logarithm."""
            ...
        def log10(self) -> Tensor:
            """Base-10 logarithm."""
            ...
        def rsqrt(self) -> Tensor:
            """``1 / sqrt(input)``."""
            ...
        def reciprocal(self) -> Tensor:
            """``1 / input``."""
            ...
        def tan(self) -> Tensor:
            """Elementwise tangent."""
            ...
        def asin(self) -> Tensor:
            """Elementwise arcsine (NaN outside [-1, 1], as PyTorch)."""
            ...
        def acos(self) -> Tensor:
            """Elementwise arccosine (NaN outside [-1, 1], as PyTorch)."""
            ...
        def atan(self) -> Tensor:
            """Elementwise arctangent."""
            ...
        def sinh(self) -> Tensor:
            """Elementwise hyperbolic sine."""
            ...
        def cosh(self) -> Tensor:
            """Elementwise hyperbolic cosine."""
            ...
        def floor(self) -> Tensor:
            """Round down (gradient zero, as PyTorch)."""
            ...
        def ceil(self) -> Tensor:
            """Round up (gradient zero, as PyTorch)."""
            ...
        def round(self) -> Tensor:
            """Round to the nearest integer, halves to even as PyTorch (gradient zero)."""
            ...
        def trunc(self) -> Tensor:
            """Round toward zero (gradient zero, as PyTorch)."""
            ...
        def frac(self) -> Tensor:
            """``input - trunc(input)``, the fractional part with the input's sign."""
            ...
        def __neg__(self) -> Tensor: ...
        def __abs__(self) -> Tensor: ...

    class _Casting:
        """Declared from ``aiograd._ops.casting``."""

        def to(self, *args: Any, **kwargs: Any) -> Tensor:
            """Move to a device and/or cast to a dtype, as ``torch.Tensor.to``: ``t.to("sim:0")``,
            ``t.to(np.float32)``, ``t.to(device, dtype)``, ``t.to(other)`` (its device and dtype),
            keywords ``device``, ``dtype``, ``non_blocking`` (ignored) and ``copy``."""
            ...
        def cpu(self) -> Tensor:
            """``input`` on the CPU (itself if it is there already); differentiable."""
            ...
        def cuda(self, device: Any = None, non_blocking: _bool = False) -> Tensor:
            """``input`` on a CUDA device (``cuda:0`` by default, as ``to("cuda")``; an index or
            ``"cuda:1"`` picks another), itself if it is there already; differentiable (``to``,
            which records ``ToCopyBackward0``)."""
            ...
        def float(self) -> Tensor:
            """Cast to float32."""
            ...
        def double(self) -> Tensor:
            """Cast to float64."""
            ...
        def long(self) -> Tensor:
            """Cast to int64 (not differentiable)."""
            ...
        def bool(self) -> Tensor:
            """Cast to bool."""
            ...

    class _BinaryMath:
        """Declared from ``aiograd._ops.binary_math``."""

        def atan2(self, other: Tensor) -> Tensor:
            """The angle of the point ``(other, input)``: ``arctan(input / other)`` in the right
            quadrant, elementwise."""
            ...
        def hypot(self, other: Tensor) -> Tensor:
            """``sqrt(input ** 2 + other ** 2)``, elementwise, without overflow."""
            ...
        def fmod(self, other: TensorLike) -> Tensor:
            """The C remainder of ``input / other``: the sign of ``input``, as PyTorch's (and
            C's)."""
            ...
        def remainder(self, other: TensorLike) -> Tensor:
            """Python's modulus of ``input / other``: the sign of ``other``, as PyTorch's."""
            ...
        def xlogy(self, other: TensorLike) -> Tensor:
            """``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN), as
            PyTorch's."""
            ...
        def arctan2(self, other: Tensor) -> Tensor:
            """The angle of the point ``(other, input)``: ``arctan(input / other)`` in the right
            quadrant, elementwise."""
            ...

    class _Pointwise:
        """Declared from ``aiograd._ops.pointwise``."""

        def clamp(self, min: _float | None = None, max: _float | None = None) -> Tensor:
            """Limit values to ``[min, max]``; the gradient passes where ``min <= x <= max``."""
            ...
        def clip(self, min: _float | None = None, max: _float | None = None) -> Tensor:
            """Limit values to ``[min, max]``; the same as :func:`clamp`."""
            ...
        def maximum(self, other: TensorLike) -> Tensor:
            """Elementwise maximum; at ties the gradient is split evenly, as in PyTorch."""
            ...
        def minimum(self, other: TensorLike) -> Tensor:
            """Elementwise minimum; at ties the gradient is split evenly, as in PyTorch."""
            ...
        def lerp(self, end: Tensor, weight: TensorLike) -> Tensor:
            """``input + weight * (end - input)``, elementwise; ``weight`` a number or a tensor."""
            ...
        def addcmul(self, tensor1: Tensor, tensor2: Tensor, *, value: _float = 1) -> Tensor:
            """``input + value * tensor1 * tensor2``, elementwise."""
            ...
        def addcdiv(self, tensor1: Tensor, tensor2: Tensor, *, value: _float = 1) -> Tensor:
            """``input + value * tensor1 / tensor2``, elementwise."""
            ...
        def masked_fill(self, mask: Tensor, value: TensorLike) -> Tensor:
            """``value`` where ``mask`` (a boolean tensor, broadcast to ``input``) holds, ``input``
            elsewhere; ``value`` a number or a 0-dim tensor (then differentiable)."""
            ...

    class _Indexing:
        """Declared from ``aiograd._ops.indexing``."""

        def __getitem__(self, index: Index | tuple[Index, ...]) -> Tensor:
            """``input[index]``: ints, slices (any step), None, Ellipsis, boolean masks, integer
            arrays, lists or tensors, and tuples of them, with PyTorch's (= numpy's) semantics."""
            ...
        def index_select(self, dim: int, index: Tensor | Sequence[int] | NDArray[Any]) -> Tensor:
            """The entries of ``input`` at positions ``index`` (a vector of ints) along ``dim``."""
            ...
        def gather(
            self, dim: int, index: Tensor | NDArray[Any], *, sparse_grad: _bool = False
        ) -> Tensor:
            """``out[i][j][k] = input[index[i][j][k]][j][k]`` for ``dim=0`` (and so on for other
            dims)."""
            ...

    class _Joining:
        """Declared from ``aiograd._ops.joining``."""

        def split(
            self, split_size_or_sections: int | Sequence[int], dim: int = 0
        ) -> tuple[Tensor, ...]:
            """Split into chunks of ``split_size`` along ``dim`` (the last may be smaller), or into
            pieces of the sizes in a list."""
            ...
        def split_with_sizes(self, split_sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
            """Split into pieces of the given sizes along ``dim`` (they must add up to its size)."""
            ...
        def chunk(self, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
            """Split into at most ``chunks`` equal pieces along ``dim`` (the last may be smaller,
            and there may be fewer pieces, as in PyTorch)."""
            ...
        def unbind(self, dim: int = 0) -> tuple[Tensor, ...]:
            """The slices along ``dim``, that dimension removed."""
            ...

    class _Linalg:
        """Declared from ``aiograd._ops.linalg``."""

        def matmul(self, other: Tensor) -> Tensor:
            """Matrix product with numpy's ``matmul`` rules (dot, mv, mm, batched mm)."""
            ...
        def mm(self, mat2: Tensor) -> Tensor:
            """Product of two 2-D matrices."""
            ...
        def __matmul__(self, other: Tensor) -> Tensor: ...
        def __rmatmul__(self, other: TensorLike) -> Tensor:
            """``other @ self``, ``other`` made a tensor first (an array, say)."""
            ...

    class _Reduction:
        """Declared from ``aiograd._ops.reduction``."""

        def sum(
            self,
            dim: int | Sequence[int] | None = None,
            keepdim: _bool = False,
            *,
            dtype: DTypeLike | None = None,
        ) -> Tensor:
            """Sum over ``dim`` (int, tuple, or None for all)."""
            ...
        def mean(
            self,
            dim: int | Sequence[int] | None = None,
            keepdim: _bool = False,
            *,
            dtype: DTypeLike | None = None,
        ) -> Tensor:
            """Mean over ``dim`` (int, tuple, or None for all)."""
            ...
        def var(
            self,
            dim: int | Sequence[int] | _bool | None = None,
            unbiased: _bool | None = None,
            keepdim: _bool = False,
            *,
            correction: _float | None = None,
        ) -> Tensor:
            """Variance over ``dim`` (int, tuple, or None for all) with Bessel's ``correction``
            (default 1)."""
            ...
        @overload
        def max(self) -> Tensor: ...
        @overload
        def max(self, dim: int, keepdim: _bool = False) -> ValuesIndices: ...
        @overload
        def max(self, dim: Tensor) -> Tensor: ...
        def max(
            self, dim: int | Tensor | None = None, keepdim: _bool = False
        ) -> Tensor | ValuesIndices:
            """Maximum, as ``torch.max``."""
            ...
        @overload
        def min(self) -> Tensor: ...
        @overload
        def min(self, dim: int, keepdim: _bool = False) -> ValuesIndices: ...
        @overload
        def min(self, dim: Tensor) -> Tensor: ...
        def min(
            self, dim: int | Tensor | None = None, keepdim: _bool = False
        ) -> Tensor | ValuesIndices:
            """Minimum, as ``torch.min``: see :func:`max`."""
            ...
        def prod(
            self, dim: int | None = None, keepdim: _bool = False, *, dtype: DTypeLike | None = None
        ) -> Tensor:
            """Product of all elements, or over ``dim`` (an int); exact gradients also with
            zeros."""
            ...
        def argmax(self, dim: int | None = None, keepdim: _bool = False) -> Tensor:
            """Index of the (first) maximum, flattened when ``dim`` is None; int64, not
            differentiable."""
            ...
        def argmin(self, dim: int | None = None, keepdim: _bool = False) -> Tensor:
            """Index of the (first) minimum, flattened when ``dim`` is None; int64, not
            differentiable."""
            ...

    class _Softmax:
        """Declared from ``aiograd._ops.softmax``."""

        def logsumexp(self, dim: int | Sequence[int], keepdim: _bool = False) -> Tensor:
            """``log(sum(exp(input), dim))``, computed without overflow; integer inputs give
            float32."""
            ...
        def softmax(self, dim: int, dtype: DTypeLike | None = None) -> Tensor:
            """``exp(x) / sum(exp(x), dim)``, computed without overflow (``dtype`` casts first)."""
            ...
        def log_softmax(self, dim: int, dtype: DTypeLike | None = None) -> Tensor:
            """``x - logsumexp(x, dim)``, computed without overflow (``dtype`` casts first)."""
            ...

    class _Shape:
        """Declared from ``aiograd._ops.shape``."""

        def reshape(self, *shape: Dims) -> Tensor:
            """The same data with a new shape (one dim may be -1): a view when numpy can make one,
            else a copy."""
            ...
        def view(self, *shape: Dims) -> Tensor:
            """A view with a new shape (one dim may be -1); RuntimeError if the strides do not allow
            one."""
            ...
        def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
            """Merge dims ``start_dim`` to ``end_dim`` into one."""
            ...
        def transpose(self, dim0: int, dim1: int) -> Tensor:
            """Swap two dimensions."""
            ...
        def permute(self, *dims: Dims) -> Tensor:
            """Reorder the dimensions."""
            ...
        def squeeze(self, dim: int | Sequence[int] | None = None) -> Tensor:
            """Remove dimensions of size 1 (all, or those in ``dim`` that have size 1)."""
            ...
        def unsqueeze(self, dim: int) -> Tensor:
            """Insert a dimension of size 1 at ``dim``."""
            ...
        def expand(self, *sizes: Dims) -> Tensor:
            """Broadcast to ``sizes`` without copying; -1 keeps a dimension's size."""
            ...
        def broadcast_to(self, shape: Sequence[int]) -> Tensor:
            """Broadcast to ``shape`` (numpy's rules), as ``expand``."""
            ...
        def sum_to_size(self, *size: Dims) -> Tensor:
            """Sum broadcast dimensions away so that the result has shape ``size`` (broadcast's
            adjoint)."""
            ...
        def repeat(self, *sizes: Dims) -> Tensor:
            """Tile the tensor ``sizes[i]`` times along dim ``i`` (torch's ``Tensor.repeat``)."""
            ...
        @property
        def T(self) -> Tensor:
            """``Tensor.T``: all dimensions reversed (the transpose, for a matrix); a view recorded
            as ``PermuteBackward0``."""
            ...
        @property
        def mT(self) -> Tensor:
            """``Tensor.mT``: the last two dimensions swapped."""
            ...

    class _Convenience:
        """Declared from ``aiograd._ops.convenience``."""

        def t(self) -> Tensor:
            """Transpose a tensor of at most 2 dimensions (``input.t()``): a view, recorded as
            ``TBackward0`` (a 0-D or 1-D tensor's is a view of it unchanged, as PyTorch's)."""
            ...
        def expand_as(self, other: Tensor) -> Tensor:
            """``input.expand(other.shape)``."""
            ...
        def view_as(self, other: Tensor) -> Tensor:
            """``input.view(other.shape)``."""
            ...
        def reshape_as(self, other: Tensor) -> Tensor:
            """``input.view(other.shape)``."""
            ...
        def contiguous(self) -> Tensor:
            """``input`` itself when its array is C-contiguous, else a recorded contiguous copy."""
            ...
        def is_contiguous(self) -> _bool:
            """True if the array is C-contiguous."""
            ...
        def is_floating_point(self) -> _bool:
            """True for floating point dtypes."""
            ...
        def type_as(self, other: Tensor) -> Tensor:
            """``input`` cast to ``other``'s dtype (differentiable)."""
            ...
        def square(self) -> Tensor:
            """Elementwise ``input ** 2``."""
            ...
        def std(
            self,
            dim: int | Sequence[int] | _bool | None = None,
            unbiased: _bool | None = None,
            keepdim: _bool = False,
            *,
            correction: _float | None = None,
        ) -> Tensor:
            """Standard deviation: ``sqrt(var(...))`` with ``var``'s arguments (one node, as
            PyTorch)."""
            ...
        def norm(
            self,
            p: _float | str | None = 'fro',
            dim: int | Sequence[int] | None = None,
            keepdim: _bool = False,
            dtype: DTypeLike | None = None,
        ) -> Tensor:
            """The vector p-norm over ``dim`` (all elements by default), as ``torch.norm``: ``p``
            any number (inf and -inf: the largest and smallest magnitude; 0: the count of non-zeros,
            with no gradient) or ``'fro'`` (= 2, the default); ``dtype`` computes in a wider
            dtype."""
            ...
        def __pos__(self) -> Tensor:
            """``+input``: the tensor itself."""
            ...

    class _Inplace:
        """Declared from ``aiograd._ops.inplace``."""

        def add_(self, other: TensorLike, *, alpha: _float = 1) -> Tensor:
            """``self += alpha * other`` in place."""
            ...
        def sub_(self, other: TensorLike, *, alpha: _float = 1) -> Tensor:
            """``self -= alpha * other`` in place."""
            ...
        def mul_(self, other: TensorLike) -> Tensor:
            """``self *= other`` in place."""
            ...
        def div_(self, other: TensorLike) -> Tensor:
            """``self /= other`` in place (true division)."""
            ...
        def pow_(self, exponent: TensorLike) -> Tensor:
            """``self **= exponent`` in place."""
            ...
        def neg_(self) -> Tensor:
            """``self = -self`` in place."""
            ...
        def exp_(self) -> Tensor:
            """``self = exp(self)`` in place."""
            ...
        def relu_(self) -> Tensor:
            """``self = max(self, 0)`` in place."""
            ...
        def clamp_(self, min: TensorLike | None = None, max: TensorLike | None = None) -> Tensor:
            """Limit the values to ``[min, max]`` in place (bounds: numbers or tensors)."""
            ...
        def clip_(self, min: TensorLike | None = None, max: TensorLike | None = None) -> Tensor:
            """Limit the values to ``[min, max]`` in place (bounds: numbers or tensors)."""
            ...
        def __iadd__(self, other: TensorLike, *, alpha: _float = 1) -> Tensor: ...
        def __isub__(self, other: TensorLike, *, alpha: _float = 1) -> Tensor: ...
        def __imul__(self, other: TensorLike) -> Tensor: ...
        def __itruediv__(self, other: TensorLike) -> Tensor: ...
        def __ipow__(self, exponent: TensorLike) -> Tensor: ...

    class _Assign:
        """Declared from ``aiograd._ops.assign``."""

        def zero_(self) -> Tensor:
            """Set every element to 0 in place."""
            ...
        def fill_(self, value: TensorLike) -> Tensor:
            """Set every element to ``value`` (a number or a 0-dim tensor) in place."""
            ...
        def copy_(self, src: TensorLike, non_blocking: _bool = False) -> Tensor:
            """Copy ``src`` (broadcast to this shape, cast to this dtype, from any device) into this
            tensor in place."""
            ...
        def __setitem__(self, index: Index | tuple[Index, ...], value: TensorLike) -> None:
            """``self[index] = value``: a basic index copies ``value`` into the view
            ``self[index]``; an advanced one (masks, integer arrays) is PyTorch's ``index_put_`` (on
            the view of its basic part, if any)."""
            ...

    class _Hooks:
        """Declared from ``aiograd._core._hooks``."""

        def register_hook(self, hook: GradHook) -> RemovableHandle:
            """Call ``hook(grad)`` (sync or ``async def``) each time the gradient of this tensor is
            computed; a returned tensor replaces the gradient."""
            ...
        def register_post_accumulate_grad_hook(
            self, hook: PostAccumulateGradHook
        ) -> RemovableHandle:
            """Call ``hook(tensor)`` (sync or ``async def``) after this leaf's ``.grad`` was
            updated."""
            ...

    class _Products:
        """Declared from ``aiograd._ops.products``."""

        def bmm(self, mat2: Tensor) -> Tensor:
            """Batched matrix product of two 3-D tensors ``(b, n, m) @ (b, m, p)``, no
            broadcasting."""
            ...
        def dot(self, tensor: Tensor) -> Tensor:
            """The inner product of two 1-D tensors of the same size and dtype."""
            ...
        def outer(self, vec2: Tensor) -> Tensor:
            """The outer product of two 1-D tensors: ``input[:, None] * vec2`` (PyTorch's composite,
            so its node is ``MulBackward0``)."""
            ...
        def trace(self) -> Tensor:
            """The sum of the main diagonal of a 2-D tensor (rectangular too)."""
            ...

    class _Special:
        """Declared from ``aiograd._ops.special``."""

        def erf(self) -> Tensor:
            """The error function ``2/sqrt(pi) * integral_0^x exp(-t**2) dt``, elementwise."""
            ...
        def erfc(self) -> Tensor:
            """The complementary error function ``1 - erf(input)``, accurate in the tail."""
            ...

    class _ReductionExtra:
        """Declared from ``aiograd._ops.reduction_extra``."""

        def amax(self, dim: int | Sequence[int] = (), keepdim: _bool = False) -> Tensor:
            """The largest value over ``dim`` (an int or a tuple; all dims by default), as
            ``torch.amax``."""
            ...
        def amin(self, dim: int | Sequence[int] = (), keepdim: _bool = False) -> Tensor:
            """The smallest value over ``dim``, as ``torch.amin``: see :func:`amax`."""
            ...
        def all(self, dim: int | Sequence[int] | None = None, keepdim: _bool = False) -> Tensor:
            """True where every element over ``dim`` (int, tuple, or None for all) is non-zero; bool
            (uint8 for a uint8 input), not differentiable, as ``torch.all``."""
            ...
        def any(self, dim: int | Sequence[int] | None = None, keepdim: _bool = False) -> Tensor:
            """True where some element over ``dim`` is non-zero, as ``torch.any``: see
            :func:`all`."""
            ...
        def count_nonzero(self, dim: int | Sequence[int] | None = None) -> Tensor:
            """How many elements over ``dim`` (int, tuple, or None for all) are non-zero; int64, as
            ``torch.count_nonzero`` (which has no ``keepdim``)."""
            ...

    class _Scans:
        """Declared from ``aiograd._ops.scans``."""

        def cumsum(self, dim: int, *, dtype: DTypeLike | None = None) -> Tensor:
            """Cumulative sum along ``dim``, as ``torch.cumsum``; bool and integer inputs give int64
            unless ``dtype`` says otherwise (the input is cast to ``dtype`` first)."""
            ...
        def cumprod(self, dim: int, *, dtype: DTypeLike | None = None) -> Tensor:
            """Cumulative product along ``dim``, as ``torch.cumprod`` (bool and integer inputs give
            int64); its gradient is exact also where the input has zeros."""
            ...

    class _Sorting:
        """Declared from ``aiograd._ops.sorting``."""

        def sort(
            self, dim: int = -1, descending: _bool = False, *, stable: _bool | None = None
        ) -> ValuesIndices:
            """The values sorted along ``dim`` and the indices they came from: a ``(values,
            indices)`` named tuple, as ``torch.sort``."""
            ...
        def argsort(
            self, dim: int = -1, descending: _bool = False, *, stable: _bool = False
        ) -> Tensor:
            """The indices that sort ``input`` along ``dim`` (int64, not differentiable), as
            ``torch.argsort``; always stable."""
            ...
        def topk(
            self, k: int, dim: int = -1, largest: _bool = True, sorted: _bool = True
        ) -> ValuesIndices:
            """The ``k`` largest (``largest=False``: smallest) values along ``dim`` and their
            indices, a ``(values, indices)`` named tuple, as ``torch.topk``."""
            ...
        def kthvalue(self, k: int, dim: int = -1, keepdim: _bool = False) -> ValuesIndices:
            """The ``k``-th smallest value (1-based) along ``dim`` and its index, a ``(values,
            indices)`` named tuple, as ``torch.kthvalue``; NaN counts as the largest value."""
            ...
        @overload
        def median(self) -> Tensor: ...
        @overload
        def median(self, dim: int, keepdim: _bool = False) -> ValuesIndices: ...
        def median(self, dim: int | None = None, keepdim: _bool = False) -> Tensor | ValuesIndices:
            """The median, as ``torch.median``: the lower of the two middle values for an even
            count."""
            ...

    class _Rearrange:
        """Declared from ``aiograd._ops.rearrange``."""

        def flip(self, *dims: Dims) -> Tensor:
            """A copy with the order of the entries along ``dims`` reversed (``torch.flip(input,
            dims)``; ``t.flip(0, 1)`` or ``t.flip((0, 1))``)."""
            ...
        def roll(
            self, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None
        ) -> Tensor:
            """A copy with the entries shifted by ``shifts`` along ``dims`` (cyclically: what falls
            off one end comes back at the other); without ``dims``, along the flattened tensor."""
            ...
        def narrow(self, dim: int, start: int | Tensor, length: int) -> Tensor:
            """A view of ``length`` entries along ``dim`` from ``start`` (negative counts from the
            end)."""
            ...
        def select(self, dim: int, index: SupportsIndex) -> Tensor:
            """The view ``input[..., index, ...]`` with ``index`` at dimension ``dim`` (that dim
            removed)."""
            ...
        def movedim(self, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
            """The view with dims ``source`` moved to positions ``destination`` (the others keep
            their order): a permute."""
            ...
        def unflatten(self, dim: int, sizes: Sequence[int]) -> Tensor:
            """The view with dim ``dim`` split into ``sizes`` (one of them may be -1)."""
            ...
        def tril(self, diagonal: int = 0) -> Tensor:
            """A copy with the entries above diagonal ``diagonal`` of the last two dims zeroed."""
            ...
        def triu(self, diagonal: int = 0) -> Tensor:
            """A copy with the entries below diagonal ``diagonal`` of the last two dims zeroed."""
            ...
        def tril_(self, diagonal: int = 0) -> Tensor:
            """``tril`` in place."""
            ...
        def triu_(self, diagonal: int = 0) -> Tensor:
            """``triu`` in place."""
            ...
        def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
            """The view of the diagonal ``offset`` (above the main one if positive) of the 2-D
            slices over ``dim1`` and ``dim2``; those dims are removed and the diagonal is the last
            dim."""
            ...
        def diag(self, diagonal: int = 0) -> Tensor:
            """A vector's square matrix with the vector on diagonal ``diagonal``, or a copy of a
            matrix's diagonal ``diagonal`` as a vector."""
            ...
        def tile(self, *dims: Dims) -> Tensor:
            """``input`` repeated ``dims[i]`` times along dim ``i``; fewer ``dims`` than dims are
            padded with 1s in front (``torch.tile(input, dims)``; ``t.tile(2, 1)`` or ``t.tile((2,
            1))``)."""
            ...

    class _Scatter:
        """Declared from ``aiograd._ops.scatter``."""

        def scatter(
            self,
            dim: int,
            index: Tensor | NDArray[Any],
            src: Tensor | Number | None = None,
            *,
            value: Tensor | Number | None = None,
        ) -> Tensor:
            """A copy of ``input`` with ``src[i][j][k]`` written at ``[index[i][j][k]][j][k]`` for
            ``dim=0`` (and so on for other dims); ``src`` is a tensor or a number (also as
            ``value=``)."""
            ...
        def scatter_add(self, dim: int, index: Tensor | NDArray[Any], src: Tensor) -> Tensor:
            """A copy of ``input`` with ``src[i][j][k]`` added at ``[index[i][j][k]][j][k]`` for
            ``dim=0`` (and so on); entries that ``index`` sends to one position all add up."""
            ...
        def index_add(
            self,
            dim: int,
            index: Tensor | Sequence[int] | NDArray[Any],
            source: Tensor,
            *,
            alpha: Number = 1,
        ) -> Tensor:
            """A copy of ``input`` with ``alpha * source[..., i, ...]`` added at ``index[i]`` along
            ``dim`` (repeated indices add up)."""
            ...
        def masked_select(self, mask: Tensor | NDArray[Any]) -> Tensor:
            """The entries of ``input`` where the boolean ``mask`` (broadcast with it) is true, as a
            1-D tensor (a copy)."""
            ...
        def take_along_dim(self, indices: Tensor | NDArray[Any], dim: int | None = None) -> Tensor:
            """The entries of ``input`` at ``indices`` along ``dim``, the two broadcast against each
            other except along ``dim``; without ``dim``, of the flattened input."""
            ...
        def nonzero(self, *, as_tuple: _bool = False) -> Tensor | tuple[Tensor, ...]:
            """The indices of the nonzero entries: an int64 tensor of shape ``(count, ndim)``, or
            with ``as_tuple=True`` one int64 vector per dim (a 0-d input counts as 1-D there, as in
            torch)."""
            ...
        def scatter_(
            self,
            dim: int,
            index: Tensor | NDArray[Any],
            src: Tensor | Number | None = None,
            *,
            value: Tensor | Number | None = None,
        ) -> Tensor:
            """``scatter`` in place."""
            ...
        def scatter_add_(self, dim: int, index: Tensor | NDArray[Any], src: Tensor) -> Tensor:
            """``scatter_add`` in place."""
            ...
        def index_add_(
            self,
            dim: int,
            index: Tensor | Sequence[int] | NDArray[Any],
            source: Tensor,
            *,
            alpha: Number = 1,
        ) -> Tensor:
            """``index_add`` in place."""
            ...

    class _Autograd:
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

    class TensorMethods(
        _Elementwise,
        _UnaryMath,
        _Casting,
        _BinaryMath,
        _Pointwise,
        _Indexing,
        _Joining,
        _Linalg,
        _Reduction,
        _Softmax,
        _Shape,
        _Convenience,
        _Inplace,
        _Assign,
        _Hooks,
        _Products,
        _Special,
        _ReductionExtra,
        _Scans,
        _Sorting,
        _Rearrange,
        _Scatter,
        _Autograd,
    ):
        """Declarations (for type checkers only) of the methods bound onto Tensor by ``_tensor_methods``."""

        __slots__ = ()

else:

    class TensorMethods:
        """The methods bound onto Tensor by ``_tensor_methods`` (declared above, for type checkers)."""

        __slots__ = ()


__all__ = ["TensorMethods"]
