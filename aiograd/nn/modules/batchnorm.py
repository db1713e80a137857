"""``BatchNorm1d`` and ``BatchNorm2d`` (torch/nn/modules/batchnorm.py): affine ``weight``/``bias``
and the running statistics as buffers (``running_mean``, ``running_var``,
``num_batches_tracked``), updated by ``F.batch_norm`` while training; ``momentum=None`` is the
cumulative average."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._core._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter, new_tensor
from .module import Module
from .normalization import register_affine, reset_affine

__all__ = ["BatchNorm1d", "BatchNorm2d"]


class _NormBase(Module):

    weight: Parameter | None
    bias: Parameter | None
    running_mean: Tensor | None
    running_var: Tensor | None
    num_batches_tracked: Tensor | None
    _version = 2

    def __init__(
        self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
        track_running_stats: bool = True, device: Any = None, dtype: Any = None, *, bias: bool = True,
    ) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        register_affine(self, self.affine, (num_features,), bias, dtype, device)
        if self.track_running_stats:
            self.register_buffer("running_mean", new_tensor((num_features,), dtype, device))
            self.register_buffer("running_var", new_tensor((num_features,), dtype, device, fill=1.0))
            self.register_buffer("num_batches_tracked", new_tensor((), np.int64, device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Running mean 0, running variance 1, no batch tracked."""
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            init.zeros_(self.num_batches_tracked)

    def reset_parameters(self) -> None:
        """Reset the running statistics, weight 1 and bias 0."""
        self.reset_running_stats()
        reset_affine(self, self.affine)

    def _check_input_dim(self, input: Tensor) -> None:
        raise NotImplementedError

    def extra_repr(self) -> str:
        """``num_features, eps=..., momentum=..., affine=..., bias=..., track_running_stats=...``."""
        return (
            "{num_features}, eps={eps}, momentum={momentum}, affine={affine}, "
            "bias={use_bias}, track_running_stats={track_running_stats}".format(
                **self.__dict__, use_bias=self.bias is not None
            )
        )

    def _load_from_state_dict(
        self, state_dict: dict[str, Any], prefix: str, local_metadata: dict[str, Any], strict: bool,
        missing_keys: list[str], unexpected_keys: list[str], error_msgs: list[str],
    ) -> None:
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            # state dicts from before num_batches_tracked existed (or without metadata, as a
            # safetensors file) load with the count kept, as torch does
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = (
                    self.num_batches_tracked if self.num_batches_tracked is not None else new_tensor((), np.int64)
                )
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )


class _BatchNorm(_NormBase):
    def forward(self, input: Tensor) -> Tensor:
        """Normalise with the batch's statistics while training (updating the running ones),
        with the running statistics in eval mode."""
        self._check_input_dim(input)
        exponential_average_factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                exponential_average_factor = 1.0 / float(self.num_batches_tracked)
            else:
                exponential_average_factor = self.momentum
        if self.training:
            bn_training = True
        else:
            bn_training = (self.running_mean is None) and (self.running_var is None)
        use_running = not self.training or self.track_running_stats
        return F.batch_norm(  # type: ignore[attr-defined]
            input,
            self.running_mean if use_running else None,
            self.running_var if use_running else None,
            self.weight,
            self.bias,
            bn_training,
            exponential_average_factor,
            self.eps,
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over (N, C) or (N, C, L) inputs."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over (N, C, H, W) inputs."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")
