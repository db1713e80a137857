"""1-D pools and adaptive max pooling: ``max_pool1d``, ``avg_pool1d``, ``adaptive_avg_pool1d``,
``adaptive_max_pool1d`` and ``adaptive_max_pool2d``, as torch.nn.functional's.

The 1-D pools are the 2-D ones over ``(..., 1, L)``, as PyTorch runs them: the input unsqueezed
at -2, pooled, squeezed (so they record ``SqueezeBackward1`` over the 2-D pool's node, as
there). Adaptive max pooling takes, per output bin (PyTorch's ``start = floor(i*H/OH)``,
``end = ceil((i+1)*H/OH)``), the first largest element (a NaN wins, the last one, as PyTorch's
CPU kernel) and records ``AdaptiveMaxPool2DBackward0``, whose backward adds each gradient at its
element: the max-pool scatter of ``_pooling``, which differentiates again.
"""

from __future__ import annotations

from typing import Any

from .._ops._registry import backward, op
from .._ops._util import Tensor, attach, edge_of, like, needs_grad, not_tensor
from ._pooling import _scatter, adaptive_avg_pool2d, avg_pool2d, max_pool2d
from ._windows import xp_of

__all__ = ["adaptive_avg_pool1d", "adaptive_max_pool1d", "adaptive_max_pool2d", "avg_pool1d", "max_pool1d"]


def _one(value: Any, name: str, what: str) -> int:
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise RuntimeError(f"{name}() argument '{what}' should contain one int (got {len(value)})")
        return int(value[0])
    return int(value)


def _check_1d(name: str, input: Any) -> None:
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor(name, input)
    if input.data.ndim not in (2, 3):
        raise RuntimeError(f"{name}() Expected 2D or 3D input tensor, but got {list(input.data.shape)}")


def max_pool1d(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
    ceil_mode: bool = False, return_indices: bool = False,
) -> Any:
    """Max over each window of ``input`` ``(N, C, L)`` or ``(C, L)``, as
    ``torch.nn.functional.max_pool1d`` (``max_pool2d`` over a height of 1)."""
    _check_1d("max_pool1d", input)
    k = _one(kernel_size, "max_pool1d", "kernel_size")
    s = k if stride is None or (isinstance(stride, (list, tuple)) and not stride) else _one(stride, "max_pool1d", "stride")
    p, d = _one(padding, "max_pool1d", "padding"), _one(dilation, "max_pool1d", "dilation")
    out = max_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d), ceil_mode, return_indices)
    if return_indices:
        return out[0].squeeze(-2), out[1].squeeze(-2)
    return out.squeeze(-2)


def avg_pool1d(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """Mean over each window of ``input`` ``(N, C, L)`` or ``(C, L)``, as
    ``torch.nn.functional.avg_pool1d`` (``avg_pool2d`` over a height of 1)."""
    _check_1d("avg_pool1d", input)
    k = _one(kernel_size, "avg_pool1d", "kernel_size")
    s = k if stride is None or (isinstance(stride, (list, tuple)) and not stride) else _one(stride, "avg_pool1d", "stride")
    p = _one(padding, "avg_pool1d", "padding")
    return avg_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), ceil_mode, count_include_pad).squeeze(-2)


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """Mean over ``output_size`` bins of ``input`` ``(N, C, L)`` or ``(C, L)``, as
    ``torch.nn.functional.adaptive_avg_pool1d``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("adaptive_avg_pool1d", input)
    size = _one(output_size, "adaptive_avg_pool1d", "output_size")
    if input.data.ndim not in (2, 3):
        raise RuntimeError(f"adaptive_avg_pool1d(): Expected 2D or 3D tensor, but got {list(input.data.shape)}")
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, size)).squeeze(-2)


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max over ``output_size`` bins of ``input`` ``(N, C, L)`` or ``(C, L)``, as
    ``torch.nn.functional.adaptive_max_pool1d``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("adaptive_max_pool1d", input)
    size = _one(output_size, "adaptive_max_pool1d", "output_size")
    if input.data.ndim not in (2, 3):
        raise RuntimeError(f"adaptive_max_pool1d(): Expected 2D or 3D tensor, but got {list(input.data.shape)}")
    out, index = adaptive_max_pool2d(input.unsqueeze(-2), (1, size), return_indices=True)
    if return_indices:
        return out.squeeze(-2), index.squeeze(-2)
    return out.squeeze(-2)


# ------------------------------------------------------------------------------ adaptive_max_pool2d
@backward(batched=True)
def AdaptiveMaxPool2DBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """Each output's gradient added at its maximum's position in the input plane."""
    return (_scatter(grads[0], self.index, self.plane),)


def _bounds(size: int, out: int) -> list[tuple[int, int]]:
    return [((i * size) // out, -((-(i + 1) * size) // out)) for i in range(out)]


def _bin_max(xp: Any, x: Any, sizes: tuple[int, int]) -> tuple[Any, Any]:
    """The max and flat plane index of each of PyTorch's adaptive bins over ``x`` ``(..., H, W)``."""
    h, w = x.shape[-2:]
    lead = x.shape[:-2]
    out = xp.empty((*lead, *sizes), dtype=x.dtype)
    index = xp.empty((*lead, *sizes), dtype=xp.int64)
    has_nan = x.dtype.kind == "f" and bool(xp.isnan(x).any())
    for i, (hs, he) in enumerate(_bounds(h, sizes[0])):
        for j, (ws, we) in enumerate(_bounds(w, sizes[1])):
            win = x[..., hs:he, ws:we].reshape(*lead, -1)
            at = xp.argmax(win, axis=-1)
            if has_nan:  # (the last NaN wins, as PyTorch's kernel)
                nan = xp.isnan(win)
                last = win.shape[-1] - 1 - xp.argmax(nan[..., ::-1], axis=-1)
                at = xp.where(nan.any(-1), last, at)
            bw = we - ws
            out[..., i, j] = xp.take_along_axis(win, at[..., None], axis=-1)[..., 0]
            index[..., i, j] = (hs + at // bw) * w + ws + at % bw
    return out, index


@op(AdaptiveMaxPool2DBackward0, top_level=False, family="_pooling")
def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max over ``output_size`` bins of ``input`` ``(N, C, H, W)`` or ``(C, H, W)``, as
    ``torch.nn.functional.adaptive_max_pool2d``; a ``None`` in ``output_size`` keeps that size.
    With ``return_indices`` also the int64 flat index of each maximum in its ``H*W`` plane."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("adaptive_max_pool2d", input)
    x = input.data
    if isinstance(output_size, (list, tuple)):
        if len(output_size) != 2:
            raise RuntimeError("adaptive_max_pool2d(): internal error: output_size.size() must be 2")
        sizes = list(output_size)
    else:
        sizes = [output_size, output_size]
    if x.ndim not in (3, 4):
        raise RuntimeError(f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: {list(x.shape)}")
    for i in range(1, x.ndim):
        if x.shape[i] == 0:
            raise RuntimeError(
                "adaptive_max_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input "
                f"has sizes {list(x.shape)} with dimension {i} being empty"
            )
    out_hw = (x.shape[-2] if sizes[0] is None else int(sizes[0]), x.shape[-1] if sizes[1] is None else int(sizes[1]))
    xp = xp_of(input)
    data, index = _bin_max(xp, x, out_hw)
    out = like(data, input)
    if needs_grad(input):
        node = attach(AdaptiveMaxPool2DBackward0((edge_of(input),)), out)
        node.index, node.plane = index, tuple(x.shape[-2:])
    if return_indices:
        return out, like(index, input)
    return out
