"""Every op family on a device whose arrays are not numpy's: the CuPy stand-in of
tests/fake_cupy.py, registered as the device type ``fakecupy``, runs the op tables of
tests/test_devices.py (forward, first and second derivatives) and must give what the CPU gives.

CI has no GPU: this is what keeps the ops device-generic for CUDA there. An op that hands a
device array to numpy (``np.asarray``, ``np.array``: a silent copy to the host on CuPy), mixes a
host array into device math, or tests ``isinstance(x, np.ndarray)`` where a device array comes
fails here as it would on a GPU.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import fake_cupy
import numpy as np
import pytest
import test_devices
import test_inplace_views
import test_nn_functional
import test_ops_indexing
import test_ops_joining
import test_ops_reduction
from helpers import requires_torch, rng, torch

import aiograd as ag
import aiograd.nn.functional as F
from aiograd._devices import _device

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough

NAME = "fakecupy"


@pytest.fixture(scope="module", autouse=True)
def fake_device_type() -> Iterator[None]:
    _device.register_device_type(NAME, fake_cupy.device_type())
    try:
        yield
    finally:
        del _device._SOURCES[NAME]
        _device._LOADED.pop(NAME, None)
        for key in [k for k in _device._interned if k[0] == NAME]:
            del _device._interned[key]


def _host(t: Any) -> Any:
    data = t.data
    return data.get() if type(data) is fake_cupy.FakeArray else data


def _same(cpu: Any, dev_t: Any) -> None:
    if cpu is None:
        assert dev_t is None
        return
    assert dev_t is not None and dev_t.dtype == cpu.dtype and dev_t.shape == cpu.shape
    assert type(dev_t.data) is fake_cupy.FakeArray, f"{type(dev_t.data).__name__} on {dev_t.device}"
    np.testing.assert_array_equal(_host(dev_t), cpu.data)


async def parity(fn: Callable[..., Any], arrays: Sequence[Any], second: bool = True) -> None:
    """``fn`` on ``fakecupy:0`` gives exactly what it gives on the CPU, every result there and
    held in a device array."""
    dev = ag.device(NAME, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cpu = await test_devices._grads(fn, arrays, ag.device("cpu"), second)
        on_dev = await test_devices._grads(fn, arrays, dev, second)
    for a_list, b_list in zip(cpu, on_dev):
        assert len(a_list) == len(b_list)
        for a, b in zip(a_list, b_list):
            _same(a, b)


def test_the_stand_in_behaves_as_cupy() -> None:
    a = fake_cupy.xp.asarray(np.arange(6.0).reshape(2, 3))
    assert not isinstance(a, np.ndarray) and type(a.sum()) is fake_cupy.FakeArray
    with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
        np.asarray(a)
    with pytest.raises(TypeError, match="Unsupported type"):
        a + np.ones(3)
    assert (a + np.float64(1.0)).get().tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert type(np.exp(a)) is fake_cupy.FakeArray and a[np.array([1])].shape == (1, 3)


@pytest.mark.aiograd(backends=["asyncio"])  # op math: the loop variant is irrelevant
@pytest.mark.parametrize("spec", test_devices.SPECS)
async def test_op_specs(spec: Any) -> None:
    await parity(lambda *xs: spec.fn(ag, *xs), spec.arrays(), second=spec.gradgrad)


@pytest.mark.parametrize("case", test_ops_reduction.CASES, ids=str)
async def test_reductions(case: Any) -> None:
    await parity(case.fn, [test_ops_reduction.make_input(case)], second=case.gradgrad)


@pytest.mark.parametrize(("shape", "index"), test_devices.I_CASES)
async def test_indexing(shape: Any, index: Any) -> None:
    await parity(lambda x: x[index] * 1.0, [rng(0).standard_normal(shape)])


@pytest.mark.parametrize("case", test_devices.cases(test_ops_indexing.SELECT_CASES))
async def test_index_select(case: Any) -> None:
    await test_devices.check_index_select(case, parity)


@pytest.mark.parametrize("case", test_devices.cases(test_ops_indexing.GATHER_CASES))
async def test_gather(case: Any) -> None:
    await test_devices.check_gather(case, parity)


@pytest.mark.parametrize("case", test_devices.cases(test_ops_joining.CAT_CASES))
async def test_cat(case: Any) -> None:
    await test_devices.check_cat(case, parity)


@pytest.mark.parametrize("case", test_devices.cases(test_ops_joining.STACK_CASES))
async def test_stack(case: Any) -> None:
    await test_devices.check_stack(case, parity)


@pytest.mark.parametrize("case", test_devices.cases(test_ops_joining.SPLIT_CASES))
async def test_split(case: Any) -> None:
    await test_devices.check_split(case, parity)


@pytest.mark.parametrize("name", [n for n, _ in test_nn_functional.ACTIVATIONS])
async def test_activations(name: str) -> None:
    await test_devices.check_activation(name, parity)


async def test_linear() -> None:
    g = rng(0)
    await parity(F.linear, [g.standard_normal((3, 4)), g.standard_normal((2, 4)), g.standard_normal(2)])


@pytest.mark.parametrize("case", test_devices.cases(test_nn_functional.MSE_CASES))
async def test_mse_loss(case: Any) -> None:
    await test_devices.check_mse_loss(case, parity)


@pytest.mark.parametrize("loss", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("case", test_devices.cases(test_nn_functional.NLL_CASES))
async def test_nll_and_cross_entropy(case: Any, loss: str) -> None:
    await test_devices.check_nll_and_cross_entropy(case, loss, parity)


@pytest.mark.parametrize("case", test_devices.cases(test_nn_functional.PROB_CASES))
async def test_cross_entropy_probabilities(case: Any) -> None:
    await test_devices.check_cross_entropy_probabilities(case, parity)


@pytest.mark.parametrize("sc", test_inplace_views.SCENARIOS, ids=lambda s: s.name)
async def test_inplace_and_view_scenarios(sc: Any) -> None:
    await test_devices.check_inplace_and_view_scenario(sc, parity)


async def test_host_conversions() -> None:
    x = ag.tensor([[1.0, 2.0], [3.0, 4.0]], device=NAME)
    assert type(x.data) is fake_cupy.FakeArray
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]] and x.sum().item() == 10.0
    assert float(x[1, 0]) == 3.0 and bool(x[0, 0]) and int(x[1, 1]) == 4
    assert repr(x) == "tensor([[1., 2.],\n        [3., 4.]], device='fakecupy:0')"
    assert x.cpu().data.tolist() == [[1.0, 2.0], [3.0, 4.0]] and type(x.cpu().data) is np.ndarray
    assert type(ag.tensor(x).data) is fake_cupy.FakeArray and ag.tensor(x, device="cpu").tolist() == x.tolist()
    for like in (ag.zeros_like, ag.ones_like, ag.empty_like, ag.rand_like, ag.randn_like):
        assert type(like(x).data) is fake_cupy.FakeArray


@requires_torch
def test_numpy_of_a_device_tensor_is_torchs_error() -> None:
    # torch's words for a tensor off the CPU ("meta" here: this torch has no CUDA)
    with pytest.raises(TypeError) as t_err:
        torch.ones(1, device="meta").numpy()
    with pytest.raises(TypeError) as a_err:
        ag.ones(1, device=NAME).numpy()
    assert str(a_err.value) == str(t_err.value).replace("meta", f"{NAME}:0")
    with pytest.raises(TypeError, match="can't convert"):
        np.asarray(ag.ones(1, device=NAME))  # __array__ refuses too: no silent copy


# ---------------------------------------------------------------------------- the engine's features
def _dev() -> Any:
    return ag.device(NAME, 0)


async def test_to_and_back_is_differentiable_and_mixing_is_torchs_error() -> None:
    x = ag.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = x.to(NAME) * 2.0
    assert y.device is _dev() and type(y.data) is fake_cupy.FakeArray
    await (y.relu().cpu() * ag.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert type(x.grad.data) is np.ndarray and x.grad.tolist() == [2.0, 0.0, 6.0]
    with pytest.raises(RuntimeError, match=re.escape(
        f"Expected all tensors to be on the same device, but found at least two devices, {NAME}:0 and cpu!"
    )):
        y + ag.ones(3)


async def test_hooks_anomaly_checkpoint_and_statistics() -> None:
    g = rng(4)
    x = ag.tensor(g.standard_normal((4, 4)), device=NAME, requires_grad=True)
    w = ag.tensor(g.standard_normal((4, 4)), device=NAME, requires_grad=True)
    seen: list[Any] = []

    async def doubled(grad: Any) -> Any:
        return grad * 2.0

    h = x @ w
    h.register_hook(lambda grad: seen.append(type(grad.data)))
    h.register_hook(doubled)
    (gx,) = await ag.grad(h.tanh().sum(), [x])
    cx, cw = ag.tensor(_host(x), requires_grad=True), ag.tensor(_host(w))
    (cgx,) = await ag.grad((cx @ cw).tanh().sum(), [cx])
    assert seen == [fake_cupy.FakeArray] and type(gx.data) is fake_cupy.FakeArray
    np.testing.assert_array_equal(_host(gx), 2.0 * cgx.data)
    plain = await ag.grad((x @ w).sin().sum(), [w])
    ckpt = await ag.grad(ag.checkpoint(lambda a, b: (a @ b).sin(), x, w, use_reentrant=False).sum(), [w])
    np.testing.assert_array_equal(_host(ckpt[0]), _host(plain[0]))
    await ag.checkpoint(lambda a, b: (a @ b).sin(), x, w, use_reentrant=True).sum().backward()
    np.testing.assert_array_equal(_host(w.grad), _host(plain[0]))
    bad = ag.tensor([-1.0, 4.0], device=NAME, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # anomaly mode's two warnings (checked in test_anomaly)
        with ag.detect_anomaly(), pytest.raises(RuntimeError, match="returned nan values in its 0th output"):
            await bad.sqrt().sum().backward()
    stats = ag.get_engine().statistics()
    assert stats.graph_tasks_in_flight == 0 and stats.nodes_executed > 0
    assert f"{NAME}:0" in stats.queue_depths


async def test_functional_jacobian_on_a_device() -> None:
    import aiograd.functional as AF

    xd = rng(2).standard_normal(3)
    jac = await AF.jacobian(lambda t: (t * t).sin(), ag.tensor(xd, device=NAME))
    ref = await AF.jacobian(lambda t: (t * t).sin(), ag.tensor(xd))
    assert jac.device is _dev()
    np.testing.assert_array_equal(_host(jac), ref.data)


async def test_gradcheck_on_a_device() -> None:
    import aiograd.testing as T

    x = ag.tensor(rng(6).standard_normal((2, 3)), device=NAME, requires_grad=True)
    w = ag.tensor(rng(7).standard_normal((3, 2)), device=NAME, requires_grad=True)
    assert await T.gradcheck(lambda a, b: (a @ b).tanh() * a.sum(), (x, w))
    assert await T.gradgradcheck(lambda a, b: (a @ b).tanh() * a.sum(), (x, w))
    with pytest.raises(T.GradcheckError, match="Jacobian mismatch"):
        await T.gradcheck(_WrongGrad.apply, (x,))


class _WrongGrad(ag.Function):
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return x * 2.0

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        return g * 3.0


OPS_WITH_A_SCALAR = [
    lambda a, b: a + b, lambda a, b: b - a, lambda a, b: a * b, lambda a, b: a / b, lambda a, b: a**b,
    lambda a, b: ag.maximum(a, b), lambda a, b: ag.where(a > b, a, b), lambda a, b: (a > b) * a,
]


@pytest.mark.parametrize("op", OPS_WITH_A_SCALAR)
async def test_a_cpu_scalar_tensor_joins_a_device_op(op: Callable[..., Any]) -> None:
    """PyTorch's rule (a 0-dim CPU tensor next to a device tensor is a scalar, moved there):
    on a device whose arrays are not numpy's the move must come before the math."""
    xd = np.array([1.0, 2.5, 0.5])
    results = []
    for dev in ("cpu", NAME):
        x = ag.tensor(xd, device=dev, requires_grad=True)
        s = ag.tensor(1.5, requires_grad=True)
        out = op(x, s)
        assert out.device == ag.device(dev if dev == "cpu" else f"{dev}:0")
        await out.sum().backward()
        assert x.grad.device == out.device and (s.grad is None or s.grad.device == "cpu")
        results.append((_host(out), _host(x.grad), None if s.grad is None else s.grad.item()))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(RuntimeError, match=re.escape(
        f"Expected all tensors to be on the same device, but found at least two devices, {NAME}:0 and cpu!"
    )):
        op(ag.tensor(xd, device=NAME), ag.tensor([1.5, 1.5, 1.5]))
