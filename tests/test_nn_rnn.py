"""``nn.RNN``/``nn.LSTM``/``nn.GRU`` and the cells against torch: float64 outputs, final states and
gradients (input, h0/c0, every parameter) after loading torch's state dict, over num_layers,
bidirectional, batch_first, bias, proj_size, packed sequences (``enforce_sorted=False``) and
unbatched inputs; same-seed initialisation; dropout between layers; torch's errors."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import aiograd as ag
from aiograd import nn
from aiograd.nn.utils import rnn as R

torch = pytest.importorskip("torch")
TR = torch.nn.utils.rnn

pytestmark = pytest.mark.aiograd(backends=["asyncio"])

TOL = {"rtol": 1e-10, "atol": 1e-12}


def arr(t: Any) -> np.ndarray:
    return np.asarray(t.detach().cpu().data) if isinstance(t, ag.Tensor) else t.detach().numpy()


def close(ours: Any, theirs: Any) -> None:
    a, b = arr(ours), arr(theirs)
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, **TOL)


def pair(kind: str, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """The torch module and ours holding the same (torch's) float64 weights."""
    t = getattr(torch.nn, kind)(*args, **kwargs).double()
    m = getattr(nn, kind)(*args, **kwargs, dtype=np.float64)
    sd = t.state_dict()
    assert list(m.state_dict().keys()) == list(sd.keys())
    m.load_state_dict({k: ag.tensor(v.numpy().copy()) for k, v in sd.items()})
    return t, m


def leaf(shape: tuple[int, ...], seed: int) -> tuple[Any, Any]:
    x = np.random.default_rng(seed).standard_normal(shape)
    return ag.tensor(x.copy(), requires_grad=True), torch.tensor(x.copy(), requires_grad=True)


def flat(out: Any) -> list[Any]:
    """The tensors of a module's result, in order."""
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in flat(o)]
    if isinstance(out, (R.PackedSequence, TR.PackedSequence)):
        return [out.data]
    return [out]


async def backward_both(ours: list[Any], theirs: list[Any]) -> None:
    """Backward of ``sum_k sum(out_k * w_k)`` with the same random weights in both libraries."""
    rng = np.random.default_rng(7)
    la, lt = None, None
    for a, t in zip(ours, theirs, strict=True):
        close(a, t)
        w = rng.standard_normal(tuple(t.shape))
        ta, tt = (a * ag.tensor(w)).sum(), (t * torch.tensor(w)).sum()
        la, lt = (ta, tt) if la is None else (la + ta, lt + tt)
    await la.backward()
    lt.backward()


def close_param_grads(m: Any, t: Any) -> None:
    mine = dict(m.named_parameters())
    for name, p in t.named_parameters():
        assert mine[name].grad is not None, name
        close(mine[name].grad, p.grad)


CONFIGS = [
    ("RNN", {"nonlinearity": "tanh"}),
    ("RNN", {"nonlinearity": "relu"}),
    ("LSTM", {}),
    ("LSTM", {"proj_size": 3}),
    ("GRU", {}),
]
IDS = ["rnn_tanh", "rnn_relu", "lstm", "lstm_proj", "gru"]


def states(kind: str, kw: dict[str, Any], layers: int, dirs: int, batch: int, seed: int = 3) -> tuple[Any, Any]:
    """Random (h0[, c0]) for both libraries."""
    hsz = kw.get("proj_size", 0) or 5
    h, th = leaf((layers * dirs, batch, hsz), seed)
    if kind != "LSTM":
        return h, th
    c, tc = leaf((layers * dirs, batch, 5), seed + 1)
    return (h, c), (th, tc)


def leaves(hx: Any) -> list[Any]:
    return list(hx) if isinstance(hx, tuple) else [hx]


