"""The torch.nn names of aiograd/nn/_inplace_activations.py (the in-place activations, ``rrelu``, the
``*_with_indices`` poolings, ``pdist``), aiograd/nn/modules/rrelu_and_deprecated.py (``RReLU``, ``NLLLoss2d``,
``Container``), data_parallel.py (``DataParallel`` without GPUs) and lazy.py (the lazy layers and
``UninitializedParameter``/``UninitializedBuffer``) against torch: values, gradients, node names,
reprs, state_dict keys, torch's draws after the same seed and torch's errors."""

from __future__ import annotations

import asyncio
import re
import warnings
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag
import aiograd.nn as nn
import aiograd.nn.functional as F

pytestmark = [pytest.mark.aiograd(backends=["asyncio"]), requires_torch]


def _arr(t: Any) -> np.ndarray:
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t.data)


def _norm(s: str) -> str:
    return s.replace("torch.Size", "Size").replace("aiograd.Size", "Size")


def _pair(shape: tuple[int, ...], dtype: Any = np.float64, seed: int = 0) -> tuple[Any, Any]:
    values = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return torch.tensor(values, requires_grad=True), ag.tensor(values, requires_grad=True)


def _backward(t_out: Any, a_out: Any, seed: int = 1) -> None:
    w = np.random.default_rng(seed).standard_normal(tuple(a_out.shape)).astype(a_out.data.dtype)
    (t_out * torch.tensor(w)).sum().backward()
    asyncio.run((a_out * ag.tensor(w)).sum().backward())


INPLACE = [
    ("relu_", ()), ("elu_", (1.3,)), ("leaky_relu_", (0.2,)), ("hardtanh_", (-0.5, 0.7)), ("selu_", ()),
    ("celu_", (0.7,)), ("threshold_", (0.1, 2.0)), ("threshold_", (0.1, -3.0)),
]


@pytest.mark.parametrize(("name", "args"), INPLACE)
def test_inplace_activations(name: str, args: tuple[Any, ...]) -> None:
    tx, ax = _pair((4, 6))
    t_out = getattr(torch.nn.functional, name)(tx * 1, *args)
    a_out = getattr(F, name)(ax * 1, *args)
    np.testing.assert_allclose(_arr(a_out), _arr(t_out), rtol=1e-15, atol=0)
    assert type(a_out.grad_fn).__name__ == type(t_out.grad_fn).__name__
    _backward(t_out, a_out)
    np.testing.assert_allclose(_arr(ax.grad), _arr(tx.grad), rtol=1e-14, atol=1e-15)
    for lib, x in ((torch.nn.functional, tx), (F, ax)):  # a leaf that requires grad: torch's error
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
            getattr(lib, name)(x, *args)
    t_plain, a_plain = tx.detach().clone(), ag.tensor(_arr(tx))
    assert getattr(F, name)(a_plain, *args) is a_plain
    getattr(torch.nn.functional, name)(t_plain, *args)
    np.testing.assert_allclose(_arr(a_plain), _arr(t_plain), rtol=1e-15, atol=0)


def test_inplace_negative_alpha_errors_as_torch() -> None:
    for lib, mod in ((torch, torch.nn.functional), (ag, F)):
        x = lib.tensor([-1.0, 0.5], requires_grad=True)
        out = mod.celu_(x * 1, -1.0)
        with pytest.raises(RuntimeError, match="In-place elu backward calculation is triggered with a negative slope"):
            if lib is ag:
                asyncio.run(out.sum().backward())
            else:
                out.sum().backward()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("inplace", [False, True])
def test_rrelu_matches_torch_after_the_same_seed(dtype: Any, training: bool, inplace: bool) -> None:
    tx, ax = _pair((3, 70), dtype)
    torch.manual_seed(7)
    ag.manual_seed(7)
    t_out = torch.nn.functional.rrelu(tx * 1, 0.1, 0.4, training=training, inplace=inplace)
    a_out = F.rrelu(ax * 1, 0.1, 0.4, training=training, inplace=inplace)
    np.testing.assert_array_equal(_arr(a_out), _arr(t_out))
    assert type(a_out.grad_fn).__name__ == type(t_out.grad_fn).__name__
    assert float(ag.rand((), dtype=ag.float32)) == float(torch.rand((), dtype=torch.float32))  # the same draws
    _backward(t_out, a_out)
    np.testing.assert_array_equal(_arr(ax.grad), _arr(tx.grad))


