"""What ``Function.apply`` does around ``forward``: binding keyword arguments as PyTorch does, and
giving the outputs their history (PyTorch's ``_process_backward_mode_ad`` in
``torch/csrc/autograd/custom_function.cpp``), with its checks of ``mark_dirty``, of returned
inputs and of views."""

from __future__ import annotations

import inspect as _inspect
import warnings as _warnings
from typing import TYPE_CHECKING
from typing import Any as _Any

from .._base._grad_mode import grad_enabled as _grad_enabled_now
from .._core._node import Node as _Node
from .._core._saved import SavedTensor as _SavedTensor
from .._core._tensor import Tensor as _Tensor
from .._core._views import IN_CUSTOM_FUNCTION as _IN_CUSTOM_FUNCTION
from .._core._views import MULTI_OUTPUT_NODE as _MULTI_OUTPUT_NODE
from .._core._views import View as _View
from .._core._views import make_view as _make_view

if TYPE_CHECKING:
    from ._backward import _FunctionBackward

__all__ = ["bind_keywords", "torch_requires_grad", "wrap_outputs"]


def torch_requires_grad(tensor: _Tensor) -> bool:
    """PyTorch's ``requires_grad``: a view made under no_grad requires grad with its base (it
    still gets no gradient: its edge is None)."""
    if tensor._requires_grad:
        return True
    return type(tensor) is _View and tensor._base._requires_grad  # type: ignore[union-attr]


_MISSING = object()


