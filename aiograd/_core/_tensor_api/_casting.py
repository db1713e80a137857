"""Tensor's methods bound from ``aiograd._ops.casting``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from typing import Any, TypeAlias

    from .._tensor import Tensor

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _bool: TypeAlias = builtins.bool

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
        def long(self) -> Tensor:
            """Cast to int64 (not differentiable)."""
            ...
        def bool(self) -> Tensor:
            """Cast to bool."""
            ...
