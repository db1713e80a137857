"""Distances and rank-one products as PyTorch's: ``cdist`` (``CdistBackward0``, or for p = 2 on
large inputs PyTorch's matrix-product form, composed), ``pdist``, ``dist``, ``renorm`` and
``addr``. The backward formulas are PyTorch's (its ``_cdist_backward`` kernels, ``norm_backward``,
``renorm_backward``), written with aiograd ops; PyTorch has no second derivative for ``cdist``
and ``pdist`` (``_cdist_backward`` is not differentiable there), aiograd's formulas have one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._base._dtypes import scalar_type_name
from ._registry import backward, op
from ._util import Tensor, attach, edge_of, infer_size, like, needs_grad, not_tensor, save
from .batching import batched_sum_to
from .convenience import _norm_grad, _norm_values
from .elementwise import where
from .quiet import quietly

__all__ = ["addr", "cdist", "dist", "pdist", "renorm"]

_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


def _pair_grad(diff: Tensor, dist: Tensor, g: Tensor, p: float) -> Tensor:
    """PyTorch's per-pair ``_cdist_backward`` kernels on ``diff = x1_i - x2_j`` (last dim the
    features; ``dist`` and ``g`` with a trailing 1), not yet summed over the pairs."""
    d, n = diff.data, dist.data
    zero = n == 0
    safe = where(zero, 1.0, dist)
    if p == 0:
        return diff * 0.0
    if p == 1:
        return g * diff.sign()
    if p == float("inf"):
        return g * diff.sign() * (np.abs(d) == n).astype(d.dtype)
    if p == 2:
        return where(zero, 0.0, g * diff / safe)
    if p < 2:
        bad = zero | ((d == 0) & (p < 1))
        mag = where(d == 0, 1.0, diff.abs())
        return where(bad, 0.0, diff.sign() * mag ** (p - 1) * g / safe ** (p - 1))
    return where(zero, 0.0, diff * diff.abs() ** (p - 2) * g / safe ** (p - 1))


def _pnorm(xp: Any, d: Any, p: float) -> Any:
    a = xp.abs(d)
    if p == 0:
        return (a != 0).sum(-1).astype(d.dtype)
    if p == float("inf"):
        return a.max(-1) if a.shape[-1] else a.sum(-1)
    if p == 1:
        return a.sum(-1)
    if p == 2:
        return xp.sqrt(xp.square(a).sum(-1))
    return (a**p).sum(-1) ** (1.0 / p)


@backward(saved=("x1", "x2", "result"))
def CdistBackward0(self: Any, grads: list[Any]) -> Any:
    """Sum over the other set of each pair's kernel: ``x1``'s over ``j``, ``x2``'s over ``i``."""
    g = grads[0]
    x1, x2, result = self.x1.unpack(self), self.x2.unpack(self), self.result.unpack(self)
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)  # (..., P, R, M)
    pair = _pair_grad(diff, result.unsqueeze(-1), g.unsqueeze(-1), self.p)
    g1 = g2 = None
    if self.next_edges[0] is not None:
        g1 = batched_sum_to(pair.sum(-2), tuple(x1.shape), 0)
    if self.next_edges[1] is not None:
        g2 = batched_sum_to(-pair.sum(-3), tuple(x2.shape), 0)
    return g1, g2


def _euclid_mm(x1: Tensor, x2: Tensor) -> Tensor:
    """PyTorch's ``_euclidean_dist``: ``|x|^2 - 2 x.y + |y|^2`` by one matrix product."""
    from .joining import cat

    n1, n2 = (x1 * x1).sum(-1, keepdim=True), (x2 * x2).sum(-1, keepdim=True)
    a = cat([x1 * -2.0, n1, n1 * 0 + 1], -1)
    b = cat([x2, n2 * 0 + 1, n2], -1)
    return a.matmul(b.mT).clamp_min(1e-30).sqrt()


