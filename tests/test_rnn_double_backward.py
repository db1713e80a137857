"""Double backward through ``nn.RNN``/``nn.LSTM``/``nn.GRU`` and the cells against torch 2.13's CPU
kernels (float64): first-order gradients taken with ``create_graph=True`` w.r.t. the input, the
initial states and every weight, a scalar made of them, then its gradients; plus finite-difference
``gradgradcheck`` on tiny layers, and the first-order results with and without ``create_graph``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import aiograd as ag
from aiograd import nn
from aiograd.nn.utils import rnn as R
from aiograd.testing import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")
from test_nn_rnn import flat, leaf  # noqa: E402  (the module-output helpers, shared)

TR = torch.nn.utils.rnn

pytestmark = pytest.mark.aiograd(backends=["asyncio"])

TOL = {"rtol": 1e-10, "atol": 1e-12}


def arr(t: Any) -> np.ndarray:
    return np.asarray(t.detach().cpu().data) if isinstance(t, ag.Tensor) else t.detach().numpy()


def close(ours: Any, theirs: Any, **tol: float) -> None:
    a, b = arr(ours), arr(theirs)
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, **(tol or TOL))


def pair(kind: str, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """The torch module and ours holding the same (torch's) float64 weights."""
    torch.manual_seed(0)
    t = getattr(torch.nn, kind)(*args, **kwargs).double()
    m = getattr(nn, kind)(*args, **kwargs, dtype=np.float64)
    m.load_state_dict({k: ag.tensor(v.numpy().copy()) for k, v in t.state_dict().items()})
    return t, m


def loss_of(outs: list[Any], lib: Any) -> Any:
    """``sum(out_0^2) + sum_k sum(out_k * w_k)``: the incoming gradient of the first output
    depends on it (so on everything), the others are random constants."""
    rng = np.random.default_rng(7)
    total = (outs[0] ** 2).sum()
    for o in outs[1:]:
        total = total + (o * lib.tensor(rng.standard_normal(tuple(o.shape)))).sum()
    return total


async def second_order(ours: tuple[Any, list[Any], list[Any]], theirs: tuple[Any, list[Any], list[Any]]) -> None:
    """``ours``/``theirs``: (module result, tensors to differentiate w.r.t., leaves whose second
    gradients to compare). Checks the outputs, the first-order gradients (taken with
    create_graph) and the gradients of the sum of their squares."""
    (out, wrt, leaves), (tout, twrt, tleaves) = ours, theirs
    outs, touts = flat(out), flat(tout)
    for a, b in zip(outs, touts, strict=True):
        close(a, b)
    g1 = await ag.grad(loss_of(outs, ag), wrt, create_graph=True)
    tg1 = torch.autograd.grad(loss_of(touts, torch), twrt, create_graph=True)
    for a, b in zip(g1, tg1, strict=True):
        close(a, b)
        assert a.requires_grad
    s = sum(((g**2).sum() for g in g1), ag.tensor(0.0))
    ts = sum((g**2).sum() for g in tg1)
    close(s, ts)
    g2 = await ag.grad(s, leaves, allow_unused=True)
    tg2 = torch.autograd.grad(ts, tleaves, allow_unused=True)
    for a, b in zip(g2, tg2, strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            close(a, b)


def states(kind: str, kw: dict[str, Any], n: int, batch: int, hidden: int = 5) -> tuple[Any, Any]:
    """Random (h0[, c0]) leaves for both libraries."""
    hsz = kw.get("proj_size", 0) or hidden
    h, th = leaf((n, batch, hsz), 3)
    if kind != "LSTM":
        return [h], [th]
    c, tc = leaf((n, batch, hidden), 4)
    return [h, c], [th, tc]


def hx_of(kind: str, hs: list[Any]) -> Any:
    return None if not hs else (tuple(hs) if kind == "LSTM" else hs[0])


CONFIGS = [
    ("RNN", {"nonlinearity": "tanh"}),
    ("RNN", {"nonlinearity": "relu"}),
    ("LSTM", {}),
    ("LSTM", {"proj_size": 3}),
    ("GRU", {}),
]
IDS = ["rnn_tanh", "rnn_relu", "lstm", "lstm_proj", "gru"]


@pytest.mark.parametrize(("kind", "kw"), CONFIGS, ids=IDS)
@pytest.mark.parametrize("with_hx", [True, False])
async def test_single_layer_matches_torch(kind: str, kw: dict[str, Any], with_hx: bool) -> None:
    t, m = pair(kind, 4, 5, **kw)
    x, tx = leaf((6, 3, 4), 1)
    hs, ths = states(kind, kw, 1, 3) if with_hx else ([], [])
    out, tout = m(x, hx_of(kind, hs)), t(tx, hx_of(kind, ths))
    params, tparams = list(m.parameters()), list(t.parameters())
    await second_order((out, [x, *hs, *params], [x, *hs, *params]), (tout, [tx, *ths, *tparams], [tx, *ths, *tparams]))


@pytest.mark.parametrize(("kind", "kw"), CONFIGS, ids=IDS)
@pytest.mark.parametrize("batch_first", [False, True])
async def test_bidirectional_two_layers_matches_torch(kind: str, kw: dict[str, Any], batch_first: bool) -> None:
    t, m = pair(kind, 4, 5, num_layers=2, bidirectional=True, batch_first=batch_first, **kw)
    x, tx = leaf((3, 5, 4) if batch_first else (5, 3, 4), 2)
    hs, ths = states(kind, kw, 4, 3)
    out, tout = m(x, hx_of(kind, hs)), t(tx, hx_of(kind, ths))
    params, tparams = list(m.parameters()), list(t.parameters())
    await second_order((out, [x, *hs, *params], [x, *hs, *params]), (tout, [tx, *ths, *tparams], [tx, *ths, *tparams]))


@pytest.mark.parametrize(("kind", "kw"), CONFIGS, ids=IDS)
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("with_hx", [True, False])
async def test_packed_matches_torch(kind: str, kw: dict[str, Any], bidirectional: bool, with_hx: bool) -> None:
    t, m = pair(kind, 4, 5, num_layers=2, bidirectional=bidirectional, **kw)
    lengths = [3, 6, 1, 4]
    x, tx = leaf((6, 4, 4), 5)
    px = R.pack_padded_sequence(x, lengths, enforce_sorted=False)
    tpx = TR.pack_padded_sequence(tx, lengths, enforce_sorted=False)
    hs, ths = states(kind, kw, 4 if bidirectional else 2, 4) if with_hx else ([], [])
    out, tout = m(px, hx_of(kind, hs)), t(tpx, hx_of(kind, ths))
    params, tparams = list(m.parameters()), list(t.parameters())
    await second_order((out, [x, *hs, *params], [x, *hs, *params]), (tout, [tx, *ths, *tparams], [tx, *ths, *tparams]))


@pytest.mark.parametrize(("kind", "kw"), [("LSTM", {}), ("GRU", {}), ("RNN", {})], ids=["lstm", "gru", "rnn"])
async def test_no_bias_unbatched_matches_torch(kind: str, kw: dict[str, Any]) -> None:
    t, m = pair(kind, 4, 5, bias=False, **kw)
    x, tx = leaf((6, 4), 6)
    out, tout = m(x), t(tx)
    params, tparams = list(m.parameters()), list(t.parameters())
    await second_order((out, [x, *params], [x, *params]), (tout, [tx, *tparams], [tx, *tparams]))


async def test_second_order_wrt_input_only() -> None:
    """Gradients w.r.t. the input only, then again w.r.t. the weights (which got no first-order
    gradient): the weights' dependence comes only through the graph of the backward."""
    t, m = pair("LSTM", 4, 5, num_layers=2, proj_size=2)
    x, tx = leaf((5, 2, 4), 8)
    params, tparams = list(m.parameters()), list(t.parameters())
    await second_order((m(x), [x], [x, *params]), (t(tx), [tx], [tx, *tparams]))


CELLS = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("LSTMCell", {}), ("GRUCell", {})]


@pytest.mark.parametrize(("kind", "kw"), CELLS, ids=["rnn", "rnn_relu", "lstm", "gru"])
async def test_cells_match_torch(kind: str, kw: dict[str, Any]) -> None:
    """The cells are the same node over one step: two steps, so the state made by the cell is
    differentiated through too."""
    t, m = pair(kind, 4, 5, **kw)
    x, tx = leaf((3, 4), 9)
    n = 2 if kind == "LSTMCell" else 1
    hs, ths = zip(*(leaf((3, 5), 20 + k) for k in range(n)), strict=True)
    hx, thx = (tuple(hs), tuple(ths)) if n == 2 else (hs[0], ths[0])
    out, tout = m(x, m(x, hx)), t(tx, t(tx, thx))
    params, tparams = list(m.parameters()), list(t.parameters())
    await second_order((out, [x, *hs, *params], [x, *hs, *params]), (tout, [tx, *ths, *tparams], [tx, *ths, *tparams]))


@pytest.mark.parametrize(("kind", "kw"), CONFIGS, ids=IDS)
async def test_first_order_unchanged_by_create_graph(kind: str, kw: dict[str, Any]) -> None:
    """The differentiable backward gives the array backward's gradients (to rounding), and the
    array backward still matches torch."""
    t, m = pair(kind, 4, 5, num_layers=2, bidirectional=True, **kw)
    x, tx = leaf((6, 4, 4), 11)
    px = R.pack_padded_sequence(x, [6, 2, 5, 3], enforce_sorted=False)
    tpx = TR.pack_padded_sequence(tx, [6, 2, 5, 3], enforce_sorted=False)
    hs, ths = states(kind, kw, 4, 4)
    wrt, twrt = [x, *hs, *m.parameters()], [tx, *ths, *t.parameters()]
    out = flat(m(px, hx_of(kind, hs)))
    plain = await ag.grad(loss_of(out, ag), wrt, retain_graph=True)
    graph = await ag.grad(loss_of(out, ag), wrt, create_graph=True)
    theirs = torch.autograd.grad(loss_of(flat(t(tpx, hx_of(kind, ths))), torch), twrt)
    for a, g, b in zip(plain, graph, theirs, strict=True):
        assert not a.requires_grad and g.requires_grad
        close(a, b)
        close(g, a, rtol=1e-12, atol=1e-14)


def _tiny(kind: str, **kw: Any) -> tuple[Any, list[Any]]:
    """A tiny float64 layer as a function of (x, h0[, c0], *weights), and those inputs."""
    m = getattr(nn, kind)(2, 3, dtype=np.float64, **kw)
    names = [n for n, _ in m.named_parameters()]
    rng = np.random.default_rng(12)
    x = ag.tensor(rng.standard_normal((3, 2, 2)), requires_grad=True)
    n_states = 2 if kind == "LSTM" else 1
    hsz = kw.get("proj_size", 0) or 3
    sizes = [hsz, 3][:n_states]
    hs = [ag.tensor(0.5 * rng.standard_normal((1, 2, s)), requires_grad=True) for s in sizes]
    ws = [ag.tensor(p.detach().data.copy(), requires_grad=True) for p in m.parameters()]

    def fn(x: Any, *rest: Any) -> Any:
        states, weights = rest[:n_states], rest[n_states:]
        hx = tuple(states) if kind == "LSTM" else states[0]
        out = ag.func.functional_call(m, dict(zip(names, weights, strict=True)), (x, hx))
        return tuple(flat(out))

    return fn, [x, *hs, *ws]


@pytest.mark.parametrize(("kind", "kw"), [("LSTM", {}), ("LSTM", {"proj_size": 2}), ("GRU", {}), ("RNN", {})],
                         ids=["lstm", "lstm_proj", "gru", "rnn_tanh"])
async def test_gradgradcheck_tiny(kind: str, kw: dict[str, Any]) -> None:
    fn, inputs = _tiny(kind, **kw)
    assert await gradcheck(fn, inputs)
    assert await gradgradcheck(fn, inputs)


async def test_gradgradcheck_packed_bidirectional_lstm() -> None:
    m = nn.LSTM(2, 3, bidirectional=True, dtype=np.float64)
    names = [n for n, _ in m.named_parameters()]
    rng = np.random.default_rng(13)
    x = ag.tensor(rng.standard_normal((3, 2, 2)), requires_grad=True)
    ws = [ag.tensor(p.detach().data.copy(), requires_grad=True) for p in m.parameters()]

    def fn(x: Any, *weights: Any) -> Any:
        px = R.pack_padded_sequence(x, [3, 1], enforce_sorted=False)
        out = ag.func.functional_call(m, dict(zip(names, weights, strict=True)), (px,))
        return tuple(flat(out))

    assert await gradgradcheck(fn, [x, *ws])


async def test_inplace_change_of_saved_state_is_caught() -> None:
    """h0 is saved (its graph is needed by the differentiable backward): changing it in place
    before backward is an error, as in torch. (torch's message is about the view ``unbind``
    made of ``hx``; aiograd's layer takes ``hx[k]``, so its message is the saved-version one.)"""
    t, m = pair("GRU", 3, 4)
    h, th = leaf((1, 2, 4), 1)
    h, th = h * 1, th * 1
    x, tx = leaf((2, 2, 3), 2)
    out, _ = m(x, h)
    tout, _ = t(tx, th)
    with torch.no_grad():
        th.add_(1)
    with pytest.raises(RuntimeError, match="modified inplace"):
        tout.sum().backward()
    with ag.no_grad():
        h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        await out.sum().backward()
