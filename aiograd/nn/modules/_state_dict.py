"""``Module``'s state dict (torch/nn/modules/module.py): ``state_dict`` with torch's dotted
keys and ``_metadata``, ``load_state_dict`` with its errors and ``(missing_keys,
unexpected_keys)`` result; a base class of ``Module``, apart so that each file has one job."""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from ..._base._grad_mode import no_grad
from ..._core._node import RemovableHandle
from ..._core._tensor import Tensor
from ..._ops.casting import to
from ..parameter import Parameter

__all__ = ["StateDict"]

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


def _tensor_from(value: Any) -> Any:
    """A state dict value as ``load_state_dict`` copies it: a numpy array (or scalar), or a
    torch tensor (duck typed, torch is never imported: ``detach().cpu().numpy()``), as a Tensor
    of its own; anything else (Tensors, extra state) as it is."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (np.ndarray, np.generic)):
        return Tensor._wrap(np.array(value))
    if callable(getattr(value, "detach", None)) and callable(getattr(value, "numpy", None)):
        return Tensor._wrap(np.array(value.detach().cpu().numpy()))
    return value


def _size(shape: tuple[int, ...]) -> str:
    return f"aiograd.Size({list(shape)})"


class _IncompatibleKeys(NamedTuple):
    """``load_state_dict``'s result: the keys it missed and the ones it did not expect."""

    missing_keys: list[str]
    unexpected_keys: list[str]

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self.missing_keys!r}, unexpected_keys={self.unexpected_keys!r})"

    __str__ = __repr__


class StateDict:
    """``state_dict``, ``load_state_dict`` and their hooks; ``Module`` sets the stores."""

    _version: int = 1
    _parameters: dict[str, Any]
    _buffers: dict[str, Any]
    _non_persistent_buffers_set: set[str]
    _modules: dict[str, Any]
    _state_dict_hooks: dict[int, Any]
    _load_state_dict_post_hooks: dict[int, Any]

    def _save_to_state_dict(self, destination: dict[str, Any], prefix: str, keep_vars: bool) -> None:
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if getattr(type(self), "get_extra_state", StateDict.get_extra_state) is not StateDict.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def get_extra_state(self) -> Any:
        """Extra state to put in ``state_dict()`` (override together with ``set_extra_state``)."""
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called. "
            "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
            "to report this bug."
        )

    def set_extra_state(self, state: Any) -> None:
        """Restore the extra state saved by ``get_extra_state``."""
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called. "
            "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
            "to report this bug."
        )

    def state_dict(
        self, *args: Any, destination: Any = None, prefix: str = "", keep_vars: bool = False
    ) -> dict[str, Any]:
        """An ``OrderedDict`` of every parameter and persistent buffer by dotted name (torch's
        keys), detached unless ``keep_vars``; its ``_metadata`` holds each module's version."""
        if args:  # torch's deprecated positional form: (destination, prefix, keep_vars)
            destination = args[0]
            if len(args) > 1:
                prefix = args[1]
            if len(args) > 2:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()  # type: ignore[attr-defined]
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            hook_result = hook(self, destination, prefix, local_metadata)
            if hook_result is not None:
                destination = hook_result
        return destination

    def _load_from_state_dict(
        self, state_dict: dict[str, Any], prefix: str, local_metadata: dict[str, Any], strict: bool,
        missing_keys: list[str], unexpected_keys: list[str], error_msgs: list[str],
    ) -> None:
        persistent_buffers = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local_name_params = itertools.chain(self._parameters.items(), persistent_buffers.items())
        local_state = {k: v for k, v in local_name_params if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = state_dict[key]
            if not isinstance(input_param, Tensor):
                error_msgs.append(
                    f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like object '
                    f"from checkpoint but received {type(input_param)}"
                )
                continue
            if len(param.shape) == 0 and len(input_param.shape) == 1:
                input_param = input_param[0]  # torch's backward compatibility for 0-d params
            if input_param.shape != param.shape:
                error_msgs.append(
                    f"size mismatch for {key}: copying a param with shape {_size(input_param.shape)} from "
                    f"checkpoint, the shape in current model is {_size(param.shape)}."
                )
                continue
            try:
                with no_grad():
                    if assign:
                        if isinstance(param, Parameter):
                            new = Parameter(input_param, requires_grad=param.requires_grad)
                            setattr(self, name, new)
                        else:
                            setattr(self, name, input_param)
                    else:
                        # onto the parameter's device first (copy_ of a device array into a
                        # host one, or back, needs the move made explicit on CuPy-like devices)
                        param.copy_(to(input_param, param.device))
            except Exception as ex:
                error_msgs.append(
                    f'While copying the parameter named "{key}", whose dimensions in the model are '
                    f"{_size(param.shape)} and whose dimensions in the checkpoint are "
                    f"{_size(input_param.shape)}, an exception occurred : {ex.args}."
                )
        extra_state_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if getattr(type(self), "set_extra_state", StateDict.set_extra_state) is not StateDict.set_extra_state:
            if extra_state_key in state_dict:
                self.set_extra_state(state_dict[extra_state_key])
            elif strict:
                missing_keys.append(extra_state_key)
        elif strict and (extra_state_key in state_dict):
            unexpected_keys.append(extra_state_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_state_key:
                    input_name = key[len(prefix):].split(".", 1)
                    if len(input_name) > 1:
                        if input_name[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def register_load_state_dict_post_hook(self, hook: Callable[[Any, Any], None]) -> RemovableHandle:
        """Run ``hook(module, incompatible_keys)`` after ``load_state_dict`` loads this module;
        it may edit the key lists in place (clearing them silences a strict load's error)."""
        return RemovableHandle.add(self._load_state_dict_post_hooks, hook)

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False) -> Any:
        """Copy parameters and buffers from ``state_dict`` (by torch's dotted names) into this
        module, in place and under no_grad. ``strict``: every key must match, else PyTorch's
        ``RuntimeError`` listing the missing and unexpected keys; size mismatches are errors
        either way. Returns ``(missing_keys, unexpected_keys)`` as a named tuple."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys: list[str] = []
        unexpected_keys: list[str] = []
        error_msgs: list[str] = []
        metadata = getattr(state_dict, "_metadata", None)
        # (torch tensors and numpy arrays load too: a torch state dict ports as it is)
        state_dict = OrderedDict((k, _tensor_from(v)) for k, v in state_dict.items())
        if metadata is not None:
            state_dict._metadata = metadata  # type: ignore[attr-defined]

        def load(module: Any, local_state_dict: dict[str, Any], prefix: str = "") -> None:
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(
                local_state_dict, prefix, local_metadata, True, missing_keys, unexpected_keys, error_msgs
            )
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state_dict = {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)}
                    load(child, child_state_dict, child_prefix)
            incompatible_keys = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in module._load_state_dict_post_hooks.values():
                hook(module, incompatible_keys)

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(
                    0, "Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected_keys))
                )
            if missing_keys:
                error_msgs.insert(
                    0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing_keys))
                )
        if error_msgs:
            raise RuntimeError(
                "Error(s) in loading state_dict for {}:\n\t{}".format(self.__class__.__name__, "\n\t".join(error_msgs))
            )
        return _IncompatibleKeys(missing_keys, unexpected_keys)
