"""Devices, tensor and op side (issue 4): ``aiograd.device``, the device-type registry,
``Tensor.device``/``to``/``cpu``, ``device=`` on the factories, PyTorch's mixed-device errors,
and every op family on ``sim`` devices giving the same values and gradients as on the CPU, with
every output and gradient on the inputs' device.

Today's engine runs every node on the caller's queue, so these graphs (single-device ones, and
cross-device ones joined by ``to``) already run end to end; the engine's routing of ``sim``
nodes to their own device queues must leave every result here unchanged.
"""

from __future__ import annotations

import asyncio
import pickle
import re
import warnings
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np
import pytest
import test_function
import test_inplace_views
import test_linalg
import test_nn_activations
import test_nn_attention
import test_nn_conv  # convolutions (family _conv)
import test_nn_dropout
import test_nn_embedding
import test_nn_functional
import test_nn_losses
import test_nn_normalization
import test_nn_pooling  # pooling (family _pooling)
import test_ops_binary_math
import test_ops_convenience
import test_ops_elementwise
import test_ops_indexing
import test_ops_inplace_variants
import test_ops_joining
import test_ops_linalg
import test_ops_padding
import test_ops_pointwise
import test_ops_products
import test_ops_rearrange
import test_ops_reduction
import test_ops_reduction_extra
import test_ops_scans
import test_ops_scatter
import test_ops_shape
import test_ops_sorting
import test_ops_special
import test_ops_unary_math
from helpers import rng

import aiograd as ag
import aiograd.nn.functional as F
from aiograd._devices import _device

CPU = ag.device("cpu")
SIM = ag.device("sim:0")
SIM1 = ag.device("sim:1")


def mixed(a: str, b: str) -> str:
    return re.escape(
        f"Expected all tensors to be on the same device, but found at least two devices, {a} and {b}!"
    )


# ============================================================================ device objects
def test_device_parsing_and_identity() -> None:
    assert ag.device("sim:0") is SIM is ag.device("sim", 0) is ag.device(SIM)
    assert ag.device("sim:3").index == 3 and ag.device("sim:3").type == "sim"
    assert ag.device("sim").index is None and ag.device("cpu").index is None
    assert ag.device("cpu:0").index == 0
    assert ag.device(ag.device("sim"), 2) is ag.device("sim:2")
    assert repr(SIM1) == "device(type='sim', index=1)" and repr(CPU) == "device(type='cpu')"
    assert str(SIM1) == "sim:1" and str(CPU) == "cpu"
    assert SIM == "sim:0" and SIM != "sim:1" and SIM != SIM1 and CPU == "cpu"
    assert ag.device("cpu") != ag.device("cpu:0")  # as torch
    assert len({SIM, ag.device("sim", 0), SIM1}) == 2 and hash(SIM) == hash("sim:0")
    assert pickle.loads(pickle.dumps(SIM1)) is SIM1
    with pytest.raises(AttributeError):
        SIM.index = 2  # type: ignore[misc]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("foo",), "Expected one of cpu, cuda, sim, simcuda device type at start of device string: foo"),
        (("xla:0",), "Expected one of cpu, cuda, sim, simcuda device type at start of device string: xla:0"),
        (("SIM",), "Expected one of cpu, cuda, sim, simcuda device type at start of device string: SIM"),
        (("",), "Device string must not be empty"),
        (("sim:x",), "Invalid device string: 'sim:x'"),
        (("sim:01",), "Invalid device string: 'sim:01'"),
        (("sim:-1",), "Invalid device string: 'sim:-1'"),
        (("sim:1:2",), "Invalid device string: 'sim:1:2'"),
        (("sim", -1), "Device index must not be negative"),
        (("sim:1", 2), "type (string) must not include an index because index was passed explicitly: sim:1"),
        ((0,), "Cannot access accelerator device when none is available."),
    ],
)
def test_device_errors_are_torchs(args: tuple[Any, ...], message: str) -> None:
    with pytest.raises(RuntimeError, match=re.escape(message)):
        ag.device(*args)


def test_device_type_registry() -> None:
    for name, executor in (("cpu", "ThreadExecutor"), ("sim", "InlineExecutor")):
        entry = _device.device_type(name)
        assert entry.name == name and entry.array_module is np
        assert entry.default_executor is executor
    assert not _device.device_type("cpu").indexed and _device.device_type("sim").indexed
    assert _device.device_types()[:4] == ("cpu", "cuda", "sim", "simcuda")
    _device.register_device_type("fake", "aiograd._devices.sim")
    try:
        assert ag.device("fake:1").type == "fake"
        with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, sim, simcuda, fake device type"):
            ag.device("bogus")
        t = ag.zeros(2, device="fake")  # no index: index 0, as "cuda" is the current device
        assert t.device is ag.device("fake:0")
    finally:
        del _device._SOURCES["fake"]
        _device._LOADED.pop("fake", None)
    with pytest.raises(ValueError, match="invalid device type name"):
        _device.register_device_type("Bad Name", "aiograd._devices.sim")


