"""Lazy modules (torch/nn/modules/lazy.py and the ``Lazy*`` layers): ``LazyLinear``, the lazy
convolutions, batch and instance norms. Their parameters are ``UninitializedParameter``s (the
running statistics ``UninitializedBuffer``s) until the first forward, which infers
``in_features``/``in_channels``/``num_features`` from the input, materialises them in place,
initialises them with the real layer's ``reset_parameters`` (the same draws as torch's, after
the same seed) and turns the module into that layer (``cls_to_become``). ``load_state_dict``
into an uninitialized module materialises the parameters from the loaded shapes, as torch's
load hook does (here in ``_load_from_state_dict``)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ..._base._grad_mode import no_grad
from ..._core._tensor import Tensor
from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy, new_tensor
from .batchnorm import BatchNorm1d, BatchNorm2d, _BatchNorm, _NormBase
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, _InstanceNorm
from .linear import Linear
from .normalization_extra import BatchNorm3d

__all__ = [
    "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d", "LazyConv2d", "LazyConv3d",
    "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyInstanceNorm1d",
    "LazyInstanceNorm2d", "LazyInstanceNorm3d", "LazyLinear", "LazyModuleMixin",
]


class LazyModuleMixin:
    """A module whose parameters are inferred from its first input (torch's mixin)."""

    cls_to_become: type[Any] | None = None
    _parameters: dict[str, Any]
    _buffers: dict[str, Any]
    _non_persistent_buffers_set: set[str]

    def _lazy_setup(self) -> None:
        self._initialize_hook = self.register_forward_pre_hook(  # type: ignore[attr-defined]
            self._infer_parameters, with_kwargs=True)
        self._load_hook = True

    def _save_to_state_dict(self, destination: dict[str, Any], prefix: str, keep_vars: bool) -> None:
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if is_lazy(param) or keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if is_lazy(buf) or keep_vars else buf.detach()

    def _load_from_state_dict(
        self, state_dict: dict[str, Any], prefix: str, local_metadata: dict[str, Any], strict: bool,
        missing_keys: list[str], unexpected_keys: list[str], error_msgs: list[str],
    ) -> None:
        if getattr(self, "_load_hook", None) is not None:  # torch's _lazy_load_hook
            for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
                key = prefix + name
                if key in state_dict and param is not None:
                    input_param = state_dict[key]
                    if is_lazy(param) and not is_lazy(input_param):
                        with no_grad():
                            param.materialize(input_param.shape)
        super()._load_from_state_dict(  # type: ignore[misc]
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        """Materialise and initialise the parameters from the input (each lazy layer's)."""
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer is still uninitialized."""
        return any(is_lazy(p) for p in itertools.chain(self._parameters.values(), self._buffers.values()))

    def _infer_parameters(self, module: Any, args: Any, kwargs: Any = None) -> None:
        kwargs = kwargs if kwargs else {}
        module.initialize_parameters(*args, **kwargs)
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")  # type: ignore[attr-defined]
        module._initialize_hook.remove()
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self) -> Any:
        raise RuntimeError(
            "Modules with uninitialized parameters can't be used with `DataParallel`. "
            "Run a dummy forward pass to correctly initialize the modules"
        )


# ------------------------------------------------------------------------------ linear
class LazyLinear(LazyModuleMixin, Linear):
    """A ``Linear`` whose ``in_features`` is the last size of its first input."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__(0, 0, False)
        self._lazy_setup()
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        """``Linear``'s, once materialised (and with inputs)."""
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:  # type: ignore[override]
        """``in_features = input.shape[-1]``; the weight and bias materialised and drawn."""
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))  # type: ignore[attr-defined]
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))  # type: ignore[attr-defined]
                self.reset_parameters()
        if self.in_features == 0:  # (materialised by load_state_dict)
            if input.shape[-1] != self.weight.shape[-1]:
                raise AssertionError(
                    f"The in_features inferred from input: {input.shape[-1]} "
                    f"is not equal to in_features from self.weight: {self.weight.shape[-1]}"
                )
            self.in_features = input.shape[-1]


