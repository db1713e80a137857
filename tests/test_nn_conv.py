"""Convolutions: ``conv1d``, ``conv2d``, ``conv_transpose2d`` of aiograd.nn.functional.

The ``OpSpec`` rows (tests/op_factory.py: gradcheck and gradgradcheck in float64, forward, first
and second derivatives against torch, float32, ``ConvolutionBackward0``) cover a grid of
strides, paddings (numbers, ``'same'``, ``'valid'``), dilations, groups, output paddings, with
and without bias, batched and unbatched. The argument checks are compared with torch's, type
and message.
"""

from __future__ import annotations

import re
import warnings
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


def conv2d(**kw: Any) -> Any:
    return lambda lib, x, w, *b: nnf(lib).conv2d(x, w, *b, **kw)


def conv1d(**kw: Any) -> Any:
    return lambda lib, x, w, *b: nnf(lib).conv1d(x, w, *b, **kw)


def conv_t(**kw: Any) -> Any:
    return lambda lib, x, w, *b: nnf(lib).conv_transpose2d(x, w, *b, **kw)


C = "ConvolutionBackward0"

SPECS = [
    # ---------------------------------------------------------------- conv2d
    OpSpec("conv2d", conv2d(), ((2, 2, 4, 4), (3, 2, 2, 2), (3,)), grad_fn=C),
    OpSpec("conv2d_no_bias", conv2d(), ((1, 2, 4, 3), (2, 2, 3, 2)), grad_fn=C),
    OpSpec("conv2d_stride", conv2d(stride=2), ((1, 2, 5, 5), (2, 2, 3, 3), (2,)), grad_fn=C),
    OpSpec("conv2d_stride_uneven", conv2d(stride=(2, 1), padding=(1, 0)), ((2, 1, 5, 4), (2, 1, 2, 2)), grad_fn=C),
    OpSpec("conv2d_padding", conv2d(padding=1), ((1, 2, 3, 3), (2, 2, 3, 3), (2,)), grad_fn=C),
    OpSpec("conv2d_padding_uneven", conv2d(padding=(2, 1)), ((1, 1, 3, 3), (2, 1, 2, 3)), grad_fn=C),
    OpSpec("conv2d_dilation", conv2d(dilation=2, padding=1), ((1, 2, 5, 5), (2, 2, 2, 2), (2,)), grad_fn=C),
    OpSpec("conv2d_dilation_stride", conv2d(dilation=(2, 1), stride=(1, 2)), ((1, 1, 6, 5), (2, 1, 2, 2)), grad_fn=C),
    OpSpec("conv2d_groups", conv2d(groups=2), ((2, 4, 3, 3), (4, 2, 2, 2), (4,)), grad_fn=C),
    OpSpec("conv2d_depthwise", conv2d(groups=3, padding=1, stride=2), ((1, 3, 4, 4), (6, 1, 3, 3)), grad_fn=C),
    OpSpec("conv2d_same", conv2d(padding="same"), ((1, 2, 4, 4), (2, 2, 3, 3), (2,)), grad_fn=C),
    OpSpec("conv2d_same_dilation", conv2d(padding="same", dilation=(2, 1)), ((1, 1, 5, 4), (2, 1, 3, 3)), grad_fn=C),
    OpSpec("conv2d_valid", conv2d(padding="valid", stride=(1, 2)), ((1, 2, 4, 5), (1, 2, 2, 2)), grad_fn=C),
    OpSpec("conv2d_kernel_as_input", conv2d(), ((1, 1, 3, 3), (1, 1, 3, 3), (1,)), grad_fn=C),
    OpSpec("conv2d_unbatched", conv2d(padding=1), ((2, 3, 3), (2, 2, 2, 2), (2,)), grad_fn="SqueezeBackward1"),
    OpSpec("conv2d_squared", lambda lib, x, w: nnf(lib).conv2d(x, w, padding=1) ** 2,
           ((1, 2, 3, 3), (2, 2, 2, 2)), grad_fn="PowBackward0"),
    OpSpec("conv2d_twice", lambda lib, x, w: nnf(lib).conv2d(nnf(lib).conv2d(x, w, padding=1).tanh(), w, padding=1),
           ((1, 2, 3, 3), (2, 2, 2, 2)), grad_fn=C),
    # ---------------------------------------------------------------- conv1d
    OpSpec("conv1d", conv1d(), ((2, 2, 5), (3, 2, 2), (3,)), grad_fn=C),
    OpSpec("conv1d_stride_padding_dilation", conv1d(stride=2, padding=2, dilation=2), ((1, 2, 7), (2, 2, 3)), grad_fn=C),
    OpSpec("conv1d_groups", conv1d(groups=2, padding=1), ((2, 4, 4), (2, 2, 3), (2,)), grad_fn=C),
    OpSpec("conv1d_same", conv1d(padding="same", dilation=2), ((1, 2, 5), (2, 2, 3)), grad_fn=C),
    OpSpec("conv1d_unbatched", conv1d(), ((2, 5), (3, 2, 2), (3,)), grad_fn="SqueezeBackward1"),
    # ---------------------------------------------------------------- conv_transpose2d
    OpSpec("conv_transpose2d", conv_t(), ((2, 2, 3, 3), (2, 3, 2, 2), (3,)), grad_fn=C),
    OpSpec("conv_transpose2d_stride", conv_t(stride=2, padding=1), ((1, 2, 3, 2), (2, 2, 3, 3)), grad_fn=C),
    OpSpec("conv_transpose2d_output_padding", conv_t(stride=(2, 3), output_padding=(1, 2), padding=(0, 1)),
           ((1, 2, 2, 2), (2, 1, 2, 3), (1,)), grad_fn=C),
    OpSpec("conv_transpose2d_groups", conv_t(groups=2, stride=2), ((1, 4, 2, 2), (4, 1, 2, 2), (2,)), grad_fn=C),
    OpSpec("conv_transpose2d_dilation", conv_t(dilation=2, output_padding=1, stride=2), ((1, 1, 2, 3), (1, 2, 2, 2)), grad_fn=C),
    OpSpec("conv_transpose2d_unbatched", conv_t(padding=1), ((2, 3, 3), (2, 2, 3, 3)), grad_fn="SqueezeBackward1"),
]

