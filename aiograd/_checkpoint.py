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
user's line, not at aiograd's.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import os
import traceback
import warnings
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from . import _engine, _factories
from ._autograd import backward as _backward
from ._grad_mode import enable_grad, grad_enabled, no_grad
from ._graph_context import current_graph_task
from ._saved import SavedTensor
from ._tensor import Tensor
from .function import Function
from .graph import saved_tensors_hooks

__all__ = [
    "CheckpointError",
    "checkpoint",
    "checkpoint_sequential",
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
ERR_CONTEXT_SUPPRESSED = (
    "aiograd.checkpoint: the forward context provided by context_fn suppressed an exception "
    "raised during the checkpointed forward. This is not supported because checkpoint cannot "
    "return a value for a failed forward."
)
DEBUG_TIP = (
    "\nTip: To see a more detailed error message, either pass `debug=True` to\n"
    "`aiograd.checkpoint(...)` or wrap the code block\n"
    "with `with aiograd.utils.checkpoint.set_checkpoint_debug_enabled(True):` to\n"
    "enable checkpoint\u2011debug mode globally.\n"
)

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class CheckpointError(RuntimeError):
    """Raised when a non-reentrant checkpoint's recomputation does not match its forward."""


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


@contextlib.contextmanager
def _replaying_rng(state: Any) -> Iterator[None]:
    """Run with the generator behind rand/randn set to ``state`` (None: as it is), then give the
    surrounding state back, also on error and even if the code calls ``manual_seed`` (torch's
    ``fork_rng``). Synchronous code only: no other coroutine draws meanwhile."""
    if state is None:
        yield
        return
    outer_rng = _factories._rng
    outer_state = outer_rng.bit_generator.state
    outer_rng.bit_generator.state = state
    try:
        yield
    finally:
        _factories._rng = outer_rng
        outer_rng.bit_generator.state = outer_state


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
        ctx.fwd_rng_state = _factories._rng.bit_generator.state if preserve_rng_state else None
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


# ------------------------------------------------------------------------------ non-reentrant
_debug_enabled: contextvars.ContextVar[bool | None] = contextvars.ContextVar(
    "aiograd_checkpoint_debug", default=None
)
_early_stop: contextvars.ContextVar[bool | None] = contextvars.ContextVar(
    "aiograd_checkpoint_early_stop", default=None
)


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None) -> Iterator[None]:
    """Within it, every non-reentrant checkpoint behaves as with ``debug=enabled`` (None: as
    each call says) (``torch.utils.checkpoint.set_checkpoint_debug_enabled``)."""
    token = _debug_enabled.set(enabled)
    try:
        yield
    finally:
        _debug_enabled.reset(token)


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool) -> Iterator[None]:
    """Whether non-reentrant checkpoints run in it stop their recomputation as soon as every
    tensor needed is recovered (the default) or run the whole function again
    (``torch.utils.checkpoint.set_checkpoint_early_stop``). Only the forward must be inside."""
    token = _early_stop.set(enable)
    try:
        yield
    finally:
        _early_stop.reset(token)


def noop_context_fn() -> tuple[contextlib.AbstractContextManager[Any], contextlib.AbstractContextManager[Any]]:
    """The default ``context_fn``: no context around the forward nor the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def _default_meta_extractor(x: Tensor) -> dict[str, Any]:
    return {"shape": x.shape, "dtype": x.dtype, "device": x.device}


_METADATA_FNS: dict[str, Callable[[Tensor], Any]] = {
    "default": _default_meta_extractor,
    "none": lambda _: None,
}


class _StopRecomputationError(Exception):
    """Raised by the recomputation's pack hook once every needed tensor is recovered."""


class _Holder:
    """The placeholder packed for one tensor saved in a checkpointed forward. ``values`` maps a
    backward call (its GraphTask) to the recomputed tensor, then to None once unpacked."""

    __slots__ = ("values", "__weakref__")

    def __init__(self) -> None:
        self.values: weakref.WeakKeyDictionary[Any, Tensor | None] = weakref.WeakKeyDictionary()


class _OutsideBackward:
    """Stands for the backward call of an unpack made outside any backward (each such unpack
    recomputes, as PyTorch's fresh uuid does)."""

    __slots__ = ("__weakref__",)


class _Recomputation:
    """One backward call's recomputation of a frame: how many tensors it saved so far."""

    __slots__ = ("count", "__weakref__")

    def __init__(self) -> None:
        self.count = 0