def test_rrelu_module_and_errors() -> None:
    assert repr(nn.RReLU()) == repr(torch.nn.RReLU()) == "RReLU(lower=0.125, upper=0.3333333333333333)"
    assert repr(nn.RReLU(0.1, 0.3, True)) == repr(torch.nn.RReLU(0.1, 0.3, True))
    values = np.random.default_rng(3).standard_normal((5, 9))
    torch.manual_seed(1)
    ag.manual_seed(1)
    np.testing.assert_array_equal(_arr(nn.RReLU()(ag.tensor(values))), _arr(torch.nn.RReLU()(torch.tensor(values))))
    np.testing.assert_array_equal(_arr(nn.RReLU().eval()(ag.tensor(values))),
                                  _arr(torch.nn.RReLU().eval()(torch.tensor(values))))
    for lib, mod in ((torch, torch.nn.functional), (ag, F)):
        with pytest.raises(RuntimeError, match="^Lower bound should be less than or equal to the upper bound$"):
            mod.rrelu(lib.ones(3), 0.5, 0.1, True)
        with pytest.raises(NotImplementedError, match="\"rrelu_with_noise_out_cpu\" not implemented for 'Long'"):
            mod.rrelu(lib.arange(3), training=True)
        x = lib.tensor([-1.0, 2.0], requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            mod.rrelu_(x)
        out = mod.rrelu_(x * 1, -0.5, -0.2)
        with pytest.raises(RuntimeError, match="In-place leakyReLu backward calculation"):
            asyncio.run(out.sum().backward()) if lib is ag else out.sum().backward()


@pytest.mark.parametrize(("name", "shape", "args"), [
    ("max_pool1d_with_indices", (2, 3, 9), (3, 2, 1)),
    ("max_pool2d_with_indices", (2, 3, 7, 6), (3, 2, 1)),
    ("max_pool3d_with_indices", (1, 2, 5, 6, 5), (2,)),
    ("adaptive_max_pool1d_with_indices", (2, 3, 9), (4,)),
    ("adaptive_max_pool2d_with_indices", (2, 3, 7, 6), ((3, 2),)),
    ("adaptive_max_pool3d_with_indices", (1, 2, 5, 6, 5), (2,)),
])
def test_pooling_with_indices(name: str, shape: tuple[int, ...], args: tuple[Any, ...]) -> None:
    tx, ax = _pair(shape)
    t_out, t_idx = getattr(torch.nn.functional, name)(tx, *args)
    a_out, a_idx = getattr(F, name)(ax, *args)
    np.testing.assert_array_equal(_arr(a_out), _arr(t_out))
    np.testing.assert_array_equal(_arr(a_idx), _arr(t_idx))
    _backward(t_out, a_out)  # (overlapping windows: the sums' order may differ by an ulp)
    np.testing.assert_allclose(_arr(ax.grad), _arr(tx.grad), rtol=1e-15, atol=1e-15)


def test_pdist() -> None:
    assert F.pdist is ag.pdist
    tx, ax = _pair((5, 3))
    t_out, a_out = torch.nn.functional.pdist(tx, 1.5), F.pdist(ax, 1.5)
    np.testing.assert_allclose(_arr(a_out), _arr(t_out), rtol=1e-14)
    _backward(t_out, a_out)
    np.testing.assert_allclose(_arr(ax.grad), _arr(tx.grad), rtol=1e-13)


@pytest.mark.real_default_dtype  # (torch's float32 layers)
def test_deprecated_aliases_warn_as_torch() -> None:
    for lib in (torch.nn, nn):
        with pytest.warns(FutureWarning, match=re.escape("`NLLLoss2d` has been deprecated. Please use `NLLLoss`")):
            loss = lib.NLLLoss2d(ignore_index=1)
        assert isinstance(loss, lib.NLLLoss) and repr(loss) == "NLLLoss2d()" and loss.ignore_index == 1
        with pytest.warns(FutureWarning, match=re.escape("`nn.Container` is deprecated. All of its functionality")):
            box = lib.Container(a=lib.Linear(2, 3))
        assert list(box.state_dict()) == ["a.weight", "a.bias"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert repr(nn.Container(a=nn.Linear(2, 3))) == repr(torch.nn.Container(a=torch.nn.Linear(2, 3)))
        tx, ax = _pair((2, 3, 4, 4))
        target = np.random.default_rng(0).integers(0, 3, (2, 4, 4))
        np.testing.assert_allclose(_arr(nn.NLLLoss2d()(ax, ag.tensor(target))),
                                   _arr(torch.nn.NLLLoss2d()(tx, torch.tensor(target))), rtol=1e-15)


@pytest.mark.real_default_dtype  # (torch's float32 layers)
def test_data_parallel_without_gpus() -> None:
    torch.manual_seed(0)
    ag.manual_seed(0)
    t_dp = torch.nn.DataParallel(torch.nn.Linear(3, 2), device_ids=None, output_device=None, dim=0)
    a_dp = nn.DataParallel(nn.Linear(3, 2), device_ids=None, output_device=None, dim=0)
    assert repr(a_dp) == repr(t_dp)
    assert list(a_dp.state_dict()) == list(t_dp.state_dict()) == ["module.weight", "module.bias"]
    assert a_dp.device_ids == t_dp.device_ids == []
    values = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_allclose(_arr(a_dp(ag.tensor(values))), _arr(t_dp(torch.tensor(values))), rtol=1e-6)
    a_dp.load_state_dict({k: v.numpy() for k, v in t_dp.state_dict().items()})


LAZY = [
    ("LazyLinear", (3,), (4, 5), "Linear"),
    ("LazyConv1d", (4, 3), (2, 3, 8), "Conv1d"),
    ("LazyConv2d", (4, 3), (2, 3, 6, 5), "Conv2d"),
    ("LazyConv3d", (2, 2), (1, 3, 4, 4, 3), "Conv3d"),
    ("LazyConvTranspose1d", (4, 3), (2, 3, 8), "ConvTranspose1d"),
    ("LazyConvTranspose2d", (4, 3), (2, 3, 6, 5), "ConvTranspose2d"),
    ("LazyConvTranspose3d", (2, 2), (1, 3, 4, 4, 3), "ConvTranspose3d"),
    ("LazyBatchNorm1d", (), (4, 3), "BatchNorm1d"),
    ("LazyBatchNorm2d", (), (2, 3, 4, 4), "BatchNorm2d"),
    ("LazyBatchNorm3d", (), (2, 3, 2, 2, 2), "BatchNorm3d"),
    ("LazyInstanceNorm1d", (), (2, 3, 5), "InstanceNorm1d"),
    ("LazyInstanceNorm2d", (), (2, 3, 4, 4), "InstanceNorm2d"),
    ("LazyInstanceNorm3d", (), (2, 3, 2, 3, 2), "InstanceNorm3d"),
]


@pytest.mark.real_default_dtype  # (torch's float32 layers)
@pytest.mark.parametrize(("name", "args", "shape", "becomes"), LAZY)
def test_lazy_materialises_as_torch(name: str, args: tuple[Any, ...], shape: tuple[int, ...], becomes: str) -> None:
    torch.manual_seed(3)
    ag.manual_seed(3)
    t_mod, a_mod = getattr(torch.nn, name)(*args), getattr(nn, name)(*args)
    assert repr(a_mod) == repr(t_mod)
    t_sd, a_sd = t_mod.state_dict(), a_mod.state_dict()
    assert list(a_sd) == list(t_sd)
    assert [repr(v) for v in a_sd.values()] == [repr(v) for v in t_sd.values()]
    assert a_mod.has_uninitialized_params() and t_mod.has_uninitialized_params()
    values = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    t_out, a_out = t_mod(torch.tensor(values)), a_mod(ag.tensor(values))
    assert type(a_mod).__name__ == type(t_mod).__name__ == becomes
    assert type(a_mod) is getattr(nn, becomes)
    assert repr(a_mod) == repr(t_mod)
    for key, value in t_mod.named_parameters():  # torch's draws, after the same seed
        np.testing.assert_array_equal(_arr(dict(a_mod.named_parameters())[key]), _arr(value), err_msg=key)
    assert list(a_mod.state_dict()) == list(t_mod.state_dict())
    for key, value in t_mod.state_dict().items():  # (running statistics: float32 sums)
        np.testing.assert_allclose(_arr(a_mod.state_dict()[key]), _arr(value), rtol=1e-6, atol=1e-7, err_msg=key)
    np.testing.assert_allclose(_arr(a_out), _arr(t_out), rtol=1e-5, atol=1e-6)
    assert not hasattr(a_mod, "_initialize_hook")


@pytest.mark.real_default_dtype  # (torch's float32 layers)
def test_lazy_load_state_dict_materialises_from_shapes() -> None:
    source = torch.nn.Linear(5, 3)
    t_mod, a_mod = torch.nn.LazyLinear(3), nn.LazyLinear(3)
    t_mod.load_state_dict(source.state_dict())
    a_mod.load_state_dict({k: v.numpy() for k, v in source.state_dict().items()})
    assert type(a_mod).__name__ == "LazyLinear" and not a_mod.has_uninitialized_params()
    assert repr(a_mod) == repr(t_mod)
    np.testing.assert_array_equal(_arr(a_mod.weight), _arr(t_mod.weight))
    values = np.ones((2, 5), np.float32)
    np.testing.assert_allclose(_arr(a_mod(ag.tensor(values))), _arr(t_mod(torch.tensor(values))), rtol=1e-6)
    assert type(a_mod) is nn.Linear and repr(a_mod) == repr(t_mod)
    bn_t, bn_a = torch.nn.LazyBatchNorm1d(), nn.LazyBatchNorm1d()
    src = torch.nn.BatchNorm1d(4).state_dict()
    bn_t.load_state_dict(src)
    bn_a.load_state_dict({k: v.numpy() for k, v in src.items()})
    assert [tuple(v.shape) for v in bn_a.state_dict().values()] == [tuple(v.shape) for v in bn_t.state_dict().values()]


@pytest.mark.real_default_dtype  # (torch's float32 layers)
def test_uninitialized_errors_as_torch() -> None:
    for lib in (torch.nn, nn):
        p = lib.parameter.UninitializedParameter()
        assert repr(p) == "<UninitializedParameter>" and p.requires_grad
        assert repr(lib.parameter.UninitializedBuffer()) == "<UninitializedBuffer>"
        assert lib.parameter.is_lazy(p) and not lib.parameter.is_lazy(lib.Parameter(torch.ones(1) if lib is torch.nn
                                                                                      else ag.ones(1)))
        with pytest.raises(RuntimeError, match=re.escape("Can't access the shape of an uninitialized parameter")):
            _ = p.shape
        with pytest.raises(ValueError, match=r"^Attempted to use an uninitialized parameter in .*torch functions$"):
            _ = p + 1
        with pytest.raises(RuntimeError, match=re.escape("Can't share memory on an uninitialized parameter")):
            p.share_memory_()
        p.materialize((2, 3))
        assert type(p) is lib.Parameter and tuple(p.shape) == (2, 3)
    for lib in (torch, ag):
        conv = (torch.nn if lib is torch else nn).LazyConv2d(4, 3)
        with pytest.raises(RuntimeError) as info:
            conv(lib.ones(2, 3))
        assert _norm(str(info.value)) == (
            "Expected 3D (unbatched) or 4D (batched) input to LazyConv2d, but got input of size: Size([2, 3])")
        conv = (torch.nn if lib is torch else nn).LazyConv2d(4, 3, groups=2)
        with pytest.raises(ValueError, match="^in_channels must be divisible by groups$"):
            conv(lib.ones(1, 3, 5, 5))
