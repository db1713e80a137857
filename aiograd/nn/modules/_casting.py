"""``Module``'s moving and casting (torch/nn/modules/module.py): ``to``, ``cpu``, ``cuda``,
``float``, ``double``, ``half``, ``type`` and ``apply``, in place through ``_apply`` (parameters keep
their identity); a base class of ``Module``, apart so that each file has one job."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._base._grad_mode import no_grad
from ..._core._tensor import Tensor
from ..._devices._device import CPU
from ..._ops.casting import _to_args, to

if TYPE_CHECKING:
    from typing import Self

__all__ = ["Casting"]


class Casting:
    """Moves and casts a module tree's parameters, gradients and buffers; ``Module`` sets the
    stores and ``Traversal`` gives ``children``."""

    _parameters: dict[str, Any]
    _buffers: dict[str, Any]

    if TYPE_CHECKING:

        def children(self) -> Iterator[Any]: ...

    def _apply(self, fn: Callable[[Tensor], Tensor]) -> Self:
        """Apply ``fn`` to every parameter, gradient and buffer, as torch's ``_apply``: a parameter
        stays the same object and gets the new data (``param.data = fn(param)``), buffers are
        replaced."""
        for module in self.children():
            module._apply(fn)
        for param in self._parameters.values():
            if param is None:
                continue
            with no_grad():
                _set_data(param, fn(param))
            if param._grad is not None:
                with no_grad():
                    _set_data(param._grad, fn(param._grad))
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def apply(self, fn: Callable[[Any], None]) -> Self:
        """Call ``fn`` on every submodule (children first) and then on this module; returns self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Self:
        """Move and/or cast the parameters and buffers, as ``torch.nn.Module.to``:
        ``to(device)``, ``to(dtype)`` (floating point tensors only), ``to(device, dtype)``,
        ``to(tensor)``; in place (parameters stay the same objects), returns self."""
        device, dtype, _ = _to_args(args, kwargs)
        if dtype is not None and dtype.kind not in "fc":
            raise TypeError(
                f"nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=aiograd.{dtype}"
            )

        def convert(t: Tensor) -> Tensor:
            if dtype is not None and t.data.dtype.kind in "fc":
                return to(t, device, dtype) if device is not None else to(t, dtype)
            return to(t, device) if device is not None else t

        return self._apply(convert)

    def cpu(self) -> Self:
        """Move every parameter and buffer to the CPU; returns self."""
        return self._apply(lambda t: to(t, CPU))

    def cuda(self, device: Any = None) -> Self:
        """Move every parameter and buffer to a CUDA device (``cuda:0`` by default)."""
        return self._apply(lambda t: t.cuda(device))

    def type(self, dst_type: Any) -> Self:
        """Cast every parameter and buffer to ``dst_type``."""
        return self._apply(lambda t: to(t, dst_type))

    def float(self) -> Self:
        """Cast floating point parameters and buffers to float32."""
        return self._apply(lambda t: to(t, np.float32) if t.data.dtype.kind == "f" else t)

    def double(self) -> Self:
        """Cast floating point parameters and buffers to float64."""
        return self._apply(lambda t: to(t, np.float64) if t.data.dtype.kind == "f" else t)

    def half(self) -> Self:
        """Cast floating point parameters and buffers to float16."""
        return self._apply(lambda t: to(t, np.float16) if t.data.dtype.kind == "f" else t)



def _set_data(param: Tensor, new: Tensor) -> None:
    """``param.data = new``: ``param`` keeps its identity and takes ``new``'s array and device."""
    param.data = new.data
    if new._device is CPU:
        param.__dict__.pop("_device", None)
    else:
        param._device = new._device
