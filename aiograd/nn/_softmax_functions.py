"""torch.nn.functional's ``softmax`` and ``log_softmax``: the ops over ``dim``, and, when ``dim``
is left out, torch's deprecated implicit choice of it, with its warning."""

from __future__ import annotations

import warnings
from typing import Any

from .._ops._util import Tensor
from .._ops.softmax import log_softmax as _log_softmax
from .._ops.softmax import softmax as _softmax

__all__ = ["log_softmax", "softmax"]


def _softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
        "dim=X as an argument.",
        UserWarning,
        stacklevel=stacklevel,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """Softmax over ``dim``: ``exp(x) / exp(x).sum(dim)``, computed without overflow.

    Leaving ``dim`` out picks one as PyTorch's deprecated implicit rule does, with its warning.
    """
    if dim is None:
        dim = _softmax_dim("softmax", input.data.ndim, _stacklevel)
    return _softmax(input, dim, dtype=dtype)


def log_softmax(
    input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None
) -> Tensor:
    """Log of the softmax over ``dim``: ``x - logsumexp(x, dim)``, computed without overflow.

    Leaving ``dim`` out picks one as PyTorch's deprecated implicit rule does, with its warning.
    """
    if dim is None:
        dim = _softmax_dim("log_softmax", input.data.ndim, _stacklevel)
    return _log_softmax(input, dim, dtype=dtype)
