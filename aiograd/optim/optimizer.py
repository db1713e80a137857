"""The optimizer base class, ``torch.optim.Optimizer``'s: parameter groups, per-parameter state,
``zero_grad``, ``state_dict``/``load_state_dict`` in PyTorch's layout, and the closure protocol.

The subclasses (aiograd/optim/sgd.py, adam.py, rmsprop.py) update the parameters in place with
array math on ``p.data`` through the parameter's device's array module (numpy, or CuPy on CUDA),
then bump its version counter: the parameter keeps its identity, no graph is recorded, and a
tensor saved for backward before the step fails its version check afterwards, as in PyTorch.
Their arithmetic follows PyTorch's single-tensor (``foreach=False``) implementations op for op
(``_single_tensor_sgd`` and its siblings in ``torch/optim``); the array helpers below are PyTorch's
kernels' formulas (``lerp``, ``addcmul``, ``addcdiv``).

Backward is asynchronous in aiograd, so a closure that recomputes the loss usually awaits it:
``await optimizer.step_async(closure)`` calls the closure (plain or ``async def``) under
``enable_grad``, awaits what it returns if that is awaitable, then steps. ``step(closure)`` takes
a plain closure only (one that uses ``aiograd.sync.backward``, say).
"""

from __future__ import annotations

import inspect
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from copy import deepcopy
from itertools import chain
from typing import Any

import numpy as np

from .._base._dtypes import get_default_dtype
from .._base._grad_mode import enable_grad, no_grad
from .._core._tensor import Tensor
from .._devices._device import CPU
from .._ops._inplace_util import _bump
from ..nn.modules.module import typename  # (torch.typename; one implementation, nn's)
from ._hooks import (
    OptimizerHooks,
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]


