"""CUDA devices (issue 12): ``aiograd.device("cuda")``, ``aiograd.cuda``, ``Tensor.cuda``.

Two halves. The first runs everywhere (CI has no GPU): without CuPy, ``is_available()`` is False
and ``device("cuda")`` raises the install message, importing aiograd imports no CuPy, and with a
CuPy that sees no GPU (a stand-in module) devices can be made but data cannot be placed. The
second needs CuPy and a GPU (skipped otherwise, with the reason): every op family on ``cuda:0``
against the CPU (the tables of tests/test_devices.py), the engine's features on CUDA tensors,
side streams, and torch's CUDA where it is available.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import types
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, rng, torch

import aiograd as ag
from aiograd._base import _dtypes
from aiograd._devices import _cuda_runtime, _device

INSTALL = re.escape(_cuda_runtime.INSTALL_MESSAGE)


@pytest.fixture
def fresh_cuda_type(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The cuda type unloaded (as in a fresh process), and everything restored afterwards."""
    loaded = _device._LOADED.pop("cuda", None)
    interned = {k: v for k, v in _device._interned.items() if k[0] == "cuda"}
    for key in interned:
        del _device._interned[key]
    module = sys.modules.pop("aiograd._devices.cuda", None)
    usable = set(_cuda_runtime._usable)
    _cuda_runtime._usable.clear()
    array_types = set(_dtypes.DEVICE_ARRAY_TYPES)
    stream_devices = set(_device._stream_devices)  # (devices made here must not outlive the test)
    try:
        yield
    finally:
        _device._stream_devices.clear()
        _device._stream_devices.update(stream_devices)
        _device._LOADED.pop("cuda", None)
        if loaded is not None:
            _device._LOADED["cuda"] = loaded
        for key in [k for k in _device._interned if k[0] == "cuda"]:
            del _device._interned[key]
        _device._interned.update(interned)
        sys.modules.pop("aiograd._devices.cuda", None)
        if module is not None:
            sys.modules["aiograd._devices.cuda"] = module
        _cuda_runtime._usable.clear()
        _cuda_runtime._usable.update(usable)
        _dtypes.DEVICE_ARRAY_TYPES.clear()
        _dtypes.DEVICE_ARRAY_TYPES.update(array_types)


@pytest.fixture
def no_cupy(monkeypatch: pytest.MonkeyPatch, fresh_cuda_type: None) -> None:
    """``import cupy`` fails, as where CuPy is not installed."""
    monkeypatch.setitem(sys.modules, "cupy", None)


# ============================================================================ without a GPU
def test_importing_aiograd_imports_no_cupy() -> None:
    code = "import sys, aiograd, aiograd.cuda; print('cupy' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert out.stdout.split() == ["False"]


@requires_torch
def test_without_cupy_nothing_is_available_and_nothing_raises(no_cupy: None) -> None:
    # torch here is a CPU build: the same answers, and no exception either
    assert ag.cuda.is_available() is False and torch.cuda.is_available() is False
    assert ag.cuda.device_count() == 0 == torch.cuda.device_count()


def test_without_cupy_a_cuda_device_raises_what_to_install(no_cupy: None) -> None:
    for _ in range(2):  # a failed import registers nothing: the same error again
        with pytest.raises(RuntimeError, match=INSTALL):
            ag.device("cuda")
        assert "cuda" not in _device._LOADED and "aiograd._devices.cuda" not in sys.modules
    with pytest.raises(RuntimeError, match=INSTALL):
        ag.zeros(2, device="cuda:0")
    with pytest.raises(RuntimeError, match=INSTALL):
        ag.ones(2).cuda()
    with pytest.raises(RuntimeError, match=INSTALL):
        ag.cuda.Stream()
    with pytest.raises(RuntimeError, match=INSTALL):
        ag.cuda.current_device()


@requires_torch
def test_stream_none_does_nothing_as_in_torch() -> None:
    with torch.cuda.stream(None) as t_ctx, ag.cuda.stream(None) as a_ctx:
        assert a_ctx is None
        assert ag.ones(2).device is ag.device("cpu")
    del t_ctx


@requires_torch
def test_cuda_to_a_cpu_device_is_torchs_error() -> None:
    for call in (lambda lib: lib.ones(2).cuda("cpu"), lambda lib: lib.ones(2).cuda(lib.device("cpu"))):
        with pytest.raises(RuntimeError) as t_err:
            call(torch)
        with pytest.raises(RuntimeError) as a_err:
            call(ag)
        assert str(a_err.value) == str(t_err.value) == "Invalid device, must be cuda device"


