"""3-D convolutions and pools: ``conv3d``, ``conv_transpose3d``, ``max_pool3d``, ``avg_pool3d``,
``adaptive_avg_pool3d``, ``adaptive_max_pool3d`` of aiograd.nn.functional, and their modules.

The ``OpSpec`` rows (tests/op_factory.py: gradcheck and gradgradcheck in float64, forward, first
and second derivatives against torch, float32, the ``grad_fn`` name) cover strides, paddings
(numbers, ``'same'``, ``'valid'``), dilations, groups, output paddings, ``ceil_mode``,
``count_include_pad``, ``divisor_override``, uneven adaptive bins, batched and unbatched inputs,
on small odd shapes. Max pooling's inputs are drawn without ties. The modules are compared with
torch's: reprs, parameter names, shapes and initial values after the same seed, outputs (every
``padding_mode``). Argument checks are compared with torch's, type and message.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, make_op_tests

import aiograd as ag
import aiograd.nn.functional as F

pytestmark = [pytest.mark.filterwarnings("error"), pytest.mark.aiograd(backends=["asyncio"])]  # op math: one loop is enough


def nnf(lib: Any) -> Any:
    """The ``nn.functional`` of either library."""
    return F if lib is ag else torch.nn.functional


def call(fn: str, *args: Any, **kw: Any) -> Any:
    return lambda lib, *xs: getattr(nnf(lib), fn)(*xs, *args, **kw)


def distinct(shape: tuple[int, ...]) -> Any:
    """A sampler of one input whose entries are at least 0.05 apart (no ties in any window)."""

    def draw(rng: np.random.Generator) -> list[Any]:
        return [(rng.permutation(np.prod(shape)) * 0.05 - 1.0).reshape(shape)]

    return draw


C = "ConvolutionBackward0"
MAX, AVG = "MaxPool3DWithIndicesBackward0", "AvgPool3DBackward0"
ADAPTIVE, ADAPTIVE_MAX = "AdaptiveAvgPool3DBackward0", "AdaptiveMaxPool3DBackward0"

SPECS = [
    # ---------------------------------------------------------------- conv3d
    OpSpec("conv3d", call("conv3d"), ((2, 2, 3, 3, 3), (3, 2, 2, 2, 2), (3,)), grad_fn=C),
    OpSpec("conv3d_no_bias_odd", call("conv3d"), ((1, 1, 3, 4, 2), (2, 1, 2, 3, 1)), grad_fn=C),
    OpSpec("conv3d_stride_padding", call("conv3d", stride=(2, 1, 2), padding=(1, 0, 1)),
           ((1, 2, 3, 3, 4), (2, 2, 2, 2, 2), (2,)), grad_fn=C),
    OpSpec("conv3d_dilation", call("conv3d", dilation=(2, 1, 1), padding=1), ((1, 1, 4, 3, 3), (2, 1, 2, 2, 2)), grad_fn=C),
    OpSpec("conv3d_groups", call("conv3d", groups=2), ((1, 4, 3, 2, 3), (4, 2, 2, 1, 2), (4,)), grad_fn=C),
    OpSpec("conv3d_same", call("conv3d", padding="same"), ((1, 2, 3, 3, 2), (2, 2, 3, 1, 3), (2,)), grad_fn=C),
    OpSpec("conv3d_valid", call("conv3d", padding="valid", stride=2), ((1, 1, 4, 3, 5), (1, 1, 2, 2, 2)), grad_fn=C),
    OpSpec("conv3d_unbatched", call("conv3d", padding=1), ((2, 2, 2, 3), (2, 2, 2, 2, 2), (2,)), grad_fn="SqueezeBackward1"),
    # ---------------------------------------------------------------- conv_transpose3d
    OpSpec("conv_transpose3d", call("conv_transpose3d"), ((1, 2, 2, 3, 2), (2, 3, 2, 2, 2), (3,)), grad_fn=C),
    OpSpec("conv_transpose3d_stride_output_padding",
           call("conv_transpose3d", stride=(2, 1, 3), padding=(1, 0, 1), output_padding=(1, 0, 2)),
           ((1, 2, 2, 2, 2), (2, 1, 3, 2, 3), (1,)), grad_fn=C),
    OpSpec("conv_transpose3d_groups_dilation", call("conv_transpose3d", groups=2, dilation=(1, 2, 1), stride=2),
           ((1, 4, 2, 2, 1), (4, 1, 2, 2, 2), (2,)), grad_fn=C),
    OpSpec("conv_transpose3d_unbatched", call("conv_transpose3d", padding=1), ((2, 2, 3, 2), (2, 1, 3, 3, 2)),
           grad_fn="SqueezeBackward1"),
    # ---------------------------------------------------------------- max_pool3d
    OpSpec("max_pool3d", call("max_pool3d", 2), distinct((2, 2, 4, 4, 4)), grad_fn=MAX),
    OpSpec("max_pool3d_odd", call("max_pool3d", (2, 3, 1), (1, 2, 1)), distinct((1, 2, 3, 5, 2)), grad_fn=MAX),
    OpSpec("max_pool3d_padding_dilation", call("max_pool3d", (3, 2, 2), 1, (1, 1, 0), (1, 2, 1)),
           distinct((1, 1, 3, 4, 3)), grad_fn=MAX),
    OpSpec("max_pool3d_ceil_mode", call("max_pool3d", 2, ceil_mode=True), distinct((1, 2, 3, 5, 3)), grad_fn=MAX),
    OpSpec("max_pool3d_ceil_mode_padding", call("max_pool3d", 3, 2, 1, ceil_mode=True), distinct((1, 1, 4, 5, 4)),
           grad_fn=MAX),
    OpSpec("max_pool3d_return_indices", lambda lib, x: nnf(lib).max_pool3d(x, 2, 1, return_indices=True)[0],
           distinct((1, 1, 3, 3, 3)), grad_fn=MAX),
    OpSpec("max_pool3d_unbatched", call("max_pool3d", 2, (1, 2, 1)), distinct((2, 3, 4, 3)), grad_fn=MAX),
    # ---------------------------------------------------------------- avg_pool3d
    OpSpec("avg_pool3d", call("avg_pool3d", 2), ((2, 2, 4, 4, 4),), grad_fn=AVG),
    OpSpec("avg_pool3d_odd", call("avg_pool3d", (2, 3, 1), (1, 2, 1)), ((1, 2, 3, 5, 2),), grad_fn=AVG),
    OpSpec("avg_pool3d_padding", call("avg_pool3d", 3, 2, 1), ((1, 1, 3, 5, 4),), grad_fn=AVG),
    OpSpec("avg_pool3d_exclude_pad", call("avg_pool3d", (3, 2, 2), 2, 1, count_include_pad=False),
           ((1, 1, 4, 3, 5),), grad_fn=AVG),
    OpSpec("avg_pool3d_ceil_mode", call("avg_pool3d", 2, ceil_mode=True), ((1, 2, 3, 5, 3),), grad_fn=AVG),
    OpSpec("avg_pool3d_ceil_mode_exclude_pad", call("avg_pool3d", 3, 2, 1, ceil_mode=True, count_include_pad=False),
           ((1, 1, 4, 5, 4),), grad_fn=AVG),
    OpSpec("avg_pool3d_divisor_override", call("avg_pool3d", 2, 1, 1, divisor_override=3), ((1, 1, 2, 3, 3),), grad_fn=AVG),
    OpSpec("avg_pool3d_unbatched", call("avg_pool3d", 2, 1), ((2, 3, 2, 3),), grad_fn=AVG),
    # ---------------------------------------------------------------- adaptive pools
    OpSpec("adaptive_avg_pool3d", call("adaptive_avg_pool3d", 2), ((2, 2, 4, 4, 4),), grad_fn=ADAPTIVE),
    OpSpec("adaptive_avg_pool3d_uneven", call("adaptive_avg_pool3d", (3, 2, 4)), ((1, 2, 5, 3, 3),), grad_fn=ADAPTIVE),
    OpSpec("adaptive_avg_pool3d_none", call("adaptive_avg_pool3d", (None, 2, None)), ((1, 1, 2, 5, 3),), grad_fn=ADAPTIVE),
    OpSpec("adaptive_avg_pool3d_unbatched", call("adaptive_avg_pool3d", (2, 1, 3)), ((2, 3, 2, 4),), grad_fn=ADAPTIVE),
    # a (1, 1, 1) output is ``mean`` over the volume, as in PyTorch
    OpSpec("adaptive_avg_pool3d_global", call("adaptive_avg_pool3d", 1), ((2, 2, 3, 2, 3),), grad_fn="MeanBackward1"),
    OpSpec("adaptive_max_pool3d", call("adaptive_max_pool3d", 2), distinct((2, 2, 4, 4, 4)), grad_fn=ADAPTIVE_MAX),
    OpSpec("adaptive_max_pool3d_uneven", call("adaptive_max_pool3d", (3, 2, 4)), distinct((1, 2, 5, 3, 3)),
           grad_fn=ADAPTIVE_MAX),
    OpSpec("adaptive_max_pool3d_unbatched", call("adaptive_max_pool3d", (2, None, 1)), distinct((2, 3, 2, 4)),
           grad_fn=ADAPTIVE_MAX),
    # ---------------------------------------------------------------- a small 3-D CNN's layers
    OpSpec("max_pool3d_after_conv3d", lambda lib, x, w: nnf(lib).max_pool3d(nnf(lib).conv3d(x, w, padding=1).tanh(), 2),
           ((1, 1, 2, 3, 3), (2, 1, 2, 2, 2)), grad_fn=MAX, op=None),
]

globals().update(make_op_tests(SPECS))


# ================================================================================ modules
@requires_torch
@pytest.mark.real_default_dtype  # (torch's float32 parameters, drawn as torch draws them)
@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
def test_conv3d_module_matches_torch_after_the_same_seed(mode: str) -> None:
    kw = {"stride": (1, 2, 1), "padding": (1, 1, 2), "dilation": (1, 1, 2), "groups": 2, "padding_mode": mode}
    torch.manual_seed(7)
    ag.manual_seed(7)
    tm, am = torch.nn.Conv3d(4, 6, (3, 2, 3), **kw), ag.nn.Conv3d(4, 6, (3, 2, 3), **kw)
    assert repr(am) == repr(tm)
    named = dict(am.named_parameters())
    for name, p in tm.named_parameters():
        assert named[name].shape == tuple(p.shape) and named[name].dtype == np.float32
        np.testing.assert_array_equal(named[name].data, p.detach().numpy())
    x = np.random.default_rng(0).standard_normal((2, 4, 4, 5, 6)).astype(np.float32)
    np.testing.assert_allclose(am(ag.tensor(x)).data, tm(torch.tensor(x)).detach().numpy(), rtol=1e-4, atol=1e-5)
    am.double(), tm.double()
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(am(ag.tensor(x64)).data, tm(torch.tensor(x64)).detach().numpy(), rtol=1e-12, atol=1e-12)


@requires_torch
@pytest.mark.real_default_dtype  # (torch's float32 parameters, drawn as torch draws them)
async def test_conv_transpose3d_module_matches_torch_with_output_size() -> None:
    kw = {"stride": 2, "padding": 1, "groups": 2, "dilation": (1, 2, 1), "bias": False}
    torch.manual_seed(3)
    ag.manual_seed(3)
    tm, am = torch.nn.ConvTranspose3d(4, 6, (3, 2, 3), **kw).double(), ag.nn.ConvTranspose3d(4, 6, (3, 2, 3), **kw).double()
    assert repr(am) == repr(tm) and [n for n, _ in am.named_parameters()] == ["weight"]
    np.testing.assert_array_equal(am.weight.data, tm.weight.detach().numpy())
    x = np.random.default_rng(1).standard_normal((2, 4, 3, 4, 2))
    a, t = ag.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    for size in (None, (6, 8, 4), (2, 6, 5, 7, 3)):
        out, tout = am(a, output_size=size), tm(t, output_size=size)
        np.testing.assert_allclose(out.data, tout.detach().numpy(), rtol=1e-12, atol=1e-12)
    (g,) = await ag.grad(out.sum(), [a])
    (tg,) = torch.autograd.grad(tout.sum(), [t])
    np.testing.assert_allclose(g.data, tg.numpy(), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="requested an output size of"):
        am(a, output_size=(9, 9, 9))
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose3d'):
        ag.nn.ConvTranspose3d(1, 1, 2, padding_mode="reflect")


@requires_torch
@pytest.mark.parametrize(("cls", "args", "kw"), [
    ("MaxPool3d", (2,), {}),
    ("MaxPool3d", ((2, 1, 2),), {"stride": 1, "padding": (1, 0, 1), "dilation": (2, 1, 1), "ceil_mode": True,
                                 "return_indices": True}),
    ("AvgPool3d", (2, 1, 1), {"ceil_mode": True, "count_include_pad": False, "divisor_override": 3}),
    ("AvgPool3d", ((3, 2, 2),), {}),
    ("AdaptiveAvgPool3d", ((2, None, 3),), {}),
    ("AdaptiveMaxPool3d", (2,), {"return_indices": True}),
], ids=["max", "max_settings", "avg_settings", "avg", "adaptive_avg", "adaptive_max"])
def test_pool3d_modules_match_torch(cls: str, args: Any, kw: dict[str, Any]) -> None:
    am, tm = getattr(ag.nn, cls)(*args, **kw), getattr(torch.nn, cls)(*args, **kw)
    assert repr(am) == repr(tm)
    x = np.random.default_rng(2).standard_normal((2, 3, 4, 5, 6))
    out, tout = am(ag.tensor(x)), tm(torch.tensor(x))
    if isinstance(tout, tuple):
        np.testing.assert_array_equal(out[1].data, tout[1].numpy())
        out, tout = out[0], tout[0]
    np.testing.assert_allclose(out.data, tout.numpy(), rtol=1e-12, atol=1e-12)


# ================================================================================ ties, NaN, indices
@requires_torch
@pytest.mark.parametrize("kw", [{"kernel_size": 2}, {"kernel_size": 3, "stride": 1, "padding": 1},
                                {"kernel_size": (2, 2, 3), "stride": 1, "dilation": (2, 1, 1), "ceil_mode": True}],
                         ids=["disjoint", "overlapping", "dilated"])
async def test_max_pool3d_ties_pick_torchs_element_and_gradient(kw: dict[str, Any]) -> None:
    x = np.random.default_rng(0).integers(0, 3, (2, 2, 5, 4, 5)).astype(np.float64)
    a, t = ag.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, idx = F.max_pool3d(a, return_indices=True, **kw)
    tout, tidx = torch.nn.functional.max_pool3d(t, return_indices=True, **kw)
    assert idx.dtype == np.int64 and not idx.requires_grad
    np.testing.assert_array_equal(idx.data, tidx.numpy())
    np.testing.assert_array_equal(out.data, tout.detach().numpy())
    u = np.random.default_rng(1).standard_normal(out.shape)
    (g,) = await ag.grad(out, [a], ag.tensor(u))
    (tg,) = torch.autograd.grad(tout, [t], torch.tensor(u))
    np.testing.assert_allclose(g.data, tg.numpy(), rtol=1e-12, atol=1e-12)


@requires_torch
@pytest.mark.parametrize("fn", ["max_pool3d", "adaptive_max_pool3d"])
def test_nan_and_minus_inf_follow_torch(fn: str) -> None:
    x = np.random.default_rng(3).standard_normal((1, 2, 3, 4, 4))
    x[0, 0, 1, 1, 1] = x[0, 0, 1, 2, 2] = np.nan
    x[0, 1] = -np.inf
    kw: dict[str, Any] = {"kernel_size": 2, "stride": 1, "padding": 1} if fn == "max_pool3d" else {"output_size": 2}
    out, idx = getattr(F, fn)(ag.tensor(x), return_indices=True, **kw)
    tout, tidx = getattr(torch.nn.functional, fn)(torch.tensor(x), return_indices=True, **kw)
    np.testing.assert_array_equal(idx.data, tidx.numpy())
    np.testing.assert_array_equal(out.data, tout.numpy())


@requires_torch
@pytest.mark.parametrize(("fn", "kw"), [("max_pool3d", {"kernel_size": 2, "stride": 1}),
                                        ("adaptive_max_pool3d", {"output_size": 2}),
                                        ("avg_pool3d", {"kernel_size": 2, "stride": 1}),
                                        ("adaptive_avg_pool3d", {"output_size": 2}),
                                        ("conv3d", {"weight": (2, 1, 2, 2, 2)}),
                                        ("conv_transpose3d", {"weight": (1, 2, 2, 2, 2)})])
async def test_double_backward_nodes_and_values_match_torch(fn: str, kw: dict[str, Any]) -> None:
    rng = np.random.default_rng(4)
    x = rng.permutation(27).reshape(1, 1, 3, 3, 3) * 0.1
    extra = {}
    if "weight" in kw:
        w = rng.standard_normal(kw.pop("weight"))
        extra = {"ag": {"weight": ag.tensor(w)}, "torch": {"weight": torch.tensor(w)}}
    a, t = ag.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out = getattr(F, fn)(a, **kw, **extra.get("ag", {}))
    tout = getattr(torch.nn.functional, fn)(t, **kw, **extra.get("torch", {}))
    v = rng.standard_normal(out.shape)
    ga, gt = ag.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
    (g,) = await ag.grad(out, [a], ga, create_graph=True)
    (tg,) = torch.autograd.grad(tout, [t], gt, create_graph=True)
    if "max" in fn:  # (the others' gradients are built of aiograd's ops, as the 2-D ones': other nodes)
        assert g.grad_fn.name() == tg.grad_fn.name()
    (gg,) = await ag.grad((g * g).sum(), [ga])
    (tgg,) = torch.autograd.grad((tg * tg).sum(), [gt])
    np.testing.assert_allclose(gg.data, tgg.numpy(), rtol=1e-10, atol=1e-12)


@requires_torch
async def test_interpolate_area_on_5d_input_is_adaptive_avg_pool3d() -> None:
    x = np.random.default_rng(5).standard_normal((1, 2, 5, 4, 3))
    a, t = ag.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out = F.interpolate(a, size=(3, 2, 2), mode="area")
    tout = torch.nn.functional.interpolate(t, size=(3, 2, 2), mode="area")
    assert out.grad_fn.name() == tout.grad_fn.name() == "AdaptiveAvgPool3DBackward0"
    assert type(out.grad_fn) is type(F.adaptive_avg_pool3d(a, (3, 2, 2)).grad_fn)
    np.testing.assert_allclose(out.data, tout.detach().numpy(), rtol=1e-12, atol=1e-12)


@requires_torch
@pytest.mark.parametrize("fn", ["max_pool3d", "avg_pool3d", "conv3d"])
async def test_an_empty_batch_gives_an_empty_batch(fn: str) -> None:
    x = np.zeros((0, 2, 3, 3, 3))
    args: tuple[Any, ...] = (np.ones((1, 2, 2, 2, 2)),) if fn == "conv3d" else (2,)
    out = getattr(F, fn)(ag.tensor(x), *(ag.tensor(v) if isinstance(v, np.ndarray) else v for v in args))
    tout = getattr(torch.nn.functional, fn)(torch.tensor(x), *(torch.tensor(v) if isinstance(v, np.ndarray) else v
                                                               for v in args))
    assert out.shape == tuple(tout.shape)


@requires_torch
@pytest.mark.parametrize("ceil_mode", [False, True])
def test_pool_output_shapes_match_torch_over_a_grid(ceil_mode: bool) -> None:
    x = np.zeros((1, 1, 5, 6, 7))
    for k, s, p, d in [(1, 1, 0, 1), (2, 2, 1, 1), (3, 2, 1, 1), (3, 3, 1, 2), ((2, 3, 2), (1, 2, 3), (1, 1, 0), 1)]:
        for fn in ("max_pool3d", "avg_pool3d"):
            kw = {"dilation": d} if fn == "max_pool3d" else {}
            out = getattr(F, fn)(ag.tensor(x), k, s, p, ceil_mode=ceil_mode, **kw)
            tout = getattr(torch.nn.functional, fn)(torch.tensor(x), k, s, p, ceil_mode=ceil_mode, **kw)
            assert out.shape == tuple(tout.shape), (fn, k, s, p, d)


# ================================================================================ errors
X5 = (1, 2, 4, 5, 6)
ERRORS = [
    # (name, function, input shape, positional arguments, keyword arguments); a tuple of ints
    # among the positional arguments is a tensor of that shape (a weight)
    ("conv3d_input_3d", "conv3d", (2, 4, 5), ((1, 2, 1, 1, 1),), {}),
    ("conv3d_channels", "conv3d", X5, ((3, 3, 2, 2, 2),), {}),
    ("conv3d_stride_length", "conv3d", X5, ((1, 2, 1, 1, 1),), {"stride": (1, 1)}),
    ("conv3d_kernel_too_big", "conv3d", X5, ((1, 2, 5, 2, 2),), {}),
    ("conv3d_same_strided", "conv3d", X5, ((1, 2, 3, 3, 3),), {"padding": "same", "stride": 2}),
    ("conv3d_weight_dims", "conv3d", X5, ((1, 2, 3, 3),), {}),
    ("conv_transpose3d_output_padding", "conv_transpose3d", X5, ((2, 1, 2, 2, 2),), {"stride": 2, "output_padding": 2}),
    ("conv_transpose3d_channels", "conv_transpose3d", X5, ((3, 1, 2, 2, 2),), {}),
    ("max_ndim", "max_pool3d", (2, 4, 5), (2,), {}),
    ("max_kernel_two_ints", "max_pool3d", X5, ((2, 2),), {}),
    ("max_zero_stride", "max_pool3d", X5, (2, 0), {}),
    ("max_zero_dilation", "max_pool3d", X5, (2,), {"dilation": 0}),
    ("max_pad_too_big", "max_pool3d", X5, (2,), {"padding": 2}),
    ("max_pad_over_half_kernel", "max_pool3d", X5, ((3, 5, 7), 1, (2, 1, 0), (2, 1, 1)), {}),
    ("max_output_too_small", "max_pool3d", X5, (5,), {}),
    ("max_float_kernel", "max_pool3d", X5, (2.0,), {}),
    ("max_empty", "max_pool3d", (1, 2, 0, 5, 6), (2,), {}),
    ("avg_ndim", "avg_pool3d", (4, 5), (2,), {}),
    ("avg_kernel_two_ints", "avg_pool3d", X5, ((2, 2),), {}),
    ("avg_stride_two_ints", "avg_pool3d", X5, (2, (1, 1)), {}),
    ("avg_padding_two_ints", "avg_pool3d", X5, (2,), {"padding": (1, 1)}),
    ("avg_kernel_bigger_than_input", "avg_pool3d", X5, (5,), {}),
    ("avg_zero_divisor", "avg_pool3d", X5, (2,), {"divisor_override": 0}),
    ("avg_empty", "avg_pool3d", (1, 2, 0, 5, 6), (2,), {}),
    ("adaptive_avg_ndim", "adaptive_avg_pool3d", (2, 4, 5), (2,), {}),
    ("adaptive_avg_two_sizes", "adaptive_avg_pool3d", X5, ((2, 2),), {}),
    ("adaptive_avg_negative", "adaptive_avg_pool3d", X5, ((2, -1, 2),), {}),
    ("adaptive_avg_empty", "adaptive_avg_pool3d", (1, 2, 0, 5, 6), (2,), {}),
    ("adaptive_max_ndim", "adaptive_max_pool3d", (2, 4, 5), (2,), {}),
    ("adaptive_max_two_sizes", "adaptive_max_pool3d", X5, ((2, 2),), {}),
    ("adaptive_max_empty", "adaptive_max_pool3d", (1, 2, 0, 5, 6), (2,), {}),
]


@requires_torch
@pytest.mark.parametrize(("name", "fn", "shape", "args", "kw"), ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(name: str, fn: str, shape: Any, args: Any, kw: dict[str, Any]) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    weight = fn.startswith("conv")
    arrays = [rng.standard_normal(args[0])] if weight else []
    rest = args[1:] if weight else args
    with pytest.raises(Exception) as expected:
        getattr(torch.nn.functional, fn)(torch.tensor(x), *(torch.tensor(a) for a in arrays), *rest, **kw)
    with pytest.raises(expected.type, match=f"^{re.escape(str(expected.value))}$"):
        getattr(F, fn)(ag.tensor(x), *(ag.tensor(a) for a in arrays), *rest, **kw)


def test_functional_and_nn_reexport_the_3d_ops() -> None:
    for name in ("conv3d", "conv_transpose3d", "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d"):
        assert name in F.__all__ and callable(getattr(F, name))
    for name in ("Conv3d", "ConvTranspose3d", "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d"):
        assert name in ag.nn.modules.__all__ and getattr(ag.nn, name) is getattr(ag.nn.modules, name)


@requires_torch
@pytest.mark.parametrize("fn", ["conv3d", "conv_transpose3d"])
@pytest.mark.parametrize(("batch", "dtypes"), [(1, (np.float32, np.float64)), (2, (np.float32, np.float64)),
                                               (2, (np.float64, np.float32))])
def test_dtype_mismatch_is_torchs_error(fn: str, batch: int, dtypes: tuple[Any, Any]) -> None:
    x, w = np.ones((batch, 1, 3, 3, 3), dtypes[0]), np.ones((1, 1, 2, 2, 2), dtypes[1])
    with pytest.raises(RuntimeError) as expected:
        getattr(torch.nn.functional, fn)(torch.tensor(x), torch.tensor(w))
    with pytest.raises(RuntimeError, match=f"^{re.escape(str(expected.value))}$"):
        getattr(F, fn)(ag.tensor(x), ag.tensor(w))
