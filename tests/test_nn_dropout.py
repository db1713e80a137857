"""``aiograd.nn.functional.dropout`` (aiograd/nn/_dropout.py): its mask statistics and scaling,
PyTorch's node, identity cases and errors (against torch), the in-place form, and the mask
replayed by ``aiograd.utils.checkpoint`` in both modes (gradients equal to the plain run's)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, make_op_tests

import aiograd as ag
import aiograd.nn.functional as F
from aiograd._base import _random
from aiograd.utils.checkpoint import checkpoint

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough


def _seeded_dropout(lib: Any, x: Any) -> Any:
    """Dropout with p = 0 (exactly the input) times a fixed op, so the row is deterministic on
    both libraries; the random masks are tested below."""
    nn_f = F if lib is ag else torch.nn.functional
    return nn_f.dropout(x * 2.0, p=0.0) * x


DROPOUT_SPECS = [
    OpSpec("dropout", _seeded_dropout, ((3, 4),), grad_fn="MulBackward0"),
]

globals().update(make_op_tests(DROPOUT_SPECS))


async def test_mask_zeroes_about_p_and_scales_the_rest() -> None:
    _random.manual_seed(0)
    x = ag.ones(200, 100, dtype=ag.float64, requires_grad=True)
    out = F.dropout(x, p=0.3)
    kept = out.detach().numpy() != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(out.detach().numpy()[kept], 1 / 0.7)
    (g,) = await ag.grad(out.sum(), [x])
    np.testing.assert_array_equal(g.numpy(), out.detach().numpy())  # d(x * mask)/dx = mask
    assert out.grad_fn.name() == "MulBackward0"


def test_the_mask_comes_from_the_default_generator() -> None:
    x = ag.ones(5, 6, dtype=ag.float64)
    _random.manual_seed(7)
    a = F.dropout(x, 0.5).numpy()
    _random.manual_seed(7)
    b = F.dropout(x, 0.5).numpy()
    c = F.dropout(x, 0.5).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(b, c)


@requires_torch
@pytest.mark.parametrize("kwargs", [{"p": 0.0}, {"p": 0.5, "training": False}], ids=["p0", "eval"])
def test_identity_cases_return_the_input_as_torch(kwargs: dict[str, Any]) -> None:
    x, tx = ag.ones(3, dtype=ag.float64, requires_grad=True).exp(), torch.ones(3, dtype=torch.float64, requires_grad=True).exp()
    assert F.dropout(x, **kwargs) is x
    assert torch.nn.functional.dropout(tx, **kwargs) is tx


@requires_torch
@pytest.mark.parametrize("inplace", [False, True])
async def test_p_one_zeroes_everything_as_torch(inplace: bool) -> None:
    leaf, tleaf = ag.ones(4, dtype=ag.float64, requires_grad=True), torch.ones(4, dtype=torch.float64, requires_grad=True)
    y, ty = leaf * 2.0, tleaf * 2.0
    out = F.dropout(y, 1.0, inplace=inplace)
    tout = torch.nn.functional.dropout(ty, 1.0, inplace=inplace)
    assert (out is y) == (tout is ty) == inplace
    assert out.grad_fn.name() == tout.grad_fn.name() == "MulBackward0"
    np.testing.assert_array_equal(out.detach().numpy(), tout.detach().numpy())
    (g,) = await ag.grad(out.sum(), [leaf])
    (tg,) = torch.autograd.grad(tout.sum(), [tleaf])
    np.testing.assert_array_equal(g.numpy(), tg.numpy())


async def test_inplace_writes_the_input_with_the_same_mask_as_its_gradient() -> None:
    leaf = ag.ones(10, 10, dtype=ag.float64, requires_grad=True)
    y = leaf * 3.0
    out = F.dropout(y, 0.4, inplace=True)
    assert out is y and y.grad_fn.name() == "MulBackward0"
    (g,) = await ag.grad(out.sum(), [leaf])
    np.testing.assert_allclose(g.numpy(), y.detach().numpy())  # 3 * mask, as the output


def _error(fn: Any) -> tuple[type, str]:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type is compared
        return type(e), str(e)
    raise AssertionError("no error")


@requires_torch
@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_p_outside_0_1_raises_torchs_error(p: float) -> None:
    ours = _error(lambda: F.dropout(ag.ones(3, dtype=ag.float64), p))
    theirs = _error(lambda: torch.nn.functional.dropout(torch.ones(3, dtype=torch.float64), p))
    assert ours == theirs


@requires_torch
def test_integer_input_raises_torchs_error() -> None:
    ours = _error(lambda: F.dropout(ag.tensor([1, 2]), 0.5))
    theirs = _error(lambda: torch.nn.functional.dropout(torch.tensor([1, 2]), 0.5))
    assert ours == theirs


def _block(x: Any, w: Any) -> Any:
    return F.dropout((x @ w).tanh(), 0.5) @ w


@pytest.mark.parametrize("use_reentrant", [True, False])
async def test_checkpoint_replays_the_mask(use_reentrant: bool) -> None:
    """The recomputation draws the forward's mask again: gradients equal the plain run's, and
    the caller's generator continues as if no recomputation had happened."""
    data = np.random.default_rng(1).standard_normal((6, 8))
    wdata = np.random.default_rng(2).standard_normal((8, 8))

    _random.manual_seed(11)
    x, w = ag.tensor(data, requires_grad=True), ag.tensor(wdata, requires_grad=True)
    await _block(x, w).sum().backward()
    plain = (x.grad.numpy().copy(), w.grad.numpy().copy())
    after_plain = _random.generator().random()

    _random.manual_seed(11)
    x, w = ag.tensor(data, requires_grad=True), ag.tensor(wdata, requires_grad=True)
    await checkpoint(_block, x, w, use_reentrant=use_reentrant).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), plain[0])
    np.testing.assert_array_equal(w.grad.numpy(), plain[1])
    assert _random.generator().random() == after_plain
    assert (plain[0] != 0).any()
