"""Index constructors and sorted search, none with a gradient: tril_indices, triu_indices,
logspace (PyTorch's kernel: integer dtypes cast ``start``, ``end`` and ``base`` first, and the
second half of the values is computed from ``end``), bucketize and searchsorted (``right``/
``side``, ``sorter``, ``out_int32``; a boundaries tensor of N dims searches each row of
``values`` in its own row)."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .._base._dtypes import get_default_dtype, scalar_type_name, type_name
from ._registry import op
from ._util import Tensor, common_device, like, new_leaf

__all__ = ["tril_indices", "triu_indices", "logspace", "bucketize", "searchsorted"]




def _tri_indices(fn: str, row: int, col: int, offset: int, dtype: Any, device: Any, lower: bool) -> Tensor:
    resolved = np.dtype(np.int64 if dtype is None else dtype)
    if resolved not in (np.dtype(np.int64), np.dtype(np.int32)):
        raise NotImplementedError(f"\"{fn}\" not implemented for '{scalar_type_name(resolved)}'")
    row, col, offset = operator.index(row), operator.index(col), operator.index(offset)
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    rows, cols = (np.tril_indices if lower else np.triu_indices)(row, offset, col)
    return new_leaf(np.stack([rows, cols]).astype(resolved).reshape(2, -1), device)


@op()
def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None) -> Tensor:
    """The (2, N) coordinates of the lower triangle (diagonal ``offset`` and below) of a
    ``row`` x ``col`` matrix, row by row."""
    return _tri_indices("tril_indices", row, col, offset, dtype, device, True)


@op()
def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None) -> Tensor:
    """The (2, N) coordinates of the upper triangle (diagonal ``offset`` and above) of a
    ``row`` x ``col`` matrix, row by row."""
    return _tri_indices("triu_indices", row, col, offset, dtype, device, False)


def _number(x: Any) -> Any:
    return x.item() if isinstance(x, Tensor) else x


@op()
def logspace(
    start: float | Tensor, end: float | Tensor, steps: int, base: float = 10.0, *,
    dtype: Any = None, device: Any = None, requires_grad: bool = False,
) -> Tensor:
    """``steps`` values ``base ** x`` for ``x`` evenly spaced from ``start`` to ``end``."""
    start, end, steps = _number(start), _number(end), operator.index(steps)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    resolved = np.dtype(get_default_dtype() if dtype is None else dtype)
    if resolved.kind == "b":
        raise NotImplementedError(f"\"logspace_cpu\" not implemented for '{scalar_type_name(resolved)}'")
    integral = resolved.kind in "iu"
    work = np.dtype(np.float64) if integral else resolved
    if integral:
        b, s, e = float(int(base)), float(int(start)), float(int(end))
    else:
        b, s, e = work.type(base), work.type(start), work.type(end)
    if steps == 1:
        values = np.array([np.power(b, s)], dtype=work)
    else:
        step = work.type((e - s) / (steps - 1)) if not integral else (e - s) / (steps - 1)
        idx = np.arange(steps)
        half = steps // 2
        with np.errstate(all="ignore"):
            front = np.power(work.type(b), work.type(s) + work.type(step) * idx[:half].astype(work))
            back = np.power(work.type(b), work.type(e) - work.type(step) * (steps - idx[half:] - 1).astype(work))
        values = np.concatenate([front, back]).astype(work)
    with np.errstate(all="ignore"):
        data = values.astype(resolved) if integral else values
    return new_leaf(data, device, requires_grad)


def _search(fn: str, seq: Tensor, values: Any, out_int32: bool, right: bool, sorter: Any) -> Tensor:
    """``searchsorted``'s kernel: ``values`` searched in ``seq`` (1-D, or row by row)."""
    scalar = not isinstance(values, Tensor)
    v = np.asarray(values) if scalar else np.asarray(values.data)
    s = np.asarray(seq.data)
    if s.ndim == 0:
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries "
            f"tensor and input value tensor must match, but we got boundaries tensor {list(s.shape)} and input value "
            f"tensor {list(v.shape)}"
        )
    if scalar and s.ndim != 1:
        raise RuntimeError(
            "torch.searchsorted(): input value can be a scalar only when boundaries tensor dimension is 1, but we got "
            f"boundaries tensor dim({s.ndim}) and input value's dim({v.ndim}) numel({v.size})"
        )
    if s.ndim > 1 and (v.ndim != s.ndim or v.shape[:-1] != s.shape[:-1]):
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries "
            f"tensor and input value tensor must match, but we got boundaries tensor {list(s.shape)} and input value "
            f"tensor {list(v.shape)}"
        )
    if sorter is not None:
        order = np.asarray(sorter.data if isinstance(sorter, Tensor) else sorter)
        if order.shape != s.shape:
            raise RuntimeError(
                "torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor "
                f"{list(s.shape)}and got sorter tensor {list(order.shape)}"
            )
        if order.dtype != np.int64:
            raise RuntimeError("torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                               f"{scalar_type_name(order.dtype)}")
        s = np.take_along_axis(s, order, -1)
    side = "right" if right else "left"
    if s.ndim == 1:
        out = np.searchsorted(s, v, side=side)
    else:
        rows_s, rows_v = s.reshape(-1, s.shape[-1]), v.reshape(-1, v.shape[-1])
        out = np.stack([np.searchsorted(a, b, side=side) for a, b in zip(rows_s, rows_v)]).reshape(v.shape)
    data = np.asarray(out, dtype=np.int32 if out_int32 else np.int64)
    return like(data, seq) if scalar else like(data, values)


def _side(side: str | None, right: bool) -> bool:
    if side is None:
        return right
    if side not in ("left", "right"):
        raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
    if right and side == "left":
        raise RuntimeError(
            "torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True"
        )
    return side == "right"


@op()
def searchsorted(
    sorted_sequence: Tensor, input: Tensor | float, *, out_int32: bool = False, right: bool = False,
    side: str | None = None, sorter: Tensor | None = None,
) -> Tensor:
    """For each value in ``input``, the index in the last dim of ``sorted_sequence`` that keeps it
    sorted (the first such with ``right=False``, the last with ``right=True`` / ``side="right"``);
    ``sorter`` sorts an unsorted sequence first; int64, or int32 with ``out_int32``."""
    if not isinstance(sorted_sequence, Tensor):
        raise TypeError(f"searchsorted(): argument 'sorted_sequence' (position 1) must be Tensor, not "
                        f"{type_name(sorted_sequence)}")
    common_device(sorted_sequence, input)
    return _search("searchsorted", sorted_sequence, input, out_int32, _side(side, right), sorter)


@op()
def bucketize(input: Tensor | float, boundaries: Tensor, *, out_int32: bool = False, right: bool = False) -> Tensor:
    """The bucket of each value of ``input`` among the sorted 1-D ``boundaries``: ``i`` with
    ``boundaries[i-1] < x <= boundaries[i]`` (``<= x <`` with ``right=True``)."""
    if not isinstance(boundaries, Tensor):
        raise TypeError(f"bucketize(): argument 'boundaries' (position 2) must be Tensor, not {type_name(boundaries)}")
    if boundaries.data.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.data.ndim})")
    return _search("bucketize", boundaries, input, out_int32, right, None)


