"""``aiograd.nn`` (torch.nn): ``Module`` and ``Parameter``, the containers, the layers, the
activations and losses as modules, ``init``, ``utils`` (gradient clipping, weights in
safetensors/npz files) and ``functional``."""

from . import functional, init, modules, parameter, utils

# The layers, and the one list of them, are nn/modules/__init__.py's.
from .modules import *  # noqa: F403
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = ["Buffer", "Parameter", "UninitializedBuffer", "UninitializedParameter", "functional", "init", "modules", "parameter", "utils"]
__all__ += modules.__all__
