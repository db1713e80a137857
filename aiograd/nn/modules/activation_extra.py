"""More activations as modules (torch/nn/modules/activation.py): ``Hardswish``, ``Hardsigmoid``,
``LogSigmoid``, ``GLU``, ``PReLU``, ``SELU``, ``CELU``, ``Softsign``, ``Tanhshrink``,
``Threshold``, ``Softmin`` and ``Softmax2d``."""

from __future__ import annotations

from typing import Any

from ..._core._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter, new_tensor
from .activation import _inplace_str, _InplaceOnly, _OverDim
from .module import Module

__all__ = [
    "CELU", "GLU", "Hardsigmoid", "Hardswish", "LogSigmoid", "PReLU", "SELU", "Softmax2d", "Softmin",
    "Softsign", "Tanhshrink", "Threshold",
]


class Hardswish(_InplaceOnly):
    """``x * relu6(x + 3) / 6``."""

    def forward(self, input: Tensor) -> Tensor:
        """``F.hardswish(input, inplace)``."""
        return F.hardswish(input, self.inplace)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """Nothing, as torch's."""
        return ""


class Hardsigmoid(_InplaceOnly):
    """``relu6(x + 3) / 6``."""

    def forward(self, input: Tensor) -> Tensor:
        """``F.hardsigmoid(input, inplace)``."""
        return F.hardsigmoid(input, self.inplace)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """Nothing, as torch's."""
        return ""


class SELU(_InplaceOnly):
    """``scale * elu(x, alpha)`` with the self-normalising constants."""

    def forward(self, input: Tensor) -> Tensor:
        """``F.selu(input, inplace)``."""
        return F.selu(input, self.inplace)  # type: ignore[attr-defined]


class CELU(Module):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """``F.celu(input, alpha, inplace)``."""
        return F.celu(input, self.alpha, self.inplace)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """``alpha=...`` and ``inplace=True`` when set."""
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class LogSigmoid(Module):
    """``log(sigmoid(x))``."""

    def forward(self, input: Tensor) -> Tensor:
        """``F.logsigmoid(input)``."""
        return F.logsigmoid(input)  # type: ignore[attr-defined]


class Softsign(Module):
    """``x / (1 + |x|)``."""

    def forward(self, input: Tensor) -> Tensor:
        """``F.softsign(input)``."""
        return F.softsign(input)  # type: ignore[attr-defined]


class Tanhshrink(Module):
    """``x - tanh(x)``."""

    def forward(self, input: Tensor) -> Tensor:
        """``F.tanhshrink(input)``."""
        return F.tanhshrink(input)  # type: ignore[attr-defined]


class GLU(Module):
    """``a * sigmoid(b)`` over the two halves of ``dim``."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """``F.glu(input, dim)``."""
        return F.glu(input, self.dim)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """``dim=...``."""
        return f"dim={self.dim}"


class Threshold(Module):
    """``x`` above ``threshold``, ``value`` elsewhere."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """``F.threshold(input, threshold, value, inplace)``."""
        return F.threshold(input, self.threshold, self.value, self.inplace)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """``threshold=..., value=...`` and ``inplace=True`` when set."""
        return f"threshold={self.threshold}, value={self.value}{_inplace_str(self.inplace)}"


class Softmin(_OverDim):
    """Softmin over ``dim``: ``F.softmin(input, dim)``."""

    _function = staticmethod(F.softmin)  # type: ignore[attr-defined]


class Softmax2d(Module):
    """Softmax over the channels of ``(N, C, H, W)`` or ``(C, H, W)``."""

    def forward(self, input: Tensor) -> Tensor:
        """``F.softmax(input, -3)``."""
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3, _stacklevel=5)


class PReLU(Module):
    """``x`` where positive, ``weight * x`` elsewhere; a learnt weight, one or one per channel."""

    weight: Parameter

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(new_tensor((num_parameters,), dtype, device))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every slope ``init``."""
        _init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        """``F.prelu(input, weight)``."""
        return F.prelu(input, self.weight)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """``num_parameters=...``."""
        return f"num_parameters={self.num_parameters}"


_init = init
