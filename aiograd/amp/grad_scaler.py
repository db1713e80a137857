"""``GradScaler``, torch/amp/grad_scaler.py's, for aiograd tensors and ``aiograd.optim``
optimizers: dynamic loss scaling, with torch's state machine, arithmetic and errors.

    scaler = aiograd.amp.GradScaler("cpu")
    await scaler.scale(loss).backward()
    scaler.step(optimizer)          # skipped when a gradient holds an inf or a NaN
    scaler.update()

The scale is a 0-dim float32 tensor and the growth tracker a 0-dim int32 one, on the device of
the first tensor scaled, as torch's. ``unscale_`` multiplies every gradient in place by the
float32 reciprocal of the scale (computed in float64, as torch does) and records whether any held
an inf or a NaN (torch's ``_amp_foreach_non_finite_check_and_unscale_``); ``update`` is torch's
``_amp_update_scale_``: back off and reset the tracker after an overflow, else count, and grow
(if the grown scale is finite) every ``growth_interval`` clean steps. torch's path for
optimizers that unscale inside their own step (``_step_supports_amp_scaling``) is not taken:
aiograd's optimizers have none. As in torch, ``device="cuda"`` without a usable CUDA device
warns and disables the scaler.
"""

from __future__ import annotations

import warnings
from collections import abc, defaultdict
from enum import Enum
from typing import Any

import numpy as np

