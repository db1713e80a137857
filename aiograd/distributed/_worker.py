"""What runs on a Dask worker: one shard's gradients, with the model cached between calls.

These functions are shipped to the workers by Dask (by reference: a worker imports this module
from its own aiograd), so they must stay importable without ``distributed``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["add_gradients", "shard_gradients"]

# A worker process keeps one copy of a model that Dask delivered (the scattered object lives in
# the worker's memory, so every task there gets the same one); its parameters are reloaded when
# the caller's token says they changed. One shard at a time per process: the copy is shared.
_lock = threading.Lock()
_loaded: dict[int, Any] = {}  # id(model copy) -> the parameters' token it holds


def shard_gradients(
    model: Any,
    token: Any,
    params: Sequence[np.ndarray],
    loss_fn: Callable[..., Any],
    inputs: Sequence[np.ndarray],
    target: np.ndarray | None,
    scale: float,
) -> tuple[float, list[np.ndarray | None]]:
    """``loss_fn(model(*inputs), target) * scale`` and its gradients with respect to the model's
    parameters (None for a parameter the loss does not reach), as numpy arrays."""
    from .. import sync  # on the worker (here, not at the top: the module stays light to import)
    from .._api._factories import tensor
    from .._base._grad_mode import no_grad

    with _lock:
        parameters = list(model.parameters())
        if _loaded.get(id(model)) != token:
            with no_grad():
                for p, value in zip(parameters, params, strict=True):
                    p.copy_(tensor(value, dtype=p.dtype))
            _loaded[id(model)] = token
        output = model(*(tensor(x) for x in inputs))
        loss = loss_fn(output, tensor(target)) if target is not None else loss_fn(output)
        if scale != 1.0:
            loss = loss * scale
        grads = sync.grad(loss, parameters, allow_unused=True)
        return float(loss.item()), [None if g is None else g.numpy() for g in grads]


def add_gradients(
    a: tuple[float, list[np.ndarray | None]], b: tuple[float, list[np.ndarray | None]]
) -> tuple[float, list[np.ndarray | None]]:
    """Two shards' (loss, gradients) summed: one step of the tree reduction."""
    grads = [x if y is None else y if x is None else x + y for x, y in zip(a[1], b[1], strict=True)]
    return a[0] + b[0], grads
