"""Rearrangements of torch.nn.functional: ``unfold`` (im2col), ``fold`` (col2im),
``pixel_shuffle`` and ``pixel_unshuffle``.

``unfold`` and ``fold`` are adjoint: each one's backward is the other on the gradient
(``Im2ColBackward0``, ``Col2ImBackward0``, as PyTorch), so they differentiate to any order. The
windows are ``_windows.windows`` (a strided view) and ``_windows.overlap_add``. The pixel
shuffles are a reshape, a transpose and a reshape, each the other's backward.
"""

from __future__ import annotations

from typing import Any

from .._ops._registry import backward, op
from .._ops._util import Tensor, attach, edge_of, like, needs_grad, not_tensor
from ._windows import Axis, overlap_add, windows, xp_of

__all__ = ["fold", "pixel_shuffle", "pixel_unshuffle", "unfold"]


def _pair(value: Any) -> tuple[int, int]:
    if isinstance(value, (list, tuple)):
        return (int(value[0]),) * 2 if len(value) == 1 else (int(value[0]), int(value[1]))
    return (int(value),) * 2


def _axes(sizes: tuple[int, int], k: tuple[int, int], d: tuple[int, int], p: tuple[int, int],
          s: tuple[int, int]) -> tuple[Axis, Axis]:
    outs = [(n + 2 * pi - di * (ki - 1) - 1) // si + 1 for n, ki, di, pi, si in zip(sizes, k, d, p, s)]
    ah, aw = (Axis(ki, si, di, pi, n, o) for ki, si, di, pi, n, o in zip(k, s, d, p, sizes, outs))
    return ah, aw


def _check_args(name: str, k: Any, d: Any, p: Any, s: Any) -> None:
    if any(v <= 0 for v in k):
        raise RuntimeError(f"{name}: kernel size should be greater than zero, but got kernel_height: {k[0]} kernel_width: {k[1]}")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"{name}: dilation should be greater than zero, but got dilation_height: {d[0]} dilation_width: {d[1]}")
    if any(v < 0 for v in p):
        raise RuntimeError(f"{name}: padding should be non-negative, but got pad_height: {p[0]} pad_width: {p[1]}")
    if any(v <= 0 for v in s):
        raise RuntimeError(f"{name}: stride should be greater than zero, but got stride_height: {s[0]} stride_width: {s[1]}")


# ------------------------------------------------------------------------------ unfold, fold
@backward(name="Im2ColBackward0")
def _Im2ColBackward0(self: Any, grads: list[Any]) -> tuple[Any]:
    """``fold`` of the gradient over the same windows."""
    return (fold(grads[0], self.size, *self.args),)


@backward(name="Col2ImBackward0")
def _Col2ImBackward0(self: Any, grads: list[Any]) -> tuple[Any]:
    """``unfold`` of the gradient over the same windows."""
    return (unfold(grads[0], *self.args),)


@op(_Im2ColBackward0, top_level=False, family="_conv")
def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Tensor:
    """The sliding windows of ``input`` ``(N, C, H, W)`` or ``(C, H, W)`` as columns
    ``(N, C*kh*kw, L)`` (im2col), as ``torch.nn.functional.unfold``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("unfold", input)
    x = input.data
    if x.ndim not in (3, 4):
        raise NotImplementedError(f"Input Error: Only 3D or 4D input Tensors are supported (got {x.ndim}D)")
    k, d, p, s = _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride)
    _check_args("im2col", k, d, p, s)
    sizes = (x.shape[-2], x.shape[-1])
    geom = _axes(sizes, k, d, p, s)
    if any(a.out < 1 for a in geom):
        raise RuntimeError(
            f"Given input with spatial size ({sizes[0]}, {sizes[1]}), kernel_size=({k[0]}, {k[1]}), "
            f"dilation=({d[0]}, {d[1]}), padding=({p[0]}, {p[1]}), calculated shape of the array of sliding "
            f"blocks as ({geom[0].out}, {geom[1].out}), but its components must be at least one."
        )
    xp = xp_of(input)
    cols = windows(xp, x, geom)  # (..., C, kh, kw, OH, OW)
    lead = x.shape[:-2]
    data = xp.ascontiguousarray(cols).reshape(*lead[:-1], lead[-1] * k[0] * k[1], geom[0].out * geom[1].out)
    out = like(data.copy() if data.base is x else data, input)
    if needs_grad(input):
        node: Any = attach(_Im2ColBackward0((edge_of(input),)), out)
        node.size, node.args = sizes, (k, d, p, s)
    return out


@op(_Col2ImBackward0, top_level=False, family="_conv")
def fold(input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
         stride: Any = 1) -> Tensor:
    """Columns ``(N, C*kh*kw, L)`` or ``(C*kh*kw, L)`` summed back into an ``output_size`` image
    (col2im, the adjoint of ``unfold``), as ``torch.nn.functional.fold``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("fold", input)
    x = input.data
    if x.ndim not in (2, 3):
        raise NotImplementedError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported (got {x.ndim}D)")
    size, k, d, p, s = _pair(output_size), _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride)
    _check_args("col2im", k, d, p, s)
    rows, blocks = x.shape[-2], x.shape[-1]
    if rows % (k[0] * k[1]):
        raise RuntimeError(
            f"Expected size of input's dimension {x.ndim - 2} to be divisible by the product of kernel_size, but got "
            f"input.size({x.ndim - 2})={rows} and kernel_size=({k[0]}, {k[1]})."
        )
    geom = _axes(size, k, d, p, s)
    if geom[0].out * geom[1].out != blocks or any(a.out < 1 for a in geom):
        raise RuntimeError(
            f"Given output_size=({size[0]}, {size[1]}), kernel_size=({k[0]}, {k[1]}), dilation=({d[0]}, {d[1]}), "
            f"padding=({p[0]}, {p[1]}), stride=({s[0]}, {s[1]}), expected size of input's dimension "
            f"{x.ndim - 1} to match the calculated number of sliding blocks {geom[0].out} * {geom[1].out} = "
            f"{geom[0].out * geom[1].out}, but got input.size({x.ndim - 1})={blocks}."
        )
    c = rows // (k[0] * k[1])
    xp = xp_of(input)
    data = overlap_add(xp, x.reshape(*x.shape[:-2], c, k[0], k[1], geom[0].out, geom[1].out), geom)
    out = like(xp.ascontiguousarray(data), input)
    if needs_grad(input):
        node: Any = attach(_Col2ImBackward0((edge_of(input),)), out)
        node.args = (k, d, p, s)
    return out