from .. import cuda as _cuda
from .._api._factories import full
from .._base._dtypes import float32, int32
from .._base._grad_mode import no_grad
from .._core._tensor import Tensor

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    """Where an optimizer is in an iteration: torch's ``OptState``."""

    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict[str, Any]:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    """Dynamic loss scaling, as ``torch.amp.GradScaler(device, init_scale, growth_factor,
    backoff_factor, growth_interval, enabled)``.

    ``scale(outputs)`` multiplies a tensor (or nested lists/tuples of them) by the scale;
    ``step(optimizer, *args, **kwargs)`` unscales the optimizer's gradients (unless
    ``unscale_`` did already) and calls ``optimizer.step`` unless a gradient held an inf or a
    NaN; ``update(new_scale=None)`` backs the scale off after a skipped step or grows it after
    ``growth_interval`` clean ones. With ``enabled=False`` ``scale`` returns its argument,
    ``step`` just calls ``optimizer.step`` and the rest do nothing, as in torch."""

    def __init__(
        self,
        device: str = "cuda",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        self._device = device
        self._enabled = enabled
        if self._device == "cuda" and enabled and not _cuda.is_available():
            warnings.warn(
                "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                stacklevel=2,
            )
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale: Tensor | None = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker: Tensor | None = None
            self._per_optimizer_states: dict[int, dict[str, Any]] = defaultdict(_refresh_per_optimizer_state)

    # -------------------------------------------------------------------- the scale itself
    def _check_scale_growth_tracker(self, funcname: str) -> tuple[Tensor, Tensor]:
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev: Any) -> None:
        if self._growth_tracker is not None:
            raise AssertionError("_growth_tracker initialized before _scale")
        self._scale = full((), self._init_scale, dtype=float32, device=dev)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=int32, device=dev)

    def _scale_on(self, dev: Any) -> Tensor:
        if self._scale is None:
            self._lazy_init_scale_growth_tracker(dev)
        assert self._scale is not None
        return self._scale if self._scale.device == dev else self._scale.to(dev)

    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor, or a list/tuple/iterable of them, nested) times the scale; the
        same object when disabled. A ValueError for anything else, as torch."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs * self._scale_on(outputs.device)

        def apply_scale(val: Any) -> Any:
            if isinstance(val, Tensor):
                return val * self._scale_on(val.device)
            if isinstance(val, abc.Iterable):
                iterable = map(apply_scale, val)
                if isinstance(val, (list, tuple)):
                    return type(val)(iterable)
                return iterable
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    # -------------------------------------------------------------------- unscaling
    def _unscale_grads_(self, optimizer: Any, inv_scale: float, allow_fp16: bool) -> dict[Any, float]:
        """Multiply every gradient by ``inv_scale`` in place; per device, 1.0 where one held an
        inf or a NaN, else 0.0."""
        found: dict[Any, float] = {}
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if not isinstance(param, Tensor):
                        raise AssertionError(f"expected param to be torch.Tensor, got {type(param).__name__}")
                    grad = param.grad
                    if grad is None:
                        continue
                    if not allow_fp16 and grad.dtype == np.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    xp = grad._device.xp
                    finite = bool(xp.all(xp.isfinite(grad.data)))
                    found[grad.device] = max(found.get(grad.device, 0.0), 0.0 if finite else 1.0)
                    if inv_scale != 1.0:
                        grad.mul_(inv_scale)
        return found

    def unscale_(self, optimizer: Any) -> None:
        """Divide ``optimizer``'s gradients by the scale in place (to clip or inspect them before
        ``step``); once per optimizer per ``update``, as torch: a RuntimeError otherwise."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        assert self._scale is not None
        inv_scale = float(np.float32(1.0 / np.float64(self._scale.item())))  # (torch: in float64)
        optimizer_state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, False)
        optimizer_state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer: Any, optimizer_state: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        if not sum(optimizer_state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscale ``optimizer``'s gradients (unless ``unscale_`` did) and call
        ``optimizer.step(*args, **kwargs)`` unless one held an inf or a NaN; what that returns,
        or None when skipped. A closure is a RuntimeError while enabled, as in torch."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if optimizer_state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(optimizer_state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, optimizer_state, *args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        return retval

    # -------------------------------------------------------------------- updating the scale
    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Back the scale off (``backoff_factor``) if any step since the last update was skipped,
        else grow it (``growth_factor``) after ``growth_interval`` clean steps in a row; or set it
        to ``new_scale`` (a float, or a one-element float tensor on the scaler's device)."""
        if not self._enabled:
            return
        _scale, _growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                _scale.fill_(new_scale)
            else:
                reason = (
                    "new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                    "torch.FloatTensor with requires_grad=False."
                )
                if new_scale.device.type != self._device:
                    raise AssertionError(reason)
                if new_scale.numel() != 1:
                    raise AssertionError(reason)
                if new_scale.requires_grad is True:
                    raise AssertionError(reason)
                _scale.fill_(float(new_scale.item()))
        else:
            found_infs = [
                found_inf
                for state in self._per_optimizer_states.values()
                for found_inf in state["found_inf_per_device"].values()
            ]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            self._update_scale(_scale, _growth_tracker, sum(found_infs))
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _update_scale(self, scale: Tensor, growth_tracker: Tensor, found_inf: float) -> None:
        """torch's ``_amp_update_scale_``, in float32 as its kernel."""
        current = np.float32(scale.item())
        if found_inf:
            scale.fill_(float(current * np.float32(self._backoff_factor)))
            growth_tracker.fill_(0)
            return
        successful = int(growth_tracker.item()) + 1
        if successful == self._growth_interval:
            grown = current * np.float32(self._growth_factor)
            if np.isfinite(grown):
                scale.fill_(float(grown))
            growth_tracker.fill_(0)
        else:
            growth_tracker.fill_(successful)

    # -------------------------------------------------------------------- settings and state
    def get_scale(self) -> float:
        """The current scale as a float (the initial one before the first ``scale``); 1.0 when
        disabled."""
        if self._enabled:
            return self._init_scale if self._scale is None else float(self._scale.item())
        return 1.0

    def get_growth_factor(self) -> float:
        """The scale's growth factor."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Set the scale's growth factor."""
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        """The scale's backoff factor."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Set the scale's backoff factor."""
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        """How many clean steps in a row grow the scale."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Set how many clean steps in a row grow the scale."""
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())
        return 0

    def is_enabled(self) -> bool:
        """Whether this scaler scales (False when made disabled, or for CUDA without CUDA)."""
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """torch's five entries (``scale``, ``growth_factor``, ``backoff_factor``,
        ``growth_interval``, ``_growth_tracker``); empty when disabled."""
        if self._enabled:
            return {
                "scale": self.get_scale(),
                "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker(),
            }
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load what ``state_dict`` (this one's or torch's) returned; nothing when disabled, a
        RuntimeError for an empty dict (a disabled scaler's)."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError(
                "The source state dict is empty, possibly because it was saved "
                "from a disabled instance of GradScaler."
            )
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict[str, Any]:
        """Picklable at an iteration's start or end, as torch's."""
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError(
                    "A GradScaler instance may only be pickled at the beginning "
                    "of an iteration, or at the end after scaler.update()."
                )
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
            state["_per_optimizer_states"] = dict(state["_per_optimizer_states"])
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore a pickled scaler."""
        self.__dict__.update(state)
        if self.__dict__.get("_enabled"):
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)
