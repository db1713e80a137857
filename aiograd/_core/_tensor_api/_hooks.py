"""Tensor's methods bound from ``aiograd._core._hooks``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._node import RemovableHandle
    from .._types import GradHook, PostAccumulateGradHook

    class HooksMethods:
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
