"""Old-style weight normalization (torch/nn/utils/weight_norm.py): ``weight_norm`` splits a
parameter into a magnitude ``<name>_g`` and a direction ``<name>_v`` and recomputes
``<name> = g * v / ||v||`` in a forward pre-hook; ``remove_weight_norm`` undoes it. torch
deprecates it (a ``FutureWarning``) for ``parametrizations.weight_norm``; so does aiograd.
Also ``norm_except_dim`` and ``_weight_norm``, torch's two ops behind both styles."""

from __future__ import annotations

import warnings
from typing import Any, TypeVar

from ..._base._grad_mode import no_grad
from ..._core._tensor import Tensor
from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["WeightNorm", "norm_except_dim", "remove_weight_norm", "weight_norm"]

T_module = TypeVar("T_module", bound=Module)


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """torch.norm_except_dim: the ``pow``-norm of ``v`` over every dim but ``dim``, shaped to
    broadcast against ``v`` (size 1 in the other dims); ``dim=-1``: the norm of the whole tensor
    (0-d)."""
    if dim == -1:
        return v.norm(pow)
    ndim = v.dim()
    if dim < 0:
        dim += ndim
    moved = v if dim == 0 else v.transpose(0, dim)
    norms = moved.reshape(moved.shape[0], -1).norm(pow, dim=1)
    out_shape = [1] * ndim
    out_shape[dim] = v.shape[dim]
    return norms.reshape(tuple(out_shape))


def _weight_norm(v: Tensor, g: Tensor, dim: int = 0) -> Tensor:
    """torch._weight_norm: ``v * (g / norm_except_dim(v, 2, dim))``."""
    return v * (g / norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook of :func:`weight_norm`: recomputes ``module.<name>`` from
    ``<name>_g`` and ``<name>_v``."""

    name: str
    dim: int

    def __init__(self, name: str, dim: int | None) -> None:
        if dim is None:
            dim = -1
        self.name = name
        self.dim = dim

    def compute_weight(self, module: Module) -> Tensor:
        """``g * v / ||v||`` (norm over every dim but ``dim``) from the module's parameters."""
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: int | None) -> WeightNorm:
        """Split ``module.<name>`` into ``<name>_g`` and ``<name>_v`` and register the hook."""
        warnings.warn(
            "`aiograd.nn.utils.weight_norm` is deprecated in favor of "
            "`aiograd.nn.utils.parametrizations.weight_norm`.",
            FutureWarning,
            stacklevel=3,
        )
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(
                    f"Cannot register two weight_norm hooks on the same parameter {name}"
                )
        if dim is None:
            dim = -1
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        with no_grad():
            g = norm_except_dim(weight, 2, dim).detach()
        module.register_parameter(name + "_g", Parameter(g))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        """Make ``<name>`` a plain parameter again, with its current value."""
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: T_module, name: str = "weight", dim: int | None = 0) -> T_module:
    """Apply weight normalization to the parameter ``name`` of ``module`` (deprecated, as in
    torch: use ``aiograd.nn.utils.parametrizations.weight_norm``). The parameter is replaced by
    ``<name>_g`` (its norm over every dim but ``dim``; ``dim=None``: the whole norm) and
    ``<name>_v`` (its direction), and a forward pre-hook recomputes
    ``<name> = g * v / ||v||`` before each call. Returns ``module``."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: T_module, name: str = "weight") -> T_module:
    """Undo :func:`weight_norm` on ``name``: a plain parameter again, with its current value."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
