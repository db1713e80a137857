"""The activations as modules (torch/nn/modules/activation.py): each calls its
``nn.functional`` function with the settings it was built with."""

from __future__ import annotations

import warnings
from collections.abc import Callable

from ..._core._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = [
    "ELU", "GELU", "Hardtanh", "LeakyReLU", "LogSoftmax", "Mish", "ReLU", "ReLU6", "SiLU", "Sigmoid",
    "Softmax", "Softplus", "Tanh",
]


def _inplace_str(inplace: bool, leading: str = ", ") -> str:
    return f"{leading}inplace=True" if inplace else ""


class _InplaceOnly(Module):
    """An activation whose one setting is ``inplace``."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        """``inplace=True`` when set."""
        return _inplace_str(self.inplace, "")


class _OverDim(Module):
    """An activation over one dimension ``dim`` (``None``: PyTorch's legacy choice, with its
    warning): ``_function(input, dim)``."""

    _function: Callable[..., Tensor]

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """``_function(input, dim)``."""
        return self._function(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        """``dim=...``."""
        return f"dim={self.dim}"


class ReLU(_InplaceOnly):
    """``max(0, x)``; ``inplace=True`` overwrites the input."""

    def forward(self, input: Tensor) -> Tensor:
        """``F.relu(input)`` (``input.relu_()`` in place)."""
        return input.relu_() if self.inplace else F.relu(input)


class Tanh(Module):
    """``tanh(x)``."""

    def forward(self, input: Tensor) -> Tensor:
        """``F.tanh(input)``."""
        return F.tanh(input)


class Sigmoid(Module):
    """``1 / (1 + exp(-x))``."""

    def forward(self, input: Tensor) -> Tensor:
        """``F.sigmoid(input)``."""
        return F.sigmoid(input)


class Softmax(_OverDim):
    """Softmax over ``dim``: ``F.softmax(input, dim)``."""

    _function = staticmethod(F.softmax)


class LogSoftmax(_OverDim):
    """Log of the softmax over ``dim``: ``F.log_softmax(input, dim)``."""

    _function = staticmethod(F.log_softmax)


class GELU(Module):
    """Gaussian error linear unit; ``approximate='tanh'`` for the tanh approximation."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        """``F.gelu(input, approximate=...)``."""
        return F.gelu(input, approximate=self.approximate)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """``approximate='...'``."""
        return f"approximate={repr(self.approximate)}"


class SiLU(_InplaceOnly):
    """``x * sigmoid(x)``."""

    def forward(self, input: Tensor) -> Tensor:
        """``F.silu(input, inplace)``."""
        return F.silu(input, inplace=self.inplace)  # type: ignore[attr-defined]


class Mish(_InplaceOnly):
    """``x * tanh(softplus(x))``."""

    def forward(self, input: Tensor) -> Tensor:
        """``F.mish(input, inplace)``."""
        return F.mish(input, inplace=self.inplace)  # type: ignore[attr-defined]


class ELU(Module):
    """``x`` if positive, else ``alpha * (exp(x) - 1)``."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """``F.elu(input, alpha, inplace)``."""
        return F.elu(input, self.alpha, self.inplace)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """``alpha=...`` and ``inplace=True`` when set."""
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class LeakyReLU(Module):
    """``x`` if positive, else ``negative_slope * x``."""

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """``F.leaky_relu(input, negative_slope, inplace)``."""
        return F.leaky_relu(input, self.negative_slope, self.inplace)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """``negative_slope=...`` and ``inplace=True`` when set."""
        return f"negative_slope={self.negative_slope}{_inplace_str(self.inplace)}"


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta``, linear above ``threshold``."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        """``F.softplus(input, beta, threshold)``."""
        return F.softplus(input, self.beta, self.threshold)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """``beta=..., threshold=...``."""
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """``x`` clamped to ``[min_val, max_val]``."""

    def __init__(
        self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
        min_value: float | None = None, max_value: float | None = None,
    ) -> None:
        super().__init__()
        if min_value is not None:
            warnings.warn(
                "keyword argument `min_value` is deprecated and renamed to `min_val`",
                FutureWarning,
                stacklevel=2,
            )
            min_val = min_value
        if max_value is not None:
            warnings.warn(
                "keyword argument `max_value` is deprecated and renamed to `max_val`",
                FutureWarning,
                stacklevel=2,
            )
            max_val = max_value
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise AssertionError(f"max_val ({self.max_val}) must be greater than min_val ({self.min_val})")

    def forward(self, input: Tensor) -> Tensor:
        """``F.hardtanh(input, min_val, max_val, inplace)``."""
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """``min_val=..., max_val=...`` and ``inplace=True`` when set."""
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_str(self.inplace)}"


class ReLU6(Hardtanh):
    """``min(max(0, x), 6)``."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        """``inplace=True`` when set."""
        return _inplace_str(self.inplace, "")



