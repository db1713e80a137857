"""Custom differentiable operations: subclass :class:`Function`, as with ``torch.autograd.Function``.

    class Exp(aiograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        async def backward(ctx, grad):  # a plain ``def`` works too
            (y,) = ctx.saved_tensors
            return grad * y

    y = Exp.apply(x)

``apply`` runs ``forward`` under no_grad and records one node, an instance of ``ExpBackward``
(made once per subclass). That node *is* the ``ctx`` that ``forward`` and ``backward`` receive,
as in PyTorch, so ``y.grad_fn.saved_tensors`` and the attributes set on ``ctx`` can be read from
the graph. The engine calls ``backward`` with grad mode equal to ``create_graph``, so a backward
written with aiograd ops is itself differentiable; ``@once_differentiable`` opts out. What
``backward`` returns is checked and conformed with PyTorch's rules and messages
(``torch/csrc/autograd/python_function.cpp`` and ``custom_function.cpp``: ``validate_outputs``).
"""

from __future__ import annotations

import functools as _functools
import inspect as _inspect
import warnings as _warnings
from collections.abc import Callable as _Callable
from collections.abc import Sequence as _Sequence
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any
from typing import TypeVar as _TypeVar
from typing import cast as _cast

import numpy as _np

from ._device import CPU as _CPU
from ._grad_mode import _grad_enabled
from ._grad_mode import grad_enabled as _grad_enabled_now
from ._grad_mode import no_grad as _no_grad
from ._node import Node as _Node
from ._node import edge_of as _edge_of
from ._saved import ERR_BACKWARD_TWICE as _ERR_BACKWARD_TWICE
from ._saved import SavedTensor as _SavedTensor
from ._tensor import Tensor as _Tensor
from ._views import IN_CUSTOM_FUNCTION as _IN_CUSTOM_FUNCTION
from ._views import MULTI_OUTPUT_NODE as _MULTI_OUTPUT_NODE
from ._views import View as _View
from ._views import make_view as _make_view

__all__ = ["Function", "FunctionCtx", "once_differentiable"]

_ONCE_DIFFERENTIABLE_ERROR = (
    "trying to differentiate twice a function that was marked with @once_differentiable"
)


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

    _to_save: tuple[_Any, ...] = ()
    _dirty: tuple[_Any, ...] = ()
    _non_differentiable: tuple[_Any, ...] = ()
    _saved_variables: tuple[_SavedTensor | None, ...] = ()
    _freed = False

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
        node: _Any = self
        saved = tuple(None if s is None else s.unpack(node) for s in self._saved_variables)
        return _cast("tuple[_Tensor, ...]", saved)

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


