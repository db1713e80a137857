"""torch.nn.functional's attention: ``scaled_dot_product_attention`` and
``multi_head_attention_forward`` (what ``nn.MultiheadAttention`` calls).

Both are composites of aiograd ops (matmul, softmax, where, ...), so they are differentiable to
any order. ``scaled_dot_product_attention`` is PyTorch's math path
(``_scaled_dot_product_attention_math`` in ATen's attention.cpp): the query and the key are each
scaled by the square root of the scale before their product, a boolean mask becomes an additive
``-inf``/0 bias, and a row whose scores are all ``-inf`` gives zeros (``_safe_softmax``), not NaN.
Dropout's mask is drawn from aiograd's default generator (``aiograd._random``), so checkpointing
replays it. ``multi_head_attention_forward`` follows torch/nn/functional.py line by line.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._dtypes import cpp_type_name
from .._ops._registry import register
from .._ops._util import Tensor, common_device, to_tensor
from .._ops.elementwise import where
from .._ops.joining import cat
from .._ops.linalg import MatmulBackward0, MmBackward0, linear
from .._ops.softmax import softmax
from .._random import generator

__all__ = ["multi_head_attention_forward", "scaled_dot_product_attention"]


# ------------------------------------------------------------------------------ sdpa
def _check_sdpa(query: Tensor, key: Tensor, value: Tensor, attn_mask: Any) -> None:
    """ATen's ``validate_sdpa_input``, its messages word for word."""
    q, k, v = query.data, key.data, value.data
    if not (q.dtype == k.dtype == v.dtype):
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{cpp_type_name(q.dtype)} key.dtype: {cpp_type_name(k.dtype)} and value.dtype: "
            f"{cpp_type_name(v.dtype)} instead."
        )
    common_device(query, key, value, attn_mask)
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise RuntimeError(
            "Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
            f"{q.ndim} key.dim: {k.ndim} and value.dim: {v.ndim} instead."
        )
    if attn_mask is not None:
        m = attn_mask.data if isinstance(attn_mask, Tensor) else np.asarray(attn_mask)
        if m.dtype not in (np.bool_, np.float32, q.dtype):
            raise RuntimeError(
                "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                f"attn_mask.dtype: {cpp_type_name(m.dtype)} and  query.dtype: {cpp_type_name(q.dtype)} instead."
            )


def _bias(mask: Tensor, dtype: Any) -> Any:
    """``convert_boolean_attn_mask``: a boolean mask (True: attend) as an additive -inf/0 bias in
    ``dtype``; a float mask is the bias itself (and gets a gradient if it requires one)."""
    if mask.data.dtype != np.bool_:
        return mask
    xp = mask._device.xp
    return to_tensor(xp.where(mask.data, xp.zeros((), dtype), xp.asarray(-np.inf, dtype=dtype)), mask)


def _repeat_heads(x: Tensor, repeats: int) -> Tensor:
    """``x.repeat_interleave(repeats, -3)``: each head repeated ``repeats`` times in place."""
    if repeats == 1:
        return x
    shape = x.data.shape
    wide = x.unsqueeze(-3).expand(*shape[:-2], repeats, *shape[-2:])
    return wide.reshape(*shape[:-3], shape[-3] * repeats, *shape[-2:])  # type: ignore[no-any-return]


def _grouped(query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
    """``pre_process_group_query_attention_input``: key and value heads repeated to the query's."""
    hq, hk, hv = query.data.shape[-3], key.data.shape[-3], value.data.shape[-3]
    if hq == hk == hv:
        return key, value
    if hq % hk or hq % hv:
        # (sic: PyTorch's message ends there)
        raise RuntimeError("Number of heads in key and value must divide the number of heads in ")
    return _repeat_heads(key, hq // hk), _repeat_heads(value, hq // hv)


def _safe_softmax(scores: Tensor) -> Tensor:
    """Softmax over the last dim, zeros for a row whose scores are all ``-inf`` (ATen's
    ``_safe_softmax``). Such rows are set to 0 before the softmax too, so that their (zero)
    gradient is not NaN."""
    xp = scores._device.xp
    empty = xp.all(scores.data == -np.inf, axis=-1, keepdims=True)
    if not bool(empty.any()):
        return softmax(scores, -1)
    return where(empty, 0.0, softmax(where(empty, 0.0, scores), -1))


def dropout_by_default_generator(input: Tensor, p: float) -> Tensor:
    """``input`` with each element zeroed with probability ``p`` and the rest scaled by
    ``1 / (1 - p)``, the mask drawn from aiograd's default generator."""
    if not 0.0 <= p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p:g}")
    dtype = input.data.dtype
    if p == 1.0:
        mask = np.zeros(input.data.shape, dtype)
    else:
        mask = (generator().random(input.data.shape) >= p) * np.asarray(1.0 / (1.0 - p), dtype)
    return input * to_tensor(mask.astype(dtype, copy=False), input)


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """``softmax(query @ key.mT * scale + bias) @ value`` over the last two dims, PyTorch's
    ``scaled_dot_product_attention``.

    ``attn_mask`` is boolean (True: may attend) or an additive float bias (differentiable),
    broadcast to ``(..., L, S)``; ``is_causal`` masks the upper triangle instead (not with a
    mask). ``scale`` defaults to ``1 / sqrt(E)``. ``dropout_p`` drops attention weights (drawn
    from aiograd's default generator). ``enable_gqa`` repeats the key and value heads (dim -3) to
    the query's number of heads. A query row with nothing to attend to gives zeros.
    """
    _check_sdpa(query, key, value, attn_mask)
    dtype = query.data.dtype
    bias = None if attn_mask is None else _bias(to_tensor(attn_mask, query), dtype)
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError(
                "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True"
            )
        xp = query._device.xp
        lower = xp.tril(xp.ones((query.data.shape[-2], key.data.shape[-2]), dtype=bool))
        bias = _bias(to_tensor(lower, query), dtype)
    factor = 1.0 / math.sqrt(query.data.shape[-1]) if scale is None else scale
    root = math.sqrt(abs(factor))  # (query and key each scaled by it: no overflow of q @ k)
    q = query * (0.0 - root if factor < 0 else root)
    if enable_gqa:
        key, value = _grouped(query, key, value)
    scores = q @ (key.transpose(-2, -1) * root)
    if bias is not None:
        scores = scores + bias
    weights = _safe_softmax(scores)
    if dropout_p > 0.0:
        weights = dropout_by_default_generator(weights, dropout_p)
    return weights @ value  # type: ignore[no-any-return]


register("scaled_dot_product_attention", scaled_dot_product_attention, MatmulBackward0, MmBackward0, family="attention")
