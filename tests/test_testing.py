"""aiograd.testing: gradcheck and gradgradcheck catch wrong formulas and say where."""

from __future__ import annotations

import numpy as np
import pytest

import aiograd as ag
from aiograd.testing import GradcheckError, gradcheck, gradgradcheck


class WrongSquare(ag.Function):
    """x**2 with a backward off by a factor: gradcheck must notice."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x


class FirstOrderOnly(ag.Function):
    """Right first derivative, wrong second (its backward is not differentiable in x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ag.tensor(3 * x.data**2)


async def test_gradcheck_passes_a_right_formula_and_reports_a_wrong_one():
    x = ag.tensor([0.5, -1.5], requires_grad=True)
    assert await gradcheck(lambda t: (t * t).sum(), [x])
    with pytest.raises(GradcheckError) as info:
        await gradcheck(WrongSquare.apply, [x])
    message = str(info.value)
    assert message.startswith("Jacobian mismatch for output 0 with respect to input 0,")
    assert "numerical:" in message and "analytical:" in message
    assert "[[ 1." in message and "[[ 1.5" in message  # 2x vs 3x on the diagonal at x=0.5
    assert await gradcheck(WrongSquare.apply, [x], raise_exception=False) is False


async def test_gradgradcheck_catches_a_wrong_second_derivative():
    x = ag.tensor([0.5, -1.5], requires_grad=True)
    assert await gradcheck(FirstOrderOnly.apply, [x])
    with pytest.raises(GradcheckError):
        await gradgradcheck(FirstOrderOnly.apply, [x])
    assert await gradgradcheck(lambda t: t * t * t, [x])


async def test_gradcheck_handles_non_contiguous_inputs_and_several_outputs():
    base = ag.tensor(np.arange(6.0).reshape(2, 3) / 7.0)
    x = ag.tensor(base.data.T, requires_grad=True)  # a transposed (F-ordered) array
    assert not x.data.flags.c_contiguous or x.data.flags.f_contiguous
    assert await gradcheck(lambda t: (t.exp(), (t * t).sum(0)), [x])


async def test_anomaly_decorator_scopes_the_mode():
    @ag.detect_anomaly()
    def inside() -> bool:
        return ag.is_anomaly_enabled()

    @ag.set_detect_anomaly(True)
    async def inside_async() -> bool:
        return ag.is_anomaly_enabled()

    assert inside() is True and await inside_async() is True
    assert not ag.is_anomaly_enabled()