class _RequiredParameter:
    """The default of a hyperparameter every group must give (PyTorch's ``required``)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required: _RequiredParameter = _RequiredParameter()


# ------------------------------------------------------------------------------ state helpers
def tensor_on(array: Any, p: Tensor) -> Tensor:
    """``array`` (an array of ``p``'s device) as a plain tensor on ``p``'s device."""
    out = Tensor._wrap(array)
    if p._device is not CPU:  # (only off-CPU tensors set their own, see aiograd/_core/_tensor.py)
        out._device = p._device
    return out


def zeros_state(p: Tensor) -> Tensor:
    """A zero tensor shaped, typed and placed as ``p`` (``torch.zeros_like``)."""
    return tensor_on(p._device.xp.zeros_like(p.data), p)


def _step_dtype() -> np.dtype[Any]:
    """PyTorch's ``_get_scalar_dtype``: float64 under a float64 default dtype, else float32."""
    return get_default_dtype() if get_default_dtype() == np.float64 else np.dtype(np.float32)


def new_step() -> Tensor:
    """A fresh step counter: PyTorch's 0-dim float CPU tensor, so reading it is no device sync."""
    return Tensor._wrap(np.zeros((), dtype=_step_dtype()))


def increment_step(step: Tensor) -> float:
    """``step += 1`` in place; the new count as a number (PyTorch's ``_get_value``)."""
    step.data += 1
    _bump(step)
    return float(step.data)


def step_as_tensor(state: dict[Any, Any]) -> None:
    """A loaded ``step`` that is a number (old PyTorch checkpoints) becomes the counter tensor,
    as PyTorch's ``__setstate__`` does."""
    if state and "step" in state and not isinstance(state["step"], Tensor):
        state["step"] = Tensor._wrap(np.asarray(float(np.asarray(state["step"])), dtype=_step_dtype()))


def lerp_(xp: Any, start: Any, end: Any, weight: float) -> None:
    """``start.lerp_(end, weight)`` on arrays, with PyTorch's two formulas (the one for a small
    weight, the other from ``end`` for a large one)."""
    difference = end - start
    if abs(weight) < 0.5:
        difference *= weight
        start += difference
    else:
        difference *= 1 - weight
        xp.subtract(end, difference, out=start)


# The temporaries below are updated in place: the same operations in the same order as
# PyTorch's formulas, one allocation each. A factor of 1 is skipped (multiplying by 1 is exact).
def addcmul_(start: Any, t1: Any, t2: Any, value: float) -> None:
    """``start.addcmul_(t1, t2, value=value)``: ``start + value * t1 * t2``."""
    if value == 1:
        start += t1 * t2
        return
    product = value * t1
    product *= t2
    start += product


def addcdiv_(start: Any, t1: Any, t2: Any, value: float) -> None:
    """``start.addcdiv_(t1, t2, value=value)``: ``start + value * t1 / t2``."""
    if value == 1:
        start += t1 / t2
        return
    quotient = value * t1
    quotient /= t2
    start += quotient


def add_(start: Any, other: Any, alpha: float) -> None:
    """``start.add_(other, alpha=alpha)``: ``start + alpha * other``."""
    start += alpha * other if alpha != 1 else other


def write(p: Tensor) -> None:
    """Mark ``p`` as modified in place (its version counter, shared with its views)."""
    _bump(p)


def gradient(p: Tensor, maximize: bool, weight_decay: float) -> Any:
    """The gradient array a step follows: ``p``'s own (the very array when nothing applies),
    negated under ``maximize``, plus ``weight_decay * p`` (L2 weight decay)."""
    assert p._grad is not None
    grad = p._grad.data
    if maximize:
        grad = -grad
    if weight_decay != 0:
        grad = grad + weight_decay * p.data
    return grad


#: PyTorch's words for each hyperparameter in its ``Invalid <words>: <value>`` refusals.
_INVALID_NAMES = {
    "lr": "learning rate", "eps": "epsilon value", "momentum": "momentum value",
    "weight_decay": "weight_decay value", "alpha": "alpha value",
}


def check_betas(betas: tuple[float, float]) -> None:
    """PyTorch's refusals of ``betas`` outside ``[0, 1)`` (the Adam family's)."""
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")


def check_nonnegative(**values: Any) -> None:
    """PyTorch's ``if not 0.0 <= value: raise ValueError(f"Invalid ...: {value}")`` checks, in
    the order given, so the first bad value is the one named (a NaN fails too)."""
    for name, value in values.items():
        if not 0.0 <= value:
            raise ValueError(f"Invalid {_INVALID_NAMES[name]}: {value}")


def check_flags(defaults: dict[str, Any]) -> None:
    """PyTorch's refusals of flag combinations; then aiograd's own for ``differentiable``, which
    needs the step recorded as a graph (not supported: the step is array math)."""
    if defaults.get("fused"):
        if defaults.get("differentiable"):
            raise RuntimeError("`fused` does not support `differentiable`")
        if defaults.get("foreach"):
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    if defaults.get("differentiable"):
        raise NotImplementedError("aiograd.optim: differentiable=True is not supported")


# ------------------------------------------------------------------------------ the base class
class Optimizer(OptimizerHooks):
    """Base class of all optimizers (``torch.optim.Optimizer``).

    ``params`` is an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts (parameter
    groups: ``{"params": [...], "lr": ...}``, options missing from a group take ``defaults``).
    ``state`` maps each parameter to its state dict; ``param_groups`` lists the groups.
    Hooks (``register_step_pre_hook``, ``register_state_dict_post_hook``...) as torch's: see
    aiograd/optim/_hooks.py.
    """

    #: The options a loaded (unpickled) group gets when it lacks them, in PyTorch's order.
    _group_defaults_on_load: dict[str, Any] = {}

    def __init__(self, params: Any, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._init_hooks()
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, "
                "but got " + typename(params)
            )
        self.state: defaultdict[Any, Any] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    # ----------------------------------------------------------------------------- groups
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a parameter group (a dict with ``"params"`` and any options; PyTorch's checks)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but "
                "the ordering of tensors in sets will change between runs. Please use a list instead."
            )
        else:
            param_group["params"] = list(params)

        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) == len(tensors):
                param_group["param_names"] = names
            else:
                raise ValueError(
                    "all optimizer params should be with/without names. Some param names are missing"
                )

        for param in tensors:
            if not isinstance(param, Tensor):
                raise TypeError(
                    "optimizer can only optimize Tensors, but one of the params is " + typename(param)
                )
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    f"parameter group didn't specify a value of required optimization parameter {name}"
                )
            param_group.setdefault(name, default)

        if len({id(p) for p in tensors}) != len(tensors):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; "
                "in future, this will cause an error; "
                "see github.com/pytorch/pytorch/issues/40967 for more information",
                stacklevel=3,
            )

        seen: set[int] = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. "
                    f"cannot add param group {which} to the optimizer"
                )
        if not seen.isdisjoint(id(p) for p in tensors):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ----------------------------------------------------------------------------- gradients
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of the parameters: to None (the default), or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                grad = p._grad
                if grad is None:
                    continue
                if set_to_none:
                    p._grad = None
                else:
                    if grad.grad_fn is not None:
                        grad.detach_()
                    else:
                        grad.requires_grad_(False)
                    grad.zero_()

    # ----------------------------------------------------------------------------- stepping
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update the parameters once; with ``closure``, first call it under ``enable_grad`` and
        return what it returns (the loss). An ``async`` closure needs :meth:`step_async`."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
            if inspect.isawaitable(loss):
                if inspect.iscoroutine(loss):
                    loss.close()  # (never awaited: no "was never awaited" warning)
                raise TypeError(
                    "the closure returned an awaitable: use `await optimizer.step_async(closure)`"
                )
        with no_grad():
            for group in self.param_groups:
                self._update_group(group)
        return loss

    async def step_async(self, closure: Callable[[], Any] | None = None) -> Any:
        """``step`` for a closure that awaits (``await loss.backward()``): call it under
        ``enable_grad``, await its result if awaitable, then step; returns the loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
                if inspect.isawaitable(loss):
                    loss = await loss
        self.step()
        return loss

    def _update_group(self, group: dict[str, Any]) -> None:
        """One group's update (the subclasses' arithmetic)."""
        raise NotImplementedError

    def _with_state(self, group: dict[str, Any], *buffers: str) -> Iterator[tuple[Tensor, dict[str, Any]]]:
        """The parameters of ``group`` that have a gradient, each with its state, which counts
        its steps: on its first step a fresh ``step`` counter, and zeros shaped as the parameter
        for each of ``buffers`` (in PyTorch's order of its state's keys)."""
        for p in group["params"]:
            if p._grad is None:
                continue
            state = self.state[p]
            if len(state) == 0:
                state["step"] = new_step()
                state.update((name, zeros_state(p)) for name in buffers)
            yield p, state

    # ----------------------------------------------------------------------------- state dicts
    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state in PyTorch's layout: ``state`` keyed by parameter index (in the
        order of the groups), ``param_groups`` with ``params`` as those indices. The state-dict
        pre-hooks run first, the post-hooks last (they may replace the dict)."""
        self._state_dict_pre_hooks()
        mapping: dict[int, int] = {}
        start = 0

        def pack_group(group: dict[str, Any]) -> dict[str, Any]:
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            mapping.update(
                {id(p): i for i, p in enumerate(group["params"], start) if id(p) not in mapping}
            )
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {
            (mapping[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()
        }
        return self._state_dict_post_hooks({"state": packed_state, "param_groups": param_groups})

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state dict (this class's, or a PyTorch optimizer's, its tensors as torch or
        aiograd tensors or numpy arrays): state tensors move to their parameter's device and, for
        floating parameters, dtype (``step`` stays as saved), as in PyTorch. The load-state-dict
        pre-hooks see (and may replace) a shallow copy of ``state_dict``; the post-hooks run last."""
        state_dict = self._load_state_dict_pre_hooks(state_dict.copy())
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group "
                "that doesn't match the size of optimizer's group"
            )
        id_map = dict(
            zip(
                chain.from_iterable(g["params"] for g in saved_groups),
                chain.from_iterable(g["params"] for g in groups),
            )
        )
        state: defaultdict[Any, Any] = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                state[id_map[k]] = _cast(id_map[k], v)
            else:
                state[k] = v

        def update_group(group: dict[str, Any], new_group: dict[str, Any]) -> dict[str, Any]:
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        self._load_state_dict_post_hooks()

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_hooks()
        self.defaults.setdefault("differentiable", False)
        for group in self.param_groups:
            for p in group["params"]:
                step_as_tensor(self.state.get(p, {}))
            # (groups pickled by an older version lack the newer options: PyTorch's setdefaults)
            for key, value in self._group_defaults_on_load.items():
                group.setdefault(key, value)

    def __repr__(self) -> str:
        text = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"


def _cast(param: Tensor, value: Any, key: Any = None) -> Any:
    """A loaded state value for ``param`` (PyTorch's ``_cast``): tensors (and numpy arrays and
    torch tensors, read as tensors) to the parameter's device and, but for ``step``, its
    floating dtype; dicts and other iterables item by item; anything else as it is."""
    if isinstance(value, np.ndarray):
        value = Tensor._wrap(value)
    elif (not isinstance(value, Tensor) and callable(getattr(value, "detach", None))
          and callable(getattr(value, "numpy", None))):  # a torch tensor (duck typed: no torch import)
        value = Tensor._wrap(np.array(value.detach().cpu().numpy()))
    if isinstance(value, Tensor):
        if key == "step":
            return value
        if param.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)
    if isinstance(value, dict):
        return {k: _cast(param, v, key=k) for k, v in value.items()}
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
        return type(value)(_cast(param, v) for v in value)  # type: ignore[call-arg]
    return value
