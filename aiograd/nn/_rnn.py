"""The recurrent math behind ``nn.RNN``/``nn.LSTM``/``nn.GRU`` and their cells: one layer in one
direction over a whole (packed) sequence is ONE custom autograd node (:class:`RecurrentLayer`),
whose forward runs the time loop on the arrays and whose backward is backpropagation through time
written with array ops, so a sequence of ``T`` steps costs no Python-level node per step or gate.

The caller projects the input of every time step at once (``gi = F.linear(x, W_ih, b_ih)``, one
matmul, its own node); the node then does, per step, one ``h @ W_hh^T`` and the gate math, as
torch's ``_rnn_impl`` (aten/src/ATen/native/RNN.cpp):

* LSTM: gates ``i, f, g, o`` (sigmoid, sigmoid, tanh, sigmoid), ``c' = f * c + i * g``,
  ``h' = o * tanh(c')``, then ``h' = h' @ W_hr^T`` with a projection;
* GRU: gates ``r, z, n`` with ``n = tanh(gi_n + r * (h @ W_hn^T + b_hn))`` and
  ``h' = (h - n) * z + n``;
* RNN: ``h' = tanh(gi + h @ W_hh^T + b_hh)`` (or relu).

Every sequence is laid out as torch's packed data: rows ``offset[t] : offset[t] + batch_sizes[t]``
hold step ``t`` of the ``batch_sizes[t]`` longest sequences (a padded ``T x B`` input is the case
``batch_sizes = [B] * T``). A step updates only the first ``batch_sizes[t]`` rows of the running
state, so the state of a sequence stops at its last step (forward direction) or starts from
``h0`` at its last step (reverse direction), as in torch.

The backward is written with array ops and so is not itself differentiable: a backward through
it with ``create_graph=True`` raises a RuntimeError (:data:`DOUBLE_BACKWARD_ERROR`) rather than
return gradients that would silently miss their dependence on the weights and inputs (torch's
CPU kernels are differentiable twice).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._base._grad_mode import grad_enabled, no_grad
from .._core._tensor import Tensor
from ..function import Function

__all__ = ["RecurrentLayer", "recurrent_layer"]

MODES = ("LSTM", "GRU", "RNN_TANH", "RNN_RELU")

#: The error of a backward with ``create_graph=True`` through a recurrent layer.
DOUBLE_BACKWARD_ERROR = (
    "aiograd's RNN/LSTM/GRU layers and cells are differentiable once only: their backward "
    "(backpropagation through time on the arrays) cannot build a graph, so create_graph=True "
    "through them is not supported"
)


def _sigmoid(xp: Any, x: Any) -> Any:
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + xp.exp(-x))


def _wrap_like(arr: Any, like: Tensor) -> Tensor:
    """``arr`` as a tensor on ``like``'s device."""
    out = Tensor._wrap(arr)
    out._device = like._device
    return out


def _steps(batch_sizes: Sequence[int], reverse: bool) -> list[tuple[int, int]]:
    """``(row offset, batch size)`` of each time step, in the order the layer visits them."""
    offsets = np.concatenate([[0], np.cumsum(batch_sizes)[:-1]]).astype(int).tolist()
    steps = list(zip(offsets, [int(b) for b in batch_sizes], strict=True))
    return steps[::-1] if reverse else steps


