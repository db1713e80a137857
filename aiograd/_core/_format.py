"""``repr`` in PyTorch's style: ``tensor([1., 2.], device='sim:0', requires_grad=True)``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._base._dtypes import get_default_dtype

if TYPE_CHECKING:
    from .._core._tensor import Tensor

# Dtypes a reader can infer from the printed values, with the default float dtype (as torch's
# repr: float32 goes unsaid, float64 is spelled out unless it is the default); any other dtype
# is spelled out.
_IMPLIED = {np.dtype(np.int64), np.dtype(np.bool_)}


def format_tensor(t: Tensor, data: Any = None) -> str:
    """``repr(t)``; ``data`` is ``t``'s data as a numpy array where it is not one (a host copy
    of a CUDA tensor's)."""
    if data is None:
        data = t.data
    prefix = "tensor("
    # PyTorch's order: device, size (of an empty tensor), dtype, then grad_fn or requires_grad.
    extras = [] if t._device.type == "cpu" else [f"device='{t._device}'"]
    if data.size == 0:
        if data.ndim != 1:
            extras.append(f"size={tuple(data.shape)}")
        body = "[]"
    else:
        finite = data[np.isfinite(data)] if data.dtype.kind == "f" else data
        integral = data.dtype.kind != "f" or bool(np.all(finite == np.round(finite)))
        body = np.array2string(
            data,
            separator=", ",
            prefix=prefix,
            precision=4,
            # PyTorch prints 4 decimals unless every value is a whole number ("1.").
            floatmode="maxprec_equal" if integral else "fixed",
            threshold=1000,
            edgeitems=3,
            max_line_width=80,
        )
    if data.dtype not in _IMPLIED and data.dtype != get_default_dtype():
        extras.append(f"dtype={data.dtype}")
    try:
        grad_fn = t.grad_fn
    except RuntimeError:  # a view that may no longer be used in autograd (its base changed)
        extras.append("grad_fn=<Invalid>")
    else:
        if grad_fn is not None:
            extras.append(f"grad_fn=<{grad_fn.name()}>")
        elif t._requires_grad:
            extras.append("requires_grad=True")
    return prefix + ", ".join([body, *extras]) + ")"


#: PyTorch's legacy tensor type names by dtype (``torch.FloatTensor``), as its error messages
#: print them; aiograd prints ``aiograd.FloatTensor``.
_LEGACY_NAMES = {
    "float16": "HalfTensor", "bfloat16": "BFloat16Tensor", "float32": "FloatTensor",
    "float64": "DoubleTensor", "int8": "CharTensor", "uint8": "ByteTensor", "int16": "ShortTensor",
    "int32": "IntTensor", "int64": "LongTensor", "bool": "BoolTensor",
    "complex64": "ComplexFloatTensor", "complex128": "ComplexDoubleTensor",
}


def legacy_type_name(t: Tensor) -> str:
    """``aiograd.FloatTensor`` (``aiograd.sim.FloatTensor`` off the CPU): the name PyTorch's
    messages give a tensor's type (``Tensor.type()``)."""
    kind = _LEGACY_NAMES.get(str(t.data.dtype), f"{t.data.dtype}Tensor")
    device = t._device.type
    return f"aiograd.{kind}" if device == "cpu" else f"aiograd.{device}.{kind}"

