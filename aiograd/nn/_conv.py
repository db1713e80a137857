"""Convolutions: ``conv1d``, ``conv2d`` and ``conv_transpose2d``, as torch.nn.functional's (and,
through the same code over three spatial dims, ``_conv3d.py``'s ``conv3d``, ``conv_transpose3d``).

All three record PyTorch's ``ConvolutionBackward0`` (``at::convolution``). On arrays (the forward
and a first-order backward) a convolution is ``_conv_gemm``'s: an im2col of the whole batch and
one matrix product per group. A transposed convolution is the adjoint of a convolution with its
weight, so it runs the same products the other way round: its forward is a convolution's input
gradient, its input gradient a convolution, its weight gradient a convolution's weight gradient.
When a graph is recorded (``create_graph=True``) the backward runs on tensors instead: the
windows through the differentiable ``unfold``/``fold`` (``_windows``) and the products through
``matmul``, so second derivatives come out of ``gradgradcheck`` right. A 1-D convolution is the
2-D one with a height of 1. Leading batch dims of a batched backward (``is_grads_batched``) go
in front of every matrix on tensors; on arrays each gradient of the batch runs a backward of its
own (bit for bit a per-sample loop's). An empty input or weight gives zeros (sums over nothing).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from .._base._cost import matmul_cost, saved_shape
from .._base._dtypes import scalar_type_name
from .._ops._registry import backward, op
from .._ops._util import (
    Tensor,
    attach,
    common_device,
    edge_of,
    first_order,
    like,
    needs_grad,
    not_tensor,
    save,
)
from .._ops.quiet import quietly
from ._conv_gemm import conv_backward, conv_forward
from ._windows import Axis, Geometry, fold, unfold, xp_of

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d"]


# ------------------------------------------------------------------------------ the products
# The recorded path (a graph for ``create_graph=True``): the windows through the differentiable
# ``unfold``/``fold`` and the products through ``matmul``, per sample and group.
def _columns(x: Tensor, geom: Geometry, groups: int) -> Tensor:
    """``(*lead, N, C, H, W)`` -> the im2col matrices ``(*lead, N, G, C/G*kh*kw, OH*OW)``."""
    *lead, n, c = x.shape[: x.ndim - len(geom)]
    size = math.prod(a.out for a in geom)
    return unfold(x, geom).reshape(*lead, n, groups, c // groups * math.prod(a.kernel for a in geom), size)


def _image(cols: Tensor, geom: Geometry) -> Tensor:
    """The adjoint of ``_columns``: ``(*lead, N, G, C/G*kh*kw, OH*OW)`` -> ``(*lead, N, C, H, W)``."""
    *lead, n, groups, k, _ = cols.shape
    kernel, outs = [a.kernel for a in geom], [a.out for a in geom]
    return fold(cols.reshape(*lead, n, groups * k // math.prod(kernel), *kernel, *outs), geom)


def _matrices(w: Any, groups: int) -> Any:
    """A weight ``(A, B, kh, kw)`` (or ``(A, B, kd, kh, kw)``) as ``groups`` matrices ``(A/G, B*kh*kw)``."""
    a, b, *kernel = w.shape
    return w.reshape(groups, a // groups, b * math.prod(kernel))


def _by_group(t: Any, groups: int, nd: int = 2) -> Any:
    """``(*lead, N, C, H, W)`` -> ``(*lead, N, G, C/G, H*W)`` (``nd`` spatial dims)."""
    *lead, n, c = t.shape[: t.ndim - nd]
    return t.reshape(*lead, n, groups, c // groups, math.prod(t.shape[t.ndim - nd :]))


def _empty(x: Any, w: Any) -> bool:
    """Whether an array convolution has nothing to multiply: its sums are all 0."""
    return not isinstance(x, Tensor) and (x.size == 0 or w.size == 0)


def _zero_grads(xp: Any, x: Any, w: Any, g: Any, geom: Geometry, want: tuple[bool, bool]) -> tuple[Any, Any]:
    """The gradients of an empty array convolution (sums over nothing), leading batch dims of
    ``g`` in front."""
    lead = g.shape[: g.ndim - 2 - len(geom)]
    return (xp.zeros(lead + x.shape, dtype=g.dtype) if want[0] else None,
            xp.zeros(lead + w.shape, dtype=g.dtype) if want[1] else None)


def _each(xp: Any, fn: Any, g: Any, b: int, want: tuple[bool, bool]) -> tuple[Any, Any]:
    """A batched backward on arrays (``b`` leading dims of ``g``): each gradient of the batch as a
    backward of its own computes it (the same sums in the same order, bit for bit)."""
    each = [fn(gi) for gi in g.reshape(-1, *g.shape[b:])]
    return tuple(None if not want[i] else xp.stack([r[i] for r in each]).reshape(*g.shape[:b], *each[0][i].shape)
                 for i in (0, 1))  # type: ignore[return-value]


def _conv(xp: Any, x: Any, w: Any, geom: Geometry, groups: int) -> Any:
    """The convolution of ``x`` ``(N, C, H, W)`` with ``w`` ``(O, C/G, kh, kw)``: on arrays one
    product for the batch (``_conv_gemm``); on tensors, per sample and group,
    ``(O/G, C/G*kh*kw) @ (C/G*kh*kw, OH*OW)``, already in the output's layout."""
    n, o = x.shape[0], w.shape[0]
    if _empty(x, w):
        return xp.zeros((n, o, *(a.out for a in geom)), dtype=x.dtype)
    if not isinstance(x, Tensor):
        return conv_forward(xp, x, w, geom, groups)
    return (_matrices(w, groups) @ _columns(x, geom, groups)).reshape(n, o, *(a.out for a in geom))