class _FunctionBackward(_Node, FunctionCtx):
    """The node of one ``Function.apply`` call, and the ``ctx`` of that call.

    Each Function subclass gets its own subclass of this, named ``<Function>Backward``.
    """

    _forward_cls: type[Function]
    _saved = ("saved_tensors",)  # non-empty: the engine calls release_variables after backward

    def __init__(self, next_edges: tuple[_Any, ...]) -> None:
        super().__init__(next_edges)
        #: Per forward argument: is it a tensor (only tensors get gradients)?
        self._is_tensor_input: tuple[bool, ...] = ()
        #: Per tensor input needing a gradient: its (shape, dtype, device), else None.
        self._input_meta: tuple[_Any, ...] = ()
        #: Per forward output: (shape, dtype, device) of a tensor output, else None.
        self._output_meta: tuple[_Any, ...] = ()

    def release_variables(self) -> None:
        """Free the saved tensors; ``saved_tensors`` then raises the backward-twice error."""
        self._saved_variables = ()
        self._freed = True

    # --------------------------------------------------------------------------- backward
    def apply(self, grads: list[_Tensor | None]) -> _Any:
        """Call the user's ``backward`` and check what it returns (a coroutine if it is async)."""
        result = self._forward_cls._backward_fn()(self, *self._grad_outputs(grads))
        if self.is_async:
            return self._finish(result)
        if _inspect.iscoroutine(result):
            result.close()
            raise TypeError(
                f"{self.name()}: backward returned a coroutine; define it with `async def` so "
                "that the engine awaits it"
            )
        return self._validate(result)

    async def _finish(self, pending: _Any) -> list[_Tensor | None]:
        return self._validate(await pending)

    def __call__(self, *grads: _Tensor | None) -> _Any:
        if not self.is_async:
            return super().__call__(*grads)

        async def call() -> _Any:
            out = await self.apply(list(grads))
            return out[0] if len(out) == 1 else tuple(out)

        return call()

    def _grad_outputs(self, grads: list[_Tensor | None]) -> list[_Tensor | None]:
        if not self.materialize_grads:
            return grads
        return [
            _zeros(meta) if g is None and meta is not None else g
            for g, meta in zip(grads, self._output_meta)
        ]

    def _validate(self, result: _Any) -> list[_Tensor | None]:
        """PyTorch's checks of a custom backward's result (PyNode::apply, validate_outputs)."""
        if not isinstance(result, tuple):
            result = (result,)
        is_tensor_input = self._is_tensor_input
        expected = len(is_tensor_input)
        if len(result) > expected and all(r is None for r in result[expected:]):
            result = result[:expected]
        if len(result) != expected:
            raise RuntimeError(
                f"function {self.name()} returned an incorrect number of gradients "
                f"(expected {expected}, got {len(result)})"
            )
        grads: list[_Tensor | None] = []
        for position, (grad, is_tensor) in enumerate(zip(result, is_tensor_input), 1):
            if not is_tensor:
                if grad is not None:
                    raise RuntimeError(
                        f"function {self.name()} returned a gradient different than None at "
                        f"position {position}, but the corresponding forward input was not a "
                        "Variable"
                    )
                continue
            if grad is not None and not isinstance(grad, _Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(grad).__name__})")
            grads.append(grad)
        for i, meta in enumerate(self._input_meta):
            grad = grads[i]
            if grad is None:
                continue
            if meta is None:  # the input needs no gradient: whatever came back is dropped
                grads[i] = None
                continue
            shape, dtype, device = meta
            if grad.data.shape != shape:
                if not _expandable(shape, grad.data.shape):
                    raise RuntimeError(
                        f"Function {self.name()} returned an invalid gradient at index {i} - got "
                        f"{list(grad.data.shape)} but expected shape compatible with {list(shape)}"
                    )
                grad = grad.sum_to_size(shape)
            if grad.data.dtype != dtype:
                grad = grad.to(dtype)
            if grad._device is not device:
                # PyTorch's validate_outputs: a 0-dim gradient is moved, any other is an error.
                if grad.data.ndim:
                    raise RuntimeError(
                        f"Function {self.name()} returned an invalid gradient at index {i} - "
                        f"expected device {device} but got {grad._device}"
                    )
                grad = grad.to(device)
            grads[i] = grad
        return grads


def _zeros(meta: tuple[_Any, ...]) -> _Tensor:
    """A materialized zero gradient for an output of shape, dtype and device ``meta``."""
    out = _Tensor._wrap(_np.zeros(meta[0], meta[1]))
    if meta[2] is not _CPU:
        out._device = meta[2]
    return out