def _fake_cupy(error: Exception) -> types.ModuleType:
    """A stand-in for a CuPy installed on a machine without a usable GPU: every CUDA runtime
    call raises ``error`` (as CuPy's ``CUDARuntimeError`` does without a driver)."""

    def fail(*args: Any) -> Any:
        raise error

    cupy = types.ModuleType("cupy")
    cupy.ndarray = type("ndarray", (), {})  # type: ignore[attr-defined]
    cupy.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        runtime=types.SimpleNamespace(getDeviceCount=fail, getDevice=fail),
        Device=fail, get_current_stream=fail, Stream=types.SimpleNamespace(null=None, ptds=None),
    )
    return cupy


def test_cupy_without_a_gpu_makes_devices_but_places_no_data(
    monkeypatch: pytest.MonkeyPatch, fresh_cuda_type: None
) -> None:
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")))
    assert ag.cuda.is_available() is False and ag.cuda.device_count() == 0
    dev = ag.device("cuda:0")  # as torch.device("cuda:0"): the object alone needs no GPU
    assert dev.type == "cuda" and dev.index == 0 and str(dev) == "cuda:0"
    no_gpu = re.escape(
        "aiograd found no usable CUDA GPU through CuPy (is there an NVIDIA GPU, and a driver "
        "recent enough for this CuPy build?): RuntimeError: cudaErrorNoDevice: no CUDA-capable "
        "device is detected"
    )
    for place in (lambda: ag.zeros(2, device="cuda"), lambda: ag.ones(2).cuda(),
                  lambda: ag.ones(2).to("cuda:0"), lambda: ag.cuda.current_stream(),
                  lambda: ag.cuda.synchronize(0)):
        with pytest.raises(RuntimeError, match=no_gpu):
            place()


# ============================================================================ on a GPU
def _gpu_reason() -> str | None:
    try:
        import cupy  # noqa: F401
    except ImportError:
        return "needs CuPy (pip install 'aiograd[cuda]')"
    if not ag.cuda.is_available():
        return "needs a CUDA GPU (CuPy sees none)"
    return None


requires_gpu = pytest.mark.skipif(_gpu_reason() is not None, reason=str(_gpu_reason()))
requires_torch_cuda = pytest.mark.skipif(
    torch is None or not torch.cuda.is_available(), reason="needs torch with CUDA and a GPU"
)


def _host(t: Any) -> np.ndarray[Any, Any]:
    return t.detach().cpu().data if isinstance(t, ag.Tensor) else np.asarray(t)


def _close(cpu: Any, gpu: Any, rtol: float | None = None) -> None:
    """Equal within float tolerance (GPU kernels sum and fuse in other orders than numpy's),
    on the GPU and in a device array."""
    if cpu is None:
        assert gpu is None
        return
    assert gpu is not None and gpu.dtype == cpu.dtype and gpu.shape == cpu.shape
    assert gpu.device.type == "cuda" and not isinstance(gpu.data, np.ndarray)
    double = cpu.dtype == np.float64 or cpu.dtype.kind != "f"
    if rtol is None:
        rtol = 1e-7 if double else 1e-4
    np.testing.assert_allclose(_host(gpu), _host(cpu), rtol=rtol, atol=1e-10 if double else 1e-5)


@requires_gpu
def test_factories_place_data_on_the_gpu() -> None:
    import cupy

    cuda0 = ag.device("cuda:0")
    for t in (ag.zeros(2, 3, device="cuda"), ag.ones(2, device=cuda0), ag.randn(4, device="cuda:0"),
              ag.tensor([1.0, 2.0], device="cuda"), ag.arange(5, device="cuda"),
              ag.zeros_like(ag.ones(3, device="cuda")), ag.full((2,), 3.0, device="cuda")):
        assert t.device is cuda0 and isinstance(t.data, cupy.ndarray)
    x = ag.tensor([[1.0, 2.0], [3.0, 4.0]], device="cuda")
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]] and x.sum().item() == 10.0 and float(x[0, 1]) == 2.0
    assert repr(x) == "tensor([[1., 2.],\n        [3., 4.]], device='cuda:0')"
    with pytest.raises(TypeError, match=re.escape(
        "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."
    )):
        x.numpy()


