"""Shared by the ports of PyTorch's own autograd tests (``test/test_autograd.py``), one module
a theme (``tests/test_torch_port_*.py``): value comparison as torch's ``assertEqual``,
exact-message ``raises``, PyTorch's messages, ``graph_desc`` and the Functions several use.

Each test carries the name of the torch test it ports and keeps its assertions (values, error
types, exact messages, taken from torch 2.13). What differs by design, once for all:

- aiograd's default dtype is float64 (torch's test file sets ``torch.set_default_dtype(double)``
  too, so the values agree);
- tensors hold numpy arrays: ``.data`` is the array itself, not a Tensor;
- ``backward()`` and ``grad()`` are awaited (``aiograd.sync`` blocks, for sync tests);
- messages name aiograd where torch's name torch (``aiograd.DoubleTensor``, ``aiograd.set_...``).

Tests about CUDA, sparse, complex, forward-mode AD, torch.compile, nested tensors, the profiler
and ops aiograd does not have are not ported. A port that fails because of a feature aiograd
does not have is marked ``xfail(strict=True)`` with the reason.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import aiograd as ag
from aiograd.function import once_differentiable


def close(a, b, rtol: float = 1e-7, atol: float = 1e-9) -> bool:
    """Values equal as torch's ``assertEqual`` compares float64 tensors."""
    a = a.data if isinstance(a, ag.Tensor) else np.asarray(a)
    b = b.data if isinstance(b, ag.Tensor) else np.asarray(b)
    return a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol)


def raises(exc: type[BaseException], message: str):
    return pytest.raises(exc, match=re.escape(message))


NOT_REQUIRE_GRAD = "element 0 of tensors does not require grad and does not have a grad_fn"
BACKWARD_TWICE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)


def graph_desc(fn) -> str:
    if fn is None:
        return "None"
    result = type(fn).__name__ + "("
    next_functions = fn.next_functions
    for next_fn, _ in next_functions:
        result += graph_desc(next_fn)
        result += ", "
    if next_functions:
        result = result[:-2]
    return result + ")"


def undefined_grad(t):
    """torch._C._functions.UndefinedGrad(): an identity whose backward sends an undefined grad."""

    class UndefinedGrad(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            return None

    return UndefinedGrad.apply(t)


class SimulateBackwardError(ag.Function):
    @staticmethod
    def forward(ctx, input):
        return input.clone()

    @staticmethod
    @once_differentiable
    def backward(ctx, input):
        raise Exception("Simulate error on backward pass")


class IdentityFunction(ag.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g