def _expandable(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """True if ``shape`` broadcasts to ``target`` (PyTorch's ``is_expandable_to``)."""
    if len(shape) > len(target):
        return False
    return all(s == t or s == 1 for s, t in zip(reversed(shape), reversed(target)))


class Function:
    """Base class of custom differentiable operations (``torch.autograd.Function``'s API).

    Define the static methods ``forward(ctx, *args, **kwargs)`` and ``backward(ctx,
    *grad_outputs)`` (or ``async def backward``), then call ``F.apply(*args, **kwargs)``.
    ``backward`` gets one gradient per output of ``forward`` and returns one per argument of
    ``forward`` (None for non-tensors and inputs needing none; extra trailing Nones are fine).
    Gradients of a broadcast shape are summed to the input's shape and cast to its dtype. See
    :class:`FunctionCtx` for what ``ctx`` offers.
    """

    _backward_cls: type[_FunctionBackward]

    def __init_subclass__(cls, **kwargs: _Any) -> None:
        super().__init_subclass__(**kwargs)
        user_fn = cls.vjp if cls.backward is Function.backward else cls.backward
        cls._backward_cls = type(
            f"{cls.__name__}Backward",
            (_FunctionBackward,),
            {
                "_forward_cls": cls,
                "is_async": _inspect.iscoroutinefunction(user_fn),
                "__module__": cls.__module__,
                "__doc__": f"The backward of the custom Function {cls.__qualname__}.",
            },
        )

    def __init__(self, *args: _Any, **kwargs: _Any) -> None:
        _warnings.warn(
            f"{self.__class__} should not be instantiated. Methods on autograd functions are all "
            "static, so you should invoke them on the class itself. Instantiating an autograd "
            "function will raise an error in a future version of PyTorch.",
            DeprecationWarning,
            stacklevel=2,
        )

    def __call__(self, *args: _Any, **kwargs: _Any) -> _Any:
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use "
            "new-style autograd function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
        )

    @staticmethod
    def forward(ctx: _Any, *args: _Any, **kwargs: _Any) -> _Any:
        """Compute the outputs (a tensor or a tuple) from the inputs; runs under no_grad.

        Either ``forward(ctx, *args)``, or ``forward(*args)`` with :meth:`setup_context`.
        """
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx: _Any, inputs: tuple[_Any, ...], output: _Any) -> _Any:
        """Fill ``ctx`` from the inputs and the output, for a ``forward`` written without ``ctx``.

        Define it to write ``forward(*args)`` (PyTorch 2's style): ``apply`` then calls
        ``forward(*args)`` and ``setup_context(ctx, args, output)``, both under no_grad, before
        the outputs get their history. ``inputs`` is the tuple of ``forward``'s arguments
        (defaults filled in), ``output`` what ``forward`` returned. Every ``ctx`` method works
        there as in ``forward``.
        """
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: _Any, *grad_outputs: _Any, **kwargs: _Any) -> _Any:
        """Map the gradients of the outputs to the gradients of the inputs (may be async).

        (``**kwargs`` only tells type checkers that a subclass may declare any parameters; the
        engine passes one gradient per output, positionally.)
        """
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    #: Another name for ``backward``: define one or the other.
    vjp = backward

    @staticmethod
    def jvp(ctx: _Any, *grad_inputs: _Any) -> _Any:
        """Forward-mode AD, which aiograd does not have: raises, as PyTorch's default does."""
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with "
            "forward mode AD."
        )

    @classmethod
    def _backward_fn(cls) -> _Callable[..., _Any]:
        if cls.backward is not Function.backward and cls.vjp is not Function.vjp:
            raise RuntimeError(
                "Implementing both 'backward' and 'vjp' for a custom Function is not allowed. "
                "You should only implement one of them."
            )
        return cls.vjp if cls.backward is Function.backward else cls.backward

    @classmethod
    def apply(cls, *args: _Any, **kwargs: _Any) -> _Any:
        """Run ``forward`` and record the node that calls ``backward`` during backward.

        Keyword arguments bind to ``forward``'s positional parameters by name, as in PyTorch
        (a keyword-only one is a TypeError); with :meth:`setup_context`, defaults are filled in.
        """
        with_setup = cls.setup_context is not Function.setup_context
        if with_setup:
            bound = _inspect.signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, bound.kwargs
        if kwargs:
            args = _bind_keywords(cls.forward, args, kwargs, with_setup)
        is_tensor_input = tuple(isinstance(a, _Tensor) for a in args)
        needs_input_grad = tuple(t and _torch_requires_grad(a) for t, a in zip(is_tensor_input, args))
        executable = any(needs_input_grad) and _grad_enabled_now()
        tensor_inputs = [a for a in args if isinstance(a, _Tensor)]
        ctx = cls._backward_cls(tuple(_edge_of(a) for a in tensor_inputs) if executable else ())
        ctx.needs_input_grad = needs_input_grad
        if executable:
            ctx._is_tensor_input = is_tensor_input
            ctx._input_meta = tuple(
                (a.data.shape, a.data.dtype, a._device) if e is not None else None
                for a, e in zip(tensor_inputs, ctx.next_edges)
            )
        token = _grad_enabled.set(False)
        try:
            if with_setup:
                raw = cls.forward(*args)
                cls.setup_context(ctx, args, raw)
            else:
                raw = cls.forward(ctx, *args)
        finally:
            _grad_enabled.reset(token)
        return _wrap_outputs(ctx, tensor_inputs, raw, executable, with_setup)