# ------------------------------------------------------------------------------ convolutions
class _LazyConvXdMixin(LazyModuleMixin):
    in_channels: int
    out_channels: int
    groups: int
    transposed: bool
    kernel_size: tuple[int, ...]
    weight: Any
    bias: Any
    _dims_of_lazy: int

    def _lazy_params(self, out_channels: int, bias: bool, device: Any, dtype: Any) -> None:
        self._lazy_setup()
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        """The convolution's, once materialised (and with input channels)."""
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()  # type: ignore[misc]

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        """``in_channels`` from the input; the weight and bias materialised and drawn."""
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self.transposed:
                self.weight.materialize((self.in_channels, self.out_channels // self.groups, *self.kernel_size))
            else:
                self.weight.materialize((self.out_channels, self.in_channels // self.groups, *self.kernel_size))
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()

    def _get_in_channels(self, input: Tensor) -> int:
        num_dims_no_batch = self._dims_of_lazy + 1
        num_dims_batch = num_dims_no_batch + 1
        if input.dim() not in (num_dims_no_batch, num_dims_batch):
            raise RuntimeError(
                f"Expected {num_dims_no_batch}D (unbatched) or {num_dims_batch}D (batched) input to "
                f"{self.__class__.__name__}, but got input of size: {input.shape}"
            )
        return input.shape[1] if input.dim() == num_dims_batch else input.shape[0]  # type: ignore[no-any-return]


class _LazyConv(_LazyConvXdMixin):
    """A convolution whose ``in_channels`` is inferred from its first input (``cls_to_become``'s
    arguments without ``in_channels``)."""

    cls_to_become: Any

    def __init__(
        self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
        groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device: Any = None, dtype: Any = None,
    ) -> None:
        self.cls_to_become.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode,
                                    device, dtype)
        self._lazy_params(out_channels, bias, device, dtype)


class _LazyConvTranspose(_LazyConvXdMixin):
    """A transposed convolution whose ``in_channels`` is inferred from its first input."""

    cls_to_become: Any

    def __init__(
        self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0, output_padding: Any = 0,
        groups: int = 1, bias: bool = True, dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
        dtype: Any = None,
    ) -> None:
        self.cls_to_become.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation,
                                    padding_mode, device, dtype)
        self._lazy_params(out_channels, bias, device, dtype)


class LazyConv1d(_LazyConv, Conv1d):
    """A ``Conv1d`` whose ``in_channels`` is inferred from its first input."""

    cls_to_become = Conv1d
    _dims_of_lazy = 1


class LazyConv2d(_LazyConv, Conv2d):
    """A ``Conv2d`` whose ``in_channels`` is inferred from its first input."""

    cls_to_become = Conv2d
    _dims_of_lazy = 2


class LazyConv3d(_LazyConv, Conv3d):
    """A ``Conv3d`` whose ``in_channels`` is inferred from its first input."""

    cls_to_become = Conv3d
    _dims_of_lazy = 3


class LazyConvTranspose1d(_LazyConvTranspose, ConvTranspose1d):
    """A ``ConvTranspose1d`` whose ``in_channels`` is inferred from its first input."""

    cls_to_become = ConvTranspose1d
    _dims_of_lazy = 1


class LazyConvTranspose2d(_LazyConvTranspose, ConvTranspose2d):
    """A ``ConvTranspose2d`` whose ``in_channels`` is inferred from its first input."""

    cls_to_become = ConvTranspose2d
    _dims_of_lazy = 2


class LazyConvTranspose3d(_LazyConvTranspose, ConvTranspose3d):
    """A ``ConvTranspose3d`` whose ``in_channels`` is inferred from its first input."""

    cls_to_become = ConvTranspose3d
    _dims_of_lazy = 3


class _LazyNormBase(LazyModuleMixin, _NormBase):
    num_features: int
    affine: bool
    track_running_stats: bool

    def __init__(
        self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
        track_running_stats: bool = True, device: Any = None, dtype: Any = None, *, bias: bool = True,
    ) -> None:
        _NormBase.__init__(self, 0, eps, momentum, False, False, device, dtype, bias=False)
        self._lazy_setup()
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = new_tensor((), np.int64, device)

    def reset_parameters(self) -> None:
        """The norm's, once materialised (and with features)."""
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:  # type: ignore[override]
        """``num_features = input.shape[1]``; the parameters and statistics materialised."""
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            if self.affine:
                self.weight.materialize((self.num_features,))  # type: ignore[union-attr]
                if self.bias is not None:
                    self.bias.materialize((self.num_features,))  # type: ignore[attr-defined]
            if self.track_running_stats:
                self.running_mean.materialize((self.num_features,))  # type: ignore[union-attr]
                self.running_var.materialize((self.num_features,))  # type: ignore[union-attr]
            self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    """A ``BatchNorm1d`` whose ``num_features`` is inferred from its first input."""

    cls_to_become = BatchNorm1d
    _check_input_dim = BatchNorm1d._check_input_dim


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    """A ``BatchNorm2d`` whose ``num_features`` is inferred from its first input."""

    cls_to_become = BatchNorm2d
    _check_input_dim = BatchNorm2d._check_input_dim


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    """A ``BatchNorm3d`` whose ``num_features`` is inferred from its first input."""

    cls_to_become = BatchNorm3d
    _check_input_dim = BatchNorm3d._check_input_dim


class LazyInstanceNorm1d(_LazyNormBase, _InstanceNorm):
    """An ``InstanceNorm1d`` whose ``num_features`` is inferred from its first input."""

    cls_to_become = InstanceNorm1d
    _check_input_dim = InstanceNorm1d._check_input_dim
    _no_batch_dim = InstanceNorm1d._no_batch_dim


class LazyInstanceNorm2d(_LazyNormBase, _InstanceNorm):
    """An ``InstanceNorm2d`` whose ``num_features`` is inferred from its first input."""

    cls_to_become = InstanceNorm2d
    _check_input_dim = InstanceNorm2d._check_input_dim
    _no_batch_dim = InstanceNorm2d._no_batch_dim


class LazyInstanceNorm3d(_LazyNormBase, _InstanceNorm):
    """An ``InstanceNorm3d`` whose ``num_features`` is inferred from its first input."""

    cls_to_become = InstanceNorm3d
    _check_input_dim = InstanceNorm3d._check_input_dim
    _no_batch_dim = InstanceNorm3d._no_batch_dim