async def test_default_device() -> None:
    assert ag.get_default_device() is CPU
    with SIM1:
        assert ag.get_default_device() is SIM1
        assert ag.zeros(2).device is SIM1 and ag.tensor([1.0]).device is SIM1
        with ag.device("cpu"):
            assert ag.ones(1).device is CPU
        assert ag.arange(3).device is SIM1
        assert ag.zeros_like(ag.ones(2, device="cpu")).device is CPU  # *_like: the input's
        # a task started inside inherits it; its own changes stay its own
        assert await asyncio.create_task(_default_in_task()) is SIM
        assert ag.get_default_device() is SIM1
    assert ag.get_default_device() is CPU and ag.zeros(1).device is CPU
    ag.set_default_device("sim")
    try:
        assert ag.get_default_device() is SIM and ag.randn(2).device is SIM
    finally:
        ag.set_default_device(None)
    assert ag.get_default_device() is CPU


async def _default_in_task() -> Any:
    assert ag.get_default_device() is SIM1
    ag.set_default_device("sim:0")
    return ag.zeros(1).device


# ============================================================================ tensors
FACTORIES: list[tuple[str, Callable[..., Any]]] = [
    ("tensor", lambda **kw: ag.tensor([1.0, 2.0], **kw)),
    ("as_tensor", lambda **kw: ag.as_tensor(np.ones(2), **kw)),
    ("zeros", lambda **kw: ag.zeros(2, 3, **kw)),
    ("ones", lambda **kw: ag.ones((2,), **kw)),
    ("full", lambda **kw: ag.full((2,), 1.5, **kw)),
    ("empty", lambda **kw: ag.empty(2, **kw)),
    ("arange", lambda **kw: ag.arange(4, **kw)),
    ("linspace", lambda **kw: ag.linspace(0, 1, 5, **kw)),
    ("eye", lambda **kw: ag.eye(3, **kw)),
    ("rand", lambda **kw: ag.rand(2, **kw)),
    ("randn", lambda **kw: ag.randn(2, **kw)),
]
LIKE = [ag.zeros_like, ag.ones_like, ag.empty_like, ag.rand_like, ag.randn_like,
        lambda t, **kw: ag.full_like(t, 7.0, **kw)]


@pytest.mark.parametrize("make", [f for _, f in FACTORIES], ids=[n for n, _ in FACTORIES])
def test_factories_take_a_device(make: Callable[..., Any]) -> None:
    assert make().device is CPU
    assert make(device="sim:1").device is SIM1
    assert make(device=SIM).device is SIM
    assert make(device="sim").device is SIM
    assert make(device="cpu:0").device is CPU
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, sim, simcuda device type"):
        make(device="gpu")


@pytest.mark.parametrize("like", LIKE)
def test_like_factories_default_to_the_inputs_device(like: Callable[..., Any]) -> None:
    src = ag.ones(2, 3, device="sim:1")
    assert like(src).device is SIM1 and like(src).shape == (2, 3)
    assert like(src, device="cpu").device is CPU
    assert like(ag.ones(2), device=SIM).device is SIM


def test_tensor_device_basics() -> None:
    x = ag.tensor([1.0, 2.0], device="sim:0", requires_grad=True)
    assert x.device is SIM and not x.is_cpu and ag.ones(1).is_cpu
    assert ag.tensor(x).device is SIM  # a tensor's data keeps its device
    assert ag.tensor(x, device="cpu").device is CPU
    assert ag.as_tensor(x) is x and ag.as_tensor(x, device="sim:0") is x
    moved = ag.as_tensor(x, device="cpu")
    assert moved.device is CPU and moved.grad_fn.name() == "ToCopyBackward0"
    d = x.detach()
    assert d.device is SIM and d.data is x.data
    assert x[0].device is SIM and x.view(2, 1).device is SIM and x.view(1, 2).T.device is SIM
    assert x[0].item() == 1.0 and x.tolist() == [1.0, 2.0]
    assert float(x.sum()) == 3.0


def test_numpy_of_a_non_cpu_tensor_is_refused() -> None:
    x = ag.tensor([1.0, 2.0], device="sim:0")
    with pytest.raises(TypeError, match=re.escape(
        "can't convert sim:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to "
        "host memory first."
    )):
        x.numpy()
    with pytest.raises(TypeError, match="can't convert sim:0 device type tensor"):
        np.asarray(x)
    assert x.cpu().numpy().tolist() == [1.0, 2.0]
    forced = ag.tensor([1.0, 2.0], device="sim:0", requires_grad=True).numpy(force=True)
    assert forced.tolist() == [1.0, 2.0]


def test_repr_shows_the_device_like_torch() -> None:
    assert repr(ag.tensor([1.0, 2.0], device="sim:0", requires_grad=True)) == (
        "tensor([1., 2.], device='sim:0', requires_grad=True)"
    )
    x = ag.tensor([1.0, 2.0], device="sim:1", requires_grad=True)
    assert repr(x * 2) == "tensor([2., 4.], device='sim:1', grad_fn=<MulBackward0>)"
    assert repr(ag.zeros(0, 3, dtype=ag.float32, device="sim")) == (
        "tensor([], device='sim:0', size=(0, 3), dtype=float32)"
    )
    assert repr(ag.tensor([1, 2], device="sim:0")) == "tensor([1, 2], device='sim:0')"
    assert repr(ag.tensor([1.0])) == "tensor([1.])"


