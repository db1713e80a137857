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

Speed: the loops write into buffers allocated once per call (``matmul``/ufuncs with ``out=``,
in place), in the same operation order as the plain formulas so the results are bit for bit
those of the out-of-place expressions; the LSTM's sigmoid runs over the whole contiguous gate
block (ufuncs on column slices cost about twice as much); without a backward to come the
per-step activations are not kept. What is left is mostly the per-step ``h @ W_hh^T`` in BLAS
(half or more of a step for hidden 128, batch 32). (Taking a contiguous copy of ``W_hh^T``
makes that float32 matmul ~30% faster with OpenBLAS but changes the last bit in some shapes,
so it is not done.)

The array backward is not itself differentiable, so a backward run with grad mode on
(``create_graph=True``) takes another path (aiograd/nn/_rnn_graph.py): it recomputes the layer's
forward from the node's saved inputs with tensor ops and runs backpropagation through time with
tensor ops too, so the gradients have graph edges to the weights, the inputs and the incoming
gradients and the layers are differentiable twice, as torch's CPU kernels are. For that the node
saves its tensor inputs (``gi``, ``h0``/``c0``, ``W_hh``, ``b_hh``, ``W_hr``), checked against
in-place changes as any saved tensor; the array path reads only the weights among them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._base._grad_mode import grad_enabled, no_grad
from .._core._tensor import Tensor
from ..function import Function
from ._rnn_graph import graph_backward

__all__ = ["RecurrentLayer", "recurrent_layer"]

MODES = ("LSTM", "GRU", "RNN_TANH", "RNN_RELU")

