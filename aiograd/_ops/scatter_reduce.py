"""``scatter_reduce`` (and ``scatter_reduce_`` in place): ``src`` reduced into ``input`` at
``index`` along ``dim`` by ``sum``, ``prod``, ``mean``, ``amax`` or ``amin`` (``max``/``min``
are accepted as PyTorch accepts them), with or without ``input``'s own values
(``include_self``).

Its node, ``ScatterReduceBackward0``, is PyTorch's ``scatter_reduce_backward``
(FunctionsManual.cpp), written with aiograd ops so that it differentiates again: ``sum`` hands
``grad`` and ``grad.gather``; ``mean`` divides them by the counts; ``amax``/``amin`` share the
gradient evenly among the entries equal to the result; ``prod`` divides the result by each
entry (with PyTorch's care for a single zero at a position). Without ``include_self`` the
scattered positions of ``input`` get no gradient.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ._registry import backward, op
from ._util import Tensor, attach, common_device, edge_of, like, needs_grad, not_tensor, save
from .elementwise import where
from .indexing import gather, getitem
from .padding import pad
from .quiet import quietly_ops
from .rearrange import in_place
from .scatter import _checked_index, _mesh, scatter, scatter_add
from .shape import reshape

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["scatter_reduce", "scatter_reduce_"]

_REDUCES = {"sum": "sum", "prod": "prod", "mean": "mean", "amax": "amax", "amin": "amin", "max": "amax", "min": "amin"}


def _to_src(g: Tensor, shape: tuple[int, ...]) -> Tensor:
    """``g`` (of ``index``'s shape) padded with zeros to ``src``'s shape, as ``scatter``'s is."""
    if tuple(g.data.shape) == shape:
        return g
    if g.data.size == int(np.prod(shape, dtype=np.int64)):
        return reshape(g, shape)
    widths: list[int] = []
    for n, size in zip(reversed(g.data.shape), reversed(shape)):  # (pad's order: last dim first)
        widths += [0, size - n]
    return pad(g, tuple(widths))


@backward(saved=("x", "src", "result", "indices"))
def ScatterReduceBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    return quietly_ops(_scatter_reduce_backward, self, grads[0])  # (NaN and infinities as torch's, silently)


def _scatter_reduce_backward(self: Any, g: Tensor) -> Any:
    x, src, result = self.x.unpack(self), self.src.unpack(self), self.result.unpack(self)
    idx = self.indices.unpack(self)
    d, reduce = self.dim, self.reduce
    if tuple(src.data.shape) != tuple(idx.data.shape):  # the part read: src's leading corner
        src_r = getitem(src, tuple(slice(0, n) for n in idx.data.shape))
    else:
        src_r = src
    if reduce == "sum":
        grad_self, grad_src = g, gather(g, d, idx)
    elif reduce == "mean":
        n = like(g._device.xp.ones(g.data.shape, dtype=g.data.dtype) * (1 if self.include_self else 0), g)
        n = scatter_add(n, d, idx, like(g._device.xp.ones(idx.data.shape, dtype=g.data.dtype), g))
        n = where(n.data == 0, 1.0, n)
        grad_self = g / n
        grad_src = gather(g, d, idx) / gather(n, d, idx)
    elif reduce in ("amax", "amin"):
        value = gather(result, d, idx)
        self_is = (x == result).to(g.data.dtype)
        src_is = (src_r == value).to(g.data.dtype)
        distributed = g / scatter_add(self_is, d, idx, src_is)
        grad_self = self_is * distributed
        grad_src = src_is * gather(distributed, d, idx)
    else:  # prod
        xd = x.data
        masked_self = where(xd == 0, 1.0, x)
        masked_self_result = scatter_reduce(masked_self, d, idx, src_r, "prod", include_self=self.include_self)
        grad_self = g * masked_self_result / masked_self
        src_zero = src_r.data == 0
        zeros_count = np.zeros(xd.shape, dtype=np.int64)
        np.add.at(zeros_count, _mesh(idx.data, d), src_zero.astype(np.int64))
        single = src_zero & (np.take_along_axis(zeros_count, idx.data, d) == 1)
        masked_src = where(single, 1.0, src_r)
        masked_src_result = scatter_reduce(x, d, idx, masked_src, "prod", include_self=self.include_self)
        grad_src = where(
            single, gather(g * masked_src_result, d, idx), gather(g * result, d, idx) / where(src_zero, 1.0, src_r)
        )
    if not self.include_self:
        grad_self = scatter(grad_self, d, idx, 0.0)
    return (grad_self if self.next_edges[0] is not None else None,
            _to_src(grad_src, self.src_shape) if self.next_edges[1] is not None else None)


def _identity(reduce: str, dtype: np.dtype[Any]) -> Any:
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.kind == "f":
        return -np.inf if reduce == "amax" else np.inf
    if dtype.kind == "b":
        return reduce != "amax"
    info = np.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


@op(ScatterReduceBackward0)
def scatter_reduce(
    input: Tensor, dim: int, index: Tensor | NDArray[Any], src: Tensor, reduce: str, *, include_self: bool = True
) -> Tensor:
    """A copy of ``input`` with each ``src[i][j][k]`` reduced (``reduce``) into the entry
    ``[index[i][j][k]][j][k]`` for ``dim=0`` (and so on for other dims); with
    ``include_self=False`` the reduced entries forget their own values first."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("scatter_reduce", input)
    if reduce not in _REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    reduce = _REDUCES[reduce]
    common_device(input, index, src)
    d, idx = _checked_index("scatter", input, dim, index, src)
    data = input.data
    xp = input._device.xp
    out = data.reshape(data.shape or (1,)).copy()
    flat_idx = idx.reshape(idx.shape or (1,))
    where_ = _mesh(flat_idx, d)
    values = src.data.reshape(src.data.shape or (1,))[tuple(slice(0, n) for n in flat_idx.shape)]
    if not include_self:
        out[where_] = _identity(reduce, data.dtype)
    ufunc = {"sum": xp.add, "mean": xp.add, "prod": xp.multiply, "amax": xp.maximum, "amin": xp.minimum}[reduce]
    if data.dtype.kind == "b" and reduce in ("sum", "mean"):
        ufunc = xp.logical_or
    with np.errstate(all="ignore"):
        ufunc.at(out, where_, values)
        if reduce == "mean":
            count = xp.full(out.shape, 1 if include_self else 0, dtype=np.int64)
            xp.add.at(count, where_, 1)
            count[count == 0] = 1
            if out.dtype.kind in "iu":
                out = xp.floor_divide(out, count).astype(out.dtype)
            else:
                out = (out / count).astype(out.dtype)
    result = like(out.reshape(data.shape), input)
    if needs_grad(input, src):
        node = attach(ScatterReduceBackward0((edge_of(input), edge_of(src))), result)
        node.dim, node.reduce, node.include_self, node.src_shape = d, reduce, bool(include_self), src.data.shape
        node.x, node.src = save(input), save(src)
        node.result = save(result, is_output=True)
        node.indices = save(like(flat_idx.reshape(idx.shape), input))
    return result


@op(ScatterReduceBackward0)
def scatter_reduce_(
    input: Tensor, dim: int, index: Tensor | NDArray[Any], src: Tensor, reduce: str, *, include_self: bool = True
) -> Tensor:
    """``scatter_reduce`` in place."""
    return in_place(input, lambda x: scatter_reduce(x, dim, index, src, reduce, include_self=include_self), src)


TENSOR_METHODS = {"scatter_reduce": scatter_reduce, "scatter_reduce_": scatter_reduce_}
