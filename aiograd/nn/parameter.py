"""``Parameter`` (torch.nn.Parameter): a Tensor that a ``Module`` registers as one of its weights,
and ``Buffer`` (torch.nn.Buffer), a tensor marked to be registered as a buffer."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._base._dtypes import get_default_dtype
from .._core._tensor import Tensor
from .._devices._device import CPU, device_type, get_default_device, placement

__all__ = ["Buffer", "Parameter", "new_tensor"]


def new_tensor(shape: tuple[int, ...], dtype: Any = None, device: Any = None, fill: float | None = None) -> Tensor:
    """A fresh tensor for a layer's weight or buffer: ``dtype`` the default dtype by default
    (``get_default_dtype``, as torch's layers), on ``device`` (the default device when None, as
    the factories); zeros, or ``fill``. The layers initialise their weights afterwards
    (``reset_parameters``)."""
    data = np.full(shape, 0.0 if fill is None else fill, dtype=get_default_dtype() if dtype is None else np.dtype(dtype))
    out = Tensor._wrap(data)
    dev = get_default_device() if device is None else placement(device)
    if dev is not CPU:
        out.data = device_type(dev.type).to_device(data, dev.index)
        out._device = dev
    return out


class Parameter(Tensor):
    """A tensor that is a module's parameter: assigned as a ``Module`` attribute it is registered
    (``parameters()``, ``state_dict()``). ``requires_grad`` is True by default. It shares
    ``data``'s array, as ``torch.nn.Parameter`` shares its storage."""

    data: np.ndarray[Any, Any]

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        if data is None:
            data = np.empty(0, dtype=np.float32)
        if not isinstance(data, Tensor):
            super().__init__(data, requires_grad)
            return
        # the tensor's own array, whatever its device's array type (Tensor() would make a
        # host copy of a device array)
        if requires_grad and data.data.dtype.kind != "f":
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        self.data = data.data
        if data._device is not CPU:
            self._device = data._device
        self._requires_grad = bool(requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict[int, Any]) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        copied = Tensor._wrap(self.data.copy())
        if self._device is not CPU:
            copied._device = self._device
        result = Parameter(copied, self._requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (_rebuild_parameter, (self.detach().cpu().data, self._requires_grad))


def _rebuild_parameter(data: Any, requires_grad: bool) -> Parameter:
    return Parameter(data, requires_grad)


class Buffer(Tensor):
    """A tensor that a ``Module`` registers as a buffer when assigned as an attribute
    (torch.nn.Buffer); ``persistent=False`` keeps it out of ``state_dict()``. Registration keeps
    the tensor's data as a plain Tensor."""

    data: np.ndarray[Any, Any]
    persistent: bool

    def __init__(self, data: Any, *, persistent: bool = True) -> None:
        tensor = data if isinstance(data, Tensor) else Tensor(data)
        self.data = tensor.data  # (kept as it is: Tensor() would copy a device array to the host)
        if tensor._device is not CPU:
            self._device = tensor._device
        self.persistent = persistent