def test_grad_setter_checks_the_device() -> None:
    x = ag.zeros(2, device="sim:0", requires_grad=True)
    x.grad = ag.ones(2, device="sim:0")
    with pytest.raises(RuntimeError, match=re.escape(
        "attempting to assign a gradient with device type 'cpu' to a tensor with device type "
        "'sim'. Please ensure that the gradient and the tensor are on the same device"
    )):
        x.grad = ag.ones(2)
    with pytest.raises(RuntimeError, match="attempting to assign a gradient"):
        x.grad = ag.ones(2, device="sim:1")


# ============================================================================ to() and cpu()
def test_to_returns_self_when_nothing_changes() -> None:
    x = ag.tensor([1.0, 2.0], device="sim:0", requires_grad=True)
    assert x.to("sim:0") is x and x.to(SIM) is x and x.to("sim") is x
    assert x.to(np.float64) is x and x.to(SIM, np.float64) is x and x.to(x) is x
    assert x.to(device="sim:0", dtype=np.float64) is x and x.to(None) is x
    c = ag.ones(2)
    assert c.cpu() is c and c.to("cpu") is c and c.to("cpu:0") is c
    assert x.to("sim:0", copy=True) is not x
    assert x.to(SIM, np.float64, False, True).grad_fn.name() == "ToCopyBackward0"


