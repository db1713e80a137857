"""aiograd/nn/_attention.py: ``scaled_dot_product_attention`` and ``multi_head_attention_forward``.

Factory rows (gradcheck, gradgradcheck, values, first and second derivatives against torch,
float32) for each mask kind, then torch.nn.MultiheadAttention's own weights copied over (outputs,
averaged and per-head weights, gradients), dropout drawn from the default generator, and
PyTorch's errors word for word. (The output node is aiograd's ``MatmulBackward0`` where torch's
batched matmul ends in ``UnsafeViewBackward0``: no grad_fn check but for 2-D inputs.)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, const, make_op_tests

import aiograd as ag
import aiograd.nn.functional as F

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough

once = pytest.mark.aiograd(backends=["asyncio"])  # op math: the loop variant is irrelevant

RNG = np.random.default_rng(13)
BOOL_MASK = RNG.random((3, 4)) > 0.4
BOOL_MASK[1] = False  # a query row with nothing to attend to: zeros, as torch's safe softmax
BOOL_MASK[0, 0] = True
BROADCAST_MASK = RNG.random((2, 1, 3, 4)) > 0.3
FLOAT_MASK = RNG.standard_normal((3, 4))


def nn(lib: Any) -> Any:
    return lib.nn.functional


def sdpa(lib: Any, *args: Any, **kwargs: Any) -> Any:
    return nn(lib).scaled_dot_product_attention(*args, **kwargs)


QKV = ((2, 2, 3, 5), (2, 2, 4, 5), (2, 2, 4, 6))  # (N, heads, L or S, E or Ev)


def seeded_dropout(lib: Any, q: Any, k: Any, v: Any) -> Any:
    """Dropout with the default generator reseeded: the same mask at every call."""
    lib.manual_seed(5)
    return sdpa(lib, q, k, v, dropout_p=0.4)


SPECS = [
    OpSpec("scaled_dot_product_attention", lambda lib, q, k, v: sdpa(lib, q, k, v), QKV),
    OpSpec("scaled_dot_product_attention_2d", lambda lib, q, k, v: sdpa(lib, q, k, v), ((3, 5), (4, 5), (4, 2)),
           grad_fn="MmBackward0"),
    OpSpec("scaled_dot_product_attention_bool_mask",
           lambda lib, q, k, v: sdpa(lib, q, k, v, attn_mask=const(lib, BOOL_MASK)), QKV),
    OpSpec("scaled_dot_product_attention_broadcast_bool_mask",
           lambda lib, q, k, v: sdpa(lib, q, k, v, const(lib, BROADCAST_MASK)), QKV),
    OpSpec("scaled_dot_product_attention_float_mask",
           lambda lib, q, k, v: sdpa(lib, q, k, v, attn_mask=const(lib, FLOAT_MASK)), QKV,
           float32=False),  # (a float64 mask for a float32 query is torch's error: test_sdpa_errors_are_torchs)
    OpSpec("scaled_dot_product_attention_float_mask_grad",
           lambda lib, q, k, v, m: sdpa(lib, q, k, v, attn_mask=m), (*QKV, (2, 1, 3, 4))),
    OpSpec("scaled_dot_product_attention_causal", lambda lib, q, k, v: sdpa(lib, q, k, v, is_causal=True), QKV),
    OpSpec("scaled_dot_product_attention_scale", lambda lib, q, k, v: sdpa(lib, q, k, v, scale=0.3), QKV),
    OpSpec("scaled_dot_product_attention_negative_scale", lambda lib, q, k, v: sdpa(lib, q, k, v, scale=-0.7), QKV),
    OpSpec("scaled_dot_product_attention_gqa", lambda lib, q, k, v: sdpa(lib, q, k, v, enable_gqa=True),
           ((2, 4, 3, 5), (2, 2, 4, 5), (2, 1, 4, 6))),
    OpSpec("scaled_dot_product_attention_dropout", lambda lib, q, k, v: seeded_dropout(lib, q, k, v), QKV, torch=False,
           why="torch draws its dropout mask from its own generator"),
    OpSpec("scaled_dot_product_attention_causal_tall", lambda lib, q, k, v: sdpa(lib, q, k, v, is_causal=True),
           ((1, 5, 3), (1, 4, 3), (1, 4, 2))),
]

# ------------------------------------------------------------------------------ multi-head rows
L, S, N, E, H = 3, 4, 2, 4, 2
KPM = RNG.random((N, S)) > 0.7
KPM[:, 0] = False  # (no key fully masked for a row: the weights path would be NaN, as torch's)
ATTN = RNG.standard_normal((L, S))


def mha(lib: Any, q: Any, k: Any, v: Any, w: Any, b: Any, wo: Any, bo: Any, **kwargs: Any) -> Any:
    kwargs.setdefault("need_weights", False)
    out, weights = nn(lib).multi_head_attention_forward(q, k, v, E, H, w, b, None, None, False, 0.0, wo, bo, **kwargs)
    return out if weights is None else out.sum() * weights  # (both outputs, through one)


MHA_INPUTS = ((L, N, E), (S, N, E), (S, N, E), (3 * E, E), (3 * E,), (E, E), (E,))
#: torch's sdpa path of multi_head_attention_forward (need_weights=False) runs its CPU flash
#: attention, which has no double backward: those rows compare first derivatives with torch and
#: run gradgradcheck in a twin row.
NO_DOUBLE_BACKWARD = "torch's CPU flash attention (the need_weights=False path) has no double backward"
MASKS = dict(key_padding_mask=KPM, attn_mask=ATTN)


def with_masks(lib: Any) -> dict[str, Any]:
    return {name: const(lib, m) for name, m in MASKS.items()}


MHA_SPECS = [
    OpSpec("multi_head_attention_forward", lambda lib, *xs: mha(lib, *xs), MHA_INPUTS, gradgrad=False,
           why=NO_DOUBLE_BACKWARD),
    OpSpec("multi_head_attention_forward_gradgrad", lambda lib, *xs: mha(lib, *xs), MHA_INPUTS, torch=False,
           why=NO_DOUBLE_BACKWARD, op="multi_head_attention_forward"),
    OpSpec("multi_head_attention_forward_weights", lambda lib, *xs: mha(lib, *xs, need_weights=True), MHA_INPUTS,
           op="multi_head_attention_forward"),
    OpSpec("multi_head_attention_forward_masks", lambda lib, *xs: quiet(mha, lib, *xs, **with_masks(lib)), MHA_INPUTS,
           op="multi_head_attention_forward", gradgrad=False, why=NO_DOUBLE_BACKWARD, float32=False),
    OpSpec("multi_head_attention_forward_masks_gradgrad", lambda lib, *xs: quiet(mha, lib, *xs, **with_masks(lib)),
           MHA_INPUTS, op="multi_head_attention_forward", torch=False, why=NO_DOUBLE_BACKWARD, float32=False),
    OpSpec("multi_head_attention_forward_masks_weights",
           lambda lib, *xs: mha(lib, *xs, need_weights=True, average_attn_weights=False,
                                key_padding_mask=const(lib, KPM), attn_mask=const(lib, ATTN > 1.0)),
           MHA_INPUTS, op="multi_head_attention_forward"),
    OpSpec("multi_head_attention_forward_self",
           lambda lib, x, w, b, wo, bo: mha(lib, x, x, x, w, b, wo, bo, need_weights=True),
           ((L, N, E), (3 * E, E), (3 * E,), (E, E), (E,)), op="multi_head_attention_forward"),
]


def quiet(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (mismatched mask types: test_mismatched_mask_types_warn_as_torch)
        return fn(*args, **kwargs)


globals().update(make_op_tests(SPECS + MHA_SPECS))


# ------------------------------------------------------------------------------ nn.MultiheadAttention's weights
def _module(bias: bool, add_bias_kv: bool, add_zero_attn: bool, kdim: int | None = None) -> Any:
    torch.manual_seed(0)
    return torch.nn.MultiheadAttention(E, H, bias=bias, add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn,
                                       kdim=kdim, vdim=kdim).double()


def _ours(module: Any, q: Any, k: Any, v: Any, **kwargs: Any) -> Any:
    """aiograd's functional with the module's weights copied, called as MultiheadAttention calls it."""
    p = {name: ag.tensor(t.detach().numpy().copy(), requires_grad=True) for name, t in module.named_parameters()}
    separate = not module._qkv_same_embed_dim
    return p, F.multi_head_attention_forward(
        q, k, v, E, H, p.get("in_proj_weight"), p.get("in_proj_bias"), p.get("bias_k"), p.get("bias_v"),
        module.add_zero_attn, module.dropout, p["out_proj.weight"], p.get("out_proj.bias"), training=module.training,
        use_separate_proj_weight=separate, q_proj_weight=p.get("q_proj_weight"), k_proj_weight=p.get("k_proj_weight"),
        v_proj_weight=p.get("v_proj_weight"), **kwargs)


MODULE_CASES = [
    pytest.param(dict(bias=True, add_bias_kv=False, add_zero_attn=False), {}, id="plain"),
    pytest.param(dict(bias=False, add_bias_kv=False, add_zero_attn=False), {}, id="no_bias"),
    pytest.param(dict(bias=True, add_bias_kv=True, add_zero_attn=True), {}, id="bias_kv_zero_attn"),
    pytest.param(dict(bias=True, add_bias_kv=False, add_zero_attn=False, kdim=3), {}, id="kdim"),
    pytest.param(dict(bias=True, add_bias_kv=True, add_zero_attn=False), {"key_padding_mask": "bool"}, id="kpm"),
    pytest.param(dict(bias=True, add_bias_kv=False, add_zero_attn=True), {"attn_mask": "bool"}, id="bool_mask"),
    pytest.param(dict(bias=True, add_bias_kv=False, add_zero_attn=False), {"attn_mask": "3d"}, id="mask_3d"),
    pytest.param(dict(bias=True, add_bias_kv=False, add_zero_attn=False), {"attn_mask": "causal", "is_causal": True},
                 id="causal"),
    pytest.param(dict(bias=True, add_bias_kv=False, add_zero_attn=False), {"unbatched": True}, id="unbatched"),
]


def _masks(spec: dict[str, Any], lib: Any, batched: bool) -> dict[str, Any]:
    rng = np.random.default_rng(5)
    out: dict[str, Any] = {}
    wrap = ag.tensor if lib is ag else torch.tensor
    if spec.get("key_padding_mask"):
        m = rng.random((N, S) if batched else (S,)) > 0.6
        m[..., 0] = False
        out["key_padding_mask"] = wrap(m)
    mask = spec.get("attn_mask")
    if mask == "bool":
        m = rng.random((L, S)) > 0.6
        m[:, 0] = False
        out["attn_mask"] = wrap(m)
    elif mask == "3d":
        out["attn_mask"] = wrap(rng.standard_normal((N * H, L, S)))
    elif mask == "causal":
        out["attn_mask"] = wrap(np.triu(np.ones((L, S), dtype=bool), 1))
    if spec.get("is_causal"):
        out["is_causal"] = True
    return out


@requires_torch
@once
@pytest.mark.parametrize(("need_weights", "average"), [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize(("options", "spec"), MODULE_CASES)
async def test_matches_torch_multihead_attention_module(options: dict[str, Any], spec: dict[str, Any],
                                                       need_weights: bool, average: bool) -> None:
    """torch.nn.MultiheadAttention (batch_first=False) against our functional with its weights:
    the output, the (averaged or per-head) weights, and the gradients of the inputs and of every
    parameter."""
    module = _module(**options)
    kdim = options.get("kdim") or E
    batched = not spec.get("unbatched")
    rng = np.random.default_rng(3)
    shapes = ((L, N, E), (S, N, kdim), (S, N, kdim)) if batched else ((L, E), (S, kdim), (S, kdim))
    arrays = [rng.standard_normal(s) for s in shapes]
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in arrays)
    kwargs = dict(need_weights=need_weights, average_attn_weights=average)
    tout, tweights = module(tq, tk, tv, **kwargs, **_masks(spec, torch, batched))
    q, k, v = (ag.tensor(a, requires_grad=True) for a in arrays)
    params, (out, weights) = _ours(module, q, k, v, **kwargs, **_masks(spec, ag, batched))
    np.testing.assert_allclose(out.data, tout.detach().numpy(), rtol=1e-12, atol=1e-14)
    if need_weights:
        np.testing.assert_allclose(weights.data, tweights.detach().numpy(), rtol=1e-12, atol=1e-14)
    else:
        assert weights is None and tweights is None
    u = rng.standard_normal(out.shape)
    names = list(params)
    grads = await ag.grad(out, [q, k, v, *params.values()], ag.tensor(u))
    tparams = dict(module.named_parameters())
    tgrads = torch.autograd.grad(tout, [tq, tk, tv, *(tparams[n] for n in names)], torch.tensor(u))
    for g, tg in zip(grads, tgrads):
        np.testing.assert_allclose(g.data, tg.numpy(), rtol=1e-10, atol=1e-13)


@requires_torch
def test_batch_first_is_the_callers_transpose() -> None:
    """nn.MultiheadAttention(batch_first=True) transposes (N, L, E) to (L, N, E) around the
    functional; doing the same around ours gives its output and weights."""
    torch.manual_seed(1)
    module = torch.nn.MultiheadAttention(E, H, batch_first=True).double()
    x = np.random.default_rng(2).standard_normal((N, L, E))
    tout, tweights = module(*(torch.tensor(x),) * 3)
    xt = ag.tensor(x).transpose(0, 1)
    _, (out, weights) = _ours(module, xt, xt, xt)
    np.testing.assert_allclose(out.transpose(0, 1).data, tout.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(weights.data, tweights.detach().numpy(), rtol=1e-12, atol=1e-14)


@requires_torch
def test_fully_masked_rows_are_torchs() -> None:
    """A query row that may attend to nothing: zeros from sdpa (torch's safe softmax), NaN from
    the weights path (a plain softmax), both as torch."""
    rng = np.random.default_rng(4)
    q, k, v = rng.standard_normal((3, 4)), rng.standard_normal((5, 4)), rng.standard_normal((5, 2))
    mask = np.ones((3, 5), dtype=bool)
    mask[1] = False
    out = F.scaled_dot_product_attention(*map(ag.tensor, (q, k, v)), attn_mask=ag.tensor(mask))
    tout = torch.nn.functional.scaled_dot_product_attention(*map(torch.tensor, (q, k, v)), attn_mask=torch.tensor(mask))
    np.testing.assert_allclose(out.data, tout.numpy(), rtol=1e-13)
    assert (out.data[1] == 0).all()
    module = _module(True, False, False)
    x = rng.standard_normal((L, N, E))
    kpm = np.zeros((N, L), dtype=bool)
    kpm[0] = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tout, tw = module(*(torch.tensor(x),) * 3, key_padding_mask=torch.tensor(kpm))
    _, (out, w) = _ours(module, *(ag.tensor(x),) * 3, key_padding_mask=ag.tensor(kpm))
    np.testing.assert_array_equal(np.isnan(out.data), np.isnan(tout.detach().numpy()))
    np.testing.assert_array_equal(np.isnan(w.data), np.isnan(tw.detach().numpy()))
    assert np.isnan(out.data[:, 0]).all()


# ------------------------------------------------------------------------------ dropout
def test_dropout_draws_from_the_default_generator() -> None:
    """With ``value`` the identity, the output is the dropped attention weights: each zero or the
    weight over ``1 - p``, about a fraction ``p`` of them zero, and the same after reseeding."""
    rng = np.random.default_rng(6)
    q, k = ag.tensor(rng.standard_normal((4, 50, 8))), ag.tensor(rng.standard_normal((4, 60, 8)))
    eye = ag.tensor(np.eye(60))
    full = F.scaled_dot_product_attention(q, k, eye).data
    ag.manual_seed(7)
    dropped = F.scaled_dot_product_attention(q, k, eye, dropout_p=0.3).data
    ag.manual_seed(7)
    np.testing.assert_array_equal(F.scaled_dot_product_attention(q, k, eye, dropout_p=0.3).data, dropped)
    kept = dropped != 0
    np.testing.assert_allclose(dropped[kept], full[kept] / 0.7, rtol=1e-13)
    assert abs(1.0 - kept.mean() - 0.3) < 0.02
    assert not F.scaled_dot_product_attention(q, k, eye, dropout_p=1.0).data.any()


async def test_dropout_is_differentiable_twice_under_a_fixed_seed() -> None:
    from aiograd.testing import gradcheck, gradgradcheck

    def fn(q: Any, k: Any, v: Any) -> Any:
        ag.manual_seed(3)
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.4)

    rng = np.random.default_rng(8)
    xs = [ag.tensor(rng.standard_normal(s), requires_grad=True) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 3))]
    assert await gradcheck(fn, xs)
    assert await gradgradcheck(fn, xs)


async def test_checkpoint_replays_the_dropout_mask() -> None:
    from aiograd.utils.checkpoint import checkpoint

    rng = np.random.default_rng(9)
    q = ag.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    k, v = ag.tensor(rng.standard_normal((2, 5, 4))), ag.tensor(rng.standard_normal((2, 5, 3)))

    def fn(q: Any) -> Any:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)

    ag.manual_seed(11)
    (plain,) = await ag.grad(fn(q).sum(), [q])
    ag.manual_seed(11)
    (replayed,) = await ag.grad(checkpoint(fn, q, use_reentrant=False).sum(), [q])
    np.testing.assert_array_equal(replayed.data, plain.data)


# ------------------------------------------------------------------------------ errors, warnings
def _torch_words(message: str) -> str:
    """torch's message in aiograd's names (``aiograd.Size``)."""
    return message.replace("torch.Size", "aiograd.Size")


def _t(lib: Any, shape: tuple[int, ...], dtype: Any = np.float64) -> Any:
    data = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    return ag.tensor(data) if lib is ag else torch.tensor(data)


def _b(lib: Any, data: Any) -> Any:
    return ag.tensor(np.asarray(data)) if lib is ag else torch.tensor(np.asarray(data))


Q, K, V = (2, 3, 4), (2, 5, 4), (2, 5, 6)
SDPA_ERRORS: list[tuple[str, Callable[[Any], Any]]] = [
    ("dtypes", lambda lib: sdpa(lib, _t(lib, Q, np.float32), _t(lib, K), _t(lib, V))),
    ("one_dim", lambda lib: sdpa(lib, _t(lib, (4,)), _t(lib, (4,)), _t(lib, (4,)))),
    ("mask_dtype", lambda lib: sdpa(lib, _t(lib, Q), _t(lib, K), _t(lib, V), _b(lib, np.ones((3, 5), dtype=np.int64)))),
    ("mask_double_for_float",
     lambda lib: sdpa(lib, _t(lib, Q, np.float32), _t(lib, K, np.float32), _t(lib, V, np.float32), _t(lib, (3, 5)))),
    ("mask_and_causal",
     lambda lib: sdpa(lib, _t(lib, Q), _t(lib, K), _t(lib, V), _b(lib, np.ones((3, 5), dtype=bool)), is_causal=True)),
    ("dropout_above_1", lambda lib: sdpa(lib, _t(lib, Q), _t(lib, K), _t(lib, V), dropout_p=1.5)),
    ("gqa_heads", lambda lib: sdpa(lib, _t(lib, (1, 3, 2, 4)), _t(lib, (1, 2, 5, 4)), _t(lib, (1, 2, 5, 4)), enable_gqa=True)),
]


@requires_torch
@pytest.mark.parametrize(("name", "call"), SDPA_ERRORS, ids=[n for n, _ in SDPA_ERRORS])
def test_sdpa_errors_are_torchs(name: str, call: Callable[[Any], Any]) -> None:
    with pytest.raises(RuntimeError) as theirs:
        call(torch)
    with pytest.raises(RuntimeError) as ours:
        call(ag)
    assert str(ours.value) == str(theirs.value)


def _mha_call(lib: Any, q: tuple[int, ...] = (L, N, E), k: tuple[int, ...] = (S, N, E), v: tuple[int, ...] = (S, N, E),
              **kwargs: Any) -> Any:
    args = dict(embed_dim_to_check=E, num_heads=H, in_proj_weight=_t(lib, (3 * E, E)), in_proj_bias=_t(lib, (3 * E,)),
                bias_k=None, bias_v=None, add_zero_attn=False, dropout_p=0.0, out_proj_weight=_t(lib, (E, E)),
                out_proj_bias=_t(lib, (E,)))
    args.update(kwargs)
    return nn(lib).multi_head_attention_forward(_t(lib, q), _t(lib, k), _t(lib, v), **args)


MHA_ERRORS: list[tuple[str, Callable[[Any], Any]]] = [
    ("query_1d", lambda lib: _mha_call(lib, q=(E,))),
    ("key_2d_for_batched", lambda lib: _mha_call(lib, k=(S, E))),
    ("key_3d_for_unbatched", lambda lib: _mha_call(lib, q=(L, E))),
    ("kpm_dims", lambda lib: _mha_call(lib, key_padding_mask=_b(lib, np.zeros((N, S, 1), dtype=bool)))),
    ("kpm_dims_unbatched", lambda lib: _mha_call(lib, q=(L, E), k=(S, E), v=(S, E), key_padding_mask=_b(lib, np.zeros((N, S), dtype=bool)))),
    ("attn_mask_dims", lambda lib: _mha_call(lib, attn_mask=_t(lib, (S,)))),
    ("attn_mask_3d_unbatched", lambda lib: _mha_call(lib, q=(L, E), k=(S, E), v=(S, E), attn_mask=_t(lib, (1, L, S)))),
    ("attn_mask_2d_shape", lambda lib: _mha_call(lib, attn_mask=_t(lib, (L, L)))),
    ("attn_mask_3d_shape", lambda lib: _mha_call(lib, attn_mask=_t(lib, (H, L, S)))),
    ("int_mask", lambda lib: _mha_call(lib, attn_mask=_b(lib, np.zeros((L, S), dtype=np.int64)))),
    ("causal_without_mask", lambda lib: _mha_call(lib, is_causal=True)),
    ("embed_dim", lambda lib: _mha_call(lib, embed_dim_to_check=E + 1)),
    ("heads", lambda lib: _mha_call(lib, num_heads=3)),
    ("key_value_shapes", lambda lib: _mha_call(lib, v=(S + 1, N, E))),
    ("no_in_proj", lambda lib: _mha_call(lib, in_proj_weight=None)),
    ("separate_without_q", lambda lib: _mha_call(lib, use_separate_proj_weight=True)),
    ("separate_k_shape", lambda lib: _mha_call(lib, use_separate_proj_weight=True, q_proj_weight=_t(lib, (E, E)),
                                               k_proj_weight=_t(lib, (E, E + 1)), v_proj_weight=_t(lib, (E, E)))),
    ("bias_k_only", lambda lib: _mha_call(lib, bias_k=_t(lib, (1, 1, E)))),
    ("bias_v_only", lambda lib: _mha_call(lib, bias_v=_t(lib, (1, 1, E)))),
    ("bias_with_static_k", lambda lib: _mha_call(lib, bias_k=_t(lib, (1, 1, E)), bias_v=_t(lib, (1, 1, E)),
                                                 static_k=_t(lib, (N * H, S, E // H)))),
    ("static_k_heads", lambda lib: _mha_call(lib, static_k=_t(lib, (N, S, E // H)))),
    ("static_v_head_dim", lambda lib: _mha_call(lib, static_v=_t(lib, (N * H, S, E)))),
    ("kpm_length", lambda lib: _mha_call(lib, key_padding_mask=_b(lib, np.zeros((N, S + 1), dtype=bool)))),
    ("kpm_batch", lambda lib: _mha_call(lib, key_padding_mask=_b(lib, np.zeros((N + 1, S), dtype=bool)))),
]


@requires_torch
@pytest.mark.parametrize(("name", "call"), MHA_ERRORS, ids=[n for n, _ in MHA_ERRORS])
def test_multi_head_attention_errors_are_torchs(name: str, call: Callable[[Any], Any]) -> None:
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(Exception) as ours:
        call(ag)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == _torch_words(str(theirs.value))


@requires_torch
def test_mismatched_mask_types_warn_as_torch() -> None:
    masks = dict(key_padding_mask=np.zeros((N, S), dtype=bool), attn_mask=np.zeros((L, S)))
    for lib in (torch, ag):
        with pytest.warns(UserWarning) as caught:
            _mha_call(lib, **{name: _b(lib, m) for name, m in masks.items()})
        messages = [str(w.message) for w in caught]
        assert messages == ["Support for mismatched key_padding_mask and attn_mask is deprecated. Use same type "
                            "for both instead."]


def test_reexported_from_nn_functional() -> None:
    from aiograd.nn import _attention

    assert F.scaled_dot_product_attention is _attention.scaled_dot_product_attention
    assert F.multi_head_attention_forward is _attention.multi_head_attention_forward