@pytest.mark.parametrize(("kind", "kw"), CONFIGS, ids=IDS)
@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
async def test_padded_matches_torch(kind: str, kw: dict[str, Any], layers: int, bidirectional: bool, batch_first: bool) -> None:
    t, m = pair(kind, 4, 5, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first, **kw)
    shape = (3, 6, 4) if batch_first else (6, 3, 4)
    x, tx = leaf(shape, 1)
    hx, thx = states(kind, kw, layers, 2 if bidirectional else 1, 3)
    out, tout = m(x, hx), t(tx, thx)
    await backward_both(flat(out), flat(tout))
    for a, b in zip([x, *leaves(hx)], [tx, *leaves(thx)], strict=True):
        close(a.grad, b.grad)
    close_param_grads(m, t)


@pytest.mark.parametrize(("kind", "kw"), CONFIGS, ids=IDS)
@pytest.mark.parametrize("bidirectional", [False, True])
async def test_packed_unsorted_matches_torch(kind: str, kw: dict[str, Any], bidirectional: bool) -> None:
    t, m = pair(kind, 4, 5, num_layers=2, bidirectional=bidirectional, **kw)
    lengths = [3, 6, 1, 4]
    x, tx = leaf((6, 4, 4), 2)
    px = R.pack_padded_sequence(x, lengths, enforce_sorted=False)
    tpx = TR.pack_padded_sequence(tx, lengths, enforce_sorted=False)
    hx, thx = states(kind, kw, 2, 2 if bidirectional else 1, 4)
    out, tout = m(px, hx), t(tpx, thx)
    assert isinstance(out[0], R.PackedSequence)
    assert np.asarray(out[0].batch_sizes.data).tolist() == tout[0].batch_sizes.tolist()
    assert np.asarray(out[0].unsorted_indices.data).tolist() == tout[0].unsorted_indices.tolist()
    await backward_both(flat(out), flat(tout))
    for a, b in zip([x, *leaves(hx)], [tx, *leaves(thx)], strict=True):
        close(a.grad, b.grad)
    close_param_grads(m, t)


@pytest.mark.parametrize(("kind", "kw"), CONFIGS, ids=IDS)
async def test_packed_without_hx_and_no_bias(kind: str, kw: dict[str, Any]) -> None:
    t, m = pair(kind, 4, 5, bias=False, **kw)
    assert "bias_ih_l0" not in dict(m.named_parameters())
    x, tx = leaf((5, 3, 4), 4)
    out = m(R.pack_padded_sequence(x, [5, 2, 4], enforce_sorted=False))
    tout = t(TR.pack_padded_sequence(tx, [5, 2, 4], enforce_sorted=False))
    await backward_both(flat(out), flat(tout))
    close(x.grad, tx.grad)
    close_param_grads(m, t)


@pytest.mark.parametrize(("kind", "kw"), CONFIGS, ids=IDS)
@pytest.mark.parametrize("with_hx", [False, True])
async def test_unbatched_matches_torch(kind: str, kw: dict[str, Any], with_hx: bool) -> None:
    t, m = pair(kind, 4, 5, num_layers=2, bidirectional=True, **kw)
    x, tx = leaf((6, 4), 5)
    hx = thx = None
    if with_hx:
        hx, thx = states(kind, kw, 2, 2, 1)
        hx = tuple(h[:, 0] for h in hx) if isinstance(hx, tuple) else hx[:, 0]
        thx = tuple(h[:, 0] for h in thx) if isinstance(thx, tuple) else thx[:, 0]
    out, tout = m(x, hx), t(tx, thx)
    assert out[0].shape == tuple(tout[0].shape)
    await backward_both(flat(out), flat(tout))
    close(x.grad, tx.grad)
    close_param_grads(m, t)


CELLS = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("LSTMCell", {}), ("GRUCell", {}), ("GRUCell", {"bias": False})]


