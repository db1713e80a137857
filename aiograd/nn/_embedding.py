"""torch.nn.functional's ``embedding``: the rows of ``weight`` picked by integer ``input``,
recording PyTorch's ``EmbeddingBackward0``.

The weight's gradient is the output's gradient added into zeros shaped like ``weight`` at the
picked rows (repeats accumulate), with indexing's recorded scatter (aiograd/_ops/indexing.py), so
it can be differentiated again. Rows equal to ``padding_idx`` get no gradient, and
``scale_grad_by_freq`` divides each row's gradient by how often the row occurs in ``input``, as
PyTorch's ``embedding_backward``. ``max_norm`` renormalises the picked rows of ``weight`` in place
first (PyTorch's ``embedding_renorm_``). ``sparse=True`` (a sparse gradient) is not supported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core._format import legacy_type_name
from .._ops._inplace_util import _bump
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
    to_tensor,
)
from .._ops.elementwise import where
from .._ops.indexing import IndexBackward0, _scatter

__all__ = ["embedding"]


# Not batched (runs once per sample under ``is_grads_batched``): it scatters into the weight's
# unbatched shape.
@backward(name="EmbeddingBackward0")
def _EmbeddingBackward0(self: Any, grads: list[Any]) -> tuple[Any]:
    """Scatter-add the output's gradient into the picked rows of zeros shaped as ``weight``."""
    g = grads[0]
    if self.padding_mask is not None:
        g = where(self.padding_mask, 0.0, g)
    if self.freq_scale is not None:
        g = g * self.freq_scale
    if first_order() and not needs_grad(g) and g._device.xp is np:  # (add.reduceat: numpy's)
        return (like(_scatter_rows(g._device.xp, g.data, self.indices, self.weight_shape), g),)
    return (_scatter(g, self.weight_shape, (None, (self.indices,), True), IndexBackward0),)


def _scatter_rows(xp: Any, g: Any, idx: Any, shape: tuple[int, ...]) -> Any:
    """Zeros of ``shape`` with the rows of ``g`` (``idx.shape + (dim,)``) added at ``idx``, on
    arrays: the indices sorted (stably, so each row's sum runs in input order, as ``add.at``'s
    and torch's) and each run of equal indices summed by one ``add.reduceat``."""
    flat = idx.reshape(-1)
    rows = g.reshape(flat.shape[0], shape[1])
    out = xp.zeros(shape, dtype=g.dtype)
    if not flat.shape[0]:
        return out
    order = xp.argsort(flat, kind="stable")
    picked = flat[order]
    starts = xp.flatnonzero(picked[1:] != picked[:-1]) + 1
    starts = xp.concatenate((xp.zeros(1, dtype=starts.dtype), starts))
    out[picked[starts]] = xp.add.reduceat(rows[order], starts, axis=0)
    return out


def _renorm(weight: Tensor, idx: Any, max_norm: float, norm_type: float) -> None:
    """``embedding_renorm_``: the picked rows whose norm exceeds ``max_norm`` scaled down to it,
    in place and outside autograd."""
    xp = weight._device.xp
    data = weight.data
    rows = xp.unique(idx.reshape(-1))
    picked = data[rows]
    norms = (xp.abs(picked) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
    scale = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
    data[rows] = picked * scale[:, None].astype(data.dtype)
    _bump(weight)


@op(_EmbeddingBackward0, family="embedding")
def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """``weight[input]``: one row of ``weight`` (``(num_embeddings, dim)``) per integer of
    ``input``, the output shaped ``input.shape + (dim,)``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("embedding", input, 1, "weight")
    if sparse:
        raise NotImplementedError("aiograd has no sparse gradients: embedding(sparse=True) is not supported")
    input = to_tensor(input, weight)
    common_device(input, weight)
    num_embeddings = weight.data.shape[0]
    if padding_idx is not None:
        # (PyTorch asserts; raised here so that ``python -O`` keeps the check)
        if not -num_embeddings <= padding_idx < num_embeddings:
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            padding_idx = num_embeddings + padding_idx
    idx = input.data
    if idx.dtype not in (np.int64, np.int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
            f"Long, Int; but got {legacy_type_name(input)} instead (while checking arguments for embedding)"
        )
    if weight.data.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    xp = weight._device.xp
    if idx.size and bool(((idx < 0) | (idx >= num_embeddings)).any()):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        _renorm(weight, idx, max_norm, norm_type)
    out = like(weight.data[idx], weight)
    if needs_grad(weight):
        node: Any = attach(_EmbeddingBackward0((edge_of(weight),)), out)
        node.indices, node.weight_shape = idx, weight.data.shape
        node.padding_mask = (idx == padding_idx)[..., None] if padding_idx is not None else None
        node.freq_scale = None
        if scale_grad_by_freq:
            counts = xp.bincount(idx.reshape(-1), minlength=num_embeddings)
            node.freq_scale = (1.0 / counts[idx])[..., None].astype(weight.data.dtype)
    return out
