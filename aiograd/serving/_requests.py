"""Helpers for the common gradient case of a batched service: many requests' inputs joined into
one batch, one forward and one backward for all of them, the results split back per request.

This is exact only when the rows of the batch are independent: request ``i``'s output rows
depend on request ``i``'s input rows alone. Then the vector-Jacobian product of the batch with
every request's ``grad_output`` stacked is, row block by row block, each request's own
vector-Jacobian product, because the Jacobian of the batch is block diagonal. Row-wise layers
(``Linear``, convolutions over each sample, activations, ``LayerNorm``, ``GroupNorm``,
attention within each sample, ``BatchNorm`` in eval mode with running statistics) keep rows
independent; anything that mixes samples does not: ``BatchNorm`` computing batch statistics
(training mode, or ``track_running_stats=False``), a softmax or a mean over the batch
dimension, a loss reduced over the batch. ``per_request_grad`` refuses a module with batch
statistics; ``check_rows_independent`` tests any function numerically.
"""

from __future__ import annotations

import itertools
import typing
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from .._api._autograd import grad as _grad
from .._api._factories import as_tensor as _as_tensor
from .._api._factories import ones_like as _ones_like
from .._base._grad_mode import enable_grad as _enable_grad
from .._base._grad_mode import no_grad as _no_grad
from .._core._tensor import Tensor
from .._ops.joining import cat as _cat
from .._ops.joining import stack as _stack
from ..nn.modules.batchnorm import _BatchNorm
from ..nn.modules.module import Module

__all__ = [
    "RequestBatch",
    "RequestGrad",
    "batch_coupled_modules",
    "check_rows_independent",
    "concat_requests",
    "per_request_grad",
    "stack_requests",
]

_A = typing.TypeVar("_A", Tensor, np.ndarray)


class RequestBatch:
    """Requests' items joined along the batch dimension (dim 0), and how to split results back.

    ``tensor`` is the batch; ``sizes[i]`` is how many of its rows are request ``i``'s;
    ``stacked`` says whether each item was one sample (joined with ``stack``: a new dim 0, one row
    each) or already a batch of rows (joined with ``cat``). Made by ``concat_requests`` or
    ``stack_requests``.
    """

    __slots__ = ("offsets", "sizes", "stacked", "tensor")

    def __init__(self, tensor: Tensor, sizes: Sequence[int], stacked: bool) -> None:
        self.tensor = tensor
        self.sizes = tuple(sizes)
        self.stacked = stacked
        self.offsets = (0, *itertools.accumulate(self.sizes))

    def __len__(self) -> int:
        """The number of requests."""
        return len(self.sizes)

    def __repr__(self) -> str:
        how = "stacked" if self.stacked else "concatenated"
        return (f"RequestBatch({len(self.sizes)} requests {how}, rows={self.offsets[-1]}, "
                f"shape={tuple(self.tensor.shape)})")

    def split(self, result: _A) -> list[_A]:
        """``result`` (a tensor or array whose dim 0 is this batch's rows) cut back into one
        piece per request: request ``i``'s rows, or for stacked items its one row with the batch
        dimension removed. Tensors come back as views (``split``), arrays as numpy views."""
        rows = self.offsets[-1]
        if result.ndim == 0 or result.shape[0] != rows:
            shape = tuple(result.shape)
            raise ValueError(
                f"RequestBatch.split: expected a result with {rows} rows along dim 0 (one per "
                f"row of the batch), got shape {shape}"
            )
        if self.stacked:
            return list(result.unbind(0)) if isinstance(result, Tensor) else list(result)
        if isinstance(result, Tensor):
            return list(result.split(list(self.sizes)))
        return np.split(result, self.offsets[1:-1])


