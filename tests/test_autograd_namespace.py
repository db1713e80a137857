"""``aiograd.autograd``: torch.autograd's names, so that a script's ``torch.autograd.X`` ports with
its import alone; each name is aiograd's own object, and ``Variable`` behaves as torch's."""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest

import aiograd as ag

torch = pytest.importorskip("torch")

#: torch.autograd's names a script uses, each with the aiograd object it must be.
SAME = {
    "grad": ag.grad, "backward": ag.backward, "Function": ag.function.Function,
    "no_grad": ag.no_grad, "enable_grad": ag.enable_grad, "set_grad_enabled": ag.set_grad_enabled,
    "inference_mode": ag.inference_mode, "detect_anomaly": ag.detect_anomaly,
    "set_detect_anomaly": ag.set_detect_anomaly, "gradcheck": ag.testing.gradcheck,
    "gradgradcheck": ag.testing.gradgradcheck, "functional": ag.functional, "graph": ag.graph,
    "function": ag.function,
}


@pytest.mark.parametrize("name", sorted(SAME))
def test_names_are_aiogrades_own(name: str) -> None:
    assert hasattr(torch.autograd, name)  # (a name torch has)
    assert getattr(ag.autograd, name) is SAME[name]


@pytest.mark.parametrize(("module", "name"), [
    ("function", "once_differentiable"), ("function", "FunctionCtx"), ("functional", "jacobian"),
    ("functional", "hessian"), ("graph", "saved_tensors_hooks"), ("graph", "save_on_cpu"),
])
def test_submodules_import_under_torchs_paths(module: str, name: str) -> None:
    ours = importlib.import_module(f"aiograd.autograd.{module}")
    assert ours is importlib.import_module(f"aiograd.{module}")
    assert hasattr(importlib.import_module(f"torch.autograd.{module}"), name)
    assert hasattr(ours, name)


async def test_grad_and_function_through_the_namespace() -> None:
    class Cube(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x ** 2

    x = ag.tensor([1.0, -2.0, 0.5], dtype=ag.float64, requires_grad=True)
    (g,) = await ag.autograd.grad(Cube.apply(x).sum(), x)
    np.testing.assert_array_equal(g.numpy(), 3 * x.detach().numpy() ** 2)
    assert await ag.autograd.gradcheck(Cube.apply, (x,))


@pytest.mark.parametrize("requires_grad", [False, True])
def test_variable_is_a_new_leaf_sharing_data(requires_grad: bool) -> None:
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    ty = torch.tensor([1.0, 2.0], requires_grad=True) * 2
    v, tv = ag.autograd.Variable(y, requires_grad=requires_grad), torch.autograd.Variable(ty, requires_grad=requires_grad)
    assert (v.requires_grad, v.is_leaf, v.grad_fn) == (tv.requires_grad, tv.is_leaf, tv.grad_fn) == (requires_grad, True, None)
    with ag.no_grad():
        v.add_(1.0)
    np.testing.assert_array_equal(y.detach().numpy(), [3.0, 5.0])  # shares y's data
    assert isinstance(y, ag.autograd.Variable) and not isinstance(1.0, ag.autograd.Variable)


def test_variable_without_data_and_bad_data() -> None:
    assert ag.autograd.Variable().shape == torch.autograd.Variable().shape == (0,)
    with pytest.raises(TypeError) as ours:
        ag.autograd.Variable([1.0])
    with pytest.raises(TypeError) as theirs:
        torch.autograd.Variable([1.0])
    assert str(ours.value) == str(theirs.value)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ag.autograd.Variable(ag.ones(2), volatile=True)
        torch.autograd.Variable(torch.ones(2), volatile=True)
    assert len(caught) == 2 and str(caught[0].message) == str(caught[1].message)
