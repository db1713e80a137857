"""torch.nn.functional's attention: ``scaled_dot_product_attention`` and
``multi_head_attention_forward`` (what ``nn.MultiheadAttention`` calls).

Both are composites of aiograd ops (matmul, softmax, where, ...), so they are differentiable to
any order. ``scaled_dot_product_attention`` is PyTorch's math path
(``_scaled_dot_product_attention_math`` in ATen's attention.cpp): the query and the key are each
scaled by the square root of the scale before their product, a boolean mask becomes an additive
``-inf``/0 bias, and a row whose scores are all ``-inf`` gives zeros (``_safe_softmax``), not NaN.
Dropout's mask is drawn from aiograd's default generator (``aiograd._base._random``), so checkpointing
replays it. ``multi_head_attention_forward`` follows torch/nn/functional.py line by line.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from .._base._dtypes import cpp_type_name
from .._ops._registry import op
from .._ops._util import Tensor, common_device, not_tensor, to_tensor
from .._ops.elementwise import where
from .._ops.joining import cat
from .._ops.linalg import MmBackward0, linear
from .._ops.shape import SqueezeBackward1, UnsafeViewBackward0, ViewBackward0
from .._ops.softmax import softmax, softmax_last_with_max
from ._dropout import dropout_mask

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
        m = attn_mask.data if isinstance(attn_mask, Tensor) else attn_mask
        m = m if hasattr(m, "dtype") else np.asarray(m)  # (a list; arrays of any device keep theirs)
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
    xp, data = scores._device.xp, scores.data
    if data.size and data.dtype.kind == "f":
        # (a row is all -inf where its maximum is: the maxima also shift the softmax)
        peak = data.max(axis=-1, keepdims=True)
        if bool(xp.isfinite(peak).all()):
            return softmax_last_with_max(scores, peak)
    empty = xp.all(data == -np.inf, axis=-1, keepdims=True)
    if not bool(empty.any()):
        return softmax(scores, -1)
    return where(empty, 0.0, softmax(where(empty, 0.0, scores), -1))


def dropout_by_default_generator(input: Tensor, p: float) -> Tensor:
    """``input`` with each element zeroed with probability ``p`` and the rest scaled by
    ``1 / (1 - p)``, the mask drawn from aiograd's default generator."""
    if not 0.0 <= p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p:g}")
    return input * dropout_mask(input, p)


