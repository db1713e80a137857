"""Padding and one-hot: ``nn.functional.pad`` (constant, reflect, replicate, circular) and
``nn.functional.one_hot``.

``pad`` takes PyTorch's pad tuple: pairs ``(left, right)`` from the last dim backwards,
``(last_left, last_right, second_last_left, ...)``; a negative width crops.

* ``constant`` (``ConstantPadNdBackward0``) pads any number of dims with ``value``; its backward
  is itself with the widths negated (PyTorch's ``constant_pad_nd_backward``), so it is
  differentiable to any order.
* ``reflect`` and ``replicate`` (``ReflectionPad{1,2,3}DBackward0``,
  ``ReplicationPad{1,2,3}DBackward0``) read each output entry from an input position, one index
  vector per padded dim; the backward adds the gradient back at those positions (a recorded op,
  PyTorch's ``...BackwardBackward0``, whose backward is the pad again).
* ``circular`` wraps around: as PyTorch's composite, it copies slices into a new tensor
  (``copy_``: its node is ``CopySlices``).

The non-constant modes take 2 (of a 2-D or 3-D input), 4 (3-D, 4-D) or 6 (4-D, 5-D) widths, as
in PyTorch. Every mode leaves leading dims alone, so a batched gradient needs nothing special.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._registry import backward, op, variant
from ._util import Node, Tensor, attach, edge_of, like, needs_grad, not_tensor, save
from .indexing import IndexSelectBackward0, index_select
from .rebase import CopySlices

__all__ = ["pad", "one_hot"]

#: One padded dim: its axis counted from the end (-1 is the last), the input position each output
#: entry reads, the input's size along it, and the unpadded stretch ``(output start, input
#: start, length)`` where output and input positions run side by side.
Plan = tuple[tuple[int, Any, int, tuple[int, int, int]], ...]


# ------------------------------------------------------------------------------ constant
@backward(batched=True)
def ConstantPadNdBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    return (pad(grads[0], tuple(-w for w in self.pad)),)


def _constant(input: Tensor, widths: tuple[int, ...], value: Any) -> Tensor:
    data = input.data
    shape = list(data.shape)
    src: list[slice] = [slice(None)] * data.ndim
    dst: list[slice] = [slice(None)] * data.ndim
    for k in range(len(widths) // 2):
        axis = data.ndim - 1 - k
        left, right, size = widths[2 * k], widths[2 * k + 1], shape[axis]
        new = size + left + right
        lo, hi = max(-left, 0), size - max(-right, 0)
        if hi < lo:  # PyTorch crops first (``narrow``), then pads: the crop cannot go below 0
            raise RuntimeError("narrow(): length must be non-negative.")
        src[axis] = slice(lo, max(hi, lo))
        start = max(left, 0)
        dst[axis] = slice(start, start + max(hi - lo, 0))
        shape[axis] = new
    xp = input._device.xp
    fill = 0 if value is None else value
    out = xp.full(tuple(shape), fill, dtype=data.dtype)
    if all(s.stop is None or s.stop > s.start for s in dst):
        out[tuple(dst)] = data[tuple(src)]
    return like(out, input)


# ------------------------------------------------------------------------------ reflect / replicate
def _take_plan(grad_or_input: Tensor, plan: Plan) -> Any:
    """The array that ``plan`` reads from ``grad_or_input`` (the padded one)."""
    xp, out = grad_or_input._device.xp, grad_or_input.data
    for axis, idx, _, _ in plan:
        out = xp.take(out, idx if xp is np else xp.asarray(idx), axis=out.ndim + axis)
    return out


def _fold_plan(grad: Tensor, plan: Plan) -> Any:
    """The adjoint of ``_take_plan``: each entry of ``grad`` added back at the position it was
    read from."""
    xp, g = grad._device.xp, grad.data
    for axis, idx, size, (out_start, in_start, length) in reversed(plan):
        pos = g.ndim + axis
        lead = (slice(None),) * pos
        z = xp.zeros(g.shape[:pos] + (size,) + g.shape[pos + 1 :], dtype=g.dtype)
        # the unpadded stretch in one slice, then each padded position on its own: slices, not
        # an unbuffered ``add.at`` (ten times slower), and only the entries that were read
        z[lead + (slice(in_start, in_start + length),)] = g[lead + (slice(out_start, out_start + length),)]
        for k in (*range(out_start), *range(out_start + length, len(idx))):
            z[lead + (int(idx[k]),)] += g[lead + (k,)]
        g = z
    return g


class _PadNode(Node):
    """A reflection or replication pad's node, or the node of its backward (``fold``): which one
    and its partner are named by ``fold`` and ``partner``."""

    plan: Plan
    fold: bool = False
    partner: type[Node] | None = None
    #: The padded input, saved as PyTorch's node saves it (an in-place change of it before the
    #: backward raises PyTorch's error); None on the nodes recorded by a double backward.
    x: Any = None
    _saved = ("x",)
    batched = True  # (the plan's axes count from the end: leading batch dims pass through)

    def apply(self, grads: list[Any], batch: int = 0) -> Any:
        if self.x is not None:
            self.x.unpack(self)
        return (_apply_plan(grads[0], self.plan, not self.fold, self.partner),)  # type: ignore[arg-type]


def _apply_plan(x: Tensor, plan: Plan, fold: bool, cls: type[_PadNode]) -> Tensor:
    """``x`` padded by ``plan`` (or, with ``fold``, the gradient folded back), recorded as ``cls``."""
    out = like(_fold_plan(x, plan) if fold else _take_plan(x, plan), x)
    if needs_grad(x):
        attach(cls((edge_of(x),)), out).plan = plan
    return out


def _pad_nodes(name: str) -> tuple[type[_PadNode], type[_PadNode]]:
    node = variant(name, _PadNode, doc=f"Backward of a pad: the gradient folded back ({name}).")
    fold = variant(name.replace("Backward0", "BackwardBackward0"), _PadNode, fold=True, partner=node,
                   doc="Backward of a pad's backward: the pad again.")
    node.partner = fold  # type: ignore[attr-defined]
    return node, fold  # type: ignore[return-value]


ReflectionPad1DBackward0, ReflectionPad1DBackwardBackward0 = _pad_nodes("ReflectionPad1DBackward0")
ReflectionPad2DBackward0, ReflectionPad2DBackwardBackward0 = _pad_nodes("ReflectionPad2DBackward0")
ReflectionPad3DBackward0, ReflectionPad3DBackwardBackward0 = _pad_nodes("ReflectionPad3DBackward0")
ReplicationPad1DBackward0, ReplicationPad1DBackwardBackward0 = _pad_nodes("ReplicationPad1DBackward0")
ReplicationPad2DBackward0, ReplicationPad2DBackwardBackward0 = _pad_nodes("ReplicationPad2DBackward0")
ReplicationPad3DBackward0, ReplicationPad3DBackwardBackward0 = _pad_nodes("ReplicationPad3DBackward0")
_NODES = {
    ("reflect", 1): ReflectionPad1DBackward0, ("reflect", 2): ReflectionPad2DBackward0,
    ("reflect", 3): ReflectionPad3DBackward0, ("replicate", 1): ReplicationPad1DBackward0,
    ("replicate", 2): ReplicationPad2DBackward0, ("replicate", 3): ReplicationPad3DBackward0,
}

_NON_CONSTANT_SIZES = (
    "Supported combinations for non-constant padding:\n"
    "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
    "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
    "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
)


def _plan(mode: str, shape: tuple[int, ...], widths: tuple[int, ...]) -> Plan:
    """The index vector of each padded dim, with PyTorch's checks (``reflection_pad*d``,
    ``replication_pad*d``, ``_pad_circular``) and messages."""
    ndim, dims = len(shape), len(widths) // 2
    checked = shape[1:] if ndim == dims + 2 else shape  # (a batch dim may be empty)
    if mode != "circular" and 0 in checked:
        raise RuntimeError(
            f"Expected {dims + 1}D or {dims + 2}D (batch mode) tensor with possibly 0 batch size and other "
            f"non-zero dimensions for input, but got: {list(shape)}"
        )
    plan = []
    for k in range(dims):
        axis = ndim - 1 - k
        left, right, size = widths[2 * k], widths[2 * k + 1], shape[axis]
        if mode == "reflect" and (left >= size or right >= size):
            raise RuntimeError(
                f"Argument #{4 + 2 * k}: Padding size should be less than the corresponding input dimension, "
                f"but got: padding ({left}, {right}) at dimension {axis} of input {list(shape)}"
            )
        if mode == "circular" and (left > size or right > size):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        new = size + left + right
        if mode != "circular" and new < 1:
            label = "WHD"[k]
            raise RuntimeError(f"input ({label}: {size}) is too small. Calculated output {label}: {new}")
        j = np.arange(-left, size + right)
        if mode == "reflect":
            idx = np.abs(j)
            idx = np.where(idx >= size, 2 * (size - 1) - idx, idx)
        elif mode == "replicate":
            idx = np.clip(j, 0, size - 1)
        else:  # PyTorch crops first (negative widths), then wraps the cropped part around
            lo, kept = max(-left, 0), size - max(-left, 0) - max(-right, 0)
            if new < 0 or (kept <= 0 and new > 0):  # (torch fills the latter with unset memory)
                raise RuntimeError("Negative padding value is resulting in an empty dimension")
            idx = lo + np.arange(-max(left, 0), -max(left, 0) + new) % max(kept, 1)
        start = max(left, 0)
        kept = max(min(size - max(-left, 0) - max(-right, 0), new - start), 0)
        plan.append((-1 - k, idx.astype(np.intp), size, (start, max(-left, 0), kept)))
    return tuple(plan)


# ------------------------------------------------------------------------------ circular
def _circular(input: Tensor, widths: tuple[int, ...], plan: Plan) -> Tensor:
    """PyTorch's ``_pad_circular``: the (cropped) input copied into a new tensor, then each padded
    dim's wrapped ends copied from the other end of that tensor (the corners written more than
    once), all by ``copy_`` into slices, so the node is ``CopySlices``.

    Without a graph to record, the wrapped positions are selected (``index_select``, one per
    dim: the same values, several times faster than copies into views). So they are where a crop
    leaves fewer entries than the other side's width: PyTorch's copies then read memory not yet
    written (or fail on the overlap); the selection gives the values a circular pad means."""
    if not needs_grad(input) or any(
        max(widths[2 * k], widths[2 * k + 1]) > kept for k, (_, _, _, (_, _, kept)) in enumerate(plan)
    ):
        out = input
        for axis, idx, _, _ in plan:
            out = index_select(out, input.data.ndim + axis, idx)
        return out
    shape = list(input.data.shape)
    for k in range(len(widths) // 2):
        shape[-1 - k] += widths[2 * k] + widths[2 * k + 1]
    out = like(input._device.xp.empty(tuple(shape), dtype=input.data.dtype), input)
    full = [slice(None)] * len(shape)
    dst, src = list(full), list(full)
    for k in range(len(widths) // 2):
        left, right, axis = widths[2 * k], widths[2 * k + 1], len(shape) - 1 - k
        dst[axis] = slice(max(left, 0), shape[axis] - max(right, 0))
        src[axis] = slice(max(-left, 0), input.data.shape[axis] - max(-right, 0))
    out[tuple(dst)].copy_(input[tuple(src)])
    for k in range(len(widths) // 2):
        left, right, axis = widths[2 * k], widths[2 * k + 1], len(shape) - 1 - k
        end = shape[axis] - max(right, 0)
        if left > 0:
            _copy_along(out, axis, slice(0, left), slice(end - left, end))
        if right > 0:
            _copy_along(out, axis, slice(shape[axis] - right, shape[axis]), slice(max(left, 0), max(left, 0) + right))
    return out


def _copy_along(out: Tensor, axis: int, dst: slice, src: slice) -> None:
    lead = (slice(None),) * axis
    out[lead + (dst,)].copy_(out[lead + (src,)])


# ------------------------------------------------------------------------------ pad
@op(ConstantPadNdBackward0, *_NODES.values(), CopySlices, IndexSelectBackward0, top_level=False)
def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """``input`` padded by ``pad``: ``(left, right)`` widths for the last dim, then the one before
    it, and so on (negative widths crop); ``mode`` is ``"constant"`` (``value``, default 0),
    ``"reflect"``, ``"replicate"`` or ``"circular"``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("pad", input)
    widths = tuple(operator.index(w) for w in pad)
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if len(widths) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    ndim = input.data.ndim
    if len(widths) > 2 * ndim:
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension but got "
            f"padding length {len(widths)} and input of dimension {ndim}"
        )
    if mode == "constant":
        out = _constant(input, widths, value)
        if needs_grad(input):
            attach(ConstantPadNdBackward0((edge_of(input),)), out).pad = widths
        return out
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    dims = len(widths) // 2
    if dims not in (1, 2, 3) or ndim not in (dims + 1, dims + 2):
        raise NotImplementedError(
            f"Padding size {len(widths)} is not supported for {ndim}D input tensor.\n{_NON_CONSTANT_SIZES}"
        )
    plan = _plan(mode, input.data.shape, widths)
    if mode == "circular":
        return _circular(input, widths, plan)
    out = _apply_plan(input, plan, False, _NODES[mode, dims])
    if out.grad_fn is not None:
        out.grad_fn.x = save(input)
    return out


# ------------------------------------------------------------------------------ one_hot
@op(top_level=False)
def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot vectors of the class indices in the int64 ``tensor``: a last dim of size
    ``num_classes`` (-1: one more than the largest index), 1 at each index, 0 elsewhere."""
    if not isinstance(tensor, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("one_hot", tensor)
    data = tensor.data
    if data.dtype != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    xp = tensor._device.xp
    if num_classes == -1 and data.size == 0:
        raise RuntimeError("Can not infer total number of classes from empty tensor.")
    if data.size and int(data.min()) < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = int(data.max()) + 1
    elif data.size and int(data.max()) >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    classes = xp.arange(num_classes, dtype=np.int64)
    return like((data[..., None] == classes).astype(np.int64), tensor)