class _CheckpointFrame:
    """One non-reentrant checkpoint call: its inputs (saved tensors, so an enclosing checkpoint
    manages them), the placeholders of its forward, and the recomputations done so far."""

    def __init__(self, recompute_fn: Callable[..., None], early_stop: bool,
                 metadata_fn: Callable[[Tensor], Any], debug: bool) -> None:
        self.recompute_fn = recompute_fn
        self.early_stop = early_stop
        self.metadata_fn = metadata_fn
        self.saved_args: list[Any] = []
        self.weak_holders: list[weakref.ref[_Holder]] = []
        self.x_metadatas: list[Any] = []
        self.recomputed: weakref.WeakKeyDictionary[Any, _Recomputation] = weakref.WeakKeyDictionary()
        self.forward_completed = False
        self.ignore_saved_mismatch = False
        #: debug=True: where each tensor was saved, in the forward and in the last recomputation.
        self.forward_traces: list[str] | None = [] if debug else None
        self.recompute_traces: list[str] = []

    def save_inputs(self, args: tuple[Any, ...]) -> None:
        self.saved_args = [SavedTensor(a, False) if isinstance(a, Tensor) else a for a in args]

    def get_inputs(self) -> list[Any]:
        return [a.unpack(None) if isinstance(a, SavedTensor) else a for a in self.saved_args]  # type: ignore[arg-type]

    def check_recomputed_tensors_match(self, gid: Any) -> None:
        if self.ignore_saved_mismatch:
            return
        count = self.recomputed[gid].count
        if len(self.weak_holders) != count:
            raise CheckpointError(
                "aiograd.checkpoint: A different number of tensors was saved during the original "
                f"forward and recomputation.\nNumber of tensors saved during forward: "
                f"{len(self.weak_holders)}\nNumber of tensors saved during recomputation: "
                f"{count}.\n{DEBUG_TIP}"
            )
        mismatched = ""
        for idx, weak_holder in enumerate(self.weak_holders):
            holder = weak_holder()
            if holder is None:
                continue  # freed by an earlier backward: not needed
            recomputed = holder.values.get(gid)
            if recomputed is None:
                continue
            saved_meta, new_meta = self.x_metadatas[idx], self.metadata_fn(recomputed)
            if saved_meta != new_meta:
                mismatched += (
                    f"tensor at position {idx}:\nsaved metadata: {saved_meta}\n"
                    f"recomputed metadata: {new_meta}\n"
                )
        if mismatched:
            raise CheckpointError(
                "aiograd.checkpoint: Recomputed values for the following tensors have different "
                f"metadata than during the forward pass.\n{mismatched}.\n{DEBUG_TIP}"
            )

    def debug_report(self, error: CheckpointError) -> CheckpointError:
        """debug=True: the error with where every tensor was saved, forward and recomputation."""
        forward = "\n".join(self.forward_traces or []) or "(none)"
        recompute = "\n".join(self.recompute_traces) or "(none)"
        return CheckpointError(
            "An error happened while unpacking tensors; dumping where each tensor was saved, "
            "because you passed `debug=True` to `aiograd.checkpoint()`.\n\n"
            f"1. Tensors saved during the original forward:\n\n{forward}\n\n"
            f"2. Tensors saved during recomputation:\n\n{recompute}\n\n"
            f"3. Error message:\n\n{error}"
        )


def _where_saved(index: int) -> str:
    """The stack (user code and the op) where a tensor is being saved, for debug=True."""
    frames = [f for f in traceback.extract_stack()[:-3] if not f.filename.startswith(_PACKAGE_DIR + "_saved")]
    return f"tensor {index} saved at:\n" + "".join(traceback.format_list(frames[-4:]))


def _recomputation_hooks(frame_ref: weakref.ref[_CheckpointFrame], gid: Any) -> saved_tensors_hooks:
    """Hooks of a recomputation: each tensor saved goes to the placeholder of the same position
    in the forward, and is also packed normally (a backward inside ``function`` may use it)."""

    def pack_hook(x: Tensor) -> Tensor:
        x = x.detach() if x.requires_grad else x
        frame = frame_ref()
        if frame is None:
            raise AssertionError("Internal error: target_frame reference is None")
        state = frame.recomputed[gid]
        index = state.count
        state.count += 1
        if frame.forward_traces is not None:
            frame.recompute_traces.append(_where_saved(index))
        if index >= len(frame.weak_holders):
            if not frame.forward_completed:
                # A backward inside ``function`` while its forward runs, without early stop.
                frame.ignore_saved_mismatch = True
                return x
            raise CheckpointError(
                "aiograd.checkpoint: trying to save more tensors during recomputation than "
                f"during the original forward pass.\n{DEBUG_TIP}"
            )
        holder = frame.weak_holders[index]()
        if holder is not None:  # None: freed by an earlier backward, not needed
            holder.values[gid] = x
        if frame.early_stop and state.count == len(frame.weak_holders):
            raise _StopRecomputationError
        return x

    return saved_tensors_hooks(pack_hook, lambda x: x)


