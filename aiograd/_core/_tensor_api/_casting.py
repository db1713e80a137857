"""Tensor's methods bound from ``aiograd._ops.casting``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from collections.abc import Sequence
    from typing import Any, TypeAlias

    from .._tensor import Tensor

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _bool: TypeAlias = builtins.bool
    _int: TypeAlias = builtins.int

    class CastingMethods:
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
        def half(self) -> Tensor:
            """Cast to float16."""
            ...
        def long(self) -> Tensor:
            """Cast to int64 (not differentiable)."""
            ...
        def int(self) -> Tensor:
            """Cast to int32 (not differentiable)."""
            ...
        def short(self) -> Tensor:
            """Cast to int16 (not differentiable)."""
            ...
        def char(self) -> Tensor:
            """Cast to int8 (not differentiable)."""
            ...
        def byte(self) -> Tensor:
            """Cast to uint8 (not differentiable)."""
            ...
        def bool(self) -> Tensor:
            """Cast to bool."""
            ...
        def type(self, dtype: Any = None, non_blocking: _bool = False, **kwargs: Any) -> Any:
            """``input``'s type name with no ``dtype`` (``"aiograd.FloatTensor"``,
            ``"aiograd.sim.FloatTensor"`` off the CPU: PyTorch's ``torch.FloatTensor`` with
            aiograd's name), else ``input`` cast to ``dtype`` (a dtype, or a type name as returned,
            ``torch.`` accepted for ``aiograd.``), as ``torch.Tensor.type``: ``input`` itself when
            it is of that type already; differentiable (``to``)."""
            ...
        def element_size(self) -> _int:
            """The size of one element in bytes (4 for float32)."""
            ...
        def new_zeros(
            self, *size: Any, dtype: Any = None, device: Any = None, requires_grad: _bool = False
        ) -> Tensor:
            """A tensor of zeros of ``size``, with ``input``'s dtype and device by default."""
            ...
        def new_ones(
            self, *size: Any, dtype: Any = None, device: Any = None, requires_grad: _bool = False
        ) -> Tensor:
            """A tensor of ones of ``size``, with ``input``'s dtype and device by default."""
            ...
        def new_empty(
            self, *size: Any, dtype: Any = None, device: Any = None, requires_grad: _bool = False
        ) -> Tensor:
            """An uninitialised tensor of ``size``, with ``input``'s dtype and device by default."""
            ...
        def new_full(
            self,
            size: Sequence[_int],
            fill_value: Any,
            *,
            dtype: Any = None,
            device: Any = None,
            requires_grad: _bool = False,
        ) -> Tensor:
            """A tensor of ``size`` filled with ``fill_value``, with ``input``'s dtype (not the
            value's) and device by default."""
            ...
        def new_tensor(
            self, data: Any, *, dtype: Any = None, device: Any = None, requires_grad: _bool = False
        ) -> Tensor:
            """A new leaf holding a copy of ``data``, with ``input``'s dtype (not ``data``'s) and
            device by default."""
            ...
