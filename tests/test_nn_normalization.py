"""``layer_norm``, ``batch_norm`` and ``group_norm`` of ``aiograd.nn.functional``
(aiograd/nn/_normalization.py): ``OpSpec`` rows through the op factory (gradcheck,
gradgradcheck, values and first and second derivatives against torch, float32, node names),
batch_norm's running statistics against torch over several steps, eval mode, and PyTorch's
errors word for word."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, make_op_tests

import aiograd as ag
import aiograd.nn.functional as F

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough


def nnf(lib: Any) -> Any:
    return F if lib is ag else torch.nn.functional


def _running(lib: Any, like: Any) -> tuple[Any, Any]:
    """Running statistics (not differentiable) for ``like``'s channels, on its device, the same
    values on both libraries."""
    c = like.shape[1]
    mean, var = np.linspace(-0.5, 0.5, c), np.linspace(0.5, 2.0, c)
    return lib.tensor(mean).to(like.device), lib.tensor(var).to(like.device)


NORM_SPECS = [
    OpSpec("layer_norm", lambda lib, x: nnf(lib).layer_norm(x, (4,)), ((3, 4),), grad_fn="NativeLayerNormBackward0"),
    OpSpec("layer_norm_affine", lambda lib, x, w, b: nnf(lib).layer_norm(x, (3, 4), w, b, eps=1e-3),
           ((2, 3, 4), (3, 4), (3, 4)), grad_fn="NativeLayerNormBackward0", op="layer_norm"),
    OpSpec("layer_norm_weight_only", lambda lib, x, w: nnf(lib).layer_norm(x, [5], w), ((2, 2, 5), (5,)),
           grad_fn="NativeLayerNormBackward0", op="layer_norm"),
    OpSpec("batch_norm", lambda lib, x, w, b: nnf(lib).batch_norm(x, None, None, w, b, training=True),
           ((4, 3), (3,), (3,)), grad_fn="NativeBatchNormBackward0"),
    OpSpec("batch_norm_spatial", lambda lib, x, w, b: nnf(lib).batch_norm(x, *_running(lib, x), w, b, True, 0.2, 1e-3),
           ((2, 3, 2, 2), (3,), (3,)), grad_fn="NativeBatchNormBackward0", op="batch_norm"),
    OpSpec("batch_norm_plain", lambda lib, x: nnf(lib).batch_norm(x, None, None, training=True),
           ((3, 2, 4),), grad_fn="NativeBatchNormBackward0", op="batch_norm"),
    OpSpec("batch_norm_eval", lambda lib, x, w, b: nnf(lib).batch_norm(x, *_running(lib, x), w, b),
           ((4, 3, 2), (3,), (3,)), grad_fn="NativeBatchNormBackward0", op="batch_norm"),
    OpSpec("group_norm", lambda lib, x, w, b: nnf(lib).group_norm(x, 2, w, b), ((2, 4, 3), (4,), (4,)),
           grad_fn="NativeGroupNormBackward0"),
    OpSpec("group_norm_plain", lambda lib, x: nnf(lib).group_norm(x, 3, eps=1e-2), ((2, 6, 2, 2),),
           grad_fn="NativeGroupNormBackward0", op="group_norm"),
]

globals().update(make_op_tests(NORM_SPECS))


@requires_torch
@pytest.mark.parametrize("momentum", [0.1, 0.5])
async def test_batch_norm_running_stats_follow_torch_over_steps(momentum: float) -> None:
    rng = np.random.default_rng(4)
    rm, rv = ag.zeros(3, dtype=ag.float64), ag.ones(3, dtype=ag.float64)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    w = ag.tensor(rng.standard_normal(3), requires_grad=True)
    tw = torch.tensor(w.detach().numpy(), requires_grad=True)
    for step in range(5):
        data = rng.standard_normal((4, 3, 5)) * (step + 1) + step
        x, tx = ag.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
        version = rm._version
        out = F.batch_norm(x, rm, rv, w, None, True, momentum)
        tout = torch.nn.functional.batch_norm(tx, trm, trv, tw, None, True, momentum)
        assert rm._version == version + 1  # updated in place, as torch's
        np.testing.assert_allclose(rm.numpy(), trm.numpy(), rtol=1e-12)
        np.testing.assert_allclose(rv.numpy(), trv.numpy(), rtol=1e-12)
        np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-10, atol=1e-12)
        gx, gw = await ag.grad((out * out).sum(), [x, w])
        tgx, tgw = torch.autograd.grad((tout * tout).sum(), [tx, tw])
        np.testing.assert_allclose(gx.numpy(), tgx.numpy(), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(gw.numpy(), tgw.numpy(), rtol=1e-9)
    # eval mode uses them and leaves them alone
    data = rng.standard_normal((2, 3, 5))
    x, tx = ag.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    out = F.batch_norm(x, rm, rv, w, training=False)
    tout = torch.nn.functional.batch_norm(tx, trm, trv, tw, training=False)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
    (gx,) = await ag.grad(out.sum(), [x])
    (tgx,) = torch.autograd.grad(tout.sum(), [tx])
    np.testing.assert_allclose(gx.numpy(), tgx.numpy(), rtol=1e-12)
    np.testing.assert_allclose(rm.numpy(), trm.numpy(), rtol=1e-12)


@requires_torch
def test_batch_norm_float32_running_stats_stay_float32() -> None:
    data = np.random.default_rng(5).standard_normal((6, 2)).astype(np.float32)
    rm, rv = ag.zeros(2, dtype=ag.float32), ag.ones(2, dtype=ag.float32)
    trm, trv = torch.zeros(2), torch.ones(2)
    out = F.batch_norm(ag.tensor(data), rm, rv, training=True)
    tout = torch.nn.functional.batch_norm(torch.tensor(data), trm, trv, training=True)
    assert out.dtype == rm.dtype == rv.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), tout.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rv.numpy(), trv.numpy(), rtol=1e-6)


def _error(fn: Any) -> tuple[type, str]:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type is compared
        return type(e), str(e).replace("torch.Size", "aiograd.Size")
    raise AssertionError("no error")


def _ones(lib: Any, *shape: int) -> Any:
    return lib.ones(*shape, dtype=lib.float64)


ERROR_CASES = {
    "ln_shape": lambda lib, f: f.layer_norm(_ones(lib, 2, 6, 3), (4,)),
    "ln_long_shape": lambda lib, f: f.layer_norm(_ones(lib, 2, 6, 3), (2, 6, 3, 1)),
    "ln_weight": lambda lib, f: f.layer_norm(_ones(lib, 2, 6, 3), (3,), _ones(lib, 4)),
    "ln_bias": lambda lib, f: f.layer_norm(_ones(lib, 2, 6, 3), (3,), None, _ones(lib, 4)),
    "ln_integer": lambda lib, f: f.layer_norm(lib.tensor([[1, 2]]), (2,)),
    "gn_groups": lambda lib, f: f.group_norm(_ones(lib, 2, 6, 3), 4),
    "gn_weight": lambda lib, f: f.group_norm(_ones(lib, 2, 6, 3), 3, _ones(lib, 4)),
    "gn_1d": lambda lib, f: f.group_norm(_ones(lib, 2), 1),
    "gn_one_value": lambda lib, f: f.group_norm(_ones(lib, 1, 2), 2),
    "bn_running_mean": lambda lib, f: f.batch_norm(_ones(lib, 2, 6), _ones(lib, 5), _ones(lib, 6), training=True),
    "bn_running_var": lambda lib, f: f.batch_norm(_ones(lib, 2, 6), _ones(lib, 6), _ones(lib, 5), training=True),
    "bn_weight": lambda lib, f: f.batch_norm(_ones(lib, 2, 6), _ones(lib, 6), _ones(lib, 6), _ones(lib, 5), training=True),
    "bn_one_value": lambda lib, f: f.batch_norm(_ones(lib, 1, 6), _ones(lib, 6), _ones(lib, 6), training=True),
    "bn_eval_no_stats": lambda lib, f: f.batch_norm(_ones(lib, 2, 6), None, None, training=False),
}


@requires_torch
@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_errors_match_torch(case: str) -> None:
    ours = _error(lambda: ERROR_CASES[case](ag, F))
    theirs = _error(lambda: ERROR_CASES[case](torch, torch.nn.functional))
    assert ours == theirs