@op(CdistBackward0)
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str | None = None) -> Tensor:
    """The ``p``-norm distance between each row of ``x1`` (..., P, M) and each row of ``x2``
    (..., R, M), batch dims broadcast, as ``torch.cdist``; for p = 2, with more than 25 rows on
    either side (or ``compute_mode='use_mm_for_euclid_dist'``), by PyTorch's matrix product."""
    if not isinstance(x1, Tensor):
        raise not_tensor("cdist", x1, 1, "x1")
    if not isinstance(x2, Tensor):
        raise not_tensor("cdist", x2, 2, "x2")
    if x1.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D")
    if x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {x2.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    if x1.data.dtype.kind != "f":
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {x1.dtype}")
    if x2.data.dtype.kind != "f":
        raise RuntimeError(f"cdist only supports floating-point dtypes, X2 got: {x2.dtype}")
    if not p >= 0:  # (NaN included)
        raise RuntimeError("cdist only supports non-negative p values")
    mode = compute_mode or _MODES[0]
    if mode not in _MODES:
        raise RuntimeError(f"{mode} is not a valid value for compute_mode")
    if x1.data.dtype != x2.data.dtype:  # (the kernel's dispatch)
        raise RuntimeError(f"expected scalar type {scalar_type_name(x1.data.dtype)} but found "
                           f"{scalar_type_name(x2.data.dtype)}")
    P, R = x1.shape[-2], x2.shape[-2]
    batch = infer_size(tuple(x1.shape[:-2]), tuple(x2.shape[:-2]))
    if p == 2 and P and R and (mode == _MODES[1] or (mode == _MODES[0] and (P > 25 or R > 25))):
        return _euclid_mm(x1.expand(*batch, *x1.shape[-2:]), x2.expand(*batch, *x2.shape[-2:]))
    xp = x1._device.xp
    a = xp.broadcast_to(x1.data, (*batch, *x1.shape[-2:]))
    b = xp.broadcast_to(x2.data, (*batch, *x2.shape[-2:]))
    out = like(xp.ascontiguousarray(quietly(_pnorm, xp, a[..., :, None, :] - b[..., None, :, :], float(p))), x1)
    if needs_grad(x1, x2):
        node: Any = attach(CdistBackward0((edge_of(x1), edge_of(x2))), out)
        node.x1, node.x2, node.result, node.p = save(x1), save(x2), save(out, is_output=True), float(p)
    return out


@backward(saved=("x", "result"))
def PdistBackward0(self: Any, grads: list[Any]) -> Any:
    """Each pair's kernel added to its first row and subtracted from its second."""
    g = grads[0]
    x, result = self.x.unpack(self), self.result.unpack(self)
    i, j = self.pairs
    xi, xj = x[like(i, x)], x[like(j, x)]
    pair = _pair_grad(xi - xj, result.unsqueeze(-1), g.unsqueeze(-1), self.p)
    n = x.shape[0]
    onehot_i = like((np.arange(n)[:, None] == i[None, :]).astype(x.data.dtype), x)
    onehot_j = like((np.arange(n)[:, None] == j[None, :]).astype(x.data.dtype), x)
    return ((onehot_i - onehot_j).mm(pair),)


@op(PdistBackward0)
def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The ``p``-norm distances between the rows of ``input`` (N, M), pairs ``i < j`` in row
    order, as ``torch.pdist``."""
    if not isinstance(input, Tensor):
        raise not_tensor("pdist", input)
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if input.data.dtype.kind != "f":
        raise RuntimeError("pdist only supports floating-point dtypes")
    if not p >= 0:  # (NaN included)
        raise RuntimeError("pdist only supports non-negative p values")
    xp, data = input._device.xp, input.data
    i, j = np.triu_indices(data.shape[0], 1)
    out = like(xp.ascontiguousarray(quietly(_pnorm, xp, data[i] - data[j], float(p))), input)
    if needs_grad(input):
        node: Any = attach(PdistBackward0((edge_of(input),)), out)
        node.x, node.result, node.p, node.pairs = save(input), save(out, is_output=True), float(p), (i, j)
    return out


@backward(saved=("a", "b", "result"), batched=True)
def DistBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """norm_backward of ``input - other`` (p = 2: ``g diff / norm``, 0 at a zero norm), summed
    back to each operand's shape, negated for ``other``."""
    g = grads[0]
    a, b, result = self.a.unpack(self), self.b.unpack(self), self.result.unpack(self)
    diff = a - b
    lead = (1,) * diff.ndim
    gd = g.reshape(*g.shape, *lead) if g.ndim > 0 or diff.ndim else g
    norm = result.reshape(*lead) if diff.ndim else result
    if self.p == 0:
        grad = diff * gd * 0.0
    elif self.p == 2:
        zero = norm.data == 0
        grad = gd * where(zero, 0.0, diff / where(zero, 1.0, norm))
    else:
        shape = (*gd.shape[: gd.ndim - diff.ndim], *diff.shape)
        grad = _norm_grad(diff, norm.expand(tuple(diff.shape)), gd.expand(tuple(shape)), self.p, None)
    ga = gb = None
    if self.next_edges[0] is not None:  # (each in its operand's dtype, as PyTorch's engine casts)
        ga = _as_dtype(batched_sum_to(grad, tuple(a.shape), batch), a)
    if self.next_edges[1] is not None:
        gb = _as_dtype(batched_sum_to(-grad, tuple(b.shape), batch), b)
    return ga, gb


def _as_dtype(g: Tensor, x: Tensor) -> Tensor:
    return g if g.data.dtype == x.data.dtype else g.to(x.dtype)


@op(DistBackward0)
def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """The ``p``-norm of ``input - other`` (broadcast), as ``torch.dist``."""
    if not isinstance(input, Tensor):
        raise not_tensor("dist", input)
    if not isinstance(other, Tensor):
        raise not_tensor("dist", other, 2, "other")
    from .casting import result_type
    from .operands import refuse_bool_sub

    if input.data.dtype == np.bool_ or other.data.dtype == np.bool_:  # (PyTorch's ``input - other``)
        refuse_bool_sub(input.data, other.data)
    xp = input._device.xp
    shape = infer_size(tuple(input.shape), tuple(other.shape))
    dtype = result_type(input, other)
    if dtype.kind != "f":
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{scalar_type_name(dtype)} instead.")
    diff = xp.broadcast_to(input.data.astype(dtype, copy=False), shape) - \
        xp.broadcast_to(other.data.astype(dtype, copy=False), shape)
    out = like(xp.asarray(quietly(_norm_values, xp, diff, float(p), None, False, diff.size)), input)
    if needs_grad(input, other):
        node: Any = attach(DistBackward0((edge_of(input), edge_of(other))), out)
        node.a, node.b, node.result, node.p = save(input), save(other), save(out, is_output=True), float(p)
    return out


@backward(saved=("x",))
def RenormBackward0(self: Any, grads: list[Any]) -> Any:
    """PyTorch's renorm_backward: where a slice's norm exceeds ``maxnorm``,
    ``factor g - maxnorm / (norm + 1e-7)^2 norm_backward(sum(x g))``; elsewhere ``g``."""
    g = grads[0]
    x = self.x.unpack(self)
    axes = self.axes
    norm = x.norm(self.p, axes, keepdim=True)
    s = (x * g).sum(axes, keepdim=True)
    if self.p == 2:
        zero = norm.data == 0
        nb = s * where(zero, 0.0, x / where(zero, 1.0, norm))
    else:
        nb = _norm_grad(x, norm.expand(*x.shape), s.expand(*x.shape), self.p, axes)
    inv = (norm + 1e-7).reciprocal()
    factor = inv * self.maxnorm
    return (where(norm.data > self.maxnorm, factor * g - (factor * inv) * nb, g),)


@op(RenormBackward0)
def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """Each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled down to
    ``maxnorm`` (by ``maxnorm / (norm + 1e-7)``), as ``torch.renorm``."""
    if not isinstance(input, Tensor):
        raise not_tensor("renorm", input)
    from .shape import _dim

    if not p > 0:  # (NaN included)
        raise RuntimeError("renorm: non-positive-norm not supported")
    if not maxnorm >= 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    data, xp = input.data, input._device.xp
    if data.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {data.ndim} dimensions")
    d = _dim(int(dim), data.ndim)
    if data.dtype.kind != "f":
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{scalar_type_name(data.dtype)}")
    axes = tuple(a for a in range(data.ndim) if a != d)
    norm = quietly(_norm_values, xp, data, float(p), axes, True, 2)
    factor = xp.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0).astype(data.dtype)
    out = like(data * factor, input)
    if needs_grad(input):
        node: Any = attach(RenormBackward0((edge_of(input),)), out)
        node.x, node.p, node.axes, node.maxnorm = save(input), float(p), axes, float(maxnorm)
    return out