def _conv_grads(xp: Any, x: Any, w: Any, g: Any, geom: Geometry, groups: int, want: tuple[bool, bool]) -> tuple[Any, Any]:
    """The gradients of ``_conv`` for ``g`` ``(*lead, N, O, OH, OW)``."""
    b = g.ndim - 2 - len(geom)
    if _empty(x, w):
        return _zero_grads(xp, x, w, g, geom, want)
    if not isinstance(x, Tensor):
        if b == 0:
            return conv_backward(xp, x, w, g, geom, groups, want)
        return _each(xp, lambda gi: conv_backward(xp, x, w, gi, geom, groups, want), g, b, want)
    gm = _by_group(g, groups, len(geom))  # (*lead, N, G, O/G, OH*OW)
    gx = gw = None
    if want[0]:
        gx = _image(_matrices(w, groups).mT @ gm, geom)
    if want[1]:
        gw = (gm @ _columns(x, geom, groups).mT).sum(b)  # (*lead, G, O/G, C/G*kh*kw)
    return gx, gw


# A transposed convolution is the adjoint of a convolution with its weight (``geom`` is that
# convolution's: windows over the transposed one's output, one per input position), so on
# arrays it runs ``_conv_gemm``'s products: its forward is a convolution's input gradient, its
# input gradient a convolution and its weight gradient a convolution's weight gradient.
def _conv_transpose(xp: Any, x: Any, w: Any, geom: Geometry, groups: int) -> Any:
    """The transposed convolution of ``x`` ``(N, C, H, W)`` with ``w`` ``(C, O/G, kh, kw)``."""
    n, o = x.shape[0], w.shape[1] * groups
    if _empty(x, w):
        return xp.zeros((n, o, *(a.size for a in geom)), dtype=x.dtype)
    if not isinstance(x, Tensor):
        out = xp.empty((n, o, *(a.size for a in geom)), dtype=x.dtype)  # (only its shape is read)
        return conv_backward(xp, out, w, x, geom, groups, (True, False))[0]
    return _image(_matrices(w, groups).mT @ _by_group(x, groups, len(geom)), geom)


def _conv_transpose_grads(xp: Any, x: Any, w: Any, g: Any, geom: Geometry, groups: int, want: tuple[bool, bool]) -> tuple[Any, Any]:
    """The gradients of ``_conv_transpose`` for ``g`` ``(*lead, N, O, OH, OW)``."""
    b = g.ndim - 2 - len(geom)
    if _empty(x, w):
        return _zero_grads(xp, x, w, g, geom, want)
    if not isinstance(x, Tensor):
        def one(gi: Any) -> tuple[Any, Any]:
            gx = conv_forward(xp, gi, w, geom, groups) if want[0] else None
            gw = conv_backward(xp, gi, w, x, geom, groups, (False, True))[1] if want[1] else None
            return gx, gw

        return one(g) if b == 0 else _each(xp, one, g, b, want)
    cols = _columns(g, geom, groups)  # (*lead, N, G, O/G*kh*kw, H*W)
    gx = gw = None
    if want[0]:
        gx = _matrices(w, groups) @ cols  # (*lead, N, G, C/G, H*W)
    if want[1]:
        gw = (_by_group(x, groups, len(geom)) @ cols.mT).sum(b)  # (*lead, G, C/G, O/G*kh*kw)
    return gx, gw


