"""``DataParallel`` (torch/nn/parallel/data_parallel.py) as torch runs it on a machine without
GPUs: the wrapped module is ``self.module`` (so the state dict's keys are prefixed
``module.``), ``device_ids`` is ``[]`` and ``forward`` calls the module. aiograd does not split
batches across devices: ``device_ids``, ``output_device`` and ``dim`` are accepted and, as torch
does when it finds no GPU, not kept."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .module import Module

__all__ = ["DataParallel"]


class DataParallel(Module):
    """Wraps ``module``; calling it calls ``module`` (torch's DataParallel without GPUs)."""

    def __init__(
        self, module: Module, device_ids: Sequence[Any] | None = None, output_device: Any = None, dim: int = 0,
    ) -> None:
        super().__init__()
        self.module = module
        self.device_ids: list[Any] = []

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """``self.module(*inputs, **kwargs)``."""
        return self.module(*inputs, **kwargs)