def _torch_requires_grad(tensor: _Tensor) -> bool:
    """PyTorch's ``requires_grad``: a view made under no_grad requires grad with its base (it
    still gets no gradient: its edge is None)."""
    if tensor._requires_grad:
        return True
    return type(tensor) is _View and tensor._base._requires_grad  # type: ignore[union-attr]


_MISSING = object()


def _bind_keywords(forward: _Any, args: tuple[_Any, ...], kwargs: dict[str, _Any], with_setup: bool) -> tuple[_Any, ...]:
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


def _wrap_outputs(
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
    differentiable_outputs = 0
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
        if type(var) is _View and not (is_input and is_modified):
            # The view+inplace logic would bypass the custom backward: PyTorch forbids it.
            var._creation = _IN_CUSTOM_FUNCTION  # type: ignore[attr-defined]
        differentiable_outputs += differentiable
        outputs[i] = var
    if differentiable_outputs > 1:
        for var in outputs:
            if type(var) is _View:
                var._creation = _MULTI_OUTPUT_NODE  # type: ignore[attr-defined]

    if executable:
        ctx._output_meta = tuple(
            (o.data.shape, o.data.dtype, o._device) if isinstance(o, _Tensor) else None
            for o in outputs
        )
        saved: list[_SavedTensor | None] = []
        for i, t in enumerate(ctx._to_save):
            if t is None:
                saved.append(None)
            elif not isinstance(t, _Tensor):
                raise TypeError(
                    f"save_for_backward can only save variables, but argument {i} is of type "
                    f"{type(t).__name__}"
                )
            else:
                saved.append(_SavedTensor(t, t.grad_fn is ctx))
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
    from ._ops._inplace_util import _recording

    is_view = type(var) is _View
    fn = var._fn if is_view else var.grad_fn  # type: ignore[attr-defined]
    if fn is None and _torch_requires_grad(var):
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
    from ._ops.inplace import rebase_inplace

    rebase_inplace(tensor, node, output_nr)


class _Error(_Node):
    """Stands in for the graph of a ``@once_differentiable`` backward: differentiating its
    outputs raises (PyTorch's ``DelayedError``)."""

    __slots__ = ("message", "num_inputs")

    def __init__(self, message: str, num_inputs: int) -> None:
        super().__init__(())
        self.message = message
        self.num_inputs = num_inputs

    def name(self) -> str:
        return "Error"

    def apply(self, grads: list[_Tensor | None]) -> _Sequence[_Tensor | None]:
        raise RuntimeError(self.message)


def _delay_error(args: tuple[_Any, ...], outputs: _Any) -> _Any:
    """Under create_graph, give the outputs of a once-differentiable backward an error node."""
    if not _grad_enabled_now():
        return outputs
    if not any(isinstance(a, _Tensor) and a._requires_grad for a in args):
        return outputs
    outs = outputs if isinstance(outputs, tuple) else (outputs,)
    err = _Error(_ONCE_DIFFERENTIABLE_ERROR, len(outs))
    wrapped = []
    for i, out in enumerate(outs):
        if isinstance(out, _Tensor):
            out = out.detach()
            out._requires_grad = True
            out.grad_fn = err
            out.output_nr = i
        wrapped.append(out)
    return tuple(wrapped) if len(wrapped) != 1 else wrapped[0]


_BackwardFn = _TypeVar("_BackwardFn", bound=_Callable[..., _Any])


def once_differentiable(fn: _BackwardFn) -> _BackwardFn:
    """Decorate a ``backward`` that cannot be differentiated (``@staticmethod`` goes outside).

    It runs under no_grad, so it may use any code, numpy included. Under ``create_graph=True`` its
    results get a node that raises "trying to differentiate twice a function that was marked with
    @once_differentiable" if a higher-order gradient ever reaches it. Works on ``async def``.
    """
    without_grad = _no_grad()(fn)
    if _inspect.iscoroutinefunction(fn):

        @_functools.wraps(fn)
        async def async_wrapper(ctx: _Any, *args: _Any) -> _Any:
            return _delay_error(args, await without_grad(ctx, *args))

        return _cast(_BackwardFn, async_wrapper)

    @_functools.wraps(fn)
    def wrapper(ctx: _Any, *args: _Any) -> _Any:
        return _delay_error(args, without_grad(ctx, *args))

    return _cast(_BackwardFn, wrapper)
