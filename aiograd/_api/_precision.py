"""``torch.set_float32_matmul_precision``/``get_float32_matmul_precision``: kept for scripts that
set them, and, as in torch, tied to ``backends.cuda.matmul.allow_tf32`` ("highest" is TF32 off).
They change no result: aiograd's float32 matmuls are numpy's (or CuPy's) in float32 throughout."""

from __future__ import annotations

import warnings

from ..backends.cuda import matmul

__all__ = ["get_float32_matmul_precision", "set_float32_matmul_precision"]

_PRECISIONS = ("highest", "high", "medium")
_state = {"precision": "highest"}


def set_float32_matmul_precision(precision: str) -> None:
    """Set the float32 matmul precision, one of ``"highest"`` (the default), ``"high"`` or
    ``"medium"``; any other string warns (torch's UserWarning) and changes nothing. Kept and
    ignored: aiograd computes float32 products in float32, never TF32 or bfloat16."""
    if precision not in _PRECISIONS:
        warnings.warn(
            f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
            "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2,
        )
        return
    _state["precision"] = precision
    matmul.allow_tf32 = precision != "highest"


def get_float32_matmul_precision() -> str:
    """The precision last set (``"highest"`` by default); ``backends.cuda.matmul.allow_tf32 =
    True`` reads back as ``"high"``, as in torch."""
    if matmul.allow_tf32 and _state["precision"] == "highest":
        return "high"
    if not matmul.allow_tf32:
        return "highest"
    return _state["precision"]