def test_to_moves_and_casts() -> None:
    x = ag.tensor([1.0, 2.0], device="sim:0", requires_grad=True)
    y = x.to("sim:1")
    assert y.device is SIM1 and y.dtype == np.float64 and y.grad_fn.name() == "ToCopyBackward0"
    assert y.data is not x.data and not np.shares_memory(y.data, x.data)  # a copy, as torch
    z = x.to("cpu", np.float32)
    assert z.device is CPU and z.dtype == np.float32
    w = x.to(ag.zeros(1, dtype=np.float32))
    assert w.device is CPU and w.dtype == np.float32
    assert x.to(dtype=np.float32, device="sim:1").device is SIM1
    assert x.cpu().device is CPU and x.cpu().grad_fn.name() == "ToCopyBackward0"
    i = x.to("sim:1", np.int64)
    assert i.device is SIM1 and not i.requires_grad
    assert x.long().device is SIM and x.bool().device is SIM and x.float().device is SIM
    assert x.type_as(ag.zeros(1, dtype=np.float32)).device is CPU  # torch: type includes device
    with pytest.raises(TypeError, match=re.escape("to() received an invalid combination of arguments")):
        x.to("cpu", np.float32, False, False, 1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'devise'"):
        x.to(devise="cpu")
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, sim, simcuda device type"):
        x.to("gpu")


async def test_to_is_differentiable_across_devices() -> None:
    x = ag.tensor([1.0, 2.0, 3.0], device="sim:0", requires_grad=True)
    y = x.to("sim:1") * 2.0
    z = (y.to("cpu") ** 2).sum()
    await z.backward()
    assert x.grad.device is SIM
    np.testing.assert_array_equal(x.grad.data, 8.0 * x.data)
    (g,) = await ag.grad((x.to("cpu", np.float32) ** 3).sum(), x, create_graph=True)
    assert g.device is SIM and g.dtype == np.float64
    (gg,) = await ag.grad(g.sum(), x)
    assert gg.device is SIM
    np.testing.assert_allclose(gg.data, 6.0 * x.data, rtol=1e-6)


# ============================================================================ mixed devices
def test_mixed_devices_raise_torchs_error() -> None:
    s = ag.ones(3, device="sim:0", requires_grad=True)
    s1 = ag.ones(3, device="sim:1")
    c = ag.ones(3)
    # TensorIterator's wording: the first non-CPU device, then the first one that differs
    for fn in (lambda: s + c, lambda: c + s, lambda: s * c, lambda: c - s, lambda: s / c,
               lambda: s ** c, lambda: ag.maximum(c, s), lambda: s == c, lambda: s < c,
               lambda: ag.where(c > 0, s, c), lambda: ag.where(s > 0, c, c)):
        with pytest.raises(RuntimeError, match=mixed("sim:0", "cpu")):
            fn()
    with pytest.raises(RuntimeError, match=mixed("sim:1", "sim:0")):
        s1 + s
    with pytest.raises(RuntimeError, match=mixed("sim:0", "sim:1")):
        s * s1
    with pytest.raises(RuntimeError, match=mixed("sim:0", "cpu")):
        ag.cat([c, s])
    with pytest.raises(RuntimeError, match=mixed("sim:0", "cpu")):
        ag.stack([s, c])
    with pytest.raises(RuntimeError, match=mixed("sim:0", "cpu")):
        c.reshape(1, 3) @ s.reshape(3, 1)
    with pytest.raises(RuntimeError, match=mixed("sim:0", "cpu")):
        F.linear(s.reshape(1, 3), c.reshape(1, 3))
    with pytest.raises(RuntimeError, match=mixed("sim:0", "cpu")):
        F.mse_loss(s, c)
    with pytest.raises(RuntimeError, match=mixed("sim:0", "cpu")):
        F.cross_entropy(s.reshape(1, 3), ag.tensor([1]))
    # a CPU scalar tensor is allowed only by the elementwise (TensorIterator) ops
    with pytest.raises(RuntimeError, match=mixed("sim:0", "cpu")):
        ag.cat([ag.tensor([1.0]), s])


def test_numbers_and_arrays_are_device_less() -> None:
    s = ag.tensor([1.0, 2.0], device="sim:0", requires_grad=True)
    for out in (s + 1, 2.0 * s, s - np.ones(2), np.ones(2) / s, s ** np.array([2.0, 1.0]),
                ag.where(np.array([True, False]), s, 0.0),
                s @ np.ones(2), np.ones((3, 2)) @ s, s.clamp(0.5, 1.5), s > 1):
        assert out.device is SIM
    assert F.mse_loss(s, np.zeros(2)).device is SIM
    assert F.nll_loss(s.reshape(1, 2), np.array([1])).device is SIM


async def test_a_cpu_scalar_tensor_joins_a_device_op() -> None:
    """As TensorIterator: a 0-dim CPU tensor is a scalar; its gradient comes back to the CPU."""
    s = ag.tensor([1.0, 2.0], device="sim:0", requires_grad=True)
    k = ag.tensor(3.0, requires_grad=True)
    out = s * k + k / s
    assert out.device is SIM
    await out.sum().backward()
    assert s.grad.device is SIM and k.grad.device is CPU
    np.testing.assert_allclose(s.grad.data, 3.0 - 3.0 / s.data**2)
    np.testing.assert_allclose(k.grad.data, np.sum(s.data + 1 / s.data))
    assert (k * s).device is SIM and ag.where(ag.tensor(True), s, k).device is SIM
    with pytest.raises(RuntimeError, match=mixed("sim:0", "cpu")):
        ag.ones(1) * s  # not 0-dim


async def test_in_place_ops_check_devices_before_writing() -> None:
    s = ag.tensor([1.0, 2.0], device="sim:0")
    c = ag.tensor([1.0, 1.0])
    for op in (lambda: s.add_(c), lambda: s.mul_(c), lambda: s.sub_(c), lambda: s.div_(c),
               lambda: s.pow_(c), lambda: s.clamp_(c, None), lambda: c.add_(s),
               lambda: c.mul_(ag.tensor(2.0, device="sim:0"))):
        with pytest.raises(RuntimeError, match=mixed("sim:0", "cpu")):
            op()
    with pytest.raises(RuntimeError, match=mixed("sim:0", "sim:1")):
        s += ag.ones(2, device="sim:1")
    assert s.tolist() == [1.0, 2.0] and s._version == 0 and c.tolist() == [1.0, 1.0]
    s += ag.tensor(2.0)  # a CPU scalar is fine
    s.clamp_(ag.tensor(3.5), None)
    assert s.tolist() == [3.5, 4.0] and s.device is SIM

    # copy_ copies from any device; the source's gradient goes back to its device
    x = ag.tensor([1.0, 2.0], device="sim:0", requires_grad=True)
    src = ag.tensor([5.0, 6.0], requires_grad=True)
    y = x * 1
    y.copy_(src)
    assert y.device is SIM and y.tolist() == [5.0, 6.0]
    await (y * y).sum().backward()
    assert src.grad.device is CPU and src.grad.tolist() == [10.0, 12.0]
    assert x.grad.device is SIM and x.grad.tolist() == [0.0, 0.0]
    # fill_ with a 0-dim tensor from another device
    v = ag.tensor(4.0, device="sim:1", requires_grad=True)
    z = x * 1
    z.fill_(v)
    await z.sum().backward()
    assert v.grad.device is SIM1 and v.grad.item() == 2.0


def test_index_tensors_on_the_cpu_or_the_same_device() -> None:
    s = ag.arange(6.0, device="sim:0").reshape(2, 3)
    assert s[ag.tensor([1, 0])].device is SIM
    assert s[ag.tensor([1, 0], device="sim:0")].tolist() == [[3.0, 4.0, 5.0], [0.0, 1.0, 2.0]]
    assert s[ag.tensor([True, False])].device is SIM
    msg = re.escape("indices should be either on cpu or on the same device as the indexed tensor (sim:0)")
    with pytest.raises(RuntimeError, match=msg):
        s[ag.tensor([1], device="sim:1")]
    with pytest.raises(RuntimeError, match=msg):
        s[ag.tensor([1], device="sim:1")] = 0.0
    s[ag.tensor([1])] = ag.tensor(7.0)  # index_put_ takes a CPU scalar
    s[0] = ag.ones(3)  # a basic index copies from any device
    assert s.tolist() == [[1.0, 1.0, 1.0], [7.0, 7.0, 7.0]]
    with pytest.raises(RuntimeError, match=mixed("sim:0", "cpu")):
        s[ag.tensor([1])] = ag.ones(3)
    with pytest.raises(RuntimeError, match=mixed("sim:0", "cpu")):
        s.index_select(0, ag.tensor([0]))
    with pytest.raises(RuntimeError, match=mixed("sim:0", "cpu")):
        s.gather(1, ag.tensor([[0], [1]]))
    assert s.index_select(0, ag.tensor([0], device="sim:0")).device is SIM


# ============================================================================ backward roots, AccumulateGrad
async def test_root_gradients_must_be_on_the_outputs_device() -> None:
    x = ag.tensor([1.0, 2.0], device="sim:0", requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match=re.escape(
        "invalid gradient at index 0 - expected device sim:0 but got cpu"
    )):
        await y.backward(ag.ones(2))
    with pytest.raises(RuntimeError, match=re.escape(
        "invalid gradient at index 1 - expected device cpu but got sim:0"
    )):
        await ag.backward([y, ag.ones(2, requires_grad=True) * 1], [ag.ones(2, device="sim"), ag.ones(2, device="sim")])
    await y.backward(np.array([1.0, 1.0]))  # arrays and numbers are placed on the output's device
    assert x.grad.device is SIM and x.grad.tolist() == [2.0, 2.0]
    s = (x * x).sum()
    (g,) = await ag.grad(s, x, ag.tensor(1.0), retain_graph=True)  # a 0-dim one is moved
    assert g.device is SIM and g.tolist() == [2.0, 4.0]
    (g,) = await ag.grad(s, x, 2.0, retain_graph=True)
    assert g.device is SIM
    (g,) = await ag.grad(s, x)  # implicit ones on the output's device
    assert g.device is SIM


async def test_leaf_grads_live_on_the_leafs_device() -> None:
    x = ag.tensor([1.0, 2.0], device="sim:1", requires_grad=True)
    await (x * x).sum().backward()
    assert x.grad.device is SIM1
    await (x * 3).sum().backward()  # accumulated in place
    assert x.grad.device is SIM1 and x.grad.tolist() == [5.0, 7.0]
    x.grad = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the reference-cycle warning
        await (x * x).sum().backward(create_graph=True)
    assert x.grad.device is SIM1 and x.grad.grad_fn is not None
    # AccumulateGrad itself: a 0-dim gradient from another device is moved, any other refused
    acc = (x * 1).grad_fn.next_functions[0][0]
    assert acc.name() == "AccumulateGrad"
    with pytest.raises(RuntimeError, match=re.escape(
        "invalid gradient at index 0 - expected device sim:1 but got cpu"
    )):
        acc(ag.ones(2))
    k = ag.tensor(1.0, device="sim:0", requires_grad=True)
    kacc = (k * 1).grad_fn.next_functions[0][0]
    with ag.no_grad():
        kacc(ag.tensor(2.0))
    assert k.grad.device is SIM and k.grad.item() == 2.0


async def test_materialized_grads_are_on_the_inputs_device() -> None:
    x = ag.tensor([1.0, 2.0], device="sim:0", requires_grad=True)
    unused = ag.tensor([1.0], device="sim:1", requires_grad=True)
    g, gu = await ag.grad((x * 2).sum(), [x, unused], materialize_grads=True)
    assert g.device is SIM and gu.device is SIM1 and gu.tolist() == [0.0]


# ============================================================================ custom Functions
class Scale(ag.Function):
    @staticmethod
    def forward(ctx: Any, x: Any, k: float) -> Any:
        ctx.k = k
        return x * k, x * 0.0

    @staticmethod
    def backward(ctx: Any, g: Any, g2: Any) -> Any:
        assert g2.device == g.device  # materialized zeros on the output's device
        return g * ctx.k, None


class WrongDevice(ag.Function):
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return x * 1

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        return g.cpu()


async def test_custom_functions_on_a_device() -> None:
    x = ag.tensor([1.0, 2.0], device="sim:0", requires_grad=True)
    y, _ = Scale.apply(x, 3.0)
    assert y.device is SIM and y.grad_fn.name() == "ScaleBackward"
    await y.sum().backward()
    assert x.grad.device is SIM and x.grad.tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match=re.escape(
        "Function WrongDeviceBackward returned an invalid gradient at index 0 - expected device "
        "sim:0 but got cpu"
    )):
        await WrongDevice.apply(x).sum().backward()
    k = ag.tensor(2.0, device="sim:1", requires_grad=True)
    await WrongDevice.apply(k).backward()  # a 0-dim gradient is moved back
    assert k.grad.device is SIM1 and k.grad.item() == 1.0


