"""More normalisation layers: ``RMSNorm`` and ``LocalResponseNorm``
(torch/nn/modules/normalization.py), ``BatchNorm3d`` and ``SyncBatchNorm``
(torch/nn/modules/batchnorm.py).

``SyncBatchNorm`` synchronises the batch statistics across processes only in torch's
distributed training, with an initialised process group: aiograd has none (its
``aiograd.distributed`` is single-process data parallelism), so it is torch's module as it runs
without one: ``BatchNorm`` over any input of rank 2 or more, in training and in eval mode alike.
"""

from __future__ import annotations

import numbers
from typing import Any

from ..._core._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter, new_tensor
from .batchnorm import _BatchNorm
from .module import Module

__all__ = ["BatchNorm3d", "LocalResponseNorm", "RMSNorm", "SyncBatchNorm"]


class RMSNorm(Module):
    """Divide by the root mean square over the last dims (``normalized_shape``), then scale
    elementwise by ``weight`` (1 at first); ``eps=None``: the dtype's machine epsilon."""

    normalized_shape: tuple[int, ...]
    eps: float | None
    elementwise_affine: bool
    weight: Parameter | None

    def __init__(
        self, normalized_shape: Any, eps: float | None = None, elementwise_affine: bool = True, device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if self.elementwise_affine:
            self.weight = Parameter(new_tensor(self.normalized_shape, dtype, device))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight 1."""
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:
        """``F.rms_norm(x, normalized_shape, weight, eps)``."""
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """``normalized_shape, eps=..., elementwise_affine=...``."""
        return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}".format(**self.__dict__)


class LocalResponseNorm(Module):
    """Normalise each channel by its ``size`` neighbouring channels:
    ``x / (k + alpha * mean(x ** 2)) ** beta`` (``F.local_response_norm``)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        """``F.local_response_norm(input, size, alpha, beta, k)``."""
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """``size, alpha=..., beta=..., k=...``."""
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


class BatchNorm3d(_BatchNorm):
    """Batch normalisation over (N, C, D, H, W) inputs."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation over any (N, C, ...) input. torch synchronises the statistics over
    the processes of an initialised process group; with none (always so in aiograd) it is the
    single-process ``BatchNorm``, as here. ``process_group`` is kept, unused."""

    def __init__(
        self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
        track_running_stats: bool = True, process_group: Any | None = None, device: Any = None, dtype: Any = None,
        *, bias: bool = True,
    ) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input: Tensor) -> Tensor:
        """``BatchNorm``'s forward (no process group to synchronise with)."""
        self._check_input_dim(input)
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any | None = None) -> Module:
        """``module`` with every BatchNorm layer in it (itself included) replaced by a
        ``SyncBatchNorm`` sharing its parameters and running statistics, as torch's."""
        module_output = module
        if isinstance(module, _BatchNorm):
            module_output = SyncBatchNorm(
                module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats,
                process_group, bias=module.bias is not None,
            )
            if module.affine:
                module_output.weight = module.weight
                module_output.bias = module.bias
            module_output.running_mean = module.running_mean
            module_output.running_var = module.running_var
            module_output.num_batches_tracked = module.num_batches_tracked
            module_output.training = module.training
            if hasattr(module, "qconfig"):
                module_output.qconfig = module.qconfig
        for name, child in module.named_children():
            module_output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return module_output