def concat_requests(
    items: Sequence[Any], *, dtype: Any = None, device: Any = None
) -> RequestBatch:
    """Join requests' inputs, each a batch of rows (``(rows_i, *shape)``), along dim 0.

    Items are tensors or array-likes (an array is not copied before the join). Every item needs
    at least one dimension and the same trailing shape; their dtypes promote as ``cat``'s do.
    Tensors that require grad stay differentiable through the join."""
    fast = _join_arrays(items, dtype, device, stacked=False)
    if fast is not None:
        return fast
    tensors = _as_tensors(items, dtype, device, "concat_requests")
    for i, t in enumerate(tensors):
        if t.ndim == 0:
            raise ValueError(
                f"concat_requests: request {i}'s item is a 0-d tensor; each item must be a batch "
                "of rows (use stack_requests for one sample per request)"
            )
        if t.shape[1:] != tensors[0].shape[1:]:
            raise ValueError(
                f"concat_requests: request {i}'s item has shape {tuple(t.shape)}, but request "
                f"0's rows have shape {tuple(tensors[0].shape[1:])}: every row must have the same "
                "shape"
            )
    joined = tensors[0] if len(tensors) == 1 else _cat(tensors)
    return RequestBatch(joined, [t.shape[0] for t in tensors], stacked=False)


def stack_requests(
    items: Sequence[Any], *, dtype: Any = None, device: Any = None
) -> RequestBatch:
    """Join requests' inputs, each one sample of the same shape, along a new dim 0 (one row per
    request). Items are tensors or array-likes; dtypes promote as ``stack``'s do."""
    fast = _join_arrays(items, dtype, device, stacked=True)
    if fast is not None:
        return fast
    tensors = _as_tensors(items, dtype, device, "stack_requests")
    for i, t in enumerate(tensors):
        if t.shape != tensors[0].shape:
            raise ValueError(
                f"stack_requests: request {i}'s item has shape {tuple(t.shape)}, but request "
                f"0's has shape {tuple(tensors[0].shape)}: stacked items must have one shape"
            )
    return RequestBatch(_stack(tensors), [1] * len(tensors), stacked=True)


def _join_arrays(items: Sequence[Any], dtype: Any, device: Any, stacked: bool) -> RequestBatch | None:
    """The common case cheaply: numpy arrays of one dtype and row shape, joined by numpy into
    one tensor (instead of a tensor per item and a ``cat`` node); None otherwise."""
    if not isinstance(items, (list, tuple)) or not items:
        return None
    first = items[0]
    if type(first) is not np.ndarray or first.ndim == 0:
        return None
    dt, shape = first.dtype, first.shape if stacked else first.shape[1:]
    for a in items:
        if type(a) is not np.ndarray or a.dtype != dt or (a.shape if stacked else a.shape[1:]) != shape:
            return None  # the general path promotes dtypes and names the odd item
    if stacked:
        joined = np.stack(items)
    else:  # one request (a lone one, at low load) is its own batch: no copy
        joined = first if len(items) == 1 else np.concatenate(items)
    sizes = [1] * len(items) if stacked else [a.shape[0] for a in items]
    return RequestBatch(_as_tensor(joined, dtype=dtype, device=device), sizes, stacked)


def _as_tensors(items: Sequence[Any], dtype: Any, device: Any, name: str) -> list[Tensor]:
    if isinstance(items, (Tensor, np.ndarray)) or not isinstance(items, Sequence):
        raise TypeError(f"{name}: expected a sequence of items (one per request), "
                        f"got {type(items).__name__}")
    if not items:
        raise ValueError(f"{name}: no items (a batch needs at least one request)")
    return [_as_tensor(item, dtype=dtype, device=device) for item in items]


class RequestGrad(NamedTuple):
    """One request's share of ``per_request_grad``: its output rows and the gradient with
    respect to its input (both detached)."""

    output: Tensor
    grad: Tensor


GradOutputs = (
    Sequence["Tensor | np.ndarray | float | Callable[[Tensor], Tensor | np.ndarray | float] | None"]
    | Callable[[Tensor], "Tensor | np.ndarray | float"]
    | None
)


