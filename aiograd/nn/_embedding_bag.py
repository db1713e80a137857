"""torch.nn.functional's ``embedding_bag``: sums, means or maxima of bags of ``weight`` rows.

A composite of aiograd ops (so it differentiates to any order): ``'sum'`` and ``'mean'`` pick the
rows with :func:`embedding` (times ``per_sample_weights``), add them into their bags with
``index_add`` and divide by the bag sizes; ``'max'`` finds each column's maximal row per bag on
the arrays (the first one on ties, as ATen's loop) and ``gather``s it. Entries equal to
``padding_idx`` are left out of their bag (and of its size); an empty bag is zeros, as in
PyTorch. (PyTorch records one ``EmbeddingBagBackward0`` node; here the nodes are the parts'.)
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._core._format import legacy_type_name
from .._ops._util import Tensor, like, not_tensor, to_tensor
from .._ops.elementwise import where
from ._embedding import _renorm, embedding

__all__ = ["embedding_bag"]


def _check_indices(t: Tensor) -> None:
    if t.data.dtype not in (np.int64, np.int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
            f"Long, Int; but got {legacy_type_name(t)} instead (while checking arguments for embedding_bag)"
        )


def _type_str(value: Any) -> str:
    return "<class 'aiograd.Tensor'>" if isinstance(value, Tensor) else str(type(value))


def _bags(input: Tensor, weight: Tensor, offsets: Any, per_sample_weights: Any,
          include_last_offset: bool) -> tuple[Any, Any, Any, Any]:
    """torch.nn.functional's checks; the flat indices, offsets, per-sample weights and the
    number of bags."""
    if per_sample_weights is not None and input.data.shape != per_sample_weights.data.shape:
        raise ValueError(
            f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, "
            f"then it must have the same shape as the input ({input.shape})"
        )
    if weight.data.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.data.ndim}")
    if input.data.ndim == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                f"fixed length sequences. However, found offsets of type {_type_str(offsets)}"
            )
        _check_indices(input)
        n, length = input.data.shape
        offs = np.arange(0, n * length, length, dtype=np.int64) if length else np.zeros(n, dtype=np.int64)
        include_last_offset = False
        idx = np.asarray(input.data).reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.data.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        offsets = to_tensor(offsets, input)
        if offsets.data.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        _check_indices(input)
        _check_indices(offsets)
        idx, offs = np.asarray(input.data), np.asarray(offsets.data).astype(np.int64)
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.data.ndim}")
    return idx, offs, per_sample_weights, include_last_offset


def embedding_bag(
    input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm: float | None = None,
    norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
    per_sample_weights: Tensor | None = None, include_last_offset: bool = False, padding_idx: int | None = None,
) -> Tensor:
    """The sum, mean or max of each bag of ``weight`` rows: bags of a 1-D ``input`` start at
    ``offsets`` (the last one ends the last bag with ``include_last_offset``); a 2-D ``input``
    is one bag per row. ``per_sample_weights`` (``'sum'`` only) weighs each picked row."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("embedding_bag", input)
    if weight.data.dtype == np.int64 and input.data.dtype.kind == "f":
        warnings.warn(
            "Argument order of nn.functional.embedding_bag was changed. Usage `embedding_bag(weight, input, ...)` "
            "is deprecated, and should now be `embedding_bag(input, weight, ...)`.",
            stacklevel=2,
        )
        weight, input = input, weight
    idx, offs, psw, include_last_offset = _bags(input, weight, offsets, per_sample_weights, include_last_offset)
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if sparse:
        raise NotImplementedError("aiograd has no sparse gradients: embedding_bag(sparse=True) is not supported")
    rows, dim = weight.data.shape
    if idx.size and bool(((idx < 0) | (idx >= rows)).any()):
        bad = int(np.flatnonzero((idx < 0) | (idx >= rows))[0])
        if weight.data.dtype == np.float32 and mode != "max":  # (ATen's float kernel checks first)
            raise RuntimeError(
                f"Index {bad} of input takes value {int(idx[bad])} which is not in the valid range [0, {rows})"
            )
        raise RuntimeError(f"embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be {int(idx[bad])}")
    if max_norm is not None:
        _renorm(weight, idx, max_norm, norm_type)
    if psw is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for "
            f"mode='sum' (got mode='{mode}'). Please open a feature request on GitHub."
        )
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise RuntimeError(
                f"padding_idx must be within the number of embeddings, {-rows} through {rows - 1}, but got {padding_idx}"
            )
        padding_idx %= rows
    if include_last_offset and offs.size < 1:
        raise RuntimeError("include_last_offset: number of offset should be at least 1")
    if offs.size and offs[0] != 0:
        raise RuntimeError(
            "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
            f"position 0. However, got {int(offs[0])}\n[ aiograd.LongTensor{{}} ]"
        )
    if offs.size and offs[-1] > idx.size:
        raise RuntimeError(
            f"offsets[-1] can not be greater than input's length {idx.size} but got offsets[-1] of {int(offs[-1])}"
        )
    # (with include_last_offset, ATen's CPU kernels still end the last bag at the input's end)
    n_bags = offs.size - 1 if include_last_offset else offs.size
    positions = np.arange(idx.size)
    bag = np.searchsorted(offs[:n_bags], positions, side="right") - 1
    keep = bag >= 0
    if padding_idx is not None:
        keep &= idx != padding_idx
    kept_idx, kept_bag = idx[keep].astype(np.int64), bag[keep]
    counts = np.bincount(kept_bag, minlength=n_bags)[:n_bags]
    if mode == "max":
        return _bag_max(weight, kept_idx, kept_bag, counts, n_bags)
    picked = embedding(like(kept_idx, weight), weight, scale_grad_by_freq=scale_grad_by_freq)
    if psw is not None:
        psw = to_tensor(psw, weight).reshape(-1)
        picked = picked * psw[like(np.flatnonzero(keep), weight)].unsqueeze(1)
    zeros = like(np.zeros((n_bags, dim), dtype=weight.data.dtype), weight)
    out = zeros.index_add(0, like(kept_bag, weight), picked)
    if mode == "mean":
        out = out / like(np.maximum(counts, 1).astype(weight.data.dtype)[:, None], weight)
    return out


def _bag_max(weight: Tensor, kept_idx: Any, kept_bag: Any, counts: Any, n_bags: int) -> Tensor:
    """Each bag's column-wise maximum of its rows (the first on ties), zeros for an empty bag."""
    data = weight.data
    dim = data.shape[1]
    arg = np.zeros((n_bags, dim), dtype=np.int64)
    start = 0
    for b in range(n_bags):  # (the kept entries are in bag order)
        n = int(counts[b])
        if n:
            rows = kept_idx[start : start + n]
            arg[b] = rows[np.argmax(data[rows], axis=0)]
        start += n
    out = weight.gather(0, like(arg, weight))
    empty = (counts == 0)[:, None]
    return where(like(empty, weight), 0.0, out) if empty.any() else out