globals().update(make_op_tests(SPECS))


# ================================================================================ errors
X4 = (2, 4, 5, 5)
ERRORS = [
    # (name, function, input shape, weight shape, bias shape, keyword arguments)
    ("channels", "conv2d", X4, (6, 3, 3, 3), None, {}),
    ("channels_groups", "conv2d", X4, (6, 2, 3, 3), None, {"groups": 3}),
    ("groups_divide_out", "conv2d", (2, 6, 5, 5), (4, 2, 3, 3), None, {"groups": 3}),
    ("kernel_too_big", "conv2d", X4, (6, 4, 7, 7), None, {}),
    ("kernel_too_big_dilated", "conv2d", X4, (6, 4, 3, 3), None, {"dilation": 3}),
    ("weight_dims", "conv2d", X4, (6, 4, 3), None, {}),
    ("input_2d", "conv2d", (4, 5), (6, 4, 3, 3), None, {}),
    ("input_5d", "conv2d", (1, 2, 4, 5, 5), (6, 4, 3, 3), None, {}),
    ("same_strided", "conv2d", X4, (6, 4, 3, 3), None, {"stride": 2, "padding": "same"}),
    ("bad_padding_string", "conv2d", X4, (6, 4, 3, 3), None, {"padding": "full"}),
    ("negative_padding", "conv2d", X4, (6, 4, 3, 3), None, {"padding": -1}),
    ("zero_stride", "conv2d", X4, (6, 4, 3, 3), None, {"stride": 0}),
    ("bias_size", "conv2d", X4, (6, 4, 3, 3), (5,), {}),
    ("stride_length", "conv2d", X4, (6, 4, 3, 3), None, {"stride": (1, 1, 1)}),
    ("conv1d_input_4d", "conv1d", (3, 5, 5, 5), (2, 3, 2), None, {}),
    ("conv1d_channels", "conv1d", (2, 3, 5), (2, 4, 2), None, {}),
    ("transposed_channels", "conv_transpose2d", X4, (3, 2, 3, 3), None, {}),
    ("transposed_groups", "conv_transpose2d", X4, (3, 2, 3, 3), None, {"groups": 2}),
    ("transposed_output_padding", "conv_transpose2d", X4, (4, 2, 3, 3), None, {"stride": 2, "output_padding": 2}),
    ("transposed_output_padding_stride_1", "conv_transpose2d", X4, (4, 2, 3, 3), None, {"output_padding": 1}),
]


@requires_torch
@pytest.mark.parametrize(("name", "fn", "x", "w", "b", "kw"), ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(name: str, fn: str, x: Any, w: Any, b: Any, kw: dict[str, Any]) -> None:
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in (x, w) + ((b,) if b else ())]
    with pytest.raises(Exception) as expected:
        getattr(torch.nn.functional, fn)(*(torch.tensor(a) for a in arrays), **kw)
    with pytest.raises(expected.type, match=f"^{re.escape(str(expected.value))}$"):
        getattr(F, fn)(*(ag.tensor(a) for a in arrays), **kw)


