"""``torch.backends.cuda``: ``is_built()`` (whether CuPy, aiograd's CUDA, is installed) and the
``matmul`` switches. The switches are kept for scripts that set and read them, and change
nothing: aiograd's CUDA matmuls are CuPy's, in the tensors' own dtypes."""

from __future__ import annotations

import importlib.util
from typing import Any

__all__ = ["is_built", "matmul"]


def is_built() -> bool:
    """True if CuPy is installed (aiograd's CUDA support); whether a GPU is there is
    ``aiograd.cuda.is_available()``'s question."""
    try:
        return importlib.util.find_spec("cupy") is not None
    except (ImportError, ValueError):
        return False


class _MatmulFlags:
    """``torch.backends.cuda.matmul``: ``allow_tf32``, ``allow_fp16_reduced_precision_reduction``
    and ``allow_bf16_reduced_precision_reduction``, settable; any other name is an
    AttributeError, as in torch."""

    _defaults: dict[str, bool] = {
        "allow_tf32": False,
        "allow_fp16_reduced_precision_reduction": True,
        "allow_bf16_reduced_precision_reduction": True,
    }

    def __init__(self) -> None:
        object.__setattr__(self, "_values", dict(self._defaults))

    def __getattr__(self, name: str) -> Any:
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._values:
            raise AttributeError(f"Unknown attribute {name}")
        self._values[name] = bool(value)


#: ``aiograd.backends.cuda.matmul.allow_tf32 = True`` is accepted and changes nothing.
matmul: _MatmulFlags = _MatmulFlags()
