"""Graph surgery for in-place ops: ``rebase_inplace`` moves a modified tensor onto its new node;
for a view it rebases the base with PyTorch's ``CopySlices``, and the view's grad_fn becomes a
view of the base's new history (``AsStridedBackward0``, made by
``aiograd._core._views.regenerate_grad_fn``, which also runs when a view is next read). See aiograd/_ops/inplace.py for the ops.
"""

from __future__ import annotations

import weakref
from typing import Any

from .._core._node import mark_async
from .._core._saved import ERR_BACKWARD_TWICE, SavedTensor
from .._core._views import View, move_retains_grad, regenerate_grad_fn, view_index
from .._devices._device import CPU
from ._util import Node, Tensor, edge_of, first_order, like, save, wrap
from .indexing import IndexBackward0, _scatter, _take

__all__ = ["CopySlices", "rebase_inplace"]


# ------------------------------------------------------------------------------ graph surgery
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
            move_retains_grad(old, old_nr, copy_slices, 0)
        regenerate_grad_fn(tensor)
        return
    old, old_nr = tensor.grad_fn, tensor.output_nr
    tensor.grad_fn = node
    if old_nr != output_nr:
        tensor.output_nr = output_nr
    tensor._requires_grad = True
    if tensor._retains_grad:
        move_retains_grad(old, old_nr, node, output_nr)


class CopySlices(Node):
    """The base's grad_fn after an in-place op on one of its views (PyTorch's CopySlices).

    Holds the op's node ``fn``. Backward: the base's gradient is copied, the view's region of it
    goes through ``fn`` (as the gradient of the view after the op) and the result replaces that
    region (edge 0, to the base's old history); ``fn``'s other gradients (edges 1...) go to the
    op's other inputs.

    Not batched (``Node.batched``): under ``is_grads_batched`` it runs once per sample, as its
    region of the base and ``fn`` are those of one sample (``x[i] = v`` sends ``v`` a gradient
    summed back to its unbatched shape).
    """

    _saved = ("fn",)

    def __init__(self, base: Tensor, view: Tensor, fn: Node) -> None:
        super().__init__((edge_of(base),) + tuple(fn.next_edges[1:]))
        self.fn: Node | None = fn
        if fn.is_async:
            mark_async(self)
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
        if not first_order():
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
        if not isinstance(flat_grad, Tensor):  # an array (numpy or CuPy): written in place
            flat_grad[self.flat] = r0.data
            out[0] = wrap(flat_grad.reshape(self.shape))
            if device is not CPU:
                out[0]._device = device
            return out
        keep = device.xp.ones(self.size, dtype=bool)
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
