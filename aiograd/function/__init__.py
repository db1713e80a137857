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

The package's modules: ``_ctx`` (the ``ctx`` API), ``_backward`` (the node: calling ``backward``
and checking its result), ``_apply`` (binding ``apply``'s arguments and giving the outputs their
history, with PyTorch's checks of ``mark_dirty`` and of views), ``_once`` (``once_differentiable``).
"""

from __future__ import annotations

import inspect as _inspect
import warnings as _warnings
from collections.abc import Callable as _Callable
from typing import Any as _Any

from .._base._grad_mode import _grad_enabled
from .._base._grad_mode import grad_enabled as _grad_enabled_now
from .._core._node import edge_of as _edge_of
from .._core._tensor import Tensor as _Tensor
from ._apply import bind_keywords as _bind_keywords
from ._apply import torch_requires_grad as _torch_requires_grad
from ._apply import wrap_outputs as _wrap_outputs
from ._backward import _FunctionBackward
from ._ctx import FunctionCtx
from ._once import once_differentiable

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


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