# ------------------------------------------------------------------------------ the node
def _convolution_cost(self: Any, grads: list[Any]) -> float:
    """The offload estimate: one product per gradient wanted of the input and the weight, each
    of the output gradient's elements times a filter's taps (``weight.size / weight.shape[0]``:
    exact for a convolution, within a few times for a transposed one)."""
    g, w_shape = grads[0], saved_shape(self.weight)
    if g is None or not w_shape:
        return 0.0
    taps = math.prod(w_shape) // max(w_shape[0], 1)
    products = (self.next_edges[0] is not None) + (self.next_edges[1] is not None)
    return matmul_cost(g.data.size, taps, 1, products, g.data.dtype.itemsize)


@backward(saved=("input", "weight"), cost=_convolution_cost, batched=True)
def ConvolutionBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """Gradients of a convolution (or a transposed one) for its input, weight and bias."""
    g = grads[0]
    ex, ew, eb = self.next_edges
    x, w = self.input.unpack(self), self.weight.unpack(self)
    recorded = not first_order()
    xp = xp_of(g)
    xa, wa, ga = (x, w, g) if recorded else (x.data, w.data, g.data)
    if self.one_d:  # (N, C, L) as (N, C, 1, L)
        xa, wa = xa.reshape(*xa.shape[:2], 1, xa.shape[-1]), wa.reshape(*wa.shape[:2], 1, wa.shape[-1])
        ga = ga.reshape(*ga.shape[:-1], 1, ga.shape[-1])
    grads_of = _conv_transpose_grads if self.transposed else _conv_grads
    want = (ex is not None, ew is not None)
    if recorded:
        gx, gw = grads_of(xp, xa, wa, ga, self.geom, self.groups, want)
    else:
        gx, gw = quietly(grads_of, xp, xa, wa, ga, self.geom, self.groups, want)
    gb = None
    if eb is not None:
        # on arrays: the samples summed first (a reduction over the outer axis runs vectorised),
        # then each channel's plane; numpy's reduction over (N, OH, OW) at once is ~4x slower
        nd = len(self.geom)
        gb = ga.sum(_bias_axes(batch, nd)) if recorded else ga.sum(batch).reshape(*ga.shape[:batch], ga.shape[batch + 1], -1).sum(-1)
    lead = g.shape[:batch]
    if gx is not None:
        gx = gx.reshape(*lead, *x.shape)
    if gw is not None:
        gw = gw.reshape(*lead, *w.shape)
    if not recorded:
        gx, gw, gb = (None if r is None else like(r, g) for r in (gx, gw, gb))
    return (gx, gw, gb)


def _bias_axes(b: int, nd: int = 2) -> tuple[int, ...]:
    """The axes of a gradient ``(*lead, N, O, OH, OW)`` that the bias's gradient sums over."""
    return (b, *range(b + 2, b + 2 + nd))


# ------------------------------------------------------------------------------ arguments
def _tuple(value: Any, n: int, name: str) -> tuple[int, ...]:
    if isinstance(value, (list, tuple)):
        if len(value) == 1:
            value = tuple(value) * n
        if len(value) != n:
            raise RuntimeError(
                f"expected {name} to be a single integer value or a list of {n} values to match the "
                f"convolution dimensions, but got {name}={list(value)}"
            )
        return tuple(int(v) for v in value)
    return (int(value),) * n


def _dtype_name(dtype: Any) -> str:
    names = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
             "int64": "LongTensor", "int32": "IntTensor"}
    return "torch." + names.get(str(dtype), f"{dtype}Tensor")


def _size(shape: tuple[int, ...]) -> str:
    return f"[{', '.join(map(str, shape))}]"