async def per_request_grad(
    fn: Callable[[Tensor], Tensor],
    inputs: Sequence[Any],
    grad_outputs: GradOutputs = None,
    *,
    stack: bool = False,
    check: bool = True,
    dtype: Any = None,
    device: Any = None,
) -> list[RequestGrad]:
    """Each request's output and input gradient, from one batched forward and one backward.

    ``inputs[i]`` is request ``i``'s input: a batch of rows, joined with ``concat_requests``, or
    with ``stack=True`` one sample, joined with ``stack_requests``. ``fn`` maps the batch to an
    output with one row per input row (a model's forward). For request ``i`` the result holds
    its output rows ``y_i`` and ``d(sum(y_i * v_i)) / d x_i``, the vector-Jacobian product with
    its ``grad_output`` ``v_i``: ones when ``grad_outputs`` is None (the gradient of
    ``y_i.sum()``: a saliency); ``grad_outputs[i]`` from a sequence (None for ones, a number, a
    tensor or array shaped as ``y_i``, or a callable of ``y_i``); or ``grad_outputs(y_i)`` from
    one callable for all. A callable sees the detached output, for a ``grad_output`` chosen from
    it (the predicted class's one-hot, say).

    It equals ``grad(fn(x_i), x_i, v_i)`` request by request, to float rounding, when the rows
    of ``fn`` are independent (this module's docstring says when they are). With ``check``
    (the default), ``fn`` that is an ``aiograd.nn.Module`` (or one's bound method) is refused
    with a ``ValueError`` if a submodule normalises with batch statistics; for other functions
    run ``check_rows_independent`` once on a representative batch. The forward records a graph
    even under ``no_grad``; gradients go to the inputs only (parameters' ``.grad`` untouched).
    """
    if check:
        owner = fn if isinstance(fn, Module) else getattr(fn, "__self__", None)
        if isinstance(owner, Module):
            coupled = batch_coupled_modules(owner)
            if coupled:
                raise ValueError(
                    f"per_request_grad: {coupled[0]} normalises with the statistics of the whole "
                    "batch, so one request's gradient would depend on the other requests: call "
                    "the model's .eval() (with running statistics), or compute each request on "
                    "its own"
                )
    joined = (stack_requests if stack else concat_requests)(inputs, dtype=dtype, device=device)
    x = joined.tensor.detach().requires_grad_(True)
    with _enable_grad():
        out = fn(x)
    if not isinstance(out, Tensor):
        raise TypeError(f"per_request_grad: fn must return a Tensor, got {type(out).__name__}")
    rows = x.shape[0]
    if out.ndim == 0 or out.shape[0] != rows:
        raise ValueError(
            f"per_request_grad: fn's output has shape {tuple(out.shape)} for a batch of {rows} "
            "rows; it must have one row per input row (dim 0), each depending on its own row only"
        )
    outputs = _detached_pieces(out, joined)
    seed = _grad_output_batch(grad_outputs, outputs, out)
    (g,) = await _grad(out, x, seed)
    assert g is not None  # x is used (fn's output has its rows), so its gradient is defined
    return [RequestGrad(o, gi) for o, gi in zip(outputs, _detached_pieces(g, joined))]


def _detached_pieces(t: Tensor, joined: RequestBatch) -> list[Tensor]:
    """``joined.split(t.detach())`` without a split node: each piece a detached tensor on a
    slice of ``t``'s array, sharing its version counter as ``detach`` does. A view op per piece
    cost 2 us each, 15% of a 64-request batch's time."""
    detached = t.detach()
    data, device, vc = detached.data, detached._device, detached._vc
    offsets = joined.offsets
    pieces = []
    for i in range(len(joined.sizes)):
        piece = Tensor._wrap(data[offsets[i]] if joined.stacked else data[offsets[i]:offsets[i + 1]])
        piece._device, piece._vc = device, vc
        pieces.append(piece)
    return pieces


def _grad_output_batch(grad_outputs: GradOutputs, outputs: list[Tensor], out: Tensor) -> Tensor:
    """The batch's grad_output: the requests' own, joined (None: all ones)."""
    if grad_outputs is None:
        return _ones_like(out)
    if callable(grad_outputs):
        pieces: list[Any] = [grad_outputs(o) for o in outputs]
    elif isinstance(grad_outputs, (Tensor, np.ndarray)) or not isinstance(grad_outputs, Sequence):
        raise TypeError(
            "per_request_grad: grad_outputs must be None, a sequence with one entry per request, "
            f"or a callable of a request's output; got {type(grad_outputs).__name__}"
        )
    else:
        pieces = list(grad_outputs)
        if len(pieces) != len(outputs):
            raise ValueError(f"per_request_grad: {len(pieces)} grad_outputs for {len(outputs)} "
                             "requests: give one per request (None for ones)")
    resolved = [_resolve_grad_output(i, v, o) for i, (v, o) in enumerate(zip(pieces, outputs))]
    if out.device.type == "cpu":
        # Written into one array: no tensor and no ``cat`` per request (a third of a lone
        # request's overhead).
        seed = np.empty(tuple(out.shape), dtype=out.dtype)
        row = 0
        for v, o in zip(resolved, outputs):
            v = v.detach().cpu().numpy() if isinstance(v, Tensor) else np.asarray(v)
            rows = o.shape[0] if o.ndim == out.ndim else 1
            seed[row:row + rows] = v if o.ndim == out.ndim or v.ndim == 0 else v[None]
            row += rows
        return Tensor._wrap(seed)
    with _no_grad():
        seeds = []
        for v, o in zip(resolved, outputs):
            t = _as_tensor(v, dtype=out.dtype, device=out.device)
            t = t.expand(o.shape) if t.ndim == 0 else t
            seeds.append(t.unsqueeze(0) if o.ndim < out.ndim else t)
        return _cat(seeds)