@requires_torch
@pytest.mark.parametrize(("batch", "dtypes"), [(1, (np.float32, np.float64)), (2, (np.float32, np.float64)),
                                               (2, (np.float64, np.float32))])
def test_dtype_mismatch_is_torchs_error(batch: int, dtypes: tuple[Any, Any]) -> None:
    """(PyTorch's words depend on the kernel it picks: mkldnn's for a float32 batch.)"""
    x, w = np.ones((batch, 1, 3, 3), dtypes[0]), np.ones((1, 1, 2, 2), dtypes[1])
    with pytest.raises(RuntimeError) as expected:
        torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w))
    with pytest.raises(RuntimeError, match=f"^{re.escape(str(expected.value))}$"):
        F.conv2d(ag.tensor(x), ag.tensor(w))


@requires_torch
def test_same_padding_with_an_even_kernel_warns_as_torch() -> None:
    x, w = np.ones((1, 1, 4, 4)), np.ones((1, 1, 2, 2))
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        expected = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), padding="same")
    with pytest.warns(UserWarning) as ours:
        out = F.conv2d(ag.tensor(x), ag.tensor(w), padding="same")
    assert [str(w.message) for w in ours] == [str(w.message).split(" (Triggered")[0] for w in theirs]
    np.testing.assert_array_equal(out.data, expected.numpy())


@requires_torch
@pytest.mark.parametrize("shape", [(1, 1, 5, 5), (2, 3, 7, 4)])
def test_output_shapes_match_torch_over_a_grid(shape: tuple[int, ...]) -> None:
    """Every stride/padding/dilation combination that torch accepts gives torch's shape and values."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape)
    c = shape[1]
    w = rng.standard_normal((2, c, 3, 2))
    for stride in (1, 2, 3):
        for padding in (0, 1):
            for dilation in (1, 2):
                try:
                    expected = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), None, stride, padding, dilation)
                except RuntimeError:
                    with pytest.raises(RuntimeError):
                        F.conv2d(ag.tensor(x), ag.tensor(w), None, stride, padding, dilation)
                    continue
                out = F.conv2d(ag.tensor(x), ag.tensor(w), None, stride, padding, dilation)
                np.testing.assert_allclose(out.data, expected.numpy(), rtol=1e-12, atol=1e-12)


async def test_no_grad_records_nothing_and_weights_alone_get_gradients() -> None:
    x = ag.tensor(np.ones((1, 1, 3, 3)))
    w = ag.tensor(np.ones((1, 1, 2, 2)), requires_grad=True)
    with ag.no_grad():
        assert F.conv2d(x, w).grad_fn is None
    out = F.conv2d(x, w)
    (gw,) = await ag.grad(out.sum(), [w])
    np.testing.assert_array_equal(gw.data, np.full((1, 1, 2, 2), 4.0))


@requires_torch
@pytest.mark.parametrize("kernel", [(1, 1), (3, 1), (2, 2)])
async def test_results_never_alias_the_reused_buffers(kernel: tuple[int, int]) -> None:
    """The array path reuses its im2col buffers from call to call: an earlier output or
    gradient must not change when the next convolution of the same shapes runs."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((2, 2, *kernel))
    xs = [ag.tensor(rng.standard_normal((2, 2, 4, 4)), requires_grad=True) for _ in range(2)]
    outs = [F.conv2d(x, ag.tensor(w)) for x in xs]
    first = outs[0].data.copy()
    grads = [(await ag.grad(o.sum(), [x]))[0] for o, x in zip(outs, xs)]
    np.testing.assert_array_equal(outs[0].data, first)
    for x, out, g in zip(xs, outs, grads):
        t = torch.tensor(x.data, requires_grad=True)
        tout = torch.nn.functional.conv2d(t, torch.tensor(w))
        (tg,) = torch.autograd.grad(tout.sum(), [t])
        np.testing.assert_allclose(out.data, tout.detach().numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g.data, tg.numpy(), rtol=1e-12, atol=1e-12)


def test_functional_reexports_the_convolutions_and_pooling() -> None:
    from aiograd.nn import _conv, _pooling

    for module in (_conv, _pooling):
        for name in module.__all__:
            assert name in F.__all__ and getattr(F, name) is getattr(module, name), name
            assert getattr(F, name).__doc__, name


@requires_torch
@pytest.mark.parametrize("fn", ["conv2d", "conv_transpose2d"])
@pytest.mark.parametrize("stride", [1, 2])
async def test_an_empty_batch_convolves_to_an_empty_batch(fn: str, stride: int) -> None:
    x = ag.tensor(np.ones((0, 2, 4, 4)), requires_grad=True)
    w = ag.tensor(np.ones((2, 2, 3, 3)), requires_grad=True)
    out = getattr(F, fn)(x, w, stride=stride)
    expected = getattr(torch.nn.functional, fn)(torch.ones(0, 2, 4, 4), torch.ones(2, 2, 3, 3), stride=stride)
    assert out.shape == tuple(expected.shape)
    gx, gw = await ag.grad(out.sum(), [x, w])
    assert gx.shape == x.shape
    np.testing.assert_array_equal(gw.data, np.zeros(w.shape))


