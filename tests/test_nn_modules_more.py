"""The torch.nn names of aiograd/nn/modules/container_params.py, padding.py, layers_more.py,
normalization_extra.py and the functions of aiograd/nn/_functional_more.py against torch:
values (float64 tight, float32 close), gradients, node names, float64 gradcheck and
gradgradcheck of the functions, reprs, state_dict keys, loading torch's state dict, torch's
initialisation after the same seed, torch's errors, and ParameterList/ParameterDict side by side
with torch's."""

from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag
import aiograd.nn as nn
import aiograd.nn.functional as F

pytestmark = [pytest.mark.aiograd(backends=["asyncio"]), requires_torch]  # layer math: one loop is enough


def nnf(lib: Any) -> Any:
    return F if lib is ag else torch.nn.functional


def _arr(t: Any) -> np.ndarray:
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t.data)


def _name(node: Any) -> str:
    return node.name().replace("torch::autograd::", "")


def _norm(s: str) -> str:
    return s.replace("torch.Size", "Size").replace("aiograd.Size", "Size").replace("torch.", "aiograd.")


def _errors(f: Any) -> tuple[type, str]:
    try:
        f()
    except Exception as e:  # noqa: BLE001
        return type(e), _norm(str(e))
    raise AssertionError("no error")


def _data(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=shape)


async def _compare(call: Any, arrays: list[np.ndarray], dtype: Any = np.float64) -> None:
    """``call(lib, *tensors)`` on both libraries: values, node name and every input's gradient."""
    rtol, atol = (1e-10, 1e-12) if dtype == np.float64 else (2e-6, 1e-6)
    a = [ag.tensor(x.astype(dtype), requires_grad=True) for x in arrays]
    t = [torch.tensor(x.astype(dtype), requires_grad=True) for x in arrays]
    o, to = call(ag, *a), call(torch, *t)
    np.testing.assert_allclose(_arr(o), _arr(to), rtol=rtol, atol=atol)
    assert _arr(o).dtype == _arr(to).dtype
    assert _name(o.grad_fn) == _name(to.grad_fn)
    w = np.random.default_rng(9).normal(size=tuple(to.shape)).astype(dtype)
    grads = await ag.grad((o * ag.tensor(w)).sum(), a)
    tgrads = torch.autograd.grad((to * torch.tensor(w)).sum(), t)
    for g, tg in zip(grads, tgrads):
        np.testing.assert_allclose(_arr(g), tg.numpy(), rtol=rtol, atol=atol)


def _away(shape: tuple[int, ...], kinks: tuple[float, ...], seed: int = 0) -> np.ndarray:
    x = _data(shape, seed)
    for k in kinks:
        x = np.where(np.abs(x - k) < 0.05, k + 0.2, x)
    return x


