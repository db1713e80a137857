"""``torch.autograd``'s namespace, so that code written against it ports by its import alone:
``torch.autograd.grad(...)``, ``from torch.autograd import Function``,
``torch.autograd.functional.jacobian``, ``torch.autograd.graph.saved_tensors_hooks``,
``from torch.autograd.function import once_differentiable``.

Every name here is aiograd's own, re-exported: ``grad``/``backward`` (awaited),
:class:`~aiograd.function.Function`, the grad-mode and anomaly switches, ``gradcheck``/
``gradgradcheck`` (awaited, from :mod:`aiograd.testing`) and the submodules ``function``,
``functional`` and ``graph`` (which are :mod:`aiograd.function`, :mod:`aiograd.functional` and
:mod:`aiograd.graph`, importable under this package's name too). ``Variable`` is torch's
deprecated wrapper: ``Variable(t, requires_grad=True)`` is a new leaf sharing ``t``'s data.
Not here: ``forward_ad`` (aiograd has no forward mode; :func:`aiograd.func.jvp` computes a
Jacobian-vector product by double backward) and ``torch.autograd.profiler`` (aiograd's traces are
:mod:`aiograd.profiler`).
"""

from __future__ import annotations

import sys as _sys
import warnings as _warnings
from typing import Any as _Any

from .. import function, functional, graph
from .._api._autograd import backward, grad
from .._base._grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
from .._core._anomaly import detect_anomaly, set_detect_anomaly
from .._core._tensor import Tensor as _Tensor
from ..function import Function
from ..testing import gradcheck, gradgradcheck

__all__ = [
    "Function", "Variable", "backward", "detect_anomaly", "enable_grad", "function", "functional", "grad",
    "gradcheck", "gradgradcheck", "graph", "inference_mode", "no_grad", "set_detect_anomaly",
    "set_grad_enabled",
]

# `import aiograd.autograd.function` and `from aiograd.autograd.graph import ...` find the modules
# this package re-exports (one module object under two names, so isinstance checks agree).
for _module in (function, functional, graph):
    _sys.modules.setdefault(f"{__name__}.{_module.__name__.rsplit('.', 1)[-1]}", _module)


class _VariableMeta(type):
    def __instancecheck__(cls, instance: object) -> bool:  # torch: every tensor is a Variable
        return isinstance(instance, _Tensor)


class Variable(metaclass=_VariableMeta):
    """torch's deprecated ``Variable(data=None, requires_grad=False, volatile=False)``: a new leaf
    tensor sharing ``data``'s array (``data.detach().requires_grad_(requires_grad)``), an empty
    one without ``data``; ``isinstance(t, Variable)`` holds for every tensor. ``volatile`` has no
    effect (torch's UserWarning says so)."""

    def __new__(cls, data: _Tensor | None = None, requires_grad: bool = False, volatile: bool = False) -> _Any:
        if volatile:
            _warnings.warn(
                "volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                UserWarning, stacklevel=2,
            )
        if data is None:
            from .._api._factories import tensor

            return tensor([]).requires_grad_(requires_grad)
        if not isinstance(data, _Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad)