@op(UnsafeViewBackward0, MmBackward0, family="attention")
def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    *,
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
    if not isinstance(query, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("scaled_dot_product_attention", query, 1, "query")
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




# ------------------------------------------------------------------------------ multi-head
def _mha_shape_check(query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Any, attn_mask: Any, num_heads: int) -> bool:
    """torch.nn.functional's ``_mha_shape_check``: whether the input is batched; its assertions."""
    qd, kd, vd = query.dim(), key.dim(), value.dim()
    kpm = None if key_padding_mask is None else key_padding_mask.dim()
    am = None if attn_mask is None else attn_mask.dim()
    if qd == 3:
        if kd != 3 or vd != 3:
            raise AssertionError(
                f"For batched (3-D) `query`, expected `key` and `value` to be 3-D but found {kd}-D and {vd}-D tensors respectively"
            )
        if kpm is not None and kpm != 2:
            raise AssertionError(
                f"For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but found {kpm}-D tensor instead"
            )
        if am is not None and am not in (2, 3):
            raise AssertionError(
                f"For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found {am}-D tensor instead"
            )
        return True
    if qd == 2:
        if kd != 2 or vd != 2:
            raise AssertionError(
                f"For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found {kd}-D and {vd}-D tensors respectively"
            )
        if kpm is not None and kpm != 1:
            raise AssertionError(
                f"For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but found {kpm}-D tensor instead"
            )
        if am is not None:
            if am not in (2, 3):
                raise AssertionError(
                    f"For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found {am}-D tensor instead"
                )
            expected = (num_heads, query.shape[0], key.shape[0])
            if am == 3 and tuple(attn_mask.shape) != expected:
                raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {qd}-D query tensor")


def _canonical_mask(mask: Any, name: str, other: Any, other_name: str, dtype: Any, check_other: bool = True) -> Tensor | None:
    """torch.nn.functional's ``_canonical_mask``: a boolean mask (True: masked out) as an
    additive ``-inf``/0 float mask in ``dtype``; a float mask as it is."""
    if mask is None:
        return None
    kind = mask.data.dtype.kind
    if kind not in "bf":
        raise AssertionError(f"only bool and floating types of {name} are supported")
    if check_other and other is not None and other.data.dtype != mask.data.dtype:
        warnings.warn(
            f"Support for mismatched {name} and {other_name} is deprecated. Use same type for both instead.",
            UserWarning,
            stacklevel=3,
        )
    if kind == "f":
        return mask  # type: ignore[no-any-return]
    xp = mask._device.xp
    return to_tensor(xp.where(mask.data, xp.asarray(-np.inf, dtype=dtype), xp.zeros((), dtype)), mask)


def _pad_last(mask: Tensor) -> Tensor:
    """``F.pad(mask, (0, 1))``: one zero column after the last."""
    zeros = to_tensor(mask._device.xp.zeros((*mask.shape[:-1], 1), dtype=mask.data.dtype), mask)
    return cat([mask, zeros], -1)


def _in_projection_packed(q: Tensor, k: Tensor, v: Tensor, w: Tensor, b: Tensor | None) -> tuple[Tensor, Tensor, Tensor]:
    """The query, key and value projections by one packed ``(3E, E)`` weight: one product for
    self-attention (``q is k is v``), two when only ``k is v``, else three."""
    e = q.shape[-1]
    if k is v:
        if q is k:
            return linear(q, w, b).chunk(3, -1)  # type: ignore[no-any-return]
        w_q, w_kv = w.split([e, e * 2])
        b_q, b_kv = (None, None) if b is None else b.split([e, e * 2])
        k_proj, v_proj = linear(k, w_kv, b_kv).chunk(2, -1)
        return linear(q, w_q, b_q), k_proj, v_proj
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _in_projection(q: Tensor, k: Tensor, v: Tensor, w_q: Tensor, w_k: Tensor, w_v: Tensor, b: Tensor | None) -> tuple[Tensor, Tensor, Tensor]:
    """Separate projection weights (``use_separate_proj_weight``), with torch's shape checks."""
    eq, ek, ev = q.shape[-1], k.shape[-1], v.shape[-1]
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    for what, weight, shape in (("query", w_q, (eq, eq)), ("key", w_k, (eq, ek)), ("value", w_v, (eq, ev))):
        if tuple(weight.shape) != shape:
            raise AssertionError(f"expecting {what} weights shape of {shape}, but got {weight.shape}")
    for what, bias in (("query", b_q), ("key", b_k), ("value", b_v)):
        if bias is not None and tuple(bias.shape) != (eq,):
            raise AssertionError(f"expecting {what} bias shape of {(eq,)}, but got {bias.shape}")
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _static(t: Tensor, name: str, heads: int, head_dim: int) -> Tensor:
    if t.shape[0] != heads:
        raise AssertionError(f"expecting {name}.size(0) of {heads}, but got {t.shape[0]}")
    if t.shape[2] != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got {t.shape[2]}")
    return t


@op(ViewBackward0, SqueezeBackward1, family="attention")
def multi_head_attention_forward(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: Tensor | None,
    in_proj_bias: Tensor | None,
    bias_k: Tensor | None,
    bias_v: Tensor | None,
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight: Tensor,
    out_proj_bias: Tensor | None,
    training: bool = True,
    key_padding_mask: Tensor | None = None,
    need_weights: bool = True,
    attn_mask: Tensor | None = None,
    use_separate_proj_weight: bool = False,
    q_proj_weight: Tensor | None = None,
    k_proj_weight: Tensor | None = None,
    v_proj_weight: Tensor | None = None,
    static_k: Tensor | None = None,
    static_v: Tensor | None = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """Multi-head attention, torch.nn.functional's: ``(attn_output, attn_weights)``.

    ``query`` is ``(L, N, E)`` (or ``(L, E)`` unbatched), ``key``/``value`` ``(S, N, E)``
    (``batch_first`` is the caller's transpose, as in torch). The heads' projections come from
    the packed ``in_proj_weight`` (or ``q/k/v_proj_weight``); ``bias_k``/``bias_v`` append a
    learned key and value, ``add_zero_attn`` a zero one. Boolean masks are True where attention
    is not allowed; float masks are added to the scores. With ``need_weights`` the weights
    (averaged over heads if ``average_attn_weights``) are returned too, else None and the heads
    go through :func:`scaled_dot_product_attention`. Dropout applies when ``training``.
    """
    # (masks may be arrays: constants, as everywhere in aiograd)
    key_padding_mask = None if key_padding_mask is None else to_tensor(key_padding_mask, query)
    attn_mask = None if attn_mask is None else to_tensor(attn_mask, query)
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    dtype = query.data.dtype
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", attn_mask, "attn_mask", dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
            "method `generate_square_subsequent_mask` to create this mask."
        )
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # (sdpa's own causal mask replaces it)
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match value's {value.shape[:2]}")
    elif key.shape != value.shape:
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        for name, w in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight is None")
        q, k, v = _in_projection(query, key, value, q_proj_weight, k_proj_weight, v_proj_weight, in_proj_bias)  # type: ignore[arg-type]
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be {(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(
                    f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be {(bsz * num_heads, tgt_len, src_len)}."
                )
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = cat([k, bias_k.repeat(1, bsz, 1)])
        v = cat([v, bias_v.repeat(1, bsz, 1)])
        attn_mask = None if attn_mask is None else _pad_last(attn_mask)
        key_padding_mask = None if key_padding_mask is None else _pad_last(key_padding_mask)
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")
    heads = bsz * num_heads
    q = q.reshape(tgt_len, heads, head_dim).transpose(0, 1)
    k = k.reshape(k.shape[0], heads, head_dim).transpose(0, 1) if static_k is None else _static(static_k, "static_k", heads, head_dim)
    v = v.reshape(v.shape[0], heads, head_dim).transpose(0, 1) if static_v is None else _static(static_v, "static_v", heads, head_dim)
    if add_zero_attn:
        zeros = to_tensor(q._device.xp.zeros((heads, 1, head_dim), dtype=k.data.dtype), q)
        k, v = cat([k, zeros], 1), cat([v, zeros], 1)
        attn_mask = None if attn_mask is None else _pad_last(attn_mask)
        key_padding_mask = None if key_padding_mask is None else _pad_last(key_padding_mask)
    src_len = k.shape[1]
    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got {key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got {key_padding_mask.shape[1]}")
        padding = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1).reshape(heads, 1, src_len)
        attn_mask = padding if attn_mask is None else attn_mask + padding
    if not training:
        dropout_p = 0.0
    if need_weights:
        q_scaled = q * math.sqrt(1.0 / float(head_dim))
        if is_causal and attn_mask is None:
            raise AssertionError("FIXME: is_causal not implemented for need_weights")
        scores = q_scaled @ k.transpose(-2, -1)
        weights = softmax(scores if attn_mask is None else attn_mask + scores, -1)
        if dropout_p > 0.0:
            weights = dropout_by_default_generator(weights, dropout_p)
        out = (weights @ v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(1)
        if not is_batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights
    if attn_mask is not None:
        if attn_mask.shape[0] == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    return (out if is_batched else out.squeeze(1)), None
