"""Graph surgery for in-place ops: ``rebase_inplace`` moves a modified tensor onto its new node;
for a view it rebases the base with PyTorch's ``CopySlices``, and the view's grad_fn becomes a
view of the base's new history (``AsStridedBackward0``, made by ``regenerate``, which
aiograd/_views.py calls when a view is next read). See aiograd/_ops/inplace.py for the ops.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from .. import _views
from .._device import CPU
from .._hooks import hooks_of
from .._saved import ERR_BACKWARD_TWICE, SavedTensor
from .._views import View, view_index
from ._registry import backward
from ._util import Node, Tensor, edge_of, grad_enabled, like, save, wrap
from .indexing import IndexBackward0, _scatter, _take

__all__ = ["AsStridedBackward0", "CopySlices", "rebase_inplace", "regenerate"]


# ------------------------------------------------------------------------------ graph surgery
def _move_retains_grad(old: Node | None, old_nr: int, new: Node, new_nr: int) -> None:
    """A retained grad follows the tensor to its new grad_fn (the latest version's gradient)."""
    if old is None or old._hooks is None:
        return
    ref = old._hooks.retains_grad.pop(old_nr, None)
    if ref is not None:
        hooks_of(new).retains_grad[new_nr] = ref


def rebase_inplace(tensor: Tensor, node: Node, output_nr: int = 0) -> None:
    """Make ``node`` (output ``output_nr``) the history of ``tensor``, just modified in place.

    For the ops here, and for ``ctx.mark_dirty`` in custom Functions. It bumps nothing (the
    caller bumps the version counter first) and checks nothing (PyTorch's leaf and view errors
    come before the data is touched). What it does:

    - a plain tensor gets ``node`` as grad_fn, output_nr ``output_nr`` and requires grad; a
      ``retain_grad()`` entry moves from the old grad_fn to ``node``, so ``.grad`` is the
      gradient of the latest version; hooks registered before stay with the old grad_fn;
    - a view rebases its base instead: the base's grad_fn becomes a ``CopySlices`` around
      ``node``, which must then have one output (RuntimeError otherwise, as in PyTorch) whose
      edge 0 is the view's old history; the base's retained grad moves to it; the view's grad_fn
      is regenerated at once as a view of the base's new history (and every other view's when
      next read, since the version moved).

    Tensors of a non floating dtype are left alone (they never require grad).
    """
    if tensor.data.dtype.kind != "f":
        return
    if type(tensor) is View:
        if output_nr != 0 or node.num_inputs != 1:
            raise RuntimeError("Functions which modify views in-place must return a single Variable")
        base: Tensor = tensor._base  # type: ignore[assignment]
        copy_slices = CopySlices(base, tensor, node)
        old, old_nr = base.grad_fn, base.output_nr
        base.grad_fn = copy_slices
        if old_nr:
            base.output_nr = 0
        base._requires_grad = True
        if base._retains_grad:
            _move_retains_grad(old, old_nr, copy_slices, 0)
        regenerate(tensor)
        return
    old, old_nr = tensor.grad_fn, tensor.output_nr
    tensor.grad_fn = node
    if old_nr != output_nr:
        tensor.output_nr = output_nr
    tensor._requires_grad = True
    if tensor._retains_grad:
        _move_retains_grad(old, old_nr, node, output_nr)


@backward()
def AsStridedBackward0(self: Any, grads: list[Any]) -> Any:
    """A view's grad_fn once its base changed: the gradient lands on the view's region of
    zeros shaped like the base (summed where a broadcast view repeats an element)."""
    g = grads[0]
    if g is None:
        return (None,)
    index = (None, (self.flat,), self.overlap)
    if not grad_enabled():
        xp = g._device.xp
        z = xp.zeros(self.size, dtype=g.data.dtype)
        if self.overlap:
            xp.add.at(z, self.flat, g.data)
        else:
            z[self.flat] = g.data
        out = like(z.reshape(self.shape), g)
        return (out,)
    return (_scatter(g, (self.size,), index, IndexBackward0).reshape(self.shape),)


def regenerate(view: View) -> Node | None:
    """A view's grad_fn after its base's version moved: ``AsStridedBackward0`` on the base's
    current history (None while neither had any)."""
    base: Tensor = view._base  # type: ignore[assignment]
    old = view._fn
    if old is None and not base._requires_grad:
        return None
    node = AsStridedBackward0((edge_of(base),))
    node.shape, node.size = base.data.shape, base.data.size
    node.flat, node.overlap = view_index(view.data, base.data)
    vc = base._vc
    view._fn = node
    view._attr_version = 0 if vc is None else vc[0]
    if view._retains_grad:
        _move_retains_grad(old, 0, node, 0)
    return node


_views.regenerate = regenerate


class CopySlices(Node):
    """The base's grad_fn after an in-place op on one of its views (PyTorch's CopySlices).

    Holds the op's node ``fn``. Backward: the base's gradient is copied, the view's region of it
    goes through ``fn`` (as the gradient of the view after the op) and the result replaces that
    region (edge 0, to the base's old history); ``fn``'s other gradients (edges 1...) go to the
    op's other inputs.
    """

    _saved = ("fn",)

    def __init__(self, base: Tensor, view: Tensor, fn: Node) -> None:
        super().__init__((edge_of(base),) + tuple(fn.next_edges[1:]))
        self.fn: Node | None = fn
        self.is_async = fn.is_async
        self.shape, self.size = base.data.shape, base.data.size
        self.flat, _ = view_index(view.data, base.data)

    def release_variables(self) -> None:
        # As PyTorch: only the reference goes. ``fn`` may also be a node of a double-backward
        # graph (a saved output rebuilt with it as grad_fn) that still has to run there.
        self.fn = None

    def apply(self, grads):  # type: ignore[no-untyped-def]
        g = grads[0]
        if g is None:
            return [None] * len(self.next_edges)
        fn = self.fn
        if fn is None:
            raise RuntimeError(ERR_BACKWARD_TWICE)
        if grad_enabled():
            flat_grad = g.reshape(-1)
            grad_slice = _take(flat_grad, (None, (self.flat,), False), IndexBackward0)
            res = fn.apply([grad_slice])
        else:
            flat_grad = g.data.reshape(-1).copy()
            grad_slice = like(flat_grad[self.flat], g)
            res = fn.apply([grad_slice])
        if fn.is_async:
            return self._finish_async(flat_grad, res, g._device)
        return self._finish(flat_grad, res, g._device)

    async def _finish_async(self, flat_grad: Any, res: Any, device: Any) -> list[Any]:
        return self._finish(flat_grad, await res, device)

    def _finish(self, flat_grad: Any, res: Any, device: Any) -> list[Any]:
        out = list(res)
        r0 = out[0]
        if r0 is None:
            return out  # as PyTorch: no gradient for the base at all
        if isinstance(flat_grad, np.ndarray):
            flat_grad[self.flat] = r0.data
            out[0] = wrap(flat_grad.reshape(self.shape))
            if device is not CPU:
                out[0]._device = device
            return out
        keep = np.ones(self.size, dtype=bool)
        keep[self.flat] = False
        index = (None, (self.flat,), False)
        put = _scatter(r0, (self.size,), index, IndexBackward0)
        out[0] = (flat_grad * keep + put).reshape(self.shape)
        return out


class SavedInplaceViewOutput(SavedTensor):
    """A view modified in place and saved as its op's output: unpacked (and named in version
    errors) with the view's grad_fn after the rebase, not the op's node (which CopySlices
    wraps), as PyTorch's ``is_inplace_on_view`` SavedVariable."""

    __slots__ = ("fn_ref",)

    def __init__(self, tensor: Tensor) -> None:
        super().__init__(tensor, True)
        self.fn_ref = weakref.ref(tensor.grad_fn)  # type: ignore[arg-type]

    def unpack(self, node: Node) -> Tensor:
        fn = self.fn_ref()
        return super().unpack(node if fn is None else fn)


def _save_result(tensor: Tensor) -> SavedTensor:
    return SavedInplaceViewOutput(tensor) if type(tensor) is View else save(tensor, is_output=True)