def _checkpoint_hooks(frame: _CheckpointFrame) -> saved_tensors_hooks:
    """Hooks of a checkpointed forward: a placeholder instead of each saved tensor."""

    def pack_hook(x: Tensor) -> _Holder:
        holder = _Holder()
        frame.weak_holders.append(weakref.ref(holder))
        if frame.metadata_fn is not None:
            frame.x_metadatas.append(frame.metadata_fn(x))
        if frame.forward_traces is not None:
            frame.forward_traces.append(_where_saved(len(frame.weak_holders) - 1))
        return holder

    def unpack_hook(holder: _Holder) -> Tensor:
        gid = current_graph_task.get()
        if gid is None:
            gid = _OutsideBackward()
        try:
            if gid not in frame.recomputed:
                _recompute(frame, gid)
            if gid not in holder.values:
                raise AssertionError(
                    "Something went unexpectedly wrong in activation checkpoint. Please report "
                    "this bug by filing an issue to aiograd."
                )
            value = holder.values[gid]
            if value is None:
                raise CheckpointError(
                    "aiograd.checkpoint: Unpack is being triggered for a tensor that was already "
                    "unpacked once. If you are calling ctx.saved_tensors in backward, make sure to "
                    "do so only once. Otherwise please open an issue with details on your use case."
                )
        except CheckpointError as error:
            if frame.forward_traces is None:
                raise
            raise frame.debug_report(error) from error
        holder.values[gid] = None  # given away: the recomputed tensor lives no longer
        return value

    return saved_tensors_hooks(pack_hook, unpack_hook)


def _recompute(frame: _CheckpointFrame, gid: Any) -> None:
    """Run the checkpointed function again for backward call ``gid``, filling the placeholders."""
    args = frame.get_inputs()
    frame.recomputed[gid] = _Recomputation()
    frame.recompute_traces = []
    try:
        with _recomputation_hooks(weakref.ref(frame), gid), enable_grad():
            frame.recompute_fn(*args)
    except _StopRecomputationError:
        pass
    except BaseException:
        del frame.recomputed[gid]  # the next unpack tries again
        raise
    frame.check_recomputed_tensors_match(gid)


def _checkpoint_without_reentrant(
    function: Callable[..., Any], preserve_rng_state: bool, context_fn: Callable[[], Any],
    determinism_check: str, debug: bool, early_stop: bool, args: tuple[Any, ...], kwargs: dict[str, Any],
) -> Any:
    debug_setting = _debug_enabled.get()
    debug = debug if debug_setting is None else debug_setting
    if debug and context_fn is not noop_context_fn:
        raise ValueError("debug=True is incompatible with non-default context_fn")
    if determinism_check not in _METADATA_FNS:
        raise ValueError(
            f"determinism_check should be one of {list(_METADATA_FNS.keys())}, but got {determinism_check}"
        )
    metadata_fn = _METADATA_FNS[determinism_check]
    forward_context, recompute_context = context_fn()
    fwd_rng_state = _factories._rng.bit_generator.state if preserve_rng_state else None

    def recompute_fn(*inputs: Any) -> None:
        with _replaying_rng(fwd_rng_state), recompute_context:
            function(*inputs, **kwargs)

    early_stop_setting = _early_stop.get()
    frame = _CheckpointFrame(
        recompute_fn, early_stop if early_stop_setting is None else early_stop_setting, metadata_fn, debug
    )
    if not grad_enabled():
        return function(*args, **kwargs)  # nothing is saved: nothing to recompute
    frame.save_inputs(args)
    raised = False
    with _checkpoint_hooks(frame), forward_context:
        try:
            result = function(*args, **kwargs)
        except BaseException:
            raised = True
            raise
    if raised:  # the exception was swallowed by forward_context
        raise RuntimeError(ERR_CONTEXT_SUPPRESSED)
    frame.forward_completed = True
    return result


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
    return _checkpoint_without_reentrant(
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