def bind_keywords(forward: _Any, args: tuple[_Any, ...], kwargs: dict[str, _Any], with_setup: bool) -> tuple[_Any, ...]:
    """``apply``'s keyword arguments put at the positions of ``forward``'s parameters of those
    names (after ``ctx``), with PyTorch's errors (``THPFunction_apply``): no default is filled
    in, and keyword-only parameters cannot be given."""
    params = list(_inspect.signature(forward).parameters.values())[0 if with_setup else 1 :]
    positional = [p.name if p.kind is p.POSITIONAL_OR_KEYWORD else None for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    slots = list(args)
    for name, value in kwargs.items():
        if name not in positional:
            raise TypeError(f"forward() got an unexpected keyword argument '{name}'")
        position = positional.index(name)
        if position < len(args):
            raise TypeError(f"forward() got multiple values for argument '{name}'")
        slots.extend([_MISSING] * (position + 1 - len(slots)))
        slots[position] = value
    for position, value in enumerate(slots):
        if value is _MISSING:
            raise TypeError(f"forward() missing required argument: '{positional[position]}' (position {position})")
    return tuple(slots)


def wrap_outputs(
    ctx: _FunctionBackward, inputs: list[_Tensor], raw: _Any, executable: bool, with_setup: bool
) -> _Any:
    """Give the outputs their history (PyTorch's ``_process_backward_mode_ad``), then save."""
    is_tuple = isinstance(raw, tuple)
    outputs = list(raw) if is_tuple else [raw]
    input_ids = {id(t) for t in inputs}
    output_ids = {id(o) for o in outputs if isinstance(o, _Tensor)}

    dirty_ids: set[int] = set()
    for i, t in enumerate(ctx._dirty):
        if not isinstance(t, _Tensor):
            raise TypeError(
                f"mark_dirty can only accept variables, but argument {i} is of type {type(t).__name__}"
            )
        if id(t) not in dirty_ids:
            dirty_ids.add(id(t))
            _bump_version(t)
    ctx._dirty = ()
    if not dirty_ids <= output_ids:
        raise RuntimeError(
            "Some elements marked as dirty during the forward method were not returned as output. "
            "The inputs that are modified inplace must all be outputs of the Function."
        )
    non_diff_ids = set()
    for i, t in enumerate(ctx._non_differentiable):
        if not isinstance(t, _Tensor):
            raise TypeError(
                f"mark_non_differentiable can only accept variables, but argument {i} is of type "
                f"{type(t).__name__}"
            )
        non_diff_ids.add(id(t))
    ctx._non_differentiable = ()
    if executable:
        # Before any rebase: rebase_inplace refuses a view modified by a multi-output node.
        ctx.num_inputs = len(outputs)

    saved_ids = {id(t) for t in ctx._to_save} if with_setup else set()
    # PyTorch's "pure view" custom Function (``ctx._is_pure_view = True``): its one output is a
    # plain view of its one input, so an in-place op on it is allowed and replays the view
    # (the custom backward is then bypassed), as PyTorch's _process_backward_mode_ad does.
    pure_view = bool(getattr(ctx, "_is_pure_view", False))
    if pure_view and (len(inputs) != 1 or len(output_ids) != 1):
        raise RuntimeError(
            "Pure view custom Function can only have one input Tensor and one output Tensor. "
            "Open an issue if you need to support more."
        )
    differentiable_outputs = 0
    non_diff_outputs: set[int] = set()
    no_grad_call = not _grad_enabled_now()
    for i, var in enumerate(outputs):
        if not isinstance(var, _Tensor):
            continue
        is_input = id(var) in input_ids
        is_modified = id(var) in dirty_ids
        differentiable = executable and id(var) not in non_diff_ids and var.data.dtype.kind == "f"
        if is_input and not is_modified and id(var) in saved_ids and (differentiable or not var._requires_grad):
            raise RuntimeError(_INPUT_RETURNED_AS_IS_SAVED)
        if not differentiable:
            if not var._requires_grad:
                if is_input and not is_modified:
                    var = _make_view(var, var.data)  # PyTorch's view_as_self
            elif is_input:
                var = var.detach()
            elif type(var) is not _View:
                var.grad_fn = None
                var._requires_grad = False
        elif is_modified:
            _check_dirty(var, is_input, len(outputs))
            _rebase(var, ctx, i)
        else:
            if is_input:
                var = _make_view(var, var.data)  # PyTorch's view_as_self
            var._requires_grad = True
            var.grad_fn = ctx
            var.output_nr = i
        if type(var) is _View and not (is_input and is_modified) and (executable or not no_grad_call):
            # The view+inplace logic would bypass the custom backward: PyTorch forbids it,
            # unless the Function declared itself a pure view. (Called under no_grad, the view
            # stays a no_grad view, with that message: test_custom_function_return_view_in_nograd.)
            var._creation = 0 if pure_view else _IN_CUSTOM_FUNCTION  # type: ignore[attr-defined]
        differentiable_outputs += differentiable
        if not differentiable and executable:
            non_diff_outputs.add(i)
        outputs[i] = var
    if differentiable_outputs > 1:
        for var in outputs:
            if type(var) is _View:
                var._creation = _MULTI_OUTPUT_NODE  # type: ignore[attr-defined]

    if executable:
        if non_diff_outputs:
            ctx._non_diff_outputs = frozenset(non_diff_outputs)
        ctx._output_meta = tuple(
            (o.data.shape, o.data.dtype, o._device) if isinstance(o, _Tensor) else None
            for o in outputs
        )
        to_save, ctx._to_save = ctx._to_save, ()
        # Cleared first: a pack hook may raise (the non-reentrant checkpoint stops its
        # recomputation early that way), and a ctx left holding its own outputs would be a
        # reference cycle, freed only by the garbage collector (test_custom_autograd_ac_early_stop).
        saved: list[_SavedTensor | None] = []
        for i, t in enumerate(to_save):
            if t is None:
                saved.append(None)
            elif not isinstance(t, _Tensor):
                raise TypeError(
                    f"save_for_backward can only save variables, but argument {i} is of type "
                    f"{type(t).__name__}"
                )
            else:
                # An input modified in place (mark_dirty) is an output of this node too, even
                # when it is a view whose grad_fn reads as AsStrided: saved as one, the node
                # keeps no reference to it (no cycle; test_custom_function_saving_mutated_view_no_leak)
                # and it unpacks with this node as grad_fn, as in PyTorch.
                saved.append(_SavedTensor(t, t.grad_fn is ctx or id(t) in dirty_ids))
        ctx._saved_variables = tuple(saved)
    ctx._to_save = ()
    return tuple(outputs) if is_tuple else outputs[0]


_INPUT_RETURNED_AS_IS_SAVED = (
    "An input that has been returned as-is as output is being saved for backward. This is not "
    "supported if you override setup_context. You should return and save a view of the input "
    "instead, e.g. with x.view_as(x) or setup ctx inside the forward function itself."
)
_MARK_DIRTY_NOT_INPUT = (
    "ctx.mark_dirty() received a tensor that was not an input. Only input Tensors that have been "
    "mutated should be passed to ctx.mark_dirty()."
)
_DIRTY_VIEW_OF_SEVERAL_OUTPUTS = (
    "If your Function modifies inplace an input that is a view of another Tensor, your Function "
    "cannot return more than one Tensor. This is not supported by the current autograd engine. "
    "You should either make sure the input is not a view (using .clone() for example) or make "
    "your Function only return one Tensor (potentially splitting it into two Functions: one "
    "doing the inplace that returns a single Tensor and a second one that does the other "
    "operations). You can ask on the forum https://discuss.pytorch.org/ if you need help to do "
    "this change."
)


def _check_dirty(var: _Tensor, is_input: bool, num_outputs: int) -> None:
    """PyTorch's checks of a tensor given to ``mark_dirty``, in its order (``set_history``)."""
    from .._ops._inplace_util import _recording

    is_view = type(var) is _View
    fn = var._fn if is_view else var.grad_fn  # type: ignore[attr-defined]
    if fn is None and torch_requires_grad(var):
        raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
    if not is_input:
        if is_view:  # a view of an intermediate of forward
            raise RuntimeError(_MARK_DIRTY_NOT_INPUT)
        _warnings.warn(_MARK_DIRTY_NOT_INPUT, UserWarning, stacklevel=4)
    if is_view and num_outputs > 1:
        raise RuntimeError(_DIRTY_VIEW_OF_SEVERAL_OUTPUTS)
    _recording(var)  # PyTorch's check_inplace: the errors of views and of leaves


def _bump_version(tensor: _Tensor) -> None:
    if tensor._vc is None:
        tensor._vc = [1]
    else:
        tensor._vc[0] += 1


def _rebase(tensor: _Tensor, node: _Node, output_nr: int) -> None:
    """Make ``node`` the grad_fn of a tensor that ``forward`` modified in place."""
    from .._ops.inplace import rebase_inplace

    rebase_inplace(tensor, node, output_nr)
