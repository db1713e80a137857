"""``Identity``, ``Linear`` (torch/nn/modules/linear.py)."""

from __future__ import annotations

import math
from typing import Any

from ..._core._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter, new_tensor
from .module import Module

__all__ = ["Identity", "Linear", "NonDynamicallyQuantizableLinear"]


def register_weight_and_bias(
    module: Module, weight_shape: tuple[int, ...], bias_shape: tuple[int, ...] | None, dtype: Any, device: Any
) -> None:
    """``module.weight`` of ``weight_shape`` and ``module.bias`` of ``bias_shape`` (None when that
    is), as Parameters whose values ``reset_parameters`` draws."""
    module.weight = Parameter(new_tensor(weight_shape, dtype, device))
    if bias_shape is not None:
        module.bias = Parameter(new_tensor(bias_shape, dtype, device))
    else:
        module.register_parameter("bias", None)


def reset_weight_and_bias(weight: Parameter, bias: Parameter | None, *, bias_without_fan_in: bool) -> None:
    """torch's initialisation of Linear's and the convolutions' parameters: ``weight`` by
    ``kaiming_uniform_(a=sqrt(5))``, ``bias`` from U(-1/sqrt(fan_in), 1/sqrt(fan_in)). With no
    fan-in (an empty weight) torch's Linear still draws its bias, from U(0, 0), and torch's
    convolutions leave theirs untouched: ``bias_without_fan_in`` picks which."""
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is None:
        return
    fan_in, _ = init._calculate_fan_in_and_fan_out(weight)
    if fan_in > 0:
        bound = 1 / math.sqrt(fan_in)
        init.uniform_(bias, -bound, bound)
    elif bias_without_fan_in:
        init.uniform_(bias, 0, 0)


class Identity(Module):
    """Returns its input; any constructor arguments are ignored (a placeholder layer)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        """``input`` itself."""
        return input


class Linear(Module):
    """``y = x @ weight.T + bias`` with ``weight`` of shape (out_features, in_features), both
    initialised as torch's: ``kaiming_uniform_(a=sqrt(5))``, bias U(-1/sqrt(in), 1/sqrt(in))."""

    in_features: int
    out_features: int
    weight: Parameter
    bias: Parameter | None

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        register_weight_and_bias(self, (out_features, in_features), (out_features,) if bias else None, dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw the weight and bias again, as torch's Linear initialises them."""
        reset_weight_and_bias(self.weight, self.bias, bias_without_fan_in=True)

    def forward(self, input: Tensor) -> Tensor:
        """``F.linear(input, weight, bias)``."""
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        """``in_features=..., out_features=..., bias=...``."""
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class NonDynamicallyQuantizableLinear(Linear):
    """A ``Linear`` under the name MultiheadAttention's ``out_proj`` has in torch."""