# ------------------------------------------------------------------------------ pixel shuffles
def _shuffle(x: Any, r: int) -> Any:
    *lead, c, h, w = x.shape
    oc = c // (r * r)
    n = len(lead)
    v = x.reshape(*lead, oc, r, r, h, w).transpose(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return v.reshape(*lead, oc, h * r, w * r)


def _unshuffle(x: Any, r: int) -> Any:
    *lead, c, h, w = x.shape
    oh, ow = h // r, w // r
    n = len(lead)  # (..., c, oh, r, ow, r) -> (..., c, r, r, oh, ow)
    v = x.reshape(*lead, c, oh, r, ow, r).transpose(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return v.reshape(*lead, c * r * r, oh, ow)


@backward(name="PixelShuffleBackward0", batched=True)
def _PixelShuffleBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """``pixel_unshuffle`` of the gradient."""
    return (pixel_unshuffle(grads[0], self.factor),)


@backward(name="PixelUnshuffleBackward0", batched=True)
def _PixelUnshuffleBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """``pixel_shuffle`` of the gradient."""
    return (pixel_shuffle(grads[0], self.factor),)


def _check_shuffle(name: str, x: Any, r: Any, what: str) -> None:
    if x.ndim < 3:
        raise RuntimeError(f"{name} expects input to have at least 3 dimensions, but got input with {x.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"{name} expects a positive {what}, but got {r}")


@op(_PixelShuffleBackward0, top_level=False, family="_conv")
def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """``(*, C*r*r, H, W) -> (*, C, H*r, W*r)``, as ``torch.nn.functional.pixel_shuffle``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("pixel_shuffle", input)
    x, r = input.data, int(upscale_factor)
    _check_shuffle("pixel_shuffle", x, r, "upscale_factor")
    if x.shape[-3] % (r * r):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, "
            f"but input.size(-3)={x.shape[-3]} is not divisible by {r * r}"
        )
    out = like(xp_of(input).ascontiguousarray(_shuffle(x, r)), input)
    if needs_grad(input):
        attach(_PixelShuffleBackward0((edge_of(input),)), out).factor = r
    return out


@op(_PixelUnshuffleBackward0, top_level=False, family="_conv")
def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """``(*, C, H*r, W*r) -> (*, C*r*r, H, W)``, as ``torch.nn.functional.pixel_unshuffle``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("pixel_unshuffle", input)
    x, r = input.data, int(downscale_factor)
    _check_shuffle("pixel_unshuffle", x, r, "downscale_factor")
    for what, i in (("height", -2), ("width", -1)):
        if x.shape[i] % r:
            raise RuntimeError(
                f"pixel_unshuffle expects {what} to be divisible by downscale_factor, but input.size({i})="
                f"{x.shape[i]} is not divisible by {r}"
            )
    out = like(xp_of(input).ascontiguousarray(_unshuffle(x, r)), input)
    if needs_grad(input):
        attach(_PixelUnshuffleBackward0((edge_of(input),)), out).factor = r
    return out