def _convolution(
    name: str,
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: Any,
    padding: Any,
    dilation: Any,
    groups: int,
    transposed: bool = False,
    output_padding: Any = 0,
) -> Tensor:
    """``at::convolution`` for 1, 2 or 3 spatial dims (``name`` is ``conv1d``, ``conv2d``,
    ``conv_transpose3d``...), with PyTorch's checks and messages."""
    dims = int(name[-2])  # conv1d, conv_transpose2d, conv3d...
    x, w = input.data, weight.data
    if x.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(
            f"Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input to {name}, but got "
            f"input of size: {_size(x.shape)}"
        )
    if x.ndim == dims + 1:  # unbatched: as PyTorch, a batch of one, squeezed after
        return _convolution(name, input.unsqueeze(0), weight, bias, stride, padding, dilation, groups,
                            transposed, output_padding).squeeze(0)
    common_device(input, weight, bias)
    if w.ndim != dims + 2:
        dims_w = w.ndim - 2
        raise RuntimeError(
            f"expected stride to be a single integer value or a list of {dims_w} values to match the "
            f"convolution dimensions, but got stride={list(_tuple(stride, dims, 'stride'))}"
        )
    stride = _tuple(stride, dims, "stride")
    dilation = _tuple(dilation, dims, "dilation")
    out_pad = _tuple(output_padding, dims, "output_padding")
    kernel = w.shape[2:]
    pads: list[tuple[int, int]]
    if isinstance(padding, str):
        if padding == "valid":
            pads = [(0, 0)] * dims
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pads = []
            for d, k in zip(dilation, kernel):
                total = d * (k - 1)
                pads.append((total // 2, total - total // 2))
            if any(lo != hi for lo, hi in pads):
                warnings.warn(
                    "Using padding='same' with even kernel lengths and odd dilation may require a "
                    "zero-padded copy of the input be created",
                    UserWarning,
                    stacklevel=3,
                )
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        pads = [(p, p) for p in _tuple(padding, dims, "padding")]
    if any(p < 0 for pair in pads for p in pair):
        raise RuntimeError("negative padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if x.dtype != w.dtype:
        # PyTorch's CPU backend: mkldnn for a float32 batch of several samples, else its own kernel
        if x.dtype == np.float32 and x.shape[0] > 1:
            raise RuntimeError(
                f"Input type ({_dtype_name(x.dtype)}) and weight type ({_dtype_name(w.dtype)}) should be "
                "the same or input should be a MKLDNN tensor and weight is a dense tensor"
            )
        raise RuntimeError(f"expected scalar type {scalar_type_name(x.dtype)} but found {scalar_type_name(w.dtype)}")
    channels = x.shape[1]
    if w.shape[0] % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
            f"got weight of size [{_size(w.shape)}] instead"
        )
    expect = w.shape[0] if transposed else w.shape[1] * groups
    if channels != expect:
        given = f"transposed=1, weight of size {_size(w.shape)}" if transposed else f"groups={groups}, weight of size {_size(w.shape)}"
        raise RuntimeError(
            f"Given {given}, expected input{_size(x.shape)} to have {expect} channels, but got "
            f"{channels} channels instead"
        )
    out_channels = w.shape[1] * groups if transposed else w.shape[0]
    if bias is not None and (bias.data.ndim != 1 or bias.data.shape[0] != out_channels):
        raise RuntimeError(
            f"Given {'transposed=1, ' if transposed else ''}weight of size {_size(w.shape)}, expected bias to be "
            f"1-dimensional with {out_channels} elements, but got bias of size {_size(bias.data.shape)} instead"
        )
    sizes = x.shape[2:]
    if transposed:
        if any(op >= s and op >= d for op, s, d in zip(out_pad, stride, dilation)):
            if dims >= 2:
                names = ("depth", "height", "width")[3 - dims:]
                raise RuntimeError(
                    "output padding must be smaller than either stride or dilation, but got "
                    + " ".join(f"{what}_{n}: {v}" for what, vs in (("output_padding", out_pad), ("stride", stride),
                                                                      ("dilation", dilation)) for n, v in zip(names, vs))
                )
            raise RuntimeError("output padding must be smaller than either stride or dilation")
        outs = [(n - 1) * s - lo - hi + d * (k - 1) + op + 1
                for n, s, (lo, hi), d, k, op in zip(sizes, stride, pads, dilation, kernel, out_pad)]
        if any(o <= 0 for o in outs):
            raise RuntimeError(
                f"Given input size per channel: ({' x '.join(map(str, sizes))}). Calculated output size "
                f"per channel: ({' x '.join(map(str, outs))}). Output size is too small"
            )
        axes = [Axis(k, s, d, lo, o, n) for k, s, d, (lo, _), o, n in zip(kernel, stride, dilation, pads, outs, sizes)]
    else:
        padded = [n + lo + hi for n, (lo, hi) in zip(sizes, pads)]
        reach = [d * (k - 1) + 1 for d, k in zip(dilation, kernel)]
        if any(r > p for r, p in zip(reach, padded)):
            raise RuntimeError(
                f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel size: "
                f"({' x '.join(map(str, reach))}). Kernel size can't be greater than actual input size"
            )
        axes = [Axis(k, s, d, lo, n, (p - r) // s + 1)
                for k, s, d, (lo, _), n, p, r in zip(kernel, stride, dilation, pads, sizes, padded, reach)]
    if dims == 1:
        axes = [Axis(1, 1, 1, 0, 1, 1), *axes]
    geom: Geometry = tuple(axes)
    xp = xp_of(input)
    xa, wa = (x, w) if dims != 1 else (x[:, :, None, :], w[:, :, None, :])
    # (quietly: an infinite weight times a padding zero is NaN, silently as in torch)
    data = quietly(_conv_transpose if transposed else _conv, xp, xa, wa, geom, groups)
    if dims == 1:
        data = data.reshape(data.shape[0], data.shape[1], data.shape[-1])
    if bias is not None:
        data += bias.data.reshape((-1,) + (1,) * dims)
    out = like(data, input)
    if needs_grad(input, weight, bias):
        node = attach(ConvolutionBackward0((edge_of(input), edge_of(weight), edge_of(bias))), out)
        node.input, node.weight = save(input), save(weight)
        node.geom, node.groups, node.transposed, node.one_d = geom, groups, transposed, dims == 1
    return out


# ------------------------------------------------------------------------------ public
@op(ConvolutionBackward0)
def conv1d(
    input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
    dilation: Any = 1, groups: int = 1,
) -> Tensor:
    """1-D convolution (cross-correlation) of ``input`` ``(N, C, L)`` or ``(C, L)`` with ``weight``
    ``(O, C/groups, k)``, as ``torch.nn.functional.conv1d``; ``padding`` may be ``'same'`` or
    ``'valid'``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("conv1d", input)
    return _convolution("conv1d", input, weight, bias, stride, padding, dilation, groups)


@op(ConvolutionBackward0)
def conv2d(
    input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
    dilation: Any = 1, groups: int = 1,
) -> Tensor:
    """2-D convolution (cross-correlation) of ``input`` ``(N, C, H, W)`` or ``(C, H, W)`` with
    ``weight`` ``(O, C/groups, kh, kw)``, as ``torch.nn.functional.conv2d``; ``padding`` may be
    ``'same'`` (stride 1 only; an odd total puts the extra zero after, as PyTorch) or ``'valid'``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("conv2d", input)
    return _convolution("conv2d", input, weight, bias, stride, padding, dilation, groups)


@op(ConvolutionBackward0)
def conv_transpose2d(
    input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
    output_padding: Any = 0, groups: int = 1, dilation: Any = 1,
) -> Tensor:
    """2-D transposed convolution of ``input`` ``(N, C, H, W)`` or ``(C, H, W)`` with ``weight``
    ``(C, O/groups, kh, kw)``: the gradient of ``conv2d`` with respect to its input, as
    ``torch.nn.functional.conv_transpose2d``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("conv_transpose2d", input)
    return _convolution("conv_transpose2d", input, weight, bias, stride, padding, dilation, groups, True, output_padding)


@op(ConvolutionBackward0)
def conv_transpose1d(
    input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
    output_padding: Any = 0, groups: int = 1, dilation: Any = 1,
) -> Tensor:
    """1-D transposed convolution of ``input`` ``(N, C, L)`` or ``(C, L)`` with ``weight``
    ``(C, O/groups, k)``, as ``torch.nn.functional.conv_transpose1d`` (the 2-D one with a height
    of 1)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("conv_transpose1d", input)
    return _convolution("conv_transpose1d", input, weight, bias, stride, padding, dilation, groups, True, output_padding)