# ================================================================================ backward paths
# The array path's backward (reused im2col buffers, the bias's gradient summed sample first):
# a second backward, saved-tensor hooks, an input changed in place and a batched backward must
# all still give torch's gradients or errors.
def _both(x: Any, w: Any) -> tuple[Any, Any, Any, Any]:
    a, aw = ag.tensor(x, requires_grad=True), ag.tensor(w, requires_grad=True)
    t, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    return a, aw, t, tw


@requires_torch
async def test_a_second_backward_matches_torch() -> None:
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((2, 3, 4, 4)), rng.standard_normal((2, 3, 3, 3))
    a, aw, t, tw = _both(x, w)
    out, tout = F.conv2d(a, aw, padding=1), torch.nn.functional.conv2d(t, tw, padding=1)
    u = rng.standard_normal(out.shape)
    first = await ag.grad(out, [aw], ag.tensor(u), retain_graph=True)
    second = await ag.grad(out, [aw], ag.tensor(2 * u))
    (t1,) = torch.autograd.grad(tout, [tw], torch.tensor(u), retain_graph=True)
    (t2,) = torch.autograd.grad(tout, [tw], torch.tensor(2 * u))
    np.testing.assert_allclose(first[0].data, t1.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(second[0].data, t2.numpy(), rtol=1e-10, atol=1e-10)


@requires_torch
async def test_saved_tensor_hooks_see_the_data_they_hand_back() -> None:
    """An unpack hook may hand back other data than the input: the weight's gradient is taken
    from what it hands back, as torch's."""
    rng = np.random.default_rng(6)
    x, w = rng.standard_normal((2, 2, 4, 4)), rng.standard_normal((3, 2, 3, 3))
    a, aw, t, tw = _both(x, w)
    with ag.graph.saved_tensors_hooks(lambda v: v, lambda v: v * 2):
        out = F.conv2d(a, aw, padding=1)
    with torch.autograd.graph.saved_tensors_hooks(lambda v: v, lambda v: v * 2):
        tout = torch.nn.functional.conv2d(t, tw, padding=1)
    u = rng.standard_normal(out.shape)
    (gw,) = await ag.grad(out, [aw], ag.tensor(u))
    (tgw,) = torch.autograd.grad(tout, [tw], torch.tensor(u))
    np.testing.assert_allclose(gw.data, tgw.numpy(), rtol=1e-10, atol=1e-10)


@requires_torch
async def test_an_input_changed_in_place_after_the_forward_is_torchs_error() -> None:
    x, w = np.ones((1, 1, 3, 3)), np.ones((1, 1, 3, 3))
    a, aw, t, tw = _both(x, w)
    base, tbase = a * 1, t * 1
    out, tout = F.conv2d(base, aw, padding=1), torch.nn.functional.conv2d(tbase, tw, padding=1)
    base.add_(1)
    tbase.add_(1)
    with pytest.raises(RuntimeError) as expected:
        torch.autograd.grad(tout.sum(), [tw])
    # (torch's message, naming aiograd where it names torch)
    with pytest.raises(RuntimeError, match=re.escape(str(expected.value).replace("torch.autograd.", "aiograd.").replace("torch.", "aiograd."))):
        await ag.grad(out.sum(), [aw])


@requires_torch
async def test_batched_gradients_and_the_bias_match_torch() -> None:
    rng = np.random.default_rng(7)
    x, w = rng.standard_normal((2, 3, 4, 4)), rng.standard_normal((2, 3, 3, 3))
    a, aw, t, tw = _both(x, w)
    bias = rng.standard_normal(2)
    ab, tb = ag.tensor(bias, requires_grad=True), torch.tensor(bias, requires_grad=True)
    out, tout = F.conv2d(a, aw, ab, padding=1), torch.nn.functional.conv2d(t, tw, tb, padding=1)
    u = rng.standard_normal((3, *out.shape))
    gx, gw, gb = await ag.grad(out, [a, aw, ab], ag.tensor(u), is_grads_batched=True)
    tgx, tgw, tgb = torch.autograd.grad(tout, [t, tw, tb], torch.tensor(u), is_grads_batched=True)
    np.testing.assert_allclose(gb.data, tgb.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(gw.data, tgw.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(gx.data, tgx.numpy(), rtol=1e-10, atol=1e-10)
