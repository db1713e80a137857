"""What every reduction shares: its dims normalised (``axes_of``, ``_one_dim``) and checked
(PyTorch's errors for a reduction over nothing), the reduced shape, a reduced gradient broadcast
back over the reduced dims (``expand_reduced``, and its array form for the first-order fast
path), and PyTorch's dtype names for the messages. Used by ``reduction``, ``reduction_extra``,
``softmax``, ``sorting``, ``convenience`` and ``scatter``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._base._dtypes import type_name
from ._util import UNSET, Tensor
from .shape import _dim

__all__ = [
    "UNSET", "_check_nonempty", "_dtype_name", "_expand_reduced_array", "_one_dim", "_reduced_shape", "axes_of",
    "expand_reduced", "invalid_arguments",
]




def invalid_arguments(fname: str, signatures: Sequence[str], *args: Any, **kwargs: Any) -> TypeError:
    """PyTorch's argument parser's TypeError for arguments that match none of ``fname``'s
    ``signatures``, naming the types of the arguments given (the unset ones left out)."""
    got = [type_name(a) for a in args if a is not UNSET]
    got += [f"{k}={type_name(v)}" for k, v in kwargs.items() if v is not UNSET]
    lines = [f"{fname}() received an invalid combination of arguments - got ({', '.join(got)}), but expected one of:"]
    lines += [f" * ({sig})" for sig in signatures]
    return TypeError("\n".join(lines) + "\n")


def axes_of(dim: int | Sequence[int] | None, ndim: int) -> tuple[int, ...] | None:
    """Normalise ``dim`` (int, tuple or None) to sorted non-negative axes; None means all."""
    if dim is None:
        return None
    dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    if not dims:
        return None
    if not ndim:
        for d in dims:
            _dim(int(d), ndim)
        return ()
    seen: set[int] = set()
    for d in dims:
        a = _dim(int(d), ndim)
        if a in seen:
            raise RuntimeError(f"dim {a} appears multiple times in the list of dims")
        seen.add(a)
    return tuple(sorted(seen))


def expand_reduced(grad: Tensor, shape: tuple[int, ...], axes: tuple[int, ...] | None, keepdim: bool) -> Tensor:
    """Broadcast a reduction's gradient back over the reduced dims (after its batch dims)."""
    if axes is None:
        axes = tuple(range(len(shape)))
    # Leading dims beyond the reduced rank are batch dims (is_grads_batched): kept in front.
    nb = grad.data.ndim - (len(shape) if keepdim else len(shape) - len(axes))
    if nb > 0:
        axes, shape = tuple(a + nb for a in axes), grad.data.shape[:nb] + shape
    if not keepdim:
        for a in axes:
            grad = grad.unsqueeze(a)
    return grad.expand(shape)


def _expand_reduced_array(
    xp: Any, grad: Any, shape: tuple[int, ...], axes: tuple[int, ...] | None, keepdim: bool
) -> Any:
    """``expand_reduced`` on the array (the no-create_graph fast path).

    Materialised rather than a broadcast view: ``np.broadcast_to`` costs more than filling a small
    array, and an owned, writable gradient can be stolen or accumulated in place downstream.
    """
    nb = grad.ndim - (len(shape) if keepdim else len(shape) - (len(shape) if axes is None else len(axes)))
    if nb > 0:  # batch dims (is_grads_batched), kept in front
        axes, shape = tuple(a + nb for a in (range(len(shape)) if axes is None else axes)), grad.shape[:nb] + shape
    if axes is not None and not keepdim:
        grad = xp.expand_dims(grad, axes)
    out = xp.empty(shape, dtype=grad.dtype)
    out[...] = grad
    return out


_TORCH_DTYPE_NAMES = {
    "bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
    "int64": "Long", "float16": "Half", "float32": "Float", "float64": "Double",
}


def _dtype_name(dtype: Any) -> str:
    """PyTorch's name for a numpy dtype (``Long`` for int64, ...)."""
    return _TORCH_DTYPE_NAMES.get(str(dtype), str(dtype))


def _one_dim(dim: Any, ndim: int, fname: str) -> tuple[int, ...]:
    """A single reduction dim as a 1-tuple of axes (empty for a 0-d tensor, where 0 and -1 work)."""
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"{fname}(): argument 'dim' must be int, not {type(dim).__name__}")
    d = _dim(int(dim), ndim)
    return (d,) if ndim else ()


def _reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...] | None, keepdim: bool) -> tuple[int, ...]:
    if axes is None:
        axes = tuple(range(len(shape)))
    if keepdim:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def _check_nonempty(data: np.ndarray[Any, Any], axes: tuple[int, ...] | None, fname: str) -> None:
    """PyTorch's errors for an arg-reduction over nothing."""
    if axes is None:
        if data.size == 0:
            extra = "" if fname.startswith("arg") else (
                " Specify the reduction dim with the 'dim' argument."
            )
            err = IndexError if fname.startswith("arg") else RuntimeError
            raise err(
                f"{fname}(): Expected reduction dim to be specified for input.numel() == 0.{extra}"
            )
        return
    for a in axes:
        if data.shape[a] == 0:
            raise IndexError(f"{fname}(): Expected reduction dim {a} to have non-zero size.")
