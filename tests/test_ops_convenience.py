"""Torch conveniences: t, expand_as, view_as, reshape_as, contiguous, square, std, norm, dtypes."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, make_op_tests

import aiograd as ag
from aiograd.testing import gradcheck

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough

SPECS = [
    OpSpec("t", lambda lib, x: x.t() * 1.0, ((2, 3),)),
    OpSpec("t_names_its_node", lambda lib, x: x.t(), ((2, 3),), grad_fn="TBackward0", op="t"),
    OpSpec("t_of_a_vector", lambda lib, x: x.t(), ((3,),), grad_fn="TBackward0", op="t"),
    OpSpec("t_1d", lambda lib, x: x.t() * 2.0, ((3,),)),
    OpSpec("expand_as", lambda lib, x, y: x.expand_as(y) * y, ((3, 1), (2, 3, 4))),
    OpSpec("view_as", lambda lib, x, y: x.view_as(y) * y, ((2, 6), (3, 4))),
    OpSpec("reshape_as", lambda lib, x, y: x.reshape_as(y) + y, ((2, 6), (4, 3))),
    OpSpec("contiguous", lambda lib, x: x.t().contiguous() * 3.0, ((2, 3),)),
    OpSpec("square", lambda lib, x: x.square(), ((2, 3),), grad_fn="PowBackward0"),
    OpSpec("std_all", lambda lib, x: x.std(), ((3, 4),)),
    OpSpec("std_dim", lambda lib, x: x.std(dim=1, keepdim=True), ((3, 4),)),
    OpSpec("std_correction0", lambda lib, x: x.std(0, correction=0), ((3, 4),)),
    OpSpec("norm", lambda lib, x: x.norm(), ((3, 4),), grad_fn="LinalgVectorNormBackward0"),
    OpSpec("norm_dim", lambda lib, x: x.norm(dim=1), ((3, 4),), grad_fn="LinalgVectorNormBackward0"),
    OpSpec("norm_dims_keepdim", lambda lib, x: x.norm(dim=(0, 2), keepdim=True), ((2, 3, 4),)),
    OpSpec("norm_p1", lambda lib, x: x.norm(p=1, dim=0), ((3, 4),), domain=(0.2, 2.0), gradgrad=False,
           why="|x| has a kink at 0: second derivatives are zero almost everywhere, torch's too"),
    OpSpec("norm_p3", lambda lib, x: x.norm(p=3), ((3, 4),), domain=(0.2, 2.0)),
    OpSpec("norm_inf", lambda lib, x: x.norm(p=float("inf"), dim=1), ((3, 4),), gradgrad=False,
           why="max is piecewise linear: no second derivative to check"),
    OpSpec("norm_inf_dims", lambda lib, x: x.norm(p=float("inf"), dim=(0, 1)), ((3, 4, 2),), gradgrad=False,
           why="max is piecewise linear: no second derivative to check"),
    OpSpec("pos", lambda lib, x: +x * 2.0, ((2,),), op=None)  # unary + is no op: the tensor itself,
]

globals().update(make_op_tests(SPECS))


async def test_norm_gradient_at_zero_is_zero_like_torch():
    x = ag.zeros(3, requires_grad=True)
    await x.norm().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]
    y = ag.tensor([[0.0, 0.0], [3.0, 4.0]], requires_grad=True)
    assert await gradcheck(lambda v: v.norm(dim=1)[1:], [y])
    await y.norm(dim=1).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [[0.0, 0.0], [0.6, 0.8]])


@requires_torch
async def test_norm_double_backward_matches_torch_away_from_zero():
    # At a zero row torch's second derivative is nan; aiograd keeps the zero subgradient.
    a = ag.tensor([0.0, 0.0, 1.0, 2.0], requires_grad=True)
    ta = torch.tensor([0.0, 0.0, 1.0, 2.0], dtype=torch.float64, requires_grad=True)
    (g,) = await ag.grad(a.reshape(2, 2).norm(dim=1).sum(), a, create_graph=True)
    (tg,) = torch.autograd.grad(ta.reshape(2, 2).norm(dim=1).sum(), ta, create_graph=True)
    (gg,) = await ag.grad((g * g).sum(), a)
    (tgg,) = torch.autograd.grad((tg * tg).sum(), ta)
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy())
    np.testing.assert_allclose(gg.numpy()[2:], tgg.numpy()[2:], atol=1e-12)
    assert gg.tolist()[:2] == [0.0, 0.0]


def test_t_rejects_more_than_two_dims():
    with pytest.raises(RuntimeError, match="t\\(\\) expects a tensor with <= 2 dimensions, but self is 3D"):
        ag.zeros(1, 2, 3).t()


def test_dtype_names_and_predicates():
    assert ag.float32 == np.float32 and ag.double == np.float64 and ag.half == np.float16
    x = ag.zeros(2, dtype=ag.float32)
    assert x.dtype == ag.float32 and x.is_floating_point() and not ag.zeros(2, dtype=ag.int64).is_floating_point()
    assert ag.is_tensor(x) and not ag.is_tensor(x.data)
    assert x.type_as(ag.zeros(1)).dtype == ag.float64
    assert x.contiguous() is x and x.is_contiguous()


REPEAT_SPECS = [
    OpSpec("repeat", lambda lib, x: x.repeat(2, 3), ((2, 3),), grad_fn="RepeatBackward0"),
    OpSpec("repeat_new_dims", lambda lib, x: x.repeat(2, 1, 3), ((3,),), grad_fn="RepeatBackward0"),
    OpSpec("repeat_ones", lambda lib, x: x.repeat(1, 1) * 2.0, ((2, 2),)),
]
globals().update({f"{k}_repeat": v for k, v in make_op_tests(REPEAT_SPECS).items()})


def test_repeat_rejects_fewer_dims():
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims can not be smaller"):
        ag.zeros(2, 2).repeat(2)