@backward(saved=("v1", "v2"))
def AddrBackward0(self: Any, grads: list[Any]) -> Any:
    """``beta g`` (summed to ``input``'s shape), ``alpha g v2`` and ``alpha g^T v1``."""
    g = grads[0]
    v1, v2 = self.v1.unpack(self), self.v2.unpack(self)
    gi = g1 = g2 = None
    if self.next_edges[0] is not None:
        gi = batched_sum_to(g * self.beta if self.beta != 1 else g, self.shape, 0)
    if self.next_edges[1] is not None:
        g1 = g.mv(v2) * self.alpha if self.alpha != 1 else g.mv(v2)
    if self.next_edges[2] is not None:
        g2 = g.t().mv(v1) * self.alpha if self.alpha != 1 else g.t().mv(v1)
    return gi, g1, g2


@op(AddrBackward0)
def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)`` (``input`` broadcast to the outer product's
    shape; with ``beta=0`` it is ignored, NaN included), as ``torch.addr``."""
    for k, (t, name) in enumerate(((input, "input"), (vec1, "vec1"), (vec2, "vec2"))):
        if not isinstance(t, Tensor):
            raise not_tensor("addr", t, k + 1, name)
    if vec1.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {vec1.ndim}-D")
    if vec2.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec2, but got {vec2.ndim}-D")
    xp = input._device.xp
    shape = (vec1.shape[0], vec2.shape[0])
    infer_size(tuple(input.shape), shape)
    prod = xp.outer(vec1.data, vec2.data)
    body = prod if alpha == 1 else alpha * prod
    res = body if beta == 0 else (xp.broadcast_to(input.data, shape) * (beta if beta != 1 else 1) + body)
    out = like(xp.ascontiguousarray(res).astype(np.result_type(input.data, vec1.data, vec2.data)), input)
    if needs_grad(input, vec1, vec2):
        node: Any = attach(AddrBackward0((edge_of(input), edge_of(vec1), edge_of(vec2))), out)
        node.v1, node.v2, node.alpha, node.beta, node.shape = save(vec1), save(vec2), alpha, beta, tuple(input.shape)
    return out


TENSOR_METHODS = {"dist": dist, "renorm": renorm, "addr": addr}
