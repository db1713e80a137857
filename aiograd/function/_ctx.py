"""The ``ctx`` of a custom Function: what ``forward`` (or ``setup_context``) tells ``backward``."""

from __future__ import annotations

import warnings as _warnings
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any
from typing import cast as _cast

from .._core._saved import ERR_BACKWARD_TWICE as _ERR_BACKWARD_TWICE
from .._core._saved import SavedTensor as _SavedTensor
from .._core._tensor import Tensor as _Tensor

__all__ = ["FunctionCtx"]


class FunctionCtx:
    """The ``ctx`` of a custom :class:`Function`: what ``forward`` tells ``backward``.

    Besides the methods below, any attribute may be set on it in ``forward`` and read in
    ``backward`` (``ctx.k = k``). Keep tensors in ``save_for_backward`` instead: saved tensors are
    checked against in-place changes, and saving an output does not make a reference cycle.
    """

    #: One bool per forward argument: True where it is a tensor that requires grad.
    needs_input_grad: tuple[bool, ...] = ()
    #: Whether None gradients reach ``backward`` as zeros (see ``set_materialize_grads``).
    materialize_grads: bool = True
    #: PyTorch's ``ctx._materialize_non_diff_grads``: set it False (in ``forward``) and the
    #: gradients of outputs marked non-differentiable reach ``backward`` as None even while
    #: other gradients are materialized (PyNode::apply, python_function.cpp).
    _materialize_non_diff_grads: bool = True
    #: Positions of the tensor outputs that are not differentiable (set by ``apply``).
    _non_diff_outputs: frozenset[int] = frozenset()

    _to_save: tuple[_Any, ...] = ()
    _dirty: tuple[_Any, ...] = ()
    _non_differentiable: tuple[_Any, ...] = ()
    _saved_variables: tuple[_SavedTensor | None, ...] = ()
    _freed = False
    _saved_accessed = False  # with clear_saved_tensors_on_access: the one access was made

    if _TYPE_CHECKING:
        # Any attribute may be set on ctx in ``forward`` and read in ``backward`` (``ctx.k = k``);
        # these tell type checkers so, without changing attribute access at run time.
        def __getattr__(self, name: str) -> _Any: ...
        def __setattr__(self, name: str, value: _Any) -> None: ...

    def save_for_backward(self, *tensors: _Tensor | None) -> None:
        """Keep tensors (inputs, outputs or intermediates; None allowed) for ``backward``.

        Call it once, in ``forward``; ``ctx.saved_tensors`` returns them. An in-place change to a
        saved tensor before backward makes ``saved_tensors`` raise; they are freed after backward
        unless the graph is retained.
        """
        self._to_save = tensors

    @property
    def saved_tensors(self) -> tuple[_Tensor, ...]:
        """The tensors given to ``save_for_backward``, checked against in-place changes.

        Typed as tensors, as in PyTorch: a None given to ``save_for_backward`` comes back as None.

        Raises the "backward through the graph a second time" error once backward freed them.
        """
        if self._freed:
            raise RuntimeError(_ERR_BACKWARD_TWICE)
        # PyTorch 2.13's ``Function.clear_saved_tensors_on_access``: the first access hands the
        # tensors over (the node drops them, so backward may free them early); a second raises.
        clear = getattr(getattr(self, "_forward_cls", None), "clear_saved_tensors_on_access", False)
        if clear and self._saved_accessed:
            raise RuntimeError(
                "saved_tensors can only be accessed once when clear_saved_tensors_on_access=True "
                "is set on the autograd.Function. Either access saved_tensors only once, or set "
                "clear_saved_tensors_on_access=False."
            )
        node: _Any = self
        saved = tuple(None if s is None else s.unpack(node) for s in self._saved_variables)
        for t, s in zip(saved, self._saved_variables):
            if t is not None and type(s) is _SavedTensor and s.tensor is None and s.requires_grad and t.grad_fn is None:
                # A saved output keeps its place in the graph even where backward runs without
                # grad mode, as PyTorch's SavedVariable::unpack gives it (ctx.saved_tensors[i]
                # .grad_fn is this node). The ops' own saves skip this: nothing reads it there.
                t._requires_grad = True
                t.grad_fn = node
                t.output_nr = s.output_nr
        if clear:
            self._saved_accessed = True
            self._saved_variables = ()
        return _cast("tuple[_Tensor, ...]", saved)

    @property
    def saved_variables(self) -> tuple[_Tensor, ...]:
        """Deprecated alias of ``saved_tensors`` (warns, as PyTorch's ``THPFunction_saved_variables``)."""
        _warnings.warn("'saved_variables' is deprecated; use 'saved_tensors'", DeprecationWarning, stacklevel=2)
        return self.saved_tensors

    def mark_dirty(self, *tensors: _Tensor) -> None:
        """Declare the inputs that ``forward`` modified in place; it must return them.

        Their version counters are bumped and they become outputs of this Function's node.
        """
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors: _Tensor) -> None:
        """Declare outputs that are not differentiable: they do not require grad, and their
        gradients reach ``backward`` as zeros (or None without materialized grads)."""
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """Whether ``backward`` gets zeros (True, the default) or None for outputs that received
        no gradient. Call it in ``forward``."""
        self.materialize_grads = bool(value)