@requires_gpu
async def test_to_cuda_cpu_round_trip_is_differentiable() -> None:
    x = ag.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = x.cuda() * 2.0
    assert y.device == "cuda:0" and y.grad_fn.name() == "MulBackward0"
    z = (y.relu().cpu() * ag.tensor([1.0, 2.0, 3.0])).sum()
    await z.backward()
    assert x.grad.device == "cpu" and x.grad.tolist() == [2.0, 0.0, 6.0]
    w = ag.ones(3, device="cuda", requires_grad=True)
    await (w.to("cpu") * 3.0).sum().backward()
    assert w.grad.device == "cuda:0" and w.grad.tolist() == [3.0, 3.0, 3.0]


@requires_gpu
def test_mixed_devices_raise_torchs_error() -> None:
    with pytest.raises(RuntimeError, match=re.escape(
        "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
    )):
        ag.ones(2, device="cuda") + ag.ones(2)


# ---------------------------------------------------------------------------- every op family
def _op_params() -> list[Any]:
    try:
        import test_devices
    except ImportError:  # pragma: no cover
        return []
    return test_devices.SPECS


async def _parity(fn: Callable[..., Any], arrays: Sequence[Any], second: bool = True) -> None:
    """``fn`` on ``cuda:0`` gives what it gives on the CPU (within float tolerance), forward,
    first and second derivatives, every result on ``cuda:0`` (tests/test_devices.py's
    ``_grads``, which checks the devices)."""
    import test_devices

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cpu = await test_devices._grads(fn, arrays, ag.device("cpu"), second)
        gpu = await test_devices._grads(fn, arrays, ag.device("cuda:0"), second)
    for a_list, b_list in zip(cpu, gpu):
        assert len(a_list) == len(b_list)
        for a, b in zip(a_list, b_list):
            _close(a, b)


@requires_gpu
@pytest.mark.parametrize("spec", _op_params())
async def test_op_specs_on_cuda(spec: Any) -> None:
    await _parity(lambda *xs: spec.fn(ag, *xs), spec.arrays(), second=spec.gradgrad)


@requires_gpu
async def test_losses_indexing_and_inplace_on_cuda() -> None:
    import test_nn_functional

    import aiograd.nn.functional as F

    x = rng(0).standard_normal((4, 3))
    target = np.array([1, 0, 2, 1])
    await _parity(lambda t: F.cross_entropy(t, ag.tensor(target)), [x])
    await _parity(lambda t: F.nll_loss(t.log_softmax(1), target, weight=ag.tensor([1.0, 2.0, 0.5])), [x])
    await _parity(lambda t: F.mse_loss(t, ag.zeros(4, 3)), [x])
    for _name, call in test_nn_functional.ACTIVATIONS:
        await _parity(lambda t, call=call: call(F, t), [x])
    await _parity(lambda t: t[ag.tensor([0, 2])] * t[1:3, ::2].sum(), [x])
    await _parity(lambda t: t.gather(1, ag.tensor([[0], [2], [1], [1]])), [x])

    def inplace(t: Any) -> Any:
        y = t * 1
        y[1] = 0.0
        y[:, 0].zero_()
        y.relu_()
        return y.exp()

    await _parity(inplace, [x])


# ---------------------------------------------------------------------------- the engine
@requires_gpu
async def test_grad_hooks_anomaly_checkpoint_and_statistics_on_cuda() -> None:
    x = ag.randn(8, 8, device="cuda", requires_grad=True)
    w = ag.randn(8, 8, device="cuda", requires_grad=True)
    seen: list[Any] = []

    async def async_hook(g: Any) -> Any:
        await asyncio.sleep(0)
        return g * 2.0

    h = x @ w
    h.register_hook(lambda g: seen.append(g.device))
    h.register_hook(async_hook)
    (gx,) = await ag.grad(h.tanh().sum(), [x], retain_graph=True)
    assert seen == [ag.device("cuda:0")] and gx.device == "cuda:0"
    cpu_x, cpu_w = x.detach().cpu().requires_grad_(), w.detach().cpu()
    (cpu_gx,) = await ag.grad(((cpu_x @ cpu_w) * 1.0).tanh().sum(), [cpu_x])
    np.testing.assert_allclose(_host(gx), 2.0 * _host(cpu_gx), rtol=1e-6)
    # checkpoint: the same gradients, recomputing on the GPU
    plain = await ag.grad((x @ w).sin().sum(), [w])
    ckpt = await ag.grad(ag.checkpoint(lambda a, b: (a @ b).sin(), x, w, use_reentrant=False).sum(), [w])
    np.testing.assert_allclose(_host(ckpt[0]), _host(plain[0]), rtol=1e-6)
    # anomaly mode's NaN check sees NaNs in device memory
    bad = ag.tensor([-1.0, 4.0], device="cuda", requires_grad=True)
    with ag.detect_anomaly(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="returned nan values in its 0th output"):
            await bad.sqrt().sum().backward()
    assert ag.get_engine().statistics() is not None