class RecurrentLayer(Function):
    """One recurrent layer in one direction over a packed sequence, as one autograd node.

    ``apply(gi, h0, c0, w_hh, b_hh, w_hr, mode, batch_sizes, reverse)``: ``gi`` the input
    projection ``x @ W_ih^T + b_ih`` of every step (``N x G`` packed rows), ``h0``/``c0`` the
    ``B x H`` initial state (``c0`` None but for LSTM), ``b_hh``/``w_hr`` None when absent.
    Returns ``(output, h_n, c_n)`` for LSTM and ``(output, h_n)`` otherwise, ``output`` the
    ``N x H_out`` packed outputs.
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        gi: Tensor,
        h0: Tensor,
        c0: Tensor | None,
        w_hh: Tensor,
        b_hh: Tensor | None,
        w_hr: Tensor | None,
        mode: str,
        batch_sizes: Sequence[int],
        reverse: bool,
    ) -> Any:
        xp = gi._device.xp
        G = gi.data
        W = w_hh.data
        B = None if b_hh is None else b_hh.data
        WR = None if w_hr is None else w_hr.data
        n_rows = G.shape[0]
        h = h0.data.copy()
        hsz = W.shape[0] // {"LSTM": 4, "GRU": 3}.get(mode, 1)
        out = xp.empty((n_rows, h.shape[1]), dtype=G.dtype)
        hprev = xp.empty_like(out)
        steps = _steps(batch_sizes, reverse)
        WT = W.T
        if mode == "LSTM":
            c = c0.data.copy()  # type: ignore[union-attr]
            acts = xp.empty((n_rows, 4 * hsz), dtype=G.dtype)
            cprev = xp.empty((n_rows, hsz), dtype=G.dtype)
            tanhc = xp.empty_like(cprev)
            for r0, bs in steps:
                r1 = r0 + bs
                hp = h[:bs]
                hprev[r0:r1] = hp
                gates = G[r0:r1] + hp @ WT
                if B is not None:
                    gates += B
                act = acts[r0:r1]
                act[:, : 2 * hsz] = _sigmoid(xp, gates[:, : 2 * hsz])
                act[:, 2 * hsz : 3 * hsz] = xp.tanh(gates[:, 2 * hsz : 3 * hsz])
                act[:, 3 * hsz :] = _sigmoid(xp, gates[:, 3 * hsz :])
                i, f, g, o = act[:, :hsz], act[:, hsz : 2 * hsz], act[:, 2 * hsz : 3 * hsz], act[:, 3 * hsz :]
                cp = c[:bs]
                cprev[r0:r1] = cp
                cn = f * cp + i * g
                tc = xp.tanh(cn)
                tanhc[r0:r1] = tc
                hn = o * tc
                if WR is not None:
                    hn = hn @ WR.T
                c[:bs] = cn
                h[:bs] = hn
                out[r0:r1] = hn
            ctx.saved_arrays = (acts, cprev, tanhc, hprev)
        elif mode == "GRU":
            acts = xp.empty((n_rows, 3 * hsz), dtype=G.dtype)
            ghn = xp.empty((n_rows, hsz), dtype=G.dtype)
            for r0, bs in steps:
                r1 = r0 + bs
                hp = h[:bs]
                hprev[r0:r1] = hp
                gh = hp @ WT
                if B is not None:
                    gh += B
                gx = G[r0:r1]
                act = acts[r0:r1]
                act[:, : 2 * hsz] = _sigmoid(xp, gx[:, : 2 * hsz] + gh[:, : 2 * hsz])
                r, z = act[:, :hsz], act[:, hsz : 2 * hsz]
                ghn[r0:r1] = gh[:, 2 * hsz :]
                n = xp.tanh(gx[:, 2 * hsz :] + r * gh[:, 2 * hsz :])
                act[:, 2 * hsz :] = n
                hn = (hp - n) * z + n
                h[:bs] = hn
                out[r0:r1] = hn
            ctx.saved_arrays = (acts, ghn, hprev)
        else:
            relu = mode == "RNN_RELU"
            for r0, bs in steps:
                r1 = r0 + bs
                hp = h[:bs]
                hprev[r0:r1] = hp
                pre = G[r0:r1] + hp @ WT
                if B is not None:
                    pre += B
                hn = xp.maximum(pre, 0) if relu else xp.tanh(pre)
                h[:bs] = hn
                out[r0:r1] = hn
            ctx.saved_arrays = (hprev,)
        ctx.mode, ctx.steps, ctx.hsz = mode, steps, hsz
        ctx.shapes = (h0.data.shape, None if c0 is None else c0.data.shape)
        ctx.save_for_backward(w_hh, w_hr)
        outs = [_wrap_like(out, gi), _wrap_like(h, gi)]
        if mode == "LSTM":
            outs.append(_wrap_like(c, gi))
            ctx.out = None
        else:
            ctx.out = out  # the RNN's derivative reads its outputs
        return tuple(outs)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:  # type: ignore[override]
        if grad_enabled():
            raise RuntimeError(DOUBLE_BACKWARD_ERROR)
        with no_grad():
            return RecurrentLayer._backward(ctx, *grads)

    @staticmethod
    def _backward(ctx: Any, *grads: Any) -> Any:
        w_hh, w_hr = ctx.saved_tensors
        W = w_hh.data
        WR = None if w_hr is None else w_hr.data
        xp = w_hh._device.xp
        mode, steps, hsz = ctx.mode, ctx.steps, ctx.hsz
        gout = grads[0].data
        dh = grads[1].data.astype(gout.dtype, copy=True)
        n_rows = gout.shape[0]
        dgi = xp.empty((n_rows, W.shape[0]), dtype=gout.dtype)
        dc = None
        dhr = None
        if mode == "LSTM":
            acts, cprev, tanhc, hprev = ctx.saved_arrays
            dc = grads[2].data.astype(gout.dtype, copy=True)
            if WR is not None:
                dhr = xp.empty_like(gout)
            for r0, bs in reversed(steps):
                r1 = r0 + bs
                dhs = dh[:bs] + gout[r0:r1]
                act = acts[r0:r1]
                i, f, g, o = act[:, :hsz], act[:, hsz : 2 * hsz], act[:, 2 * hsz : 3 * hsz], act[:, 3 * hsz :]
                tc = tanhc[r0:r1]
                if WR is not None:
                    dhr[r0:r1] = dhs
                    dhs = dhs @ WR
                dcs = dc[:bs] + dhs * o * (1 - tc * tc)
                d = dgi[r0:r1]
                d[:, :hsz] = dcs * g * i * (1 - i)
                d[:, hsz : 2 * hsz] = dcs * cprev[r0:r1] * f * (1 - f)
                d[:, 2 * hsz : 3 * hsz] = dcs * i * (1 - g * g)
                d[:, 3 * hsz :] = dhs * tc * o * (1 - o)
                dc[:bs] = dcs * f
                dh[:bs] = d @ W
            dgh = dgi
        elif mode == "GRU":
            acts, ghn, hprev = ctx.saved_arrays
            dgh = xp.empty_like(dgi)
            for r0, bs in reversed(steps):
                r1 = r0 + bs
                dhs = dh[:bs] + gout[r0:r1]
                act = acts[r0:r1]
                r, z, n = act[:, :hsz], act[:, hsz : 2 * hsz], act[:, 2 * hsz :]
                hp = hprev[r0:r1]
                dpre_n = dhs * (1 - z) * (1 - n * n)
                d = dgi[r0:r1]
                dH = dgh[r0:r1]
                d[:, :hsz] = dpre_n * ghn[r0:r1] * r * (1 - r)
                d[:, hsz : 2 * hsz] = dhs * (hp - n) * z * (1 - z)
                d[:, 2 * hsz :] = dpre_n
                dH[:, : 2 * hsz] = d[:, : 2 * hsz]
                dH[:, 2 * hsz :] = dpre_n * r
                dh[:bs] = dhs * z + dH @ W
        else:
            (hprev,) = ctx.saved_arrays
            out = ctx.out
            relu = mode == "RNN_RELU"
            for r0, bs in reversed(steps):
                r1 = r0 + bs
                dhs = dh[:bs] + gout[r0:r1]
                y = out[r0:r1]
                d = dhs * (y > 0) if relu else dhs * (1 - y * y)
                dgi[r0:r1] = d
                dh[:bs] = d @ W
            dgh = dgi
        need = ctx.needs_input_grad
        g_w = _wrap_like(dgh.T @ hprev, w_hh) if need[3] else None
        g_b = _wrap_like(dgh.sum(0), w_hh) if need[4] else None
        g_wr = None
        if dhr is not None and need[5]:
            acts, _, tanhc, _ = ctx.saved_arrays
            g_wr = _wrap_like(dhr.T @ (acts[:, 3 * hsz :] * tanhc), w_hh)
        return (
            _wrap_like(dgi, w_hh),
            _wrap_like(dh, w_hh),
            None if dc is None else _wrap_like(dc, w_hh),
            g_w,
            g_b,
            g_wr,
            None,
            None,
            None,
        )


def recurrent_layer(
    mode: str,
    gi: Tensor,
    h0: Tensor,
    c0: Tensor | None,
    w_hh: Tensor,
    b_hh: Tensor | None,
    w_hr: Tensor | None,
    batch_sizes: Sequence[int],
    reverse: bool = False,
) -> tuple[Tensor, ...]:
    """Run one layer in one direction (see :class:`RecurrentLayer`); ``(output, h_n[, c_n])``."""
    if mode not in MODES:
        raise ValueError("Unrecognized RNN mode: " + mode)
    return RecurrentLayer.apply(gi, h0, c0, w_hh, b_hh, w_hr, mode, list(batch_sizes), reverse)