# ============================================================================ cross-device graphs
async def test_graph_across_three_devices() -> None:
    """sim:0 -> sim:1 -> cpu and back: every gradient lands on its leaf's device (the engine may
    run each device's nodes on its own queue; the results must not change)."""
    g = rng(0)
    w0 = ag.tensor(g.standard_normal((4, 3)), device="sim:0", requires_grad=True)
    w1 = ag.tensor(g.standard_normal((3, 2)), device="sim:1", requires_grad=True)
    b = ag.tensor(g.standard_normal(2), requires_grad=True)
    x = ag.tensor(g.standard_normal((5, 4)), device="sim:0")
    h = (x @ w0).tanh()
    h1 = h.to("sim:1") @ w1
    branch = (x.sum() * 0.5).to("sim:1")  # a 0-dim detour: diamonds spanning devices
    out = F.log_softmax(h1.to("cpu") + b + branch.cpu(), dim=1).sum()
    await out.backward()
    assert (w0.grad.device, w1.grad.device, b.grad.device) == (SIM, SIM1, CPU)

    cw0, cw1, cb = (ag.tensor(t.data, requires_grad=True) for t in (w0, w1, b))
    cx = ag.tensor(x.data)
    cout = F.log_softmax((cx @ cw0).tanh() @ cw1 + cb + cx.sum() * 0.5, dim=1).sum()
    await cout.backward()
    for a, c in ((w0, cw0), (w1, cw1), (b, cb)):
        np.testing.assert_array_equal(a.grad.data, c.grad.data)