@requires_gpu
async def test_a_cancelled_cuda_backward_leaves_the_engine_usable() -> None:
    x = ag.randn(256, 256, device="cuda", requires_grad=True)
    y = x
    for _ in range(50):
        y = (y @ x).tanh()
    task = asyncio.create_task(y.sum().backward())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    x.grad = None
    await (x * 2.0).sum().backward()
    assert x.grad.tolist() == np.full((256, 256), 2.0).tolist()


@requires_gpu
async def test_side_stream_forward_then_backward_matches_the_cpu() -> None:
    g = rng(3)
    xd, wd = g.standard_normal((64, 32)), g.standard_normal((32, 16))
    x = ag.tensor(xd, device="cuda", requires_grad=True)
    w = ag.tensor(wd, device="cuda", requires_grad=True)
    side = ag.cuda.Stream()
    assert side != ag.cuda.default_stream() and side == side and hash(side) == hash(side)
    assert ag.cuda.current_stream() == ag.cuda.default_stream()
    with ag.cuda.stream(side):
        assert ag.cuda.current_stream() == side
        loss = ((x @ w).relu() ** 2).sum()
    assert ag.cuda.current_stream() == ag.cuda.default_stream()
    await loss.backward()  # launched on ``side``; the caller's stream waits for it at the end
    cx, cw = ag.tensor(xd, requires_grad=True), ag.tensor(wd, requires_grad=True)
    await ((cx @ cw).relu() ** 2).sum().backward()
    _close(cx.grad, x.grad)
    _close(cw.grad, w.grad)


@requires_gpu
async def test_the_loop_serves_other_coroutines_while_the_gpu_works() -> None:
    x = ag.randn(2048, 2048, device="cuda", dtype=np.float32, requires_grad=True)
    y = x
    for _ in range(20):
        y = y @ x
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    await y.sum().backward()
    task.cancel()
    assert x.grad is not None and ticks > 1


@requires_gpu
async def test_events_and_completion_callbacks() -> None:
    from aiograd._devices import cuda as cuda_type

    s = ag.cuda.Stream()
    e = s.record_event()
    assert isinstance(e, ag.cuda.Event) and e.device_index == 0
    loop = asyncio.get_running_loop()
    done: asyncio.Future[str] = loop.create_future()
    cuda_type.call_when_done(e, lambda: loop.call_soon_threadsafe(done.set_result, "fired"))
    assert await asyncio.wait_for(done, 10) == "fired" and e.query()
    never = ag.cuda.Event()
    assert never.query()
    fired: list[int] = []
    cuda_type.call_when_done(never, lambda: fired.append(1))  # nothing recorded: at once
    assert fired == [1]


@requires_gpu
@requires_torch_cuda
async def test_an_mlp_step_matches_torch_cuda() -> None:
    g = rng(11)
    xd, wd, bd = g.standard_normal((32, 64)), g.standard_normal((16, 64)), g.standard_normal(16)
    target = g.integers(0, 16, 32)
    import aiograd.nn.functional as F

    x, w, b = (ag.tensor(a, device="cuda", requires_grad=True) for a in (xd, wd, bd))
    loss = F.cross_entropy(F.linear(x, w, b).relu(), ag.tensor(target, device="cuda"))
    await loss.backward()
    tx, tw, tb = (torch.tensor(a, device="cuda", requires_grad=True) for a in (xd, wd, bd))
    tloss = torch.nn.functional.cross_entropy(
        torch.nn.functional.linear(tx, tw, tb).relu(), torch.tensor(target, device="cuda")
    )
    tloss.backward()
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-10)
    for a, t in ((x, tx), (w, tw), (b, tb)):
        np.testing.assert_allclose(_host(a.grad), t.grad.cpu().numpy(), rtol=1e-9, atol=1e-12)


@requires_gpu
async def test_gradcheck_on_cuda() -> None:
    import aiograd.testing as T

    x = ag.tensor(rng(6).standard_normal((2, 3)), device="cuda", requires_grad=True)
    w = ag.tensor(rng(7).standard_normal((3, 2)), device="cuda", requires_grad=True)
    assert await T.gradcheck(lambda a, b: (a @ b).tanh() * a.sum(), (x, w))
    assert await T.gradgradcheck(lambda a, b: (a @ b).tanh() * a.sum(), (x, w))