def _sigmoid_(xp: Any, x: Any) -> None:
    """``x = 1 / (1 + exp(-x))`` in place (the same operations, so the same bits, as the
    out-of-place formula); the caller silences the overflow of ``exp`` for very negative ``x``."""
    xp.negative(x, out=x)
    xp.exp(x, out=x)
    x += 1.0
    xp.divide(1.0, x, out=x)


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
        # Without a backward to come (no_grad, or no input needing a gradient) the per-step
        # activations go to one-step work buffers instead of ``n_rows``-row saved arrays.
        edges = getattr(ctx, "next_edges", None)
        save = edges is None or len(edges) > 0
        rows = n_rows if save else h.shape[0]
        hprev = xp.empty((rows, h.shape[1]), dtype=G.dtype) if save else None
        steps = _steps(batch_sizes, reverse)
        WT = W.T
        with np.errstate(over="ignore"):
            if mode == "LSTM":
                c = c0.data.copy()  # type: ignore[union-attr]
                acts = xp.empty((rows, 4 * hsz), dtype=G.dtype)
                cprev = xp.empty((rows, hsz), dtype=G.dtype)
                tanhc = xp.empty_like(cprev)
                tmp = xp.empty((h.shape[0], hsz), dtype=G.dtype)
                gbuf = xp.empty_like(tmp)
                WRT = None if WR is None else WR.T
                for r0, bs in steps:
                    r1 = r0 + bs
                    hp = h[:bs]
                    w = slice(r0, r1) if save else slice(0, bs)
                    if save:
                        hprev[r0:r1] = hp
                    act = acts[w]
                    xp.matmul(hp, WT, out=act)
                    act += G[r0:r1]  # the same sum as G + h @ W^T (+ b)
                    if B is not None:
                        act += B
                    # tanh of g aside, then the sigmoid over the whole (contiguous) block, then g
                    # back: ufuncs on column slices of a row-major block cost about twice as much
                    g = gbuf[:bs]
                    xp.tanh(act[:, 2 * hsz : 3 * hsz], out=g)
                    _sigmoid_(xp, act)
                    act[:, 2 * hsz : 3 * hsz] = g
                    i, f, o = act[:, :hsz], act[:, hsz : 2 * hsz], act[:, 3 * hsz :]
                    cp = c[:bs]
                    cprev[w] = cp
                    cp *= f
                    t = tmp[:bs]
                    xp.multiply(i, g, out=t)
                    cp += t  # c' = f * c + i * g
                    tc = tanhc[w]
                    xp.tanh(cp, out=tc)
                    if WRT is None:
                        hn = out[r0:r1]
                        xp.multiply(o, tc, out=hn)
                    else:
                        xp.multiply(o, tc, out=t)
                        hn = out[r0:r1]
                        xp.matmul(t, WRT, out=hn)
                    h[:bs] = hn
                ctx.saved_arrays = (acts, cprev, tanhc, hprev)
            elif mode == "GRU":
                acts = xp.empty((rows, 3 * hsz), dtype=G.dtype)
                ghn = xp.empty((rows, hsz), dtype=G.dtype)
                gh = xp.empty((h.shape[0], 3 * hsz), dtype=G.dtype)
                rzbuf = xp.empty((h.shape[0], 2 * hsz), dtype=G.dtype)
                for r0, bs in steps:
                    r1 = r0 + bs
                    hp = h[:bs]
                    w = slice(r0, r1) if save else slice(0, bs)
                    if save:
                        hprev[r0:r1] = hp
                    ghs = gh[:bs]
                    xp.matmul(hp, WT, out=ghs)
                    if B is not None:
                        ghs += B
                    gx = G[r0:r1]
                    act = acts[w]
                    rz = rzbuf[:bs]
                    xp.add(gx[:, : 2 * hsz], ghs[:, : 2 * hsz], out=rz)
                    _sigmoid_(xp, rz)
                    act[:, : 2 * hsz] = rz
                    r, z = rz[:, :hsz], rz[:, hsz:]
                    ghn[w] = ghs[:, 2 * hsz :]
                    n = act[:, 2 * hsz :]
                    xp.multiply(r, ghs[:, 2 * hsz :], out=n)
                    n += gx[:, 2 * hsz :]
                    xp.tanh(n, out=n)
                    hn = out[r0:r1]
                    xp.subtract(hp, n, out=hn)
                    hn *= z
                    hn += n  # h' = (h - n) * z + n
                    h[:bs] = hn
                ctx.saved_arrays = (acts, ghn, hprev)
            else:
                relu = mode == "RNN_RELU"
                for r0, bs in steps:
                    r1 = r0 + bs
                    hp = h[:bs]
                    if save:
                        hprev[r0:r1] = hp
                    hn = out[r0:r1]
                    xp.matmul(hp, WT, out=hn)
                    hn += G[r0:r1]
                    if B is not None:
                        hn += B
                    if relu:
                        xp.maximum(hn, 0, out=hn)
                    else:
                        xp.tanh(hn, out=hn)
                    h[:bs] = hn
                ctx.saved_arrays = (hprev,)
        ctx.mode, ctx.steps, ctx.hsz = mode, steps, hsz
        ctx.shapes = (h0.data.shape, None if c0 is None else c0.data.shape)
        # The inputs, for the differentiable backward (grad mode on); the array one reads the weights.
        ctx.save_for_backward(gi, h0, c0, w_hh, b_hh, w_hr)
        outs = [_wrap_like(out, gi), _wrap_like(h, gi)]
        if mode == "LSTM":
            outs.append(_wrap_like(c, gi))
            ctx.out = None
        else:
            ctx.out = out  # the RNN's derivative reads its outputs
        return tuple(outs)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:  # type: ignore[override]
        if grad_enabled():  # create_graph=True: the gradients as differentiable ops
            return graph_backward(ctx, *grads)
        with no_grad():
            return RecurrentLayer._backward(ctx, *grads)

    @staticmethod
    def _backward(ctx: Any, *grads: Any) -> Any:
        _, _, _, w_hh, _, w_hr = ctx.saved_tensors
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
        # The loops work in place in buffers allocated once per call and multiply in the order
        # of the formulas (so the same bits as the out-of-place expressions); factors that do not
        # depend on the incoming gradient are computed for all steps before the loop only where
        # that costs no large temporaries.
        if mode == "LSTM":
            acts, cprev, tanhc, hprev = ctx.saved_arrays
            dc = grads[2].data.astype(gout.dtype, copy=True)
            tmp = xp.empty((dh.shape[0], hsz), dtype=gout.dtype)
            tmp2 = xp.empty_like(tmp)
            if WR is not None:
                dhr = xp.empty_like(gout)
                dhp = xp.empty_like(tmp)
            for r0, bs in reversed(steps):
                r1 = r0 + bs
                dhs = dh[:bs]
                dhs += gout[r0:r1]
                act = acts[r0:r1]
                i, f, g, o = act[:, :hsz], act[:, hsz : 2 * hsz], act[:, 2 * hsz : 3 * hsz], act[:, 3 * hsz :]
                tc = tanhc[r0:r1]
                if WR is not None:
                    dhr[r0:r1] = dhs
                    dhs = xp.matmul(dhs, WR, out=dhp[:bs])
                t, t2 = tmp[:bs], tmp2[:bs]
                xp.multiply(dhs, o, out=t2)
                xp.multiply(tc, tc, out=t)
                xp.subtract(1, t, out=t)
                t2 *= t
                dcs = dc[:bs]
                dcs += t2  # dc + dh * o * (1 - tanh(c')^2)
                d = dgi[r0:r1]
                di, df, dg, do = d[:, :hsz], d[:, hsz : 2 * hsz], d[:, 2 * hsz : 3 * hsz], d[:, 3 * hsz :]
                xp.multiply(dcs, g, out=di)
                di *= i
                xp.subtract(1, i, out=t)
                di *= t  # dc * g * i * (1 - i)
                xp.multiply(dcs, cprev[r0:r1], out=df)
                df *= f
                xp.subtract(1, f, out=t)
                df *= t  # dc * c * f * (1 - f)
                xp.multiply(dcs, i, out=dg)
                xp.multiply(g, g, out=t)
                xp.subtract(1, t, out=t)
                dg *= t  # dc * i * (1 - g^2)
                xp.multiply(dhs, tc, out=do)
                do *= o
                xp.subtract(1, o, out=t)
                do *= t  # dh * tanh(c') * o * (1 - o)
                dcs *= f
                xp.matmul(d, W, out=dh[:bs])
            dgh = dgi
        elif mode == "GRU":
            acts, ghn, hprev = ctx.saved_arrays
            dgh = xp.empty_like(dgi)
            tmp = xp.empty((dh.shape[0], hsz), dtype=gout.dtype)
            tmp2, tmp3, dnb = xp.empty_like(tmp), xp.empty_like(tmp), xp.empty_like(tmp)
            for r0, bs in reversed(steps):
                r1 = r0 + bs
                dhs = dh[:bs]
                dhs += gout[r0:r1]
                act = acts[r0:r1]
                r, z, n = act[:, :hsz], act[:, hsz : 2 * hsz], act[:, 2 * hsz :]
                t, t2, dn = tmp[:bs], tmp2[:bs], dnb[:bs]
                xp.subtract(1, z, out=t)
                xp.multiply(dhs, t, out=dn)
                xp.multiply(n, n, out=t)
                xp.subtract(1, t, out=t)
                dn *= t  # dh * (1 - z) * (1 - n^2)
                dgi[r0:r1, 2 * hsz :] = dn
                dH = dgh[r0:r1]
                xp.multiply(dn, ghn[r0:r1], out=t2)
                t2 *= r
                xp.subtract(1, r, out=t)
                t2 *= t
                dH[:, :hsz] = t2  # dn * (h W_n + b_n) * r * (1 - r)
                xp.subtract(hprev[r0:r1], n, out=t2)
                t2 *= dhs
                t2 *= z
                xp.subtract(1, z, out=t)
                t2 *= t
                dH[:, hsz : 2 * hsz] = t2  # dh * (h - n) * z * (1 - z)
                xp.multiply(dn, r, out=dH[:, 2 * hsz :])
                t3 = tmp3[:bs]
                xp.matmul(dH, W, out=t3)
                dhs *= z
                dhs += t3  # dh * z + dH @ W
            dgi[:, : 2 * hsz] = dgh[:, : 2 * hsz]
        else:
            (hprev,) = ctx.saved_arrays
            out = ctx.out
            deriv = out > 0 if mode == "RNN_RELU" else 1 - out * out
            for r0, bs in reversed(steps):
                r1 = r0 + bs
                dhs = dh[:bs]
                dhs += gout[r0:r1]
                d = dgi[r0:r1]
                xp.multiply(dhs, deriv[r0:r1], out=d)
                xp.matmul(d, W, out=dh[:bs])
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
