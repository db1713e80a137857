"""The non-reentrant checkpoint (``checkpoint(..., use_reentrant=False)``): PyTorch's
``_checkpoint_without_reentrant_generator`` on aiograd's saved-tensor hooks.

The forward runs under hooks whose pack hook keeps a placeholder (a ``_Holder``) instead of each
tensor saved inside the function; the graph is the ordinary one. The first unpack of a placeholder
in a backward call (keyed by its GraphTask) re-runs the function once, under grad mode and the
forward's random state, with hooks that hand each saved tensor, in order, to its placeholder, and
stops as soon as all are recovered (``early_stop``). Each recovered tensor is given away at its
unpack. ``aiograd._api._checkpoint`` holds the public entry points and the reentrant variant.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import traceback
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from .._base import _random
from .._base._grad_mode import enable_grad, grad_enabled
from .._base._graph_context import current_graph_task
from .._core._saved import SavedTensor, saved_tensors_hooks
from .._core._tensor import Tensor

__all__ = [
    "CheckpointError",
    "checkpoint_without_reentrant",
    "noop_context_fn",
    "set_checkpoint_debug_enabled",
    "set_checkpoint_early_stop",
]

#: aiograd's own folder (frames inside it are not the user's), and where ``_core/_saved.py``
#: lives (its frames are left out of the stacks ``debug=True`` prints).
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_SAVED_MODULE = os.path.join(_PACKAGE_DIR, "_core", "_saved")


class CheckpointError(RuntimeError):
    """Raised when a non-reentrant checkpoint's recomputation does not match its forward."""


_replaying_rng = _random.replaying


DEBUG_TIP = (
    "\nTip: To see a more detailed error message, either pass `debug=True` to\n"
    "`aiograd.checkpoint(...)` or wrap the code block\n"
    "with `with aiograd.utils.checkpoint.set_checkpoint_debug_enabled(True):` to\n"
    "enable checkpoint\u2011debug mode globally.\n"
)

ERR_CONTEXT_SUPPRESSED = (
    "aiograd.checkpoint: the forward context provided by context_fn suppressed an exception "
    "raised during the checkpointed forward. This is not supported because checkpoint cannot "
    "return a value for a failed forward."
)

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
            f"3. Error message:\n\n{error}\n\n"
            # PyTorch's closing section (torch/utils/checkpoint.py, _checkpoint_hook's debug
            # report), which its tests match on.
            " ERROR: Detected non-determinism while running activation checkpointing\n\n"
            " You are seeing this error because you passed `debug=True` to checkpoint and\n"
            " tensors to be saved during the original forward and differ between those saved\n"
            " during recomputation. This can happen if different operators were ran in the\n"
            " original forward and in the recomputation.\n\n"
            " To identify where the mismatch may be coming from, compare the tensors saved\n"
            " during the original forward and during recomputation (sections 1 and 2), and\n"
            " review the stack trace printed for each of them."
        )


def _where_saved(index: int) -> str:
    """The stack (user code and the op) where a tensor is being saved, for debug=True."""
    frames = [f for f in traceback.extract_stack()[:-3] if not f.filename.startswith(_SAVED_MODULE)]
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


def checkpoint_without_reentrant(
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
    fwd_rng_state = _random.get_state() if preserve_rng_state else None

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
