"""Old-style spectral normalization (torch/nn/utils/spectral_norm.py): ``spectral_norm`` keeps the
parameter as ``<name>_orig`` with power-iteration buffers ``<name>_u`` and ``<name>_v`` and
recomputes ``<name> = orig / sigma`` in a forward pre-hook, running one power-iteration step per
call in training mode; ``remove_spectral_norm`` undoes it. The state dict records the hook's
version in ``_metadata`` as torch does."""

from __future__ import annotations

from typing import Any, TypeVar

from ..._base._grad_mode import no_grad
from ..._core._node import RemovableHandle
from ..._core._tensor import Tensor
from .. import functional as F
from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["SpectralNorm", "SpectralNormStateDictHook", "remove_spectral_norm", "spectral_norm"]

T_module = TypeVar("T_module", bound=Module)


def _transposed_convs() -> tuple[type, ...]:
    from ..modules import conv

    return tuple(
        getattr(conv, n)
        for n in ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")
        if hasattr(conv, n)
    )


class SpectralNorm:
    """The forward pre-hook of :func:`spectral_norm`: recomputes ``module.<name>`` as
    ``<name>_orig / sigma``, sigma estimated by power iteration on ``<name>_u``, ``<name>_v``."""

    _version: int = 1
    name: str
    dim: int
    n_power_iterations: int
    eps: float

    def __init__(
        self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12
    ) -> None:
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError(
                f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}"
            )
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        """``weight`` as a matrix with ``dim`` first: ``(size(dim), -1)``."""
        weight_mat = weight
        if self.dim != 0:
            weight_mat = weight_mat.permute(
                self.dim, *[d for d in range(weight_mat.dim()) if d != self.dim]
            )
        height = weight_mat.shape[0]
        return weight_mat.reshape(height, -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        """``<name>_orig / sigma``, after ``n_power_iterations`` steps updating the buffers in
        place when ``do_power_iteration``."""
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(weight_mat.t().mv(u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(weight_mat.mv(v), dim=0, eps=self.eps))
                u = u.clone()
                v = v.clone()
        sigma = u.dot(weight_mat.mv(v))
        return weight / sigma

    def remove(self, module: Module) -> None:
        """Make ``<name>`` a plain parameter again, holding ``orig / sigma``."""
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(
        module: Module, name: str, n_power_iterations: int, dim: int, eps: float
    ) -> SpectralNorm:
        """Move ``module.<name>`` to ``<name>_orig``, add the ``_u``/``_v`` buffers (random
        normal, normalized) and register the hooks."""
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(
                    f"Cannot register two spectral_norm hooks on the same parameter {name}"
                )
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        with no_grad():
            weight_mat = fn.reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.detach())
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        handle = RemovableHandle(module._state_dict_hooks)
        module._state_dict_hooks[handle.id] = SpectralNormStateDictHook(fn)
        return fn


class SpectralNormStateDictHook:
    """Records ``{"<name>.version": 1}`` under ``"spectral_norm"`` in the module's state dict
    metadata, as torch's hook does."""

    def __init__(self, fn: SpectralNorm) -> None:
        self.fn = fn

    def __call__(
        self, module: Module, state_dict: Any, prefix: str, local_metadata: dict[str, Any]
    ) -> None:
        if "spectral_norm" not in local_metadata:
            local_metadata["spectral_norm"] = {}
        key = self.fn.name + ".version"
        if key in local_metadata["spectral_norm"]:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        local_metadata["spectral_norm"][key] = self.fn._version


def spectral_norm(
    module: T_module,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: int | None = None,
) -> T_module:
    """Apply spectral normalization to the parameter ``name`` of ``module`` (torch's old-style
    ``nn.utils.spectral_norm``): ``<name> = <name>_orig / sigma``, sigma the largest singular
    value of the weight as a matrix (``dim`` first; by default 1 for transposed convolutions, 0
    otherwise), estimated with ``n_power_iterations`` power-iteration steps per call in training
    mode on the buffers ``<name>_u`` and ``<name>_v``. Returns ``module``."""
    if dim is None:
        dim = 1 if isinstance(module, _transposed_convs()) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: T_module, name: str = "weight") -> T_module:
    """Undo :func:`spectral_norm` on ``name``: a plain parameter again, holding ``orig / sigma``."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            break
    else:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    for k, hook in module._state_dict_hooks.items():
        if isinstance(hook, SpectralNormStateDictHook) and hook.fn.name == name:
            del module._state_dict_hooks[k]
            break
    return module
