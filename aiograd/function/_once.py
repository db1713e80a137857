"""``once_differentiable``: a custom ``backward`` that is not itself differentiable."""

from __future__ import annotations

import functools as _functools
import inspect as _inspect
from collections.abc import Callable as _Callable
from collections.abc import Sequence as _Sequence
from typing import Any as _Any
from typing import TypeVar as _TypeVar
from typing import cast as _cast

from .._base._grad_mode import grad_enabled as _grad_enabled_now
from .._base._grad_mode import no_grad as _no_grad
from .._core._node import Node as _Node
from .._core._node import grad_accumulator as _grad_accumulator
from .._core._tensor import Tensor as _Tensor

__all__ = ["once_differentiable"]

_ONCE_DIFFERENTIABLE_ERROR = (
    "trying to differentiate twice a function that was marked with @once_differentiable"
)


class Error(_Node):
    """Stands in for the graph of a ``@once_differentiable`` backward: differentiating its
    outputs raises (PyTorch's ``DelayedError``, whose nodes are named ``Error``)."""

    __slots__ = ("message", "num_inputs")

    def __init__(self, message: str, num_inputs: int, next_edges: tuple[_Any, ...] = ()) -> None:
        super().__init__(next_edges)
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
    # As PyTorch's once_differentiable, the error node is applied to detached copies of the
    # outputs made leaves that require grad, so its next_functions show one AccumulateGrad per
    # tensor output (None for the others): "Error(AccumulateGrad(), None, AccumulateGrad())".
    fakes = []
    for out in outs:
        if isinstance(out, _Tensor):
            out = out.detach()
            out._requires_grad = True
        fakes.append(out)
    edges = tuple((_grad_accumulator(f), 0) if isinstance(f, _Tensor) else None for f in fakes)
    err = Error(_ONCE_DIFFERENTIABLE_ERROR, len(outs), edges)
    wrapped = []
    for i, out in enumerate(fakes):
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
