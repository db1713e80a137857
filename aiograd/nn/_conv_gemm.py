"""The array path of a convolution (first order, no leading batch dims of a batched backward):
one matrix product for the whole batch, in a channel-major im2col layout.

The columns are ``(C, *kernel, *outs, N)``: row ``(c, i, j)`` holds, for every output position
and sample, the input element that kernel position ``(i, j)`` of channel ``c`` multiplies (the
batch last, so that each kernel position's windows copy in runs of ``OW * N`` elements). With
the weight as ``(G, O/G, C/G*kh*kw)`` the forward is one product ``(O/G, C/G*kh*kw) @
(C/G*kh*kw, OH*OW*N)`` per group, and the backward's two are::

    grad_weight = grad (O/G, OH*OW*N) @ columns.T       (already the weight's layout, contiguous)
    grad_cols   = weight.T @ grad (O/G, OH*OW*N)        (then col2im into the input's gradient)

so the weight is read once per product (not once per sample), the weight's gradient needs no sum
over samples and no transposed copy, and the products run over all of a batch's columns (small
feature maps deep in a network make per-sample products of a few columns, which BLAS runs far
below its speed). The windows are copied one kernel position at a time from a zero-padded,
batch-last copy of the input (strided views, no per-pixel loop), and added back the same way in
the col2im. Stride 1 on rows at least 8 wide takes the flat layout below instead.
Only the im2col layout differs from ``_conv``'s generic path: same products, the same sums in
another order; no column past the windows is formed, so an infinite input or weight gives what
torch's kernels give (NaN only where a product with a padding zero exists in theirs too).
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

from ._windows import Geometry, scratch

__all__ = ["conv_forward", "conv_backward"]


@functools.lru_cache(maxsize=256)
def _offsets(geom: Geometry) -> tuple[tuple[tuple[int, ...], tuple[slice, ...]], ...]:
    """Each kernel position and the strided slices of the padded input its windows read (per
    geometry, once: a network has a few, and building them costs more than a small map's copy)."""
    spans = [(a.out - 1) * a.stride + 1 for a in geom]
    return tuple(
        (pos, tuple(slice(i * a.dilation, i * a.dilation + span, a.stride) for i, a, span in zip(pos, geom, spans)))
        for pos in itertools.product(*(range(a.kernel) for a in geom))
    )


def _padded_shape(geom: Geometry) -> tuple[int, ...]:
    return tuple(max(a.reach, a.pad + a.size) for a in geom)


def _interior(geom: Geometry) -> tuple[slice, ...]:
    return tuple(slice(a.pad, a.pad + a.size) for a in geom)


def _batch_last_padded(xp: Any, x: Any, geom: Geometry) -> Any:
    """``x`` ``(N, C, *sizes)`` as ``(C, *padded, N)``, the geometry's zeros around it: the one
    transposed copy ``columns`` makes."""
    n, c = x.shape[:2]
    nd = len(geom)
    order = (1, *range(2, 2 + nd), 0)  # (N, C, ...) -> (C, ..., N)
    if all(a.pad == 0 and a.reach <= a.size for a in geom):
        return xp.ascontiguousarray(x.transpose(order))
    # a reused buffer: only the interior is ever written, the border stays zero
    buf = scratch(xp, ("gemm_pad_bl", geom), (c, *_padded_shape(geom), n), x.dtype, zero=True)
    buf[(slice(None), *_interior(geom))] = x.transpose(order)
    return buf


def columns(xp: Any, x: Any, geom: Geometry) -> Any:
    """``x`` ``(N, C, *sizes)`` -> the columns ``(C, *kernel, *outs, N)``, a new array. With the
    batch last, each kernel position's windows copy in runs of a whole output row of every sample
    (``OW * N`` elements), not one sample's row: small feature maps copy as fast as big ones."""
    n, c = x.shape[:2]
    src = _batch_last_padded(xp, x, geom)
    cols = xp.empty((c, *(a.kernel for a in geom), *(a.out for a in geom), n), dtype=x.dtype)
    for pos, at in _offsets(geom):
        cols[(slice(None), *pos)] = src[(slice(None), *at)]
    return cols


def _image(xp: Any, cols: Any, geom: Geometry) -> Any:
    """The adjoint of ``columns``: ``(C, *kernel, *outs, N)`` -> ``(N, C, *sizes)``, a new array
    (the windows added back batch-last, then transposed once)."""
    nd = len(geom)
    c, n = cols.shape[0], cols.shape[-1]
    order = (nd + 1, 0, *range(1, 1 + nd))  # (C, ..., N) -> (N, C, ...)
    if all(a.kernel == 1 and a.stride == 1 and a.pad == 0 and a.out == a.size for a in geom):
        return xp.ascontiguousarray(cols.reshape(c, *(a.out for a in geom), n).transpose(order))
    out = xp.zeros((c, *_padded_shape(geom), n), dtype=cols.dtype)
    for pos, at in _offsets(geom):
        out[(slice(None), *at)] += cols[(slice(None), *pos)]
    return xp.ascontiguousarray(out[(slice(None), *_interior(geom))].transpose(order))


# ------------------------------------------------------------------------------ unit stride, flat
# With stride 1 (2-D), the windows of kernel position (i, j) are one shifted run of the padded
# input read flat with its row width ``Wp``: ``flat[i*dh*Wp + j*dw : ... + OH*Wp]``, each output
# row carrying ``Wp - OW`` columns past its windows. Those runs copy (and add back) in long
# contiguous pieces where the strided layout's pieces are a single output row; the extra
# columns are cropped from the output, and the gradient is widened with zeros there, which add
# exactly 0 to both gradients when the input and the weight are finite (``flat_is_exact``).
def use_flat(geom: Geometry) -> bool:
    """Whether the flat layout applies and pays: 2-D, stride 1, output rows wide enough that the
    extra columns cost less in the products than the long runs save in the copies."""
    return len(geom) == 2 and geom[0].stride == 1 and geom[1].stride == 1 and geom[1].out >= 8 \
        and geom[1].reach <= 1.25 * geom[1].out


def flat_is_exact(xp: Any, x: Any, w: Any, want: tuple[bool, bool]) -> bool:
    """Whether the flat layout's extra columns add exactly 0 to the gradients: they multiply
    zeros of the widened gradient by the weight (the input's gradient) and by input values (the
    weight's), and ``0 * inf`` is NaN where torch's kernel never forms the product."""
    return bool((not want[0] or xp.isfinite(w).all()) and (not want[1] or xp.isfinite(x).all()))


def _flat_offsets(geom: Geometry) -> list[int]:
    ah, aw = geom
    return [i * ah.dilation * aw.reach + j * aw.dilation for i in range(ah.kernel) for j in range(aw.kernel)]


def flat_columns(xp: Any, x: Any, geom: Geometry) -> Any:
    """``x`` ``(N, C, H, W)`` -> the flat columns ``(C, kh*kw, N, OH*Wp)`` (``Wp = geom[1].reach``)."""
    ah, aw = geom
    n, c = x.shape[:2]
    # channel-major, zeros around (one spare row: the last kernel column's run ends past the
    # last row); only the interior is ever written, so a reused buffer keeps its zero border
    buf = scratch(xp, ("gemm_flat", geom), (c, n, ah.reach + 1, aw.reach), x.dtype, zero=True)
    buf[:, :, ah.pad : ah.pad + ah.size, aw.pad : aw.pad + aw.size] = x.transpose(1, 0, 2, 3)
    flat = buf.reshape(c, n, -1)
    run = ah.out * aw.reach
    cols = xp.empty((c, ah.kernel * aw.kernel, n, run), dtype=x.dtype)
    for k, offset in enumerate(_flat_offsets(geom)):  # one long contiguous run per (c, n)
        cols[:, k] = flat[:, :, offset : offset + run]
    return cols


def _flat_image(xp: Any, cols: Any, geom: Geometry) -> Any:
    """The adjoint of ``flat_columns``: ``(C, kh*kw, N, OH*Wp)`` -> ``(N, C, H, W)``, a new array."""
    ah, aw = geom
    c, _, n, run = cols.shape
    out = xp.zeros((c, n, (ah.reach + 1) * aw.reach), dtype=cols.dtype)
    for k, offset in enumerate(_flat_offsets(geom)):
        out[:, :, offset : offset + run] += cols[:, k]
    out = out.reshape(c, n, ah.reach + 1, aw.reach)[:, :, ah.pad : ah.pad + ah.size, aw.pad : aw.pad + aw.size]
    return xp.ascontiguousarray(out.transpose(1, 0, 2, 3))


# ------------------------------------------------------------------------------ flat, in chunks
# A large feature map with few output channels (a U-Net's first and last levels) makes columns
# of many MB that each product streams from memory once per few output rows: there the flat
# columns are made and used a chunk at a time (one sample, a block of output rows, about
# ``CHUNK`` bytes of columns), so that they are still in cache when the product reads them.
#: Bytes of columns per chunk.
CHUNK = 512 << 10


def _chunk_rows(geom: Geometry, k: int, itemsize: int) -> int:
    """Output rows per chunk of the flat columns (``k`` rows of columns), or 0: no chunking (the
    whole of one sample's columns fits in a chunk; the batched product serves those better)."""
    ah, aw = geom
    per_row = k * aw.reach * itemsize
    return 0 if per_row * ah.out <= CHUNK else max(1, CHUNK // per_row)


def _chunks(geom: Geometry, rows: int) -> list[tuple[int, int]]:
    """``(start, length)`` of each chunk's run in a sample's flat ``OH*Wp`` columns."""
    ah, aw = geom
    return [(r * aw.reach, (min(ah.out, r + rows) - r) * aw.reach) for r in range(0, ah.out, rows)]


def _flat_source(xp: Any, x: Any, geom: Geometry) -> Any:
    """``x`` ``(N, C, H, W)`` zero-padded (one spare row) and flat: ``(N, C, (Hp+1)*Wp)``."""
    ah, aw = geom
    buf = scratch(xp, ("gemm_flat_n", geom), x.shape[:2] + (ah.reach + 1, aw.reach), x.dtype, zero=True)
    buf[:, :, ah.pad : ah.pad + ah.size, aw.pad : aw.pad + aw.size] = x
    return buf.reshape(*x.shape[:2], -1)


def _chunk_columns(xp: Any, flat: Any, offsets: list[int], start: int, run: int, into: Any) -> Any:
    """One sample's flat columns ``(C, kh*kw, run)`` from ``start``, written into ``into``."""
    cols = into[..., :run] if into.shape[-1] == run else xp.empty(into.shape[:-1] + (run,), dtype=into.dtype)
    for k, offset in enumerate(offsets):
        cols[:, k] = flat[:, start + offset : start + offset + run]
    return cols


def chunked_forward(xp: Any, x: Any, w: Any, geom: Geometry, groups: int, rows: int) -> Any:
    """``conv_forward`` in the flat layout a chunk at a time (``rows`` output rows a chunk)."""
    ah, aw = geom
    n, c = x.shape[:2]
    o = w.shape[0]
    flat, offsets, chunks = _flat_source(xp, x, geom), _flat_offsets(geom), _chunks(geom, rows)
    wm = _weight_matrices(w, groups)
    out = xp.empty((n, o, ah.out * aw.reach), dtype=x.dtype)
    buf = xp.empty((c, len(offsets), chunks[0][1]), dtype=x.dtype)
    for s in range(n):
        for start, run in chunks:
            cols = _chunk_columns(xp, flat[s], offsets, start, run, buf)
            out[s, :, start : start + run] = _product(xp, wm, cols.reshape(groups, -1, run)).reshape(o, run)
    return xp.ascontiguousarray(out.reshape(n, o, ah.out, aw.reach)[..., : aw.out])


def chunked_backward(xp: Any, x: Any, w: Any, g: Any, geom: Geometry, groups: int, want: tuple[bool, bool],
                     rows: int) -> tuple[Any, Any]:
    """``conv_backward`` in the flat layout a chunk at a time (the input and weight finite)."""
    ah, aw = geom
    n, c = x.shape[:2]
    o = w.shape[0]
    offsets, chunks = _flat_offsets(geom), _chunks(geom, rows)
    wide = xp.zeros((n, o, ah.out, aw.reach), dtype=g.dtype)  # the gradient, zeros past each row
    wide[..., : aw.out] = g
    wide = wide.reshape(n, groups, o // groups, -1)
    flat = _flat_source(xp, x, geom) if want[1] else None
    buf = xp.empty((c, len(offsets), chunks[0][1]), dtype=x.dtype)
    wt = _weight_matrices(w, groups).transpose(0, 2, 1)
    gw = xp.zeros((groups, o // groups, w[0].size), dtype=g.dtype) if want[1] else None
    image = xp.zeros((n, c, (ah.reach + 1) * aw.reach), dtype=g.dtype) if want[0] else None
    for s in range(n):
        for start, run in chunks:
            gm = wide[s, :, :, start : start + run]
            if flat is not None:
                cols = _chunk_columns(xp, flat[s], offsets, start, run, buf)
                gw += _product(xp, gm, cols.reshape(groups, -1, run).transpose(0, 2, 1))
            if image is not None:
                gcols = _product(xp, wt, gm).reshape(c, len(offsets), run)
                for k, offset in enumerate(offsets):
                    image[s, :, start + offset : start + offset + run] += gcols[:, k]
    gx = None
    if image is not None:
        gx = image.reshape(n, c, ah.reach + 1, aw.reach)[:, :, ah.pad : ah.pad + ah.size, aw.pad : aw.pad + aw.size]
        gx = xp.ascontiguousarray(gx)
    return gx, None if gw is None else gw.reshape(w.shape)


# ------------------------------------------------------------------------------ the products
def _weight_matrices(w: Any, groups: int) -> Any:
    """``(O, C/G, *kernel)`` -> ``(G, O/G, C/G*prod(kernel))`` (a view)."""
    return w.reshape(groups, w.shape[0] // groups, -1)


def _product(xp: Any, a: Any, b: Any) -> Any:
    """``a @ b`` over a group axis (a plain 2-D product for one group)."""
    if a.shape[0] == 1:
        return xp.matmul(a[0], b[0])[None]
    return xp.matmul(a, b)


def conv_forward(xp: Any, x: Any, w: Any, geom: Geometry, groups: int) -> Any:
    """The convolution of ``x`` ``(N, C, *sizes)`` with ``w`` ``(O, C/G, *kernel)``: ``(N, O, *outs)``."""
    n, o = x.shape[0], w.shape[0]
    nd = len(geom)
    outs = tuple(a.out for a in geom)
    flat = use_flat(geom)
    rows = _chunk_rows(geom, w[0].size * groups, x.itemsize) if flat else 0
    if rows:
        return chunked_forward(xp, x, w, geom, groups, rows)
    cols = flat_columns(xp, x, geom) if flat else columns(xp, x, geom)
    out = _product(xp, _weight_matrices(w, groups), cols.reshape(groups, w[0].size, -1))
    if flat:  # (O, N, OH, Wp) -> (N, O, OH, OW)
        out = out.reshape(o, n, geom[0].out, geom[1].reach)[..., : geom[1].out]
        return xp.ascontiguousarray(out.transpose(1, 0, 2, 3))
    # (O, *outs, N) -> (N, O, *outs)
    return xp.ascontiguousarray(out.reshape(o, *outs, n).transpose(nd + 1, 0, *range(1, 1 + nd)))


def conv_backward(xp: Any, x: Any, w: Any, g: Any, geom: Geometry, groups: int,
                  want: tuple[bool, bool]) -> tuple[Any, Any]:
    """The gradients of ``conv_forward`` for ``g`` ``(N, O, *outs)``: the input's ``(N, C, *sizes)``
    and the weight's ``(O, C/G, *kernel)`` (``None`` where not ``want``)."""
    n, o = g.shape[:2]
    c = x.shape[1]
    nd = len(geom)
    flat = use_flat(geom) and flat_is_exact(xp, x, w, want)
    rows = _chunk_rows(geom, w[0].size * groups, x.itemsize) if flat else 0
    if rows:
        return chunked_backward(xp, x, w, g, geom, groups, want, rows)
    if flat:  # the gradient channel-major and widened to the padded width with zeros
        ah, aw = geom
        gm = xp.zeros((o, n, ah.out, aw.reach), dtype=g.dtype)
        gm[..., : aw.out] = g.transpose(1, 0, 2, 3)
    else:  # the gradient channel-major, batch last: (O, *outs, N), as ``columns``
        gm = xp.ascontiguousarray(g.transpose(1, *range(2, 2 + nd), 0))
    gm = gm.reshape(groups, o // groups, -1)
    gx = gw = None
    if want[1]:
        cols = flat_columns(xp, x, geom) if flat else columns(xp, x, geom)
        gw = _product(xp, gm, cols.reshape(groups, -1, gm.shape[-1]).transpose(0, 2, 1)).reshape(w.shape)
        del cols
    if want[0]:
        gcols = _product(xp, _weight_matrices(w, groups).transpose(0, 2, 1), gm)  # (G, C/G*k, N*L)
        if flat:
            gx = _flat_image(xp, gcols.reshape(c, -1, n, gm.shape[-1] // n), geom)
        else:
            gx = _image(xp, gcols.reshape(c, *(a.kernel for a in geom), *(a.out for a in geom), n), geom)
    return gx, gw
