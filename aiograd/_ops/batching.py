"""Which backward rules run vectorized over a batch of gradients, and the helpers they share.

Under ``grad(..., is_grads_batched=True)`` every gradient carries leading batch dims. A rule
declares where it is written that it handles them (``Node.batched``: ``@backward(batched=True)``,
a variant inherits its rule's, a ``Unary`` row's field), and then receives their number as an
argument, ``apply(grads, batch)``, which it passes on to the helpers that need it. Elementwise
rules need nothing (numpy broadcasts from the right); the shape-sensitive ones (sum back to a
broadcast operand's shape, reshape back, permute back, expand a reduction's gradient, ...) put
the batch dims in front of the shapes they saved. A batched node runs once on the whole batch;
any other one runs once per sample (``aiograd._engine.batched``), so an undeclared rule is never
wrong, only slower.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .._core._node import Node
from ._registry import OPS
from ._util import Tensor
from .quiet import quietly

__all__ = ["BATCHED_RULES", "PER_SAMPLE_RULES", "per_sample_scalar", "batched_sum_to", "shift_axes", "sum_to_array", "sum_to_axes", "sum_to_shape", "reduce_grad_array"]

#: ``BATCHED_RULES``: the names (PyTorch's) of the registered nodes whose rules are written for
#: leading batch dims; tests/test_batched_grad.py checks each against the per-sample loop, bit for
#: bit where the same kernel runs on the same numbers (docs/functional.md, "Equal to the loop").
#: ``PER_SAMPLE_RULES``: the other registered nodes, run once per sample (each says why where its
#: rule is written). Both are read from the nodes' declarations (``__getattr__``).
BATCHED_RULES: frozenset[str]
PER_SAMPLE_RULES: frozenset[str]


def _registered() -> Iterator[type[Node]]:
    for rule in OPS.values():
        yield from rule.nodes


def __getattr__(name: str) -> frozenset[str]:
    # Read on each use, not at import: the op modules import this one before they register.
    # (A ``batched`` property, indexing's per-node veto, counts as batched.)
    if name == "BATCHED_RULES":
        return frozenset(cls.__name__ for cls in _registered() if cls.batched)
    if name == "PER_SAMPLE_RULES":
        return frozenset(cls.__name__ for cls in _registered() if not cls.batched)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def sum_to_axes(shape: tuple[int, ...], target: tuple[int, ...], nb: int) -> tuple[int, ...]:
    """The axes of an array of ``shape`` (batch dims first) to sum so that it becomes the batch
    dims followed by ``target``: the broadcast's extra leading dims and its stretched 1s."""
    lead = len(shape) - nb - len(target)
    return tuple(range(nb, nb + lead)) + tuple(
        nb + lead + i for i, s in enumerate(target) if s == 1 and shape[nb + lead + i] != 1
    )


def batched_sum_to(grad: Tensor, shape: tuple[int, ...], nb: int) -> Tensor:
    """``sum_to_size(grad, shape)`` for a gradient with ``nb`` leading batch dims (kept)."""
    gshape = grad.data.shape
    axes = sum_to_axes(gshape, shape, nb)
    out = grad.sum(axes, keepdim=True) if axes else grad
    target = gshape[:nb] + shape
    return out if out.data.shape == target else out.reshape(target)


def sum_to_array(data: Any, shape: tuple[int, ...], nb: int) -> Any:
    """``batched_sum_to`` on an array (the first-order fast path)."""
    axes = sum_to_axes(data.shape, shape, nb)
    if axes:
        data = data.sum(axis=axes, keepdims=True)
    target = data.shape[:nb] + shape
    return data if data.shape == target else data.reshape(target)


def per_sample_scalar(grad: Tensor, ndim: int, batch: int) -> Tensor:
    """The gradient of a one-element output, shaped to broadcast against a per-sample array of
    ``ndim`` dims: as it is unbatched, with trailing 1s after the ``batch`` dims when batched."""
    return grad.reshape(grad.data.shape[:batch] + (1,) * ndim) if batch else grad


def shift_axes(axes: tuple[int, ...], batch: int) -> tuple[int, ...]:
    """Non-negative axes of an unbatched gradient, as axes of one with ``batch`` batch dims."""
    return tuple(a + batch for a in axes) if batch else axes


def sum_to_shape(data: np.ndarray[Any, Any], shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    """``data`` summed over the dims it was broadcast along to reach ``shape``."""
    if data.shape == shape:
        return data
    lead = data.ndim - len(shape)
    # (a RuntimeWarning is numpy's inf + -inf warning made an error by -W error: torch is
    # silent, so the sum is done again quietly; try costs nothing when nothing is raised)
    if lead == 1 and data.shape[1:] == shape:
        try:
            return data.sum(0)  # a bias's gradient: the most common broadcast by far
        except RuntimeWarning:
            return quietly(data.sum, 0)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, s in enumerate(shape) if s == 1 and data.shape[i + lead] != 1
    )
    if axes:
        try:
            data = data.sum(axis=axes, keepdims=True)
        except RuntimeWarning:
            data = quietly(np.sum, data, axes, None, None, True)
    if lead:
        data = data.reshape(shape)
    return data


def reduce_grad_array(data: np.ndarray[Any, Any], shape: tuple[int, ...], batch: int) -> np.ndarray[Any, Any]:
    """``reduce_grad`` on a gradient's array (the first-order fast paths): batch dims kept."""
    if data.shape == shape:
        return data
    try:
        return sum_to_array(data, shape, batch) if batch else sum_to_shape(data, shape)
    except RuntimeWarning:  # inf + -inf where -W error made numpy's warning one: torch is silent
        return quietly(sum_to_array, data, shape, batch) if batch else quietly(sum_to_shape, data, shape)
