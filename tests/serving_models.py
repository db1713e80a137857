"""Model factories for ``python -m aiograd.serving --model serving_models:NAME`` in the tests
(tests/test_serving_chaos.py runs the command with ``tests/`` on ``PYTHONPATH``).

- ``mlp``: a small classifier, 4 inputs to 3 classes, the same weights in every process.
- ``chaos``: ``mlp`` with two inputs that misbehave on demand. An input value ``KILL`` ends the
  process at once in the forward (``os._exit``, as a crash or the kernel's OOM killer would: no
  cleanup, no answer). A row whose first value is ``HOLD`` makes the gradient wait as many
  seconds as its second value says (an ``async def backward`` that sleeps: a slow computation
  that leaves the event loop free, so the server answers ``/metrics`` meanwhile). Any other
  input is answered as ``mlp`` answers it.
- ``not_a_module``: a factory that returns something other than an ``aiograd.nn.Module``.
- ``fails``: a factory that raises.
"""

from __future__ import annotations

import asyncio
import os

import numpy as np

import aiograd
from aiograd import nn

FEATURES, CLASSES = 4, 3
#: The input value that makes ``chaos``' model end its process.
KILL = 12345.0
#: The first value of a row that makes ``chaos``' gradient take (the row's second value) seconds.
HOLD = 777.0


def mlp() -> nn.Module:
    aiograd.manual_seed(0)
    return nn.Sequential(nn.Linear(FEATURES, 8), nn.Tanh(), nn.Linear(8, CLASSES))


class _Hold(aiograd.Function):
    """The identity, whose backward takes ``seconds`` without blocking the loop."""

    @staticmethod
    def forward(ctx, x, seconds):
        ctx.seconds = seconds
        return x.clone()

    @staticmethod
    async def backward(ctx, grad):
        await asyncio.sleep(ctx.seconds)
        return grad, None


class _Chaos(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = mlp()

    def forward(self, x: aiograd.Tensor) -> aiograd.Tensor:
        values = x.detach().numpy()
        if np.any(values == KILL):
            os._exit(1)  # no exception, no cleanup, no answer: the process is gone
        held = values[:, 0] == HOLD
        if held.any():
            x = _Hold.apply(x, float(values[held, 1].max()))
        return self.net(x)


def chaos() -> nn.Module:
    return _Chaos()


def not_a_module() -> object:
    return {"weights": [1.0, 2.0]}


def fails() -> nn.Module:
    raise RuntimeError("the model's weights server is unreachable")
