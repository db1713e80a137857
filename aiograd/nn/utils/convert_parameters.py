"""``parameters_to_vector`` and ``vector_to_parameters`` (torch/nn/utils/convert_parameters.py)."""

from __future__ import annotations

from collections.abc import Iterable

from ..._base._grad_mode import no_grad
from ..._core._tensor import Tensor
from ..._ops.joining import cat
from ..modules.module import typename

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened and concatenated into one vector (differentiable)."""
    return cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of ``vec`` into the parameters, in place (torch makes each
    parameter share ``vec``'s memory instead; the values are the same)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected aiograd.Tensor, but got: {typename(vec)}")
    pointer = 0
    with no_grad():
        for param in parameters:
            num_param = param.numel()
            param.copy_(vec[pointer:pointer + num_param].view_as(param))
            pointer += num_param