# ------------------------------------------------------------------------------ functions
FUNCTIONS: dict[str, tuple[Any, list[np.ndarray]]] = {
    "hardshrink": (lambda lib, x: nnf(lib).hardshrink(x, 0.7), [_away((3, 4), (-0.7, 0.7))]),
    "hardshrink_default": (lambda lib, x: nnf(lib).hardshrink(x), [_away((2, 3, 4), (-0.5, 0.5))]),
    "softshrink": (lambda lib, x: nnf(lib).softshrink(x, 0.3), [_away((3, 4), (-0.3, 0.3))]),
    "channel_shuffle": (lambda lib, x: nnf(lib).channel_shuffle(x, 3), [_data((2, 6, 2, 2))]),
    "channel_shuffle_3d": (lambda lib, x: nnf(lib).channel_shuffle(x, 2), [_data((2, 4, 3))]),
    "bilinear": (lambda lib, a, b, w, c: nnf(lib).bilinear(a, b, w, c),
                 [_data((4, 3), 1), _data((4, 5), 2), _data((2, 3, 5), 3), _data((2,), 4)]),
    "bilinear_batch_dims": (lambda lib, a, b, w: nnf(lib).bilinear(a, b, w),
                            [_data((2, 3, 3), 1), _data((2, 3, 2), 2), _data((4, 3, 2), 3)]),
    "bilinear_1d": (lambda lib, a, b, w: nnf(lib).bilinear(a, b, w), [_data((3,), 1), _data((2,), 2), _data((4, 3, 2), 3)]),
    "pairwise_distance": (lambda lib, a, b: nnf(lib).pairwise_distance(a, b), [_data((4, 5), 1), _data((4, 5), 2)]),
    "pairwise_distance_p1_keepdim": (lambda lib, a, b: nnf(lib).pairwise_distance(a, b, 1.0, 1e-3, True),
                                     [_data((2, 3, 5), 1), _data((5,), 2)]),
    "pairwise_distance_p3": (lambda lib, a, b: nnf(lib).pairwise_distance(a, b, 3.0), [_data((5,), 1), _data((3, 5), 2)]),
    "rms_norm": (lambda lib, x: nnf(lib).rms_norm(x, (4,)), [_data((3, 4))]),
    "rms_norm_weight": (lambda lib, x, w: nnf(lib).rms_norm(x, [3, 4], w, 1e-3), [_data((2, 3, 4)), _data((3, 4), 1)]),
    "local_response_norm_3d": (lambda lib, x: nnf(lib).local_response_norm(x, 3, 0.1, 0.6, 2.0), [_data((2, 5, 4))]),
    "local_response_norm_4d": (lambda lib, x: nnf(lib).local_response_norm(x, 2), [_data((2, 5, 3, 2))]),
    "local_response_norm_5d": (lambda lib, x: nnf(lib).local_response_norm(x, 4, 0.5, 1.2, 1.5),
                               [_data((2, 5, 2, 2, 3))]),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", list(FUNCTIONS))
async def test_functions_match_torch(name: str, dtype: Any) -> None:
    call, arrays = FUNCTIONS[name]
    await _compare(call, arrays, dtype)


@pytest.mark.parametrize("name", list(FUNCTIONS))
async def test_functions_pass_gradcheck_and_gradgradcheck(name: str) -> None:
    call, arrays = FUNCTIONS[name]
    xs = [ag.tensor(x, requires_grad=True) for x in arrays]
    assert await ag.testing.gradcheck(lambda *t: call(ag, *t), xs)
    assert await ag.testing.gradgradcheck(lambda *t: call(ag, *t), xs)


def test_rms_norm_default_eps_is_the_dtype_epsilon() -> None:
    x = np.full((2, 3), 1e-4)
    for dtype in (np.float32, np.float64):
        ours = F.rms_norm(ag.tensor(x.astype(dtype)), (3,))
        theirs = torch.nn.functional.rms_norm(torch.tensor(x.astype(dtype)), (3,))
        np.testing.assert_allclose(_arr(ours), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize("hard", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
async def test_gumbel_softmax_draws_torch_samples_after_the_same_seed(hard: bool, dtype: Any) -> None:
    x = _data((3, 5)).astype(dtype)
    ag.manual_seed(11)
    torch.manual_seed(11)
    a, t = ag.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    o = F.gumbel_softmax(a, tau=0.5, hard=hard, dim=1)
    to = torch.nn.functional.gumbel_softmax(t, tau=0.5, hard=hard, dim=1)
    np.testing.assert_allclose(_arr(o), _arr(to), rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)
    assert _name(o.grad_fn) == _name(to.grad_fn)
    w = np.arange(15.0).reshape(3, 5).astype(dtype)
    (g,) = await ag.grad((o * ag.tensor(w)).sum(), [a])
    (tg,) = torch.autograd.grad((to * torch.tensor(w)).sum(), [t])
    np.testing.assert_allclose(_arr(g), tg.numpy(), rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-5)


def test_gumbel_softmax_warns_of_eps_as_torch() -> None:
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated and has no effect."):
        F.gumbel_softmax(ag.ones(2, 3), eps=1e-3)


ERRORS = {
    "softshrink_negative": lambda f, lib: f.softshrink(lib.ones(3, dtype=lib.float32), -1.0),
    "softshrink_negative_double": lambda f, lib: f.softshrink(lib.ones(3, dtype=lib.float64), -0.5),
    "softshrink_long": lambda f, lib: f.softshrink(lib.ones(3, dtype=lib.long)),
    "hardshrink_long": lambda f, lib: f.hardshrink(lib.ones(3, dtype=lib.long)),
    "hardshrink_list": lambda f, lib: f.hardshrink([1.0]),
    "channel_shuffle_2d": lambda f, lib: f.channel_shuffle(lib.ones(2, 6), 2),
    "channel_shuffle_zero": lambda f, lib: f.channel_shuffle(lib.ones(2, 6, 3), 0),
    "channel_shuffle_indivisible": lambda f, lib: f.channel_shuffle(lib.ones(2, 6, 3), 4),
    "bilinear_batch": lambda f, lib: f.bilinear(lib.ones(2, 3), lib.ones(3, 5), lib.ones(4, 3, 5)),
    "bilinear_dims": lambda f, lib: f.bilinear(lib.ones(2, 3), lib.ones(2, 2, 5), lib.ones(4, 3, 5)),
    "bilinear_input1": lambda f, lib: f.bilinear(lib.ones(2, 3), lib.ones(2, 5), lib.ones(4, 2, 5)),
    "bilinear_input2": lambda f, lib: f.bilinear(lib.ones(2, 3), lib.ones(2, 5), lib.ones(4, 3, 4)),
    "bilinear_bias": lambda f, lib: f.bilinear(lib.ones(2, 3), lib.ones(2, 5), lib.ones(4, 3, 5), lib.ones(3)),
    "rms_norm_shape": lambda f, lib: f.rms_norm(lib.ones(2, 3), (4,)),
    "rms_norm_weight": lambda f, lib: f.rms_norm(lib.ones(2, 3), (3,), lib.ones(4)),
    "rms_norm_empty": lambda f, lib: f.rms_norm(lib.ones(2, 3), ()),
    "rms_norm_long": lambda f, lib: f.rms_norm(lib.ones(2, 3, dtype=lib.long), (3,)),
    "rms_norm_rank": lambda f, lib: f.rms_norm(lib.ones(3), (2, 3)),
    "rms_norm_shapes": lambda f, lib: f.rms_norm(lib.ones(2, 3, 4), (3, 5)),
    "local_response_norm_2d": lambda f, lib: f.local_response_norm(lib.ones(2, 3), 2),
    "pairwise_distance_shapes": lambda f, lib: f.pairwise_distance(lib.ones(2, 3), lib.ones(2, 4)),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_function_errors_match_torch(name: str) -> None:
    assert _errors(lambda: ERRORS[name](F, ag)) == _errors(lambda: ERRORS[name](torch.nn.functional, torch))


# ------------------------------------------------------------------------------ modules
MODULES = [
    ("Hardshrink", (), (3, 4)), ("Hardshrink", (0.3,), (3, 4)), ("Softshrink", (), (3, 4)), ("Softshrink", (1,), (3, 4)),
    ("ChannelShuffle", (2,), (2, 4, 3)), ("RMSNorm", (4,), (2, 3, 4)), ("RMSNorm", ([3, 4], 1e-4), (2, 3, 4)),
    ("RMSNorm", (4, None, False), (2, 4)), ("LocalResponseNorm", (3,), (2, 5, 3, 3)),
    ("LocalResponseNorm", (2, 0.1, 0.5, 2.0), (2, 4, 5)), ("BatchNorm3d", (3,), (2, 3, 2, 3, 2)),
    ("BatchNorm3d", (3, 1e-3, None, False), (2, 3, 2, 2, 2)), ("SyncBatchNorm", (3,), (4, 3)),
    ("SyncBatchNorm", (3,), (2, 3, 4, 2)), ("SyncBatchNorm", (3, 1e-5, 0.3, True, False), (2, 3, 4)),
    *((f"{kind}Pad{d}d", (args,), (2, 3, 4, 5, 6)[: d + 2])
      for kind in ("Zero", "Reflection", "Replication", "Circular")
      for d, args in ((1, 2), (1, (1, 3)), (2, 1), (2, (1, 0, 2, 3)), (3, 1), (3, (1, 2, 0, 1, 2, 0)))),
    *((f"ConstantPad{d}d", (args, 1.5), (3, 4, 5, 6)[: d + 1]) for d, args in ((1, 2), (2, (1, 0, 2, 3)), (3, 1))),
]


async def _module_pair(name: str, args: tuple[Any, ...]) -> tuple[Any, Any]:
    theirs = getattr(torch.nn, name)(*args).double()
    ours = getattr(nn, name)(*args)
    sd = theirs.state_dict()
    for v in sd.values():  # distinct parameter values, so the loaded ones are checked
        if v.is_floating_point():
            v.copy_(torch.linspace(0.5, 1.5, v.numel(), dtype=v.dtype).reshape(v.shape))
    ours.load_state_dict({k: ag.tensor(v.numpy()) for k, v in sd.items()})
    return ours, theirs


@pytest.mark.parametrize(("name", "args", "shape"), MODULES, ids=[f"{m[0]}-{i}" for i, m in enumerate(MODULES)])
async def test_modules_match_torch(name: str, args: tuple[Any, ...], shape: tuple[int, ...]) -> None:
    ours, theirs = await _module_pair(name, args)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ps, tps = dict(ours.named_parameters()), dict(theirs.named_parameters())
    assert list(ps) == list(tps)
    x = _data(shape, 3)
    for _ in range(2):  # (twice: the running statistics are updated, then used)
        a, t = ag.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        o, to = ours(a), theirs(t)
        np.testing.assert_allclose(_arr(o), _arr(to), rtol=1e-10, atol=1e-12)
        assert _name(o.grad_fn) == _name(to.grad_fn)
        w = _data(tuple(to.shape), 4)
        grads = await ag.grad((o * ag.tensor(w)).sum(), [a, *ps.values()])
        tgrads = torch.autograd.grad((to * torch.tensor(w)).sum(), [t, *tps.values()])
        for g, tg in zip(grads, tgrads):
            np.testing.assert_allclose(_arr(g), tg.numpy(), rtol=1e-10, atol=1e-12)
    for k, v in theirs.state_dict().items():
        np.testing.assert_allclose(_arr(ours.state_dict()[k]), v.numpy(), rtol=1e-12)
    ours.eval()
    theirs.eval()
    np.testing.assert_allclose(_arr(ours(ag.tensor(x))), _arr(theirs(torch.tensor(x))), rtol=1e-10, atol=1e-12)


TWO_INPUT = [
    ("Bilinear", (3, 4, 2), ((5, 3), (5, 4))), ("Bilinear", (3, 4, 2, False), ((2, 5, 3), (2, 5, 4))),
    ("CosineSimilarity", (), ((4, 3), (4, 3))), ("CosineSimilarity", (0, 1e-6), ((4, 3), (4, 1))),
    ("PairwiseDistance", (), ((4, 3), (4, 3))), ("PairwiseDistance", (1.0, 1e-3, True), ((4, 3), (3,))),
]


@pytest.mark.parametrize(("name", "args", "shapes"), TWO_INPUT, ids=[f"{m[0]}-{i}" for i, m in enumerate(TWO_INPUT)])
async def test_two_input_modules_match_torch(name: str, args: tuple[Any, ...], shapes: Any) -> None:
    ours, theirs = await _module_pair(name, args)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    params, tparams = list(ours.parameters()), list(theirs.parameters())
    await _compare(lambda lib, a, b: (ours if lib is ag else theirs)(a, b), [_data(s, i) for i, s in enumerate(shapes)])
    a, b = (ag.tensor(_data(s, i)) for i, s in enumerate(shapes))
    ta, tb = (torch.tensor(_data(s, i)) for i, s in enumerate(shapes))
    if params:
        grads = await ag.grad(ours(a, b).sum(), params)
        tgrads = torch.autograd.grad(theirs(ta, tb).sum(), tparams)
        for g, tg in zip(grads, tgrads):
            np.testing.assert_allclose(_arr(g), tg.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("bias", [True, False])
def test_bilinear_initialises_as_torch_after_the_same_seed(bias: bool) -> None:
    ag.manual_seed(7)
    torch.manual_seed(7)
    ours = nn.Bilinear(5, 3, 4, bias, dtype=ag.float32)
    theirs = torch.nn.Bilinear(5, 3, 4, bias, dtype=torch.float32)
    for (k, p), (tk, tp) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        assert k == tk
        np.testing.assert_array_equal(_arr(p), tp.numpy())
    assert _errors(lambda: nn.Bilinear(0, 3, 4)) == _errors(lambda: torch.nn.Bilinear(0, 3, 4))


MODULE_ERRORS = {
    "BatchNorm3d": lambda lib: lib.nn.BatchNorm3d(3)(lib.ones(2, 3, 4, 4)),
    "SyncBatchNorm_1d": lambda lib: lib.nn.SyncBatchNorm(3)(lib.ones(3)),
    "SyncBatchNorm_channels": lambda lib: lib.nn.SyncBatchNorm(0)(lib.ones(2, 0)),
    "SyncBatchNorm_one_value": lambda lib: lib.nn.SyncBatchNorm(3)(lib.ones(1, 3)),
    "CircularPad1d": lambda lib: lib.nn.CircularPad1d(1)(lib.ones(2, 3, 4, 5)),
    "CircularPad2d": lambda lib: lib.nn.CircularPad2d(1)(lib.ones(2, 3)),
    "CircularPad3d": lambda lib: lib.nn.CircularPad3d(1)(lib.ones(2, 3, 4)),
    "ReflectionPad1d": lambda lib: lib.nn.ReflectionPad1d(1)(lib.ones(2, 3, 4, 5)),
    "ReflectionPad2d": lambda lib: lib.nn.ReflectionPad2d(1)(lib.ones(2, 3)),
    "ReflectionPad1d_too_wide": lambda lib: lib.nn.ReflectionPad1d(4)(lib.ones(2, 3, 4)),
    "ReplicationPad3d": lambda lib: lib.nn.ReplicationPad3d(1)(lib.ones(2, 3, 4)),
    "ReplicationPad2d": lambda lib: lib.nn.ReplicationPad2d(1)(lib.ones(2, 3, 4, 5, 6, 7)),
    "ChannelShuffle": lambda lib: lib.nn.ChannelShuffle(4)(lib.ones(2, 6, 3)),
    "LocalResponseNorm": lambda lib: lib.nn.LocalResponseNorm(2)(lib.ones(2, 3)),
    "RMSNorm": lambda lib: lib.nn.RMSNorm(4)(lib.ones(2, 3)),
}


@pytest.mark.parametrize("name", list(MODULE_ERRORS))
def test_module_errors_match_torch(name: str) -> None:
    assert _errors(lambda: MODULE_ERRORS[name](ag)) == _errors(lambda: MODULE_ERRORS[name](torch))


def test_padding_normalises_its_argument_as_torch() -> None:
    for name, args in (("ZeroPad2d", (3,)), ("ConstantPad3d", (2, 0.5)), ("ReflectionPad1d", ([1, 2],)),
                       ("CircularPad2d", ((1, 2, 3, 4),)), ("ReplicationPad3d", (1,))):
        ours, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
        assert ours.padding == theirs.padding
        assert repr(ours) == repr(theirs)


def test_sync_batch_norm_converts_batch_norm_layers_sharing_their_state() -> None:
    def build(lib: Any) -> Any:
        model = lib.nn.Sequential(lib.nn.Conv2d(2, 3, 1), lib.nn.BatchNorm2d(3, momentum=None),
                                  lib.nn.Sequential(lib.nn.BatchNorm1d(3, affine=False)))
        model.eval()
        return model

    ours, theirs = build(ag), build(torch)
    bn = ours[1]
    conv_ours = nn.SyncBatchNorm.convert_sync_batchnorm(ours, process_group="pg")
    conv_theirs = torch.nn.SyncBatchNorm.convert_sync_batchnorm(theirs, process_group="pg")
    assert repr(conv_ours) == repr(conv_theirs)
    assert list(conv_ours.state_dict()) == list(conv_theirs.state_dict())
    assert conv_ours[1].weight is bn.weight and conv_ours[1].running_mean is bn.running_mean
    assert conv_ours[1].process_group == "pg" and not conv_ours[1].training
    assert type(nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm3d(2))) is nn.SyncBatchNorm


# ------------------------------------------------------------------------------ ParameterList, ParameterDict
def _side_by_side(lib: Any) -> Any:
    return lib.nn.ParameterList([lib.ones(2, 3), lib.nn.Parameter(lib.zeros(4)), 5, "s"])


@pytest.mark.real_default_dtype  # (float32, torch's, as the reprs show it)
def test_parameter_list_behaves_as_torch() -> None:
    ours, theirs = _side_by_side(ag), _side_by_side(torch)
    assert _norm(repr(ours)) == _norm(repr(theirs))
    assert len(ours) == len(theirs) == 4
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["0", "1"]
    assert [n for n, _ in ours.named_parameters()] == ["0", "1"]
    assert isinstance(ours[0], nn.Parameter) and ours[0].requires_grad
    assert ours[2] == 5 and ours[-1] == "s"
    for lib, pl in ((ag, ours), (torch, theirs)):
        pl.append(lib.ones(1))
        pl.extend([lib.zeros(2, 2)])
        pl += [lib.ones(3)]
        pl[2] = lib.full((2,), 3.0)
    assert _norm(repr(ours)) == _norm(repr(theirs))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    sliced, tsliced = ours[1:6:2], theirs[1:6:2]
    assert type(sliced) is nn.ParameterList and _norm(repr(sliced)) == _norm(repr(tsliced))
    assert sliced[0] is ours[1]
    assert [type(p).__name__ for p in ours] == [type(p).__name__ for p in theirs]
    assert "0" not in dir(ours)
    for f in (lambda pl, lib: pl[10], lambda pl, lib: pl(1), lambda pl, lib: pl.extend(lib.ones(2)),
              lambda pl, lib: pl.extend(3), lambda pl, lib: pl.__setitem__(0, 7), lambda pl, lib: pl["a"]):
        assert _errors(lambda f=f: f(ours, ag)) == _errors(lambda f=f: f(theirs, torch))
    ours.load_state_dict({k: ag.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})


@pytest.mark.real_default_dtype  # (float32, torch's, as the reprs show it)
def test_parameter_list_in_a_module_registers_nested_names_as_torch() -> None:
    def build(lib: Any) -> Any:
        m = lib.nn.Module()
        m.params = lib.nn.ParameterList([lib.nn.Parameter(lib.ones(2)) for _ in range(2)])
        m.table = lib.nn.ParameterDict({"w": lib.nn.Parameter(lib.ones(3)), "b": lib.zeros(1)})
        return m

    ours, theirs = build(ag), build(torch)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert _norm(repr(ours)) == _norm(repr(theirs))
    assert len(list(ours.parameters())) == 4


async def test_parameter_list_parameters_get_gradients() -> None:
    pl = nn.ParameterList([ag.ones(2), ag.full((2,), 2.0)])
    loss = (pl[0] * pl[1]).sum()
    await loss.backward()
    np.testing.assert_array_equal(_arr(pl[0].grad), [2.0, 2.0])
    np.testing.assert_array_equal(_arr(pl[1].grad), [1.0, 1.0])


@pytest.mark.real_default_dtype  # (float32, torch's, as the reprs show it)
def test_parameter_dict_behaves_as_torch() -> None:
    def build(lib: Any) -> Any:
        return lib.nn.ParameterDict({"b": lib.ones(2, 3), "a": lib.nn.Parameter(lib.zeros(4)), "c": 5})

    ours, theirs = build(ag), build(torch)
    assert list(ours) == list(theirs) == ["a", "b", "c"]  # a plain dict's keys sorted, as torch
    assert _norm(repr(ours)) == _norm(repr(theirs))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for lib, pd in ((ag, ours), (torch, theirs)):
        pd["z"] = lib.ones(1)
        pd.update([("y", lib.zeros(2)), ("x", 1.5)])
        pd.update(OrderedDict([("w", lib.ones(2, 2))]))
        pd.setdefault("v", lib.ones(3))
        del pd["b"]
    assert list(ours.keys()) == list(theirs.keys())
    assert _norm(repr(ours)) == _norm(repr(theirs))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert "a" in ours and "b" not in ours and len(ours) == len(theirs)
    assert ours.get("nope", 3) == 3 and ours["c"] == 5
    assert ours.pop("c") == 5 and theirs.pop("c") == 5
    assert ours.popitem()[0] == theirs.popitem()[0]
    assert list(reversed(ours)) == list(reversed(theirs))
    merged, tmerged = ours | ours.fromkeys(["q"]), theirs | theirs.fromkeys(["q"])
    assert _norm(repr(merged)) == _norm(repr(tmerged))
    copy = ours.copy()
    assert copy["a"] is ours["a"]
    ours |= nn.ParameterDict({"r": ag.ones(1)})
    theirs |= torch.nn.ParameterDict({"r": torch.ones(1)})
    assert list(ours) == list(theirs)
    for f in (lambda pd, lib: pd[1], lambda pd, lib: pd(1), lambda pd, lib: pd.update(3),
              lambda pd, lib: pd.update([("a",)]), lambda pd, lib: pd.update([3]), lambda pd, lib: pd["missing"]):
        assert _errors(lambda f=f: f(ours, ag)) == _errors(lambda f=f: f(theirs, torch))
    ours.clear()
    theirs.clear()
    assert len(ours) == 0 and list(ours.state_dict()) == [] and repr(ours) == repr(theirs)


def test_parameter_dict_loads_torch_state_dict() -> None:
    theirs = torch.nn.ParameterDict({"w": torch.nn.Parameter(torch.randn(2, 3, dtype=torch.float64))})
    ours = nn.ParameterDict({"w": ag.zeros(2, 3, dtype=ag.float64)})
    ours.load_state_dict({k: ag.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    np.testing.assert_array_equal(_arr(ours["w"]), theirs["w"].detach().numpy())


def test_the_modules_run_without_warnings() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rms = nn.RMSNorm(3)(ag.ones(2, 3))
        lrn = nn.LocalResponseNorm(2)(ag.ones(1, 3, 2))
    np.testing.assert_allclose(rms.detach().numpy(), np.ones((2, 3)), rtol=1e-6)
    assert lrn.shape == (1, 3, 2)