@pytest.mark.parametrize(("kind", "kw"), CELLS, ids=["rnn", "rnn_relu", "lstm", "gru", "gru_nobias"])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_hx", [False, True])
async def test_cells_match_torch(kind: str, kw: dict[str, Any], batched: bool, with_hx: bool) -> None:
    t, m = pair(kind, 4, 5, **kw)
    lead = (3,) if batched else ()
    x, tx = leaf((*lead, 4), 6)
    hx = thx = None
    hs: list[Any] = []
    ths: list[Any] = []
    if with_hx:
        for k in range(2 if kind == "LSTMCell" else 1):
            h, th = leaf((*lead, 5), 10 + k)
            hs.append(h)
            ths.append(th)
        hx, thx = (tuple(hs), tuple(ths)) if kind == "LSTMCell" else (hs[0], ths[0])
    out, tout = m(x, hx), t(tx, thx)
    # two steps, so the gradient flows through a state made by the cell
    out, tout = m(x, out), t(tx, tout)
    await backward_both(flat(out), flat(tout))
    for a, b in zip([x, *hs], [tx, *ths], strict=True):
        close(a.grad, b.grad)
    close_param_grads(m, t)


@pytest.mark.parametrize(
    ("kind", "kwargs"),
    [
        ("RNN", {"num_layers": 2, "bidirectional": True}),
        ("LSTM", {"num_layers": 2, "proj_size": 3, "bidirectional": True}),
        ("GRU", {"bias": False}),
        ("RNNCell", {}),
        ("LSTMCell", {}),
        ("GRUCell", {}),
    ],
)
@pytest.mark.real_default_dtype
def test_same_seed_same_weights(kind: str, kwargs: dict[str, Any]) -> None:
    ag.manual_seed(123)
    m = getattr(nn, kind)(4, 5, **kwargs)
    torch.manual_seed(123)
    t = getattr(torch.nn, kind)(4, 5, **kwargs)
    ours = m.state_dict()
    theirs = t.state_dict()
    assert list(ours.keys()) == list(theirs.keys())
    for k, v in theirs.items():
        assert tuple(ours[k].shape) == tuple(v.shape)
        assert arr(ours[k]).dtype == np.float32
        np.testing.assert_array_equal(arr(ours[k]), v.numpy())


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("packed", [False, True])
async def test_dropout_between_layers_matches_torch(kind: str, packed: bool) -> None:
    t, m = pair(kind, 4, 5, num_layers=3, dropout=0.4, bidirectional=True, batch_first=True)
    x, tx = leaf((3, 6, 4), 8)
    if packed:
        x_in = R.pack_padded_sequence(x, [4, 6, 2], batch_first=True, enforce_sorted=False)
        tx_in = TR.pack_padded_sequence(tx, [4, 6, 2], batch_first=True, enforce_sorted=False)
    else:
        x_in, tx_in = x, tx
    ag.manual_seed(5)
    out = m(x_in)
    torch.manual_seed(5)
    tout = t(tx_in)
    await backward_both(flat(out), flat(tout))
    close(x.grad, tx.grad)
    close_param_grads(m, t)
    # without training no dropout: two runs agree
    m.eval()
    np.testing.assert_array_equal(arr(flat(m(x_in))[0]), arr(flat(m(x_in))[0]))


def test_dropout_single_layer_warns() -> None:
    with pytest.warns(UserWarning, match=re.escape("but got dropout=0.5 and num_layers=1")):
        nn.LSTM(3, 4, dropout=0.5)


def torch_error(fn: Any) -> tuple[type, str]:
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


def same_error(ours: Any, theirs: Any) -> None:
    t_type, t_msg = torch_error(theirs)
    with pytest.raises(t_type) as info:
        ours()
    assert str(info.value) == t_msg