# ============================================================================ every op family
def cases(table: Sequence[Any]) -> list[Any]:
    """A test module's table of ``(id, ...)`` tuples as parameters named by their ids."""
    return [pytest.param(c, id=c[0]) for c in table]


def _outputs(out: Any) -> list[Any]:
    """The differentiable tensors of an op's result (values of a ``(values, indices)`` pair)."""
    if isinstance(out, ag.Tensor):
        return [out]
    if hasattr(out, "_fields"):
        return [out.values]
    return [o for o in out if isinstance(o, ag.Tensor)]


def _check_on(dev: Any, *tensors: Any) -> None:
    for t in tensors:
        if t is not None:
            assert t.device is dev, f"{t.device} instead of {dev}"


def _same(cpu: Any, dev_t: Any) -> None:
    if cpu is None:
        assert dev_t is None
        return
    assert dev_t is not None and dev_t.dtype == cpu.dtype and dev_t.shape == cpu.shape
    np.testing.assert_array_equal(dev_t.data, cpu.data)


async def _grads(fn: Callable[..., Any], arrays: Sequence[Any], dev: Any, second: bool) -> Any:
    """Forward, first and (with ``second``) second derivatives of ``fn`` with its inputs, its
    seeds and the factories it calls on ``dev``; every gradient on ``dev``."""
    with dev:
        xs = [ag.tensor(a, requires_grad=np.asarray(a).dtype.kind == "f") for a in arrays]
        outs = _outputs(fn(*xs))
        _check_on(dev, *outs)
        diff = [x for x in xs if x.requires_grad]
        seeds = [ag.tensor(rng(7 + i).standard_normal(o.shape).astype(o.dtype)) for i, o in enumerate(outs)]
        used = [(o, s) for o, s in zip(outs, seeds) if o.requires_grad]
        if not used or not diff:
            return outs, [], [], []
        # no create_graph: the ops' fast backward paths
        plain = await ag.grad([o for o, _ in used], diff, [s for _, s in used], retain_graph=True, allow_unused=True)
        _check_on(dev, *plain)
        if not second:
            return outs, plain, [], []
        # create_graph: the formulas as recorded ops, then differentiated again
        seeds2 = [ag.tensor(s.data, requires_grad=True) for _, s in used]
        first = await ag.grad([o for o, _ in used], diff, seeds2, create_graph=True, allow_unused=True)
        _check_on(dev, *first)
        vs = [rng(20 + i).standard_normal(x.shape) for i, x in enumerate(diff)]
        terms = [(g * v).sum() for g, v in zip(first, vs) if g is not None and g.requires_grad]
        second_grads: list[Any] = []
        if terms:
            second_grads = list(await ag.grad(sum(terms[1:], terms[0]), [*diff, *seeds2], allow_unused=True))
            _check_on(dev, *second_grads)
            _check_on(dev, *[x for x in [*diff, *seeds2]])
        return outs, plain, first, second_grads


