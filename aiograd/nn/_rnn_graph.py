"""The backward of a recurrent layer (:class:`aiograd.nn._rnn.RecurrentLayer`) as differentiable
aiograd ops, for a backward run with grad mode on (``create_graph=True``): what makes
``nn.RNN``/``nn.LSTM``/``nn.GRU`` and the cells differentiable twice, as torch's CPU kernels
(``_rnn_impl``, composed of ops) are.

The layer's forward is recomputed from the node's saved inputs (the projected inputs ``gi``,
``h0``/``c0``, ``W_hh``, ``b_hh``, ``W_hr``) with tensor ops, step by step over the same packed
rows as the array loop (step ``t`` updates only the first ``batch_sizes[t]`` rows of the state),
then backpropagation through time runs with tensor ops on those recomputed activations and on the
incoming gradients. The gradients so have graph edges to the weights, the inputs and the incoming
gradients. The formulas (and their order) are those of the array backward in ``_rnn.py``; this
path costs a Python-level node per op and step, so the array path keeps the common case (a
backward with grad mode off).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._core._tensor import Tensor
from .._ops.elementwise import where
from .._ops.joining import cat

__all__ = ["graph_backward"]


def _rows(t: Tensor, bs: int) -> Tensor:
    """The first ``bs`` rows of the state ``t`` (``t`` itself when that is all of it)."""
    return t if bs == t.shape[0] else t[:bs]


def _merge(new: Tensor, old: Tensor) -> Tensor:
    """The state ``old`` with its first rows replaced by ``new``."""
    n = new.shape[0]
    return new if n == old.shape[0] else cat([new, old[n:]], 0)


def _in_row_order(pieces: dict[int, Tensor]) -> Tensor:
    """The per-step pieces (keyed by their first packed row) stacked in packed-row order."""
    keys = sorted(pieces)
    return pieces[keys[0]] if len(keys) == 1 else cat([pieces[k] for k in keys], 0)


def _lstm(
    gi: Tensor, h0: Tensor, c0: Tensor, W: Tensor, b: Tensor | None, WR: Tensor | None,
    steps: Sequence[tuple[int, int]], H: int, gout: Tensor, dh: Tensor, dc: Tensor,
) -> tuple[Tensor, Tensor, Tensor, Tensor | None, Tensor, dict[int, Tensor]]:
    WT = W.t()
    WRT = None if WR is None else WR.t()
    h, c = h0, c0
    cache: dict[int, tuple[Tensor, ...]] = {}
    for r0, bs in steps:
        hp, cp = _rows(h, bs), _rows(c, bs)
        act = hp @ WT + gi[r0 : r0 + bs]
        if b is not None:
            act = act + b
        i, f = act[:, :H].sigmoid(), act[:, H : 2 * H].sigmoid()
        g, o = act[:, 2 * H : 3 * H].tanh(), act[:, 3 * H :].sigmoid()
        cn = f * cp + i * g
        tc = cn.tanh()
        hn = o * tc
        if WRT is not None:
            hn = hn @ WRT
        cache[r0] = (hp, cp, i, f, g, o, tc)
        h, c = _merge(hn, h), _merge(cn, c)
    dgi: dict[int, Tensor] = {}
    dhr: dict[int, Tensor] = {}
    hprev: dict[int, Tensor] = {}
    for r0, bs in reversed(steps):
        hp, cp, i, f, g, o, tc = cache[r0]
        hprev[r0] = hp
        dhs = _rows(dh, bs) + gout[r0 : r0 + bs]
        if WR is not None:
            dhr[r0] = dhs
            dhs = dhs @ WR
        dcs = _rows(dc, bs) + dhs * o * (1 - tc * tc)
        di = dcs * g * i * (1 - i)
        df = dcs * cp * f * (1 - f)
        dg = dcs * i * (1 - g * g)
        do = dhs * tc * o * (1 - o)
        d = cat([di, df, dg, do], 1)
        dgi[r0] = d
        dc = _merge(dcs * f, dc)
        dh = _merge(d @ W, dh)
    g_gi = _in_row_order(dgi)
    g_wr = None
    if WR is not None:
        ho = {r0: cache[r0][5] * cache[r0][6] for r0 in cache}
        g_wr = _in_row_order(dhr).t() @ _in_row_order(ho)
    return g_gi, dh, dc, g_wr, g_gi, hprev


def _gru(
    gi: Tensor, h0: Tensor, W: Tensor, b: Tensor | None, steps: Sequence[tuple[int, int]], H: int,
    gout: Tensor, dh: Tensor,
) -> tuple[Tensor, Tensor, Tensor, dict[int, Tensor]]:
    WT = W.t()
    h = h0
    cache: dict[int, tuple[Tensor, ...]] = {}
    for r0, bs in steps:
        hp = _rows(h, bs)
        gh = hp @ WT
        if b is not None:
            gh = gh + b
        gx = gi[r0 : r0 + bs]
        r = (gx[:, :H] + gh[:, :H]).sigmoid()
        z = (gx[:, H : 2 * H] + gh[:, H : 2 * H]).sigmoid()
        ghn = gh[:, 2 * H :]
        n = (r * ghn + gx[:, 2 * H :]).tanh()
        hn = (hp - n) * z + n
        cache[r0] = (hp, r, z, n, ghn)
        h = _merge(hn, h)
    dgi: dict[int, Tensor] = {}
    dgh: dict[int, Tensor] = {}
    hprev: dict[int, Tensor] = {}
    for r0, bs in reversed(steps):
        hp, r, z, n, ghn = cache[r0]
        hprev[r0] = hp
        dhs = _rows(dh, bs) + gout[r0 : r0 + bs]
        dn = dhs * (1 - z) * (1 - n * n)
        dr = dn * ghn * r * (1 - r)
        dz = (hp - n) * dhs * z * (1 - z)
        dH = cat([dr, dz, dn * r], 1)
        dgi[r0] = cat([dr, dz, dn], 1)
        dgh[r0] = dH
        dh = _merge(dhs * z + dH @ W, dh)
    return _in_row_order(dgi), dh, _in_row_order(dgh), hprev


def _rnn(
    gi: Tensor, h0: Tensor, W: Tensor, b: Tensor | None, steps: Sequence[tuple[int, int]], relu: bool,
    gout: Tensor, dh: Tensor,
) -> tuple[Tensor, Tensor, Tensor, dict[int, Tensor]]:
    WT = W.t()
    h = h0
    cache: dict[int, tuple[Tensor, Tensor]] = {}
    for r0, bs in steps:
        hp = _rows(h, bs)
        pre = hp @ WT + gi[r0 : r0 + bs]
        if b is not None:
            pre = pre + b
        hn = pre.relu() if relu else pre.tanh()
        cache[r0] = (hp, hn)
        h = _merge(hn, h)
    dgi: dict[int, Tensor] = {}
    hprev: dict[int, Tensor] = {}
    for r0, bs in reversed(steps):
        hp, hn = cache[r0]
        hprev[r0] = hp
        dhs = _rows(dh, bs) + gout[r0 : r0 + bs]
        # relu: torch's threshold_backward, where(out > 0, grad, 0): no dependence on ``out``
        d = where(hn.detach() > 0, dhs, 0.0) if relu else dhs * (1 - hn * hn)
        dgi[r0] = d
        dh = _merge(d @ W, dh)
    g_gi = _in_row_order(dgi)
    return g_gi, dh, g_gi, hprev


def graph_backward(ctx: Any, *grads: Tensor) -> tuple[Any, ...]:
    """The gradients of ``RecurrentLayer.apply``'s tensor arguments ``(gi, h0, c0, w_hh, b_hh,
    w_hr)`` (then Nones for ``mode``, ``batch_sizes``, ``reverse``), computed with tensor ops."""
    gi, h0, c0, w_hh, b_hh, w_hr = ctx.saved_tensors
    mode, steps, hsz = ctx.mode, ctx.steps, ctx.hsz
    gout, dh = grads[0], grads[1]
    dc = g_wr = None
    if mode == "LSTM":
        g_gi, dh, dc, g_wr, dgh, hprev = _lstm(gi, h0, c0, w_hh, b_hh, w_hr, steps, hsz, gout, dh, grads[2])
    elif mode == "GRU":
        g_gi, dh, dgh, hprev = _gru(gi, h0, w_hh, b_hh, steps, hsz, gout, dh)
    else:
        g_gi, dh, dgh, hprev = _rnn(gi, h0, w_hh, b_hh, steps, mode == "RNN_RELU", gout, dh)
    need = ctx.needs_input_grad
    g_w = dgh.t() @ _in_row_order(hprev) if need[3] else None
    g_b = dgh.sum(0) if need[4] and b_hh is not None else None
    return (g_gi, dh, dc, g_w, g_b, g_wr if need[5] else None, None, None, None)