def zeros_both(*shape: int) -> tuple[Any, Any]:
    return ag.zeros(*shape, dtype=np.float64), torch.zeros(*shape, dtype=torch.float64)


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
def test_errors_match_torch(kind: str) -> None:
    t, m = pair(kind, 10, 20, num_layers=2)
    x, tx = zeros_both(5, 3, 10)
    bad, tbad = zeros_both(5, 3, 7)
    same_error(lambda: m(bad), lambda: t(tbad))  # wrong input size
    x4, tx4 = zeros_both(5, 3, 10, 1)
    same_error(lambda: m(x4), lambda: t(tx4))  # rank
    h, th = zeros_both(1, 3, 20)
    h2, th2 = zeros_both(2, 3, 20)
    h2d, th2d = zeros_both(3, 20)
    if kind == "LSTM":
        same_error(lambda: m(x, (h, h2)), lambda: t(tx, (th, th2)))
        same_error(lambda: m(x, (h2, h)), lambda: t(tx, (th2, th)))
        same_error(lambda: m(x, (h2d, h2)), lambda: t(tx, (th2d, th2)))
    else:
        same_error(lambda: m(x, h), lambda: t(tx, th))  # Expected hidden size (2, 3, 20), got [1, 3, 20]
        same_error(lambda: m(x, h2d), lambda: t(tx, th2d))
        px = R.pack_padded_sequence(x, [5, 3, 2])
        tpx = TR.pack_padded_sequence(tx, [5, 3, 2])
        same_error(lambda: m(px, h), lambda: t(tpx, th))


def test_constructor_errors_match_torch() -> None:
    for kind, args, kwargs in [
        ("RNN", (3, 4), {"nonlinearity": "gelu"}),
        ("RNN", (3, 4), {"proj_size": 2}),
        ("GRU", (3, 4), {"proj_size": 2}),
        ("LSTM", (3, 4), {"proj_size": 4}),
        ("LSTM", (3, 4), {"dropout": 1.5}),
        ("LSTM", (3, 0), {}),
        ("LSTM", (3, 4), {"num_layers": 0}),
        ("LSTM", (3, 4), {"bias": 1}),
    ]:
        same_error(lambda k=kind, a=args, kw=kwargs: getattr(nn, k)(*a, **kw),
                   lambda k=kind, a=args, kw=kwargs: getattr(torch.nn, k)(*a, **kw))


@pytest.mark.parametrize("kind", ["RNNCell", "GRUCell", "LSTMCell"])
def test_cell_errors_match_torch(kind: str) -> None:
    t, m = pair(kind, 10, 20)
    lstm = kind == "LSTMCell"

    def hid(h: Any) -> Any:
        return (h, h) if lstm else h

    bad, tbad = zeros_both(3, 5)
    same_error(lambda: m(bad), lambda: t(tbad))
    x, tx = zeros_both(3, 10)
    h, th = zeros_both(2, 20)
    same_error(lambda: m(x, hid(h)), lambda: t(tx, hid(th)))
    h, th = zeros_both(3, 19)
    same_error(lambda: m(x, hid(h)), lambda: t(tx, hid(th)))
    x3, tx3 = zeros_both(1, 3, 10)
    same_error(lambda: m(x3), lambda: t(tx3))


def test_repr_and_all_weights() -> None:
    t = torch.nn.LSTM(3, 4, num_layers=2, proj_size=2, bidirectional=True, batch_first=True)
    m = nn.LSTM(3, 4, num_layers=2, proj_size=2, bidirectional=True, batch_first=True)
    assert repr(m) == repr(t)
    assert [[tuple(p.shape) for p in w] for w in m.all_weights] == [[tuple(p.shape) for p in w] for w in t.all_weights]
    assert repr(nn.RNNCell(3, 4, nonlinearity="relu", bias=False)) == repr(torch.nn.RNNCell(3, 4, nonlinearity="relu", bias=False))


async def test_double_backward_builds_a_graph() -> None:
    """create_graph=True through a layer gives gradients with a graph (tests/test_rnn_double_backward.py
    checks the second-order values against torch); the graph stays usable once more."""
    m = nn.GRU(3, 4, dtype=np.float64)
    x = ag.tensor(np.ones((2, 1, 3)), requires_grad=True)
    out, _ = m(x)
    (g,) = await ag.grad(out.sum(), [x], create_graph=True)
    assert g.requires_grad and g.shape == (2, 1, 3)
    (gg,) = await ag.grad(g.sum(), [x])
    assert gg.shape == (2, 1, 3)