async def assert_parity(fn: Callable[..., Any], arrays: Sequence[Any], second: bool = True, dev: Any = SIM) -> None:
    """``fn`` on ``dev`` gives exactly what it gives on the CPU, every result on ``dev``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cpu = await _grads(fn, arrays, CPU, second)
        on_dev = await _grads(fn, arrays, dev, second)
    for a_list, b_list in zip(cpu, on_dev):
        assert len(a_list) == len(b_list)
        for a, b in zip(a_list, b_list):
            _same(a, b)


#: A parity check: ``await parity(fn, arrays, second=True)`` runs ``fn`` on the CPU and on a
#: device and compares. The family checks below take one, so tests/test_device_arrays.py runs
#: them on its CuPy stand-in.
Parity = Callable[..., Awaitable[None]]


async def check_index_select(case: Any, parity: Parity = assert_parity) -> None:
    _, shape, dim, index = case
    data = rng(0).standard_normal(shape)
    await parity(lambda x: x.index_select(dim, ag.tensor(index, dtype=np.int64)), [data])


async def check_gather(case: Any, parity: Parity = assert_parity) -> None:
    _, shape, dim, index = case
    data = rng(0).standard_normal(shape)
    await parity(lambda x: x.gather(dim, ag.tensor(index, dtype=np.int64)), [data])


async def check_cat(case: Any, parity: Parity = assert_parity) -> None:
    _, shapes, dim = case
    arrays = [rng(i).standard_normal(s) for i, s in enumerate(shapes)]
    await parity(lambda *ts: ag.cat(ts, dim), arrays)


async def check_stack(case: Any, parity: Parity = assert_parity) -> None:
    _, shape, n, dim = case
    arrays = [rng(i).standard_normal(shape) for i in range(n)]
    await parity(lambda *ts: ag.stack(ts, dim), arrays)


async def check_split(case: Any, parity: Parity = assert_parity) -> None:
    _, shape, op, args, _name = case
    data = rng(0).standard_normal(shape)
    fn = test_ops_joining.OPS[op]
    await parity(lambda x: fn(x, *args), [data])
    # only some outputs used: the others' gradients are zeros made on the device
    await parity(lambda x: fn(x, *args)[0] * 2.0, [data])


async def check_activation(name: str, parity: Parity = assert_parity) -> None:
    call = dict(test_nn_functional.ACTIVATIONS)[name]
    await parity(lambda x: call(F, x), [rng(0).standard_normal((3, 4))])


async def check_mse_loss(case: Any, parity: Parity = assert_parity) -> None:
    _, in_shape, t_shape, t_grad, kwargs = case
    xd, td = rng(0).standard_normal(in_shape), rng(1).standard_normal(t_shape)
    if t_grad:
        await parity(lambda x, t: F.mse_loss(x, t, **kwargs), [xd, td])
    else:
        await parity(lambda x: F.mse_loss(x, ag.tensor(td), **kwargs), [xd])


async def check_nll_and_cross_entropy(case: Any, loss: str, parity: Parity = assert_parity) -> None:
    _, shape, target, kwargs = case
    fn = getattr(F, loss)
    data = rng(0).standard_normal(shape)
    kw = dict(kwargs)
    if "weight" in kw:
        weight = kw.pop("weight")
        await parity(lambda x: fn(x, ag.tensor(target), weight=ag.tensor(weight), **kw), [data])
    else:
        await parity(lambda x: fn(x, ag.tensor(target), **kw), [data])
        await parity(lambda x: fn(x, target, **kw), [data])  # an array target
    if loss == "cross_entropy":
        await parity(lambda x: fn(x, ag.tensor(target), label_smoothing=0.2, **kwargs), [data])


async def check_cross_entropy_probabilities(case: Any, parity: Parity = assert_parity) -> None:
    _, shape, kwargs = case
    g = rng(5)
    p = g.uniform(0.1, 1.0, shape)
    p = p / p.sum(axis=1 if len(shape) > 1 else 0, keepdims=True)
    kw = dict(kwargs)
    weight = kw.pop("weight", None)
    await parity(
        lambda x, t: F.cross_entropy(x, t, weight=None if weight is None else ag.tensor(weight), **kw),
        [g.standard_normal(shape), p],
    )


async def check_inplace_and_view_scenario(sc: Any, parity: Parity = assert_parity) -> None:
    arrays = test_inplace_views._arrays(sc)
    await parity(lambda *xs: sc.fn(ag, *xs), arrays)


SPEC_TABLES = {
    "elementwise": test_ops_elementwise.SPECS,
    "unary_math": test_ops_unary_math.SPECS,
    "binary_math": test_ops_binary_math.SPECS,
    "pointwise": test_ops_pointwise.SPECS,
    "shape": test_ops_shape.SPECS,
    "linalg": test_ops_linalg.SPECS,
    "convenience": test_ops_convenience.SPECS + test_ops_convenience.REPEAT_SPECS,
    "function": test_function.SPECS,
    # linear algebra
    "products": test_ops_products.SPECS + test_ops_products.EINSUM_SPECS,
    "decompositions": test_linalg.SPECS + test_linalg.NORM_SPECS,
    "reduction_extra": test_ops_reduction_extra.REDUCTION_SPECS,
    "scans": test_ops_scans.SPECS,
    "sorting": test_ops_sorting.SPECS,
    # shape and indexing
    "rearrange": test_ops_rearrange.SPECS,
    "scatter": test_ops_scatter.SPECS,
    "padding": test_ops_padding.SPECS,
    # nn losses, distances and attention (aiograd/nn/_losses.py, _distance.py, _attention.py)
    "losses": test_nn_losses.SPECS,
    "distance": test_nn_losses.DISTANCE_SPECS,
    "attention": test_nn_attention.SPECS + test_nn_attention.MHA_SPECS,
    # convolutions and pooling (families _conv, _pooling)
    "_conv": test_nn_conv.SPECS,
    "_pooling": test_nn_pooling.SPECS,
}
# special functions and the nn.functional activations, dropout, norms, embedding
SPEC_TABLES.update({
    "special": test_ops_special.SPECS,
    "activations": test_nn_activations.ACTIVATION_SPECS,
    "dropout": test_nn_dropout.DROPOUT_SPECS,
    "normalization": test_nn_normalization.NORM_SPECS,
    "embedding": test_nn_embedding.EMBEDDING_SPECS,
})
SPEC_TABLES["inplace_variants"] = test_ops_inplace_variants.INPLACE_SPECS  # sin_, lerp_, eq_, t_...
SPECS = [pytest.param(s, id=f"{family}-{s.name}") for family, table in SPEC_TABLES.items() for s in table]


# Op math on a device does not depend on the loop awaiting it: once, on asyncio's loop (the
# multi-device engine runs on every backend in tests/test_engine_devices.py).
@pytest.mark.aiograd(backends=["asyncio"])
@pytest.mark.parametrize("spec", SPECS)
async def test_op_specs_on_sim(spec: Any) -> None:
    await assert_parity(lambda *xs: spec.fn(ag, *xs), spec.arrays(), second=spec.gradgrad)


R_CASES = test_ops_reduction.CASES


@pytest.mark.parametrize("case", R_CASES, ids=str)
async def test_reductions_on_sim(case: Any) -> None:
    data = test_ops_reduction.make_input(case)
    await assert_parity(case.fn, [data], second=case.gradgrad)


async def test_reduction_extras_on_sim() -> None:
    x = rng(0).standard_normal((3, 4))
    for fn in (lambda t: t.sum(), lambda t: t.sum(1, keepdim=True), lambda t: t.mean(0),
               lambda t: t.mean(), lambda t: t.max(1).indices.float() * t.sum(), lambda t: t * t.argmax(),
               lambda t: t * t.argmin(1, keepdim=True), lambda t: t.prod(1) * 1.0,
               lambda t: (t * (t > 0)).prod(), lambda t: (t.abs() > 0.5).sum() * t,
               lambda t: t.to(np.float32).sum(), lambda t: ag.tensor([[1, 2], [3, 4]]).logsumexp(1) * t.sum()):
        await assert_parity(fn, [x])
    zeros = np.array([[0.0, 2.0, 0.0], [1.0, 3.0, 2.0]])
    await assert_parity(lambda t: t.prod(1), [zeros])
    await assert_parity(lambda t: t.prod(), [np.array([0.0, 2.0, 3.0])])


I_CASES = [pytest.param(c[1], c[2], id=c[0]) for c in test_ops_indexing.CASES]


@pytest.mark.parametrize(("shape", "index"), I_CASES)
async def test_indexing_on_sim(shape: Any, index: Any) -> None:
    data = rng(0).standard_normal(shape)
    await assert_parity(lambda x: x[index] * 1.0, [data])


@pytest.mark.parametrize("case", cases(test_ops_indexing.SELECT_CASES))
async def test_index_select_on_sim(case: Any) -> None:
    await check_index_select(case)


@pytest.mark.parametrize("case", cases(test_ops_indexing.GATHER_CASES))
async def test_gather_on_sim(case: Any) -> None:
    await check_gather(case)


@pytest.mark.parametrize("case", cases(test_ops_joining.CAT_CASES))
async def test_cat_on_sim(case: Any) -> None:
    await check_cat(case)


async def test_cat_extras_on_sim() -> None:
    # a legacy empty 1-D input and an input needing no gradient
    await assert_parity(lambda x: ag.cat([x, ag.zeros(0), x * 2], 0), [rng(0).standard_normal((2, 3))])
    await assert_parity(lambda x, y: ag.cat([x, y.detach(), y], 1),
                        [rng(0).standard_normal((2, 1)), rng(1).standard_normal((2, 2))])


@pytest.mark.parametrize("case", cases(test_ops_joining.STACK_CASES))
async def test_stack_on_sim(case: Any) -> None:
    await check_stack(case)


@pytest.mark.parametrize("case", cases(test_ops_joining.SPLIT_CASES))
async def test_split_on_sim(case: Any) -> None:
    await check_split(case)


@pytest.mark.parametrize("name", [n for n, _ in test_nn_functional.ACTIVATIONS])
async def test_activations_on_sim(name: str) -> None:
    await check_activation(name)


async def test_linear_on_sim() -> None:
    g = rng(0)
    arrays = [g.standard_normal((3, 4)), g.standard_normal((2, 4)), g.standard_normal(2)]
    await assert_parity(F.linear, arrays)
    await assert_parity(lambda x, w: F.linear(x, w), arrays[:2])
    await assert_parity(lambda x, w, b: F.linear(x.reshape(3, 1, 4), w, b), arrays)


@pytest.mark.parametrize("case", cases(test_nn_functional.MSE_CASES))
async def test_mse_loss_on_sim(case: Any) -> None:
    await check_mse_loss(case)


@pytest.mark.parametrize("loss", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("case", cases(test_nn_functional.NLL_CASES))
async def test_nll_and_cross_entropy_on_sim(case: Any, loss: str) -> None:
    await check_nll_and_cross_entropy(case, loss)


@pytest.mark.parametrize("case", cases(test_nn_functional.PROB_CASES))
async def test_cross_entropy_probabilities_on_sim(case: Any) -> None:
    await check_cross_entropy_probabilities(case)


@pytest.mark.parametrize("sc", test_inplace_views.SCENARIOS, ids=lambda s: s.name)
async def test_inplace_and_view_scenarios_on_sim(sc: Any) -> None:
    await check_inplace_and_view_scenario(sc)


async def test_inplace_extras_on_sim() -> None:
    x = rng(0).uniform(0.5, 1.5, (3, 4))

    def fn(t: Any) -> Any:
        y = t * 1
        y[1] = 0.0  # fill_ on a view
        y[:, 0].zero_()
        y[ag.tensor([0, 2]), 1] = t[0, :2].sum()
        y[2].neg_()
        y.relu_()
        return y.exp()

    await assert_parity(fn, [x])


async def test_views_share_data_and_version_on_sim() -> None:
    x = ag.zeros(2, 3, device="sim:1")
    v = x[1]
    v.add_(1.0)
    assert v.device is SIM1 and x._version == 1 and x.tolist() == [[0.0] * 3, [1.0] * 3]
    for view in (x.T, x.view(3, 2), x.unsqueeze(0), x.expand(2, 2, 3), x.permute(1, 0), x[:, ::2],
                 x.squeeze(), x.mT, *x.unbind(0), *x.split(1, 1)):
        assert view.device is SIM1 and view._base is x


async def test_an_op_table_on_a_second_sim_device() -> None:
    for spec in test_ops_elementwise.SPECS[:12]:
        await assert_parity(lambda *xs, spec=spec: spec.fn(ag, *xs), spec.arrays(), dev=SIM1)