def _resolve_grad_output(i: int, v: Any, o: Tensor) -> Any:
    """Request ``i``'s grad_output for its output ``o``: a callable called, None as ones, and a
    shape other than ``o``'s refused (a number stands for every element)."""
    if callable(v):
        v = v(o)
    if v is None:
        return 1.0
    shape = tuple(v.shape) if isinstance(v, Tensor) else np.shape(v)
    if shape and shape != tuple(o.shape):
        raise ValueError(f"per_request_grad: grad_output of request {i} has shape {shape}, but "
                         f"its output has shape {tuple(o.shape)}")
    return v


def batch_coupled_modules(module: Module) -> list[str]:
    """The submodules of ``module`` (itself included) that normalise with the statistics of the
    batch as it is now configured, described as ``"BatchNorm1d 'features.1' in training
    mode"``: where they are, one row's output depends on the other rows. Empty if none."""
    found = []
    for name, m in module.named_modules():
        if not isinstance(m, _BatchNorm):
            continue
        if m.training:
            why = "in training mode"
        elif m.running_mean is None and m.running_var is None:
            why = "without running statistics (track_running_stats=False)"
        else:
            continue
        where = repr(name) if name else "(the model itself)"
        found.append(f"{type(m).__name__} {where} {why}")
    return found


async def check_rows_independent(
    fn: Callable[[Tensor], Tensor],
    example: Any,
    *,
    probes: int = 2,
    atol: float = 0.0,
) -> None:
    """Check numerically that ``fn``'s output row ``r`` depends on input row ``r`` alone, on an
    ``example`` batch (at least two rows): for ``probes`` rows ``r`` (the first, the last, then
    evenly between), the gradient of ``fn(example)[r].sum()`` must be zero (at most ``atol``)
    on every other row. Raises ``ValueError`` naming the first pair of rows found coupled.

    Run it once (in a test or at startup) with a representative batch: it catches batch
    statistics, softmaxes or means over the batch dimension and the like, for any ``fn``. A
    dependence that vanishes on this example (a dead ReLU, say) can escape it.
    """
    x = _as_tensor(example).detach()
    if not x.is_floating_point():
        raise TypeError(f"check_rows_independent: the example must be floating point, got {x.dtype}")
    x.requires_grad_(True)
    rows = x.shape[0] if x.ndim else 0
    if rows < 2:
        raise ValueError(f"check_rows_independent: the example needs at least 2 rows, got {rows}")
    with _enable_grad():
        out = fn(x)
    if out.ndim == 0 or out.shape[0] != rows:
        raise ValueError(
            f"check_rows_independent: fn's output has shape {tuple(out.shape)} for a batch of "
            f"{rows} rows; it must have one row per input row"
        )
    picks = sorted({round(k * (rows - 1) / max(probes - 1, 1)) for k in range(max(probes, 1))})
    for n, r in enumerate(picks):
        seed = np.zeros(tuple(out.shape), dtype=np.float64)
        seed[r] = 1.0
        (g,) = await _grad(out, x, _as_tensor(seed, dtype=out.dtype, device=out.device),
                           retain_graph=n + 1 < len(picks), allow_unused=True)
        if g is None:
            continue
        per_row = np.abs(g.detach().cpu().numpy().reshape(rows, -1)).max(axis=1)
        per_row[r] = 0.0
        worst = int(per_row.argmax())
        if per_row[worst] > atol:
            raise ValueError(
                f"check_rows_independent: output row {r} depends on input row {worst} (a "
                f"gradient of {per_row[worst]:.3g} there): the rows of fn are not independent, "
                "so batching requests would mix them"
            )
