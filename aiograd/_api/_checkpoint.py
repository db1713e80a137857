"""Activation checkpointing: ``torch.utils.checkpoint`` on aiograd, both variants.

``checkpoint(function, *args, use_reentrant=...)`` runs ``function`` keeping only its inputs, and
recomputes what the backward needs from it.

- ``use_reentrant=False`` (PyTorch's recommendation; ``_checkpoint_without_reentrant_generator``):
  the forward runs under saved-tensor hooks whose pack hook keeps a placeholder (a ``_Holder``)
  instead of each tensor saved inside ``function``. The graph is the ordinary one, so ``grad()``,
  ``backward(inputs=)``, inputs that do not require grad and keyword arguments all work. The
  first unpack of a placeholder in a backward call re-runs ``function`` once (grad mode on, the
  forward's random state) under hooks that hand each saved tensor, in order, to its placeholder,
  and stops as soon as all are recovered; each recovered tensor is given away at its unpack.
  The recomputed tensors' shapes, dtypes and devices are checked against the forward's
  (``determinism_check``), raising PyTorch's ``CheckpointError`` messages.
- ``use_reentrant=True`` (``CheckpointFunction``): an :class:`aiograd.Function` whose
  ``async def backward`` recomputes ``function`` on detached inputs and awaits a nested backward
  through that graph. It refuses ``grad()``/``backward(inputs=)``, as PyTorch's does.

``use_reentrant`` left out warns (PyTorch 2.13's words) and means True. Warnings point at the
user's line, not at aiograd's. This module holds the entry points and the reentrant variant; the
non-reentrant one is ``aiograd._api._checkpoint_non_reentrant``.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from .. import _engine
from .._base import _random
from .._base._grad_mode import enable_grad, no_grad
from .._core._tensor import Tensor
from ..function import Function
from ._autograd import backward as _backward
from ._checkpoint_non_reentrant import (
    _PACKAGE_DIR,
    CheckpointError,
    _replaying_rng,
    checkpoint_without_reentrant,
    noop_context_fn,
    set_checkpoint_debug_enabled,
    set_checkpoint_early_stop,
)

__all__ = [
    "CheckpointError",
    "CheckpointFunction",
    "checkpoint",
    "checkpoint_sequential",
    "noop_context_fn",
    "set_checkpoint_debug_enabled",
    "set_checkpoint_early_stop",
]

ERR_CHECKPOINT_INVALID = (
    "When use_reentrant=True, aiograd.checkpoint is incompatible with .grad() or passing an "
    "`inputs` parameter to .backward(). To resolve this error, you can either set "
    "use_reentrant=False, or call .backward() without passing the `inputs` argument."
)
ERR_NO_OUTPUT_REQUIRES_GRAD = "none of output has requires_grad=True, this checkpoint() is not necessary"
WARN_NO_INPUT_REQUIRES_GRAD = "None of the inputs have requires_grad=True. Gradients will be None"
WARN_USE_REENTRANT = (
    "aiograd.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in "
    "PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
    "use_reentrant=False is recommended, but if you need to preserve the current default "
    "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
    "differences between the two variants."
)
WARN_USE_REENTRANT_SEQUENTIAL = (
    "aiograd.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
    "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
    "use_reentrant=False is recommended, but if you need to preserve the current default "
    "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
    "differences between the two variants."
)

def _warn_at_user(message: str) -> None:
    """Warn with the location of the first caller outside aiograd (the user's line, however
    deep inside aiograd the warning is raised)."""
    frame: Any = inspect.currentframe()
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    warnings.warn(message, UserWarning, stacklevel=level)


def _check_not_async(function: Any) -> None:
    if inspect.iscoroutinefunction(function):
        raise TypeError(
            f"checkpoint: {getattr(function, '__qualname__', function)!r} is an async function; "
            "the checkpointed function must be a plain one (it is run again, synchronously, "
            "during backward)"
        )


# ------------------------------------------------------------------------------ reentrant
def _detach_variable(inputs: Sequence[Any]) -> tuple[Any, ...]:
    """Tensors detached (new leaves sharing data and version counter) with their original
    ``requires_grad``; anything else as it is."""
    out = []
    for inp in inputs:
        if isinstance(inp, Tensor):
            x = inp.detach()
            x.requires_grad = inp.requires_grad
            inp = x
        out.append(inp)
    return tuple(out)


class CheckpointFunction(Function):
    """The node of one reentrant ``checkpoint`` call (``CheckpointFunctionBackward``).

    ``forward(ctx, run_function, preserve_rng_state, *args)`` is torch's signature. The tensor
    arguments are saved with ``save_for_backward`` (so an in-place change before backward is
    caught); the others are kept on ``ctx``.
    """

    @staticmethod
    def forward(ctx: Any, run_function: Callable[..., Any], preserve_rng_state: bool, *args: Any) -> Any:
        ctx.run_function = run_function
        # The state of the generator behind rand/randn (torch.get_rng_state()).
        ctx.fwd_rng_state = _random.get_state() if preserve_rng_state else None
        ctx.inputs = []  # non-tensor inputs, with a None placeholder for each tensor
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with no_grad():
            return run_function(*args)

    @staticmethod
    async def backward(ctx: Any, *grad_outputs: Any) -> tuple[Any, ...]:
        if not _engine.is_checkpoint_valid():
            raise RuntimeError(ERR_CHECKPOINT_INVALID)
        inputs = list(ctx.inputs)
        for i, tensor in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = tensor
        with _replaying_rng(ctx.fwd_rng_state):
            detached_inputs = _detach_variable(inputs)
            with enable_grad():
                outputs = ctx.run_function(*detached_inputs)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        # Backward through the recomputed graph from the outputs that require grad only.
        outputs_with_grad = []
        grads_with_grad = []
        for output, grad in zip(outputs, grad_outputs):
            if isinstance(output, Tensor) and output.requires_grad:
                outputs_with_grad.append(output)
                grads_with_grad.append(grad)
        if not outputs_with_grad:
            raise RuntimeError(ERR_NO_OUTPUT_REQUIRES_GRAD)
        await _backward(outputs_with_grad, grads_with_grad)
        grads = tuple(x.grad if isinstance(x, Tensor) else None for x in detached_inputs)
        return (None, None) + grads


# ------------------------------------------------------------------------------ public
def checkpoint(
    function: Callable[..., Any],
    *args: Any,
    use_reentrant: bool | None = None,
    context_fn: Callable[[], tuple[Any, Any]] = noop_context_fn,
    determinism_check: str = "default",
    debug: bool = False,
    early_stop: bool = True,
    **kwargs: Any,
) -> Any:
    """Run ``function(*args, **kwargs)`` keeping only its inputs; recompute what the backward
    needs from it (``torch.utils.checkpoint.checkpoint``). Returns what ``function`` returns.

    ``use_reentrant=False`` (recommended): saved-tensor hooks replace every tensor saved inside
    ``function`` by a placeholder; the first backward use re-runs ``function`` once and takes
    the saved tensors from it. The graph is the ordinary one: ``grad()``, ``backward(inputs=)``,
    ``create_graph``, keyword arguments and inputs that do not require grad (parameters in a
    closure still get gradients) all work. ``context_fn()`` returns two context managers, run
    around the forward and around the recomputation; ``determinism_check`` ("default" compares
    shape, dtype and device of each recomputed tensor, "none" does not) raises
    :class:`CheckpointError` on a mismatch; ``debug=True`` adds where each tensor was saved to
    that error; ``early_stop`` stops the recomputation once all tensors are recovered.

    ``use_reentrant=True``: one ``CheckpointFunctionBackward`` node whose backward recomputes
    ``function`` on detached inputs and awaits a nested backward through it. It works with
    ``backward()`` only (``grad()`` and ``inputs=`` raise "When use_reentrant=True,
    aiograd.checkpoint is incompatible with .grad() ..."), takes no keyword arguments for
    ``function``, gives first derivatives only, and if no tensor argument requires grad it warns
    "None of the inputs have requires_grad=True. Gradients will be None".

    ``use_reentrant`` left out warns (as PyTorch 2.13) and means True. ``preserve_rng_state``
    (a keyword, default True) recomputes from the forward's state of the generator behind
    ``aiograd.rand``/``randn`` and restores the caller's afterwards. ``function`` must be a plain
    callable (an ``async def`` raises TypeError).
    """
    if use_reentrant is None:
        _warn_at_user(WARN_USE_REENTRANT)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    _check_not_async(function)
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        if not any(a.requires_grad for a in args if isinstance(a, Tensor)):
            _warn_at_user(WARN_NO_INPUT_REQUIRES_GRAD)
        return CheckpointFunction.apply(function, preserve, *args)
    return checkpoint_without_reentrant(
        function, preserve, context_fn, determinism_check, debug, early_stop, args, kwargs
    )


def checkpoint_sequential(
    functions: Sequence[Callable[[Any], Any]],
    segments: int,
    input: Any,
    use_reentrant: bool | None = None,
    **kwargs: Any,
) -> Any:
    """Run ``functions`` one after the other on ``input``, checkpointing all segments but the
    last (``torch.utils.checkpoint.checkpoint_sequential``).

    ``functions`` is any sequence of one-argument callables, cut into ``segments`` chunks of
    ``len(functions) // segments``, the last chunk taking the remainder; each chunk but the last
    runs under :func:`checkpoint` with this ``use_reentrant`` (left out: a warning, then True),
    the last runs normally. ``preserve_rng_state`` (keyword, default True) is passed on; any
    other keyword raises ``ValueError("Unexpected keyword arguments: ...")``. ``segments`` must
    be between 1 and ``len(functions)`` (a ValueError saying so; PyTorch fails less clearly).
    """
    if use_reentrant is None:
        _warn_at_user(WARN_USE_REENTRANT_SEQUENTIAL)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    functions = list(functions)
    for fn in functions:
        _check_not_async(fn)
    if not 1 <= segments <= len(functions):
        raise ValueError(
            f"checkpoint_sequential: segments must be between 1 and len(functions) "
            f"({len(functions)}), got {segments}"
        )

    def run_function(start: int, end: int) -> Callable[[Any], Any]:
        def forward(input: Any) -> Any:
            for j in range(start, end + 1):
                input = functions[j](input)
            return input

        return forward

    segment_size = len(functions) // segments
    # The last chunk runs normally: its activations are needed first by the backward.
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(
            run_function(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve
        )
    return run_function(end + 1, len(functions) - 1)(input)
