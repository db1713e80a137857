"""aiograd.nn.Module, Parameter, the containers, Linear, the activation and loss modules that need
no new functional op, state_dict/load_state_dict and clip_grad: each scenario also run on torch
(names, reprs, values, gradients and error messages compared)."""

from __future__ import annotations

import copy
import math
import re
from collections import OrderedDict
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag
import aiograd.nn as nn
from aiograd import sync

pytestmark = requires_torch
tnn = torch.nn if torch is not None else None


def _message(error: BaseException) -> str:
    """torch's message with its type names spelled as aiograd's."""
    text = str(error)
    text = re.sub(r"torch\.Size\(\[([0-9, ]*)\]\)", r"aiograd.Size([\1])", text)
    return text.replace("torch.nn.", "aiograd.nn.").replace("torch.", "aiograd.").replace("torch ", "aiograd ")


def _same_error(ours: Any, theirs: Any) -> None:
    """Run both callables; the same exception type and message."""
    with pytest.raises(Exception) as t_info:
        theirs()
    with pytest.raises(type(t_info.value)) as a_info:
        ours()
    assert _message(a_info.value) == _message(t_info.value)


def _tt(values: Any) -> Any:
    """A torch tensor with aiograd's default dtypes (float64 from Python floats)."""
    return torch.tensor(np.asarray(values))


def _state_from_torch(tmodule: Any) -> dict[str, ag.Tensor]:
    return {k: ag.tensor(v.detach().numpy().copy()) for k, v in tmodule.state_dict().items()}


def _net(lib: Any, T: Any) -> Any:
    """The same model built with torch.nn or aiograd.nn (one class name, as messages print it)."""

    class Net(lib.Module):
        def __init__(self) -> None:
            super().__init__()
            self.features = lib.Sequential(lib.Linear(4, 8), lib.ReLU(), lib.Linear(8, 8), lib.Tanh())
            self.heads = lib.ModuleDict({"a": lib.Linear(8, 3), "b": lib.Linear(8, 2)})
            self.norm = lib.BatchNorm1d(8)
            self.register_buffer("scale", T([1.0, 1.0, 1.0]))
            self.register_buffer("scratch", T([0.0, 0.0]), persistent=False)

        def forward(self, x: Any) -> Any:
            return self.heads["a"](self.features(x)) * self.scale

    return Net()


def _TNet() -> Any:
    return _net(tnn, _tt)


def _ANet() -> Any:
    return _net(nn, ag.tensor)


# ------------------------------------------------------------------------------ Parameter
def test_parameter_is_a_leaf_tensor_that_requires_grad_and_shares_its_data():
    data = ag.tensor([1.0, 2.0])
    p = nn.Parameter(data)
    assert isinstance(p, ag.Tensor) and p.requires_grad and p.is_leaf
    p.data[0] = 5.0
    assert data.tolist() == [5.0, 2.0]  # torch's Parameter shares the storage too
    assert not nn.Parameter(data, requires_grad=False).requires_grad
    assert nn.Parameter().shape == tuple(tnn.Parameter().shape)
    assert repr(p) == "Parameter containing:\n" + ag.Tensor.__repr__(p)
    assert repr(tnn.Parameter(torch.tensor([5.0, 2.0], dtype=torch.float64))).startswith("Parameter containing:\ntensor(")


def test_parameter_of_integers_is_refused_as_by_torch():
    _same_error(lambda: nn.Parameter(ag.tensor([1, 2])), lambda: tnn.Parameter(torch.tensor([1, 2])))


def test_ops_on_parameters_give_plain_tensors():
    p = nn.Parameter(ag.tensor([1.0, 2.0]))
    assert type(p * 2) is ag.Tensor
    assert type(tnn.Parameter(torch.ones(2)) * 2) is torch.Tensor


# ------------------------------------------------------------------------------ registration
def test_names_of_parameters_buffers_and_modules_match_torch():
    t, a = _TNet(), _ANet()
    assert [n for n, _ in a.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in a.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in a.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in a.named_children()] == [n for n, _ in t.named_children()]
    assert [n for n, _ in a.named_parameters(prefix="net", recurse=True)] == [
        n for n, _ in t.named_parameters(prefix="net")
    ]
    assert [n for n, _ in a.features.named_parameters(recurse=False)] == []
    assert [n for n, _ in a.heads["a"].named_parameters(recurse=False)] == ["weight", "bias"]
    assert len(list(a.parameters())) == len(list(t.parameters()))
    assert len(list(a.modules())) == len(list(t.modules()))
    assert len(list(a.children())) == len(list(t.children()))
    assert len(list(a.buffers())) == len(list(t.buffers()))


def test_shared_parameters_and_modules_come_once_unless_duplicates_are_asked_for():
    def build(lib: Any) -> Any:
        shared = lib.Linear(2, 2)
        seq = lib.Sequential(shared, lib.ReLU(), shared)
        seq.extra = lib.Linear(2, 2)
        seq.extra.weight = shared.weight
        return seq

    t, a = build(tnn), build(nn)
    for kwargs in ({}, {"remove_duplicate": False}):
        assert [n for n, _ in a.named_parameters(**kwargs)] == [n for n, _ in t.named_parameters(**kwargs)]
        assert [n for n, _ in a.named_modules(**kwargs)] == [n for n, _ in t.named_modules(**kwargs)]
    assert list(a.state_dict()) == list(t.state_dict())


def test_assignment_moves_a_name_between_kinds_as_torch():
    def scenario(lib: Any, tensor: Any) -> list[Any]:
        m = lib.Module()
        m.x = lib.Linear(1, 1)
        m.x = lib.Parameter(tensor)
        kinds = [sorted(m._parameters), sorted(m._modules)]
        m.register_buffer("b", tensor)
        m.b = tensor * 2
        m.p = None
        del m.x
        kinds += [sorted(m._parameters), sorted(m._buffers), "p" in m.__dict__]
        return kinds

    assert scenario(nn, ag.ones(2)) == scenario(tnn, torch.ones(2))


@pytest.mark.parametrize(
    "case",
    [
        lambda lib, T: lib.Linear(1, 1).register_parameter(1, None),
        lambda lib, T: lib.Linear(1, 1).register_parameter("a.b", None),
        lambda lib, T: lib.Linear(1, 1).register_parameter("", None),
        lambda lib, T: lib.Linear(1, 1).register_parameter("training", None),
        lambda lib, T: lib.Linear(1, 1).register_parameter("w", 3),
        lambda lib, T: lib.Linear(1, 1).register_parameter("w", lib.Parameter(T([1.0])) * 2),
        lambda lib, T: lib.Linear(1, 1).register_buffer(1, None),
        lambda lib, T: lib.Linear(1, 1).register_buffer("a.b", None),
        lambda lib, T: lib.Linear(1, 1).register_buffer("", None),
        lambda lib, T: lib.Linear(1, 1).register_buffer("weight", None),
        lambda lib, T: lib.Linear(1, 1).register_buffer("b", 3),
        lambda lib, T: lib.Linear(1, 1).add_module("m", 3),
        lambda lib, T: lib.Linear(1, 1).add_module(1, None),
        lambda lib, T: lib.Linear(1, 1).add_module("weight", None),
        lambda lib, T: lib.Linear(1, 1).add_module("a.b", None),
        lambda lib, T: lib.Linear(1, 1).add_module("", None),
        lambda lib, T: lib.Linear(1, 1).train(1),
        lambda lib, T: lib.Linear(1, 1).nothing,
        lambda lib, T: setattr(lib.Linear(1, 1), "weight", 3),
        lambda lib, T: setattr(lib.Sequential(lib.ReLU()), "0", 3),
        lambda lib, T: lib.Module()(1),
        lambda lib, T: lib.Module(1),
        lambda lib, T: lib.Module(x=1),
        lambda lib, T: lib.Linear(1, 1).to(T([1]).dtype),
        lambda lib, T: lib.Linear(1, 1).load_state_dict([]),
        lambda lib, T: lib.Sequential()[0],
        lambda lib, T: lib.ModuleList()[3],
        lambda lib, T: lib.Sequential() + 3,
    ],
)
def test_errors_match_torch(case):
    _same_error(lambda: case(nn, ag.tensor), lambda: case(tnn, _tt))


def test_unflatten_errors_match_torch():
    _same_error(lambda: nn.Unflatten(1, 3), lambda: tnn.Unflatten(1, 3))
    _same_error(lambda: nn.Unflatten(1, (2, "a")), lambda: tnn.Unflatten(1, (2, "a")))


# ------------------------------------------------------------------------------ modes and grads
def test_train_eval_reach_every_submodule():
    a, t = _ANet(), _TNet()
    assert a.eval() is a
    t.eval()
    assert [m.training for m in a.modules()] == [m.training for m in t.modules()] == [False] * len(list(a.modules()))
    a.features.train()
    t.features.train()
    assert [m.training for m in a.modules()] == [m.training for m in t.modules()]


def test_zero_grad_and_requires_grad_():
    m = nn.Linear(3, 2)
    x = ag.randn(4, 3)
    sync.backward(m(x).sum())
    assert m.weight.grad is not None
    grad = m.weight.grad
    m.zero_grad(set_to_none=False)
    assert m.weight.grad is grad and not grad.numpy().any()
    m.zero_grad()
    assert m.weight.grad is None and m.bias.grad is None
    assert m.requires_grad_(False) is m
    assert not any(p.requires_grad for p in m.parameters())


# ------------------------------------------------------------------------------ moving and casting
def test_to_dtype_keeps_the_same_parameter_objects():
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    params = list(m.parameters())
    sync.backward(m[0](ag.randn(4, 3)).sum())
    assert m.float() is m
    assert list(m.parameters()) == params or all(a is b for a, b in zip(m.parameters(), params))
    assert all(p.dtype == np.float32 for p in m.parameters())
    assert m[0].weight.grad.dtype == np.float32  # torch moves the grads along
    assert m[1].running_mean.dtype == np.float32 and m[1].num_batches_tracked.dtype == np.int64
    m.double()
    assert all(p.dtype == np.float64 for p in m.parameters()) and all(a is b for a, b in zip(m.parameters(), params))
    m.to(np.float32)
    assert all(p.dtype == np.float32 for p in m.parameters())
    m.to(dtype=np.float64)
    assert all(p.dtype == np.float64 for p in m.parameters())


def test_to_device_moves_the_data_of_the_same_parameters():
    m = nn.Linear(3, 2)
    weight = m.weight
    m.to("sim")
    assert m.weight is weight and weight.device == ag.device("sim:0") and weight.requires_grad
    x = ag.randn(4, 3).to("sim")
    out = m(x)
    assert out.device == ag.device("sim:0")
    sync.backward(out.sum())
    assert weight.grad.device == ag.device("sim:0")
    m.cpu()
    assert m.weight is weight and weight.device == ag.device("cpu") and weight.grad.device == ag.device("cpu")


def test_apply_visits_children_first():
    def order(lib: Any) -> list[str]:
        seen: list[str] = []
        lib.Sequential(lib.Linear(1, 1), lib.Sequential(lib.ReLU())).apply(lambda m: seen.append(type(m).__name__))
        return seen

    assert order(nn) == order(tnn)


def test_deepcopy_copies_parameters_and_keeps_sharing():
    shared = nn.Linear(2, 2)
    m = nn.Sequential(shared, shared)
    c = copy.deepcopy(m)
    assert c[0] is c[1] and c[0].weight is not shared.weight
    assert isinstance(c[0].weight, nn.Parameter) and c[0].weight.requires_grad
    np.testing.assert_array_equal(c[0].weight.data, shared.weight.data)


# ------------------------------------------------------------------------------ hooks
def test_forward_hooks_as_torch():
    def run(lib: Any, T: Any) -> list[Any]:
        calls: list[Any] = []
        m = lib.Linear(2, 2)
        with_kw = {}

        def pre(module: Any, args: Any) -> Any:
            calls.append("pre")
            return args[0] * 0

        def pre_kw(module: Any, args: Any, kwargs: Any) -> Any:
            with_kw.update(kwargs)
            calls.append("pre_kw")
            return None

        def post(module: Any, args: Any, output: Any) -> Any:
            calls.append(("post", float(args[0].sum())))
            return output + 1

        def post_kw(module: Any, args: Any, kwargs: Any, output: Any) -> None:
            calls.append("post_kw")

        h1 = m.register_forward_pre_hook(pre)
        m.register_forward_pre_hook(pre_kw, with_kwargs=True, prepend=True)
        h3 = m.register_forward_hook(post)
        m.register_forward_hook(post_kw, with_kwargs=True)
        lib.init.zeros_(m.bias)
        out = m(T([[1.0, 2.0]]))
        calls.append(out.tolist())
        h1.remove()
        h3.remove()
        h3.remove()
        calls.append(m(T([[1.0, 2.0]])).shape[-1])  # the removed hooks no longer run
        return calls

    assert run(nn, ag.tensor) == run(tnn, torch.tensor)


def test_forward_pre_hook_with_kwargs_must_return_a_pair():
    def case(lib: Any, T: Any) -> Any:
        m = lib.Identity()
        m.register_forward_pre_hook(lambda mod, args, kwargs: 3, with_kwargs=True)
        return m(T([1.0]))

    _same_error(lambda: case(nn, ag.tensor), lambda: case(tnn, _tt))


def test_always_called_forward_hook_runs_when_forward_raises():
    seen: list[Any] = []

    class Boom(nn.Module):
        def forward(self, x: Any) -> Any:
            raise ValueError("boom")

    m = Boom()
    m.register_forward_hook(lambda mod, args, out: seen.append(out), always_call=True)
    with pytest.raises(ValueError, match="boom"):
        m(1)
    assert seen == [None]


# ------------------------------------------------------------------------------ state dict
def test_state_dict_keys_metadata_and_detached_values_match_torch():
    t, a = _TNet(), _ANet()
    tsd, asd = t.state_dict(), a.state_dict()
    assert isinstance(asd, OrderedDict)
    assert list(asd) == list(tsd)
    assert asd._metadata == tsd._metadata
    assert all(not v.requires_grad for v in asd.values())
    assert a.state_dict(keep_vars=True)["features.0.weight"] is a.features[0].weight
    assert list(a.state_dict(prefix="m.")) == list(t.state_dict(prefix="m."))
    assert [tuple(v.shape) for v in asd.values()] == [tuple(v.shape) for v in tsd.values()]


def test_load_state_dict_from_torch_gives_torch_outputs_and_input_gradients():
    t, a = _TNet().double(), _ANet()
    result = a.load_state_dict(_state_from_torch(t))
    assert repr(result) == repr(t.load_state_dict(t.state_dict())) == "<All keys matched successfully>"
    assert result.missing_keys == [] and result.unexpected_keys == []
    x = np.random.default_rng(0).standard_normal((5, 4))
    ax, tx = ag.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    aout, tout = a(ax), t(tx)
    np.testing.assert_allclose(aout.detach().numpy(), tout.detach().numpy(), rtol=1e-12, atol=1e-12)
    sync.backward(aout.sum())
    tout.sum().backward()
    np.testing.assert_allclose(ax.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a.features[0].weight.grad.numpy(), t.features[0].weight.grad.numpy(), rtol=1e-12)


def test_load_state_dict_copies_into_the_same_parameters_and_casts():
    a = nn.Linear(3, 2)
    weight = a.weight
    t = tnn.Linear(3, 2)
    a.load_state_dict(_state_from_torch(t))  # float32 values into float64 parameters
    assert a.weight is weight and weight.dtype == np.float64
    np.testing.assert_allclose(weight.data, t.weight.detach().numpy(), rtol=1e-7)
    version = weight._version
    a.load_state_dict(_state_from_torch(t))
    assert weight._version == version + 1  # one in-place copy, as torch's copy_


def _mangled(state: dict[str, Any]) -> dict[str, Any]:
    state = dict(state)
    del state["features.0.bias"]
    state["features.9.weight"] = state["features.2.weight"]
    state["extra"] = state["scale"]
    state["heads.b.weight"] = state["heads.b.weight"][:1]
    return state


def test_load_state_dict_errors_match_torch():
    t, a = _TNet(), _ANet()
    tstate, astate = _mangled(t.state_dict()), _mangled(_state_from_torch(t))
    _same_error(lambda: a.load_state_dict(astate), lambda: t.load_state_dict(tstate))
    _same_error(lambda: a.load_state_dict(astate, strict=False), lambda: t.load_state_dict(tstate, strict=False))
    tstate.pop("heads.b.weight")
    astate.pop("heads.b.weight")
    t_result = t.load_state_dict(tstate, strict=False)
    a_result = a.load_state_dict(astate, strict=False)
    assert repr(a_result) == repr(t_result)
    assert a_result.missing_keys == ["features.0.bias", "heads.b.weight"]
    _same_error(
        lambda: nn.Linear(1, 1).load_state_dict({"weight": 3, "bias": ag.zeros(1)}),
        lambda: tnn.Linear(1, 1).load_state_dict({"weight": 3, "bias": torch.zeros(1)}),
    )


def test_load_state_dict_assign_takes_the_given_tensors():
    a = nn.Linear(2, 2)
    w = ag.ones(2, 2)
    a.load_state_dict({"weight": w, "bias": ag.zeros(2)}, assign=True)
    assert isinstance(a.weight, nn.Parameter) and a.weight.requires_grad
    w.data[0, 0] = 7.0
    assert a.weight.data[0, 0] == 7.0


def test_batchnorm_state_dict_without_num_batches_tracked_loads_as_torch():
    t, a = tnn.BatchNorm1d(3), nn.BatchNorm1d(3)
    tstate = {k: v for k, v in t.state_dict().items() if k != "num_batches_tracked"}
    astate = {k: ag.tensor(v.numpy()) for k, v in tstate.items()}
    assert repr(a.load_state_dict(astate)) == repr(t.load_state_dict(tstate))


# ------------------------------------------------------------------------------ repr
def _models(lib: Any) -> list[Any]:
    return [
        lib.Linear(3, 4, bias=False),
        lib.Sequential(lib.Linear(3, 4), lib.ReLU(inplace=True), lib.Tanh(), lib.Sigmoid(), lib.Softmax(dim=1), lib.LogSoftmax(1)),
        lib.Sequential(OrderedDict(conv=lib.Conv2d(1, 4, 3, padding=1), pool=lib.MaxPool2d(2), flat=lib.Flatten())),
        lib.ModuleList([lib.Linear(2, 2) for _ in range(3)] + [lib.ReLU()]),
        lib.ModuleDict({"a": lib.Conv1d(2, 4, 3, stride=2, groups=2, bias=False), "b": lib.Identity()}),
        lib.Sequential(lib.BatchNorm1d(3, momentum=None), lib.BatchNorm2d(4, affine=False, track_running_stats=False)),
        lib.Sequential(lib.LayerNorm([3, 4], eps=1e-6), lib.GroupNorm(2, 4), lib.Dropout(0.25), lib.Embedding(10, 3, padding_idx=-1)),
        lib.Sequential(lib.AvgPool2d(3, stride=1, padding=1), lib.AdaptiveAvgPool2d((2, 2)), lib.Unflatten(1, (2, 3))),
        lib.Sequential(lib.ConvTranspose2d(4, 2, 3, stride=2, output_padding=1), lib.Conv2d(2, 2, 3, padding="same", padding_mode="reflect", dilation=2)),
        lib.Sequential(lib.GELU(approximate="tanh"), lib.SiLU(), lib.ELU(alpha=0.5, inplace=True), lib.LeakyReLU(0.2), lib.Softplus(beta=2.0), lib.Hardtanh(-2.0, 2.0), lib.Mish(), lib.ReLU6()),
        lib.Sequential(lib.MSELoss(), lib.L1Loss(reduction="sum"), lib.SmoothL1Loss(beta=0.5), lib.HuberLoss(delta=2.0), lib.BCELoss(), lib.BCEWithLogitsLoss(), lib.KLDivLoss(), lib.CrossEntropyLoss(label_smoothing=0.1), lib.NLLLoss()),
        lib.MultiheadAttention(8, 2, batch_first=True),
        lib.TransformerEncoder(lib.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2, norm=lib.LayerNorm(8)),
    ]


def test_reprs_and_state_dict_keys_of_every_layer_match_torch():
    for a, t in zip(_models(nn), _models(tnn)):
        assert repr(a) == repr(t)
        assert list(a.state_dict()) == list(t.state_dict()), type(a)
        assert [tuple(v.shape) for v in a.state_dict().values()] == [tuple(v.shape) for v in t.state_dict().values()]


# ------------------------------------------------------------------------------ containers
def test_sequential_indexing_slicing_and_editing_as_torch():
    def ops(lib: Any) -> list[Any]:
        s = lib.Sequential(lib.Linear(1, 2), lib.ReLU(), lib.Linear(2, 3), lib.Tanh())
        out = [len(s), type(s[-1]).__name__, repr(s[1:3]), type(s[1:3]).__name__]
        s.append(lib.Sigmoid())
        s.insert(1, lib.Identity())
        del s[0]
        out += [repr(s), type(s.pop(0)).__name__, list(s._modules)]
        s[0] = lib.ReLU6()
        s.extend(lib.Sequential(lib.ReLU()))
        out += [repr(s + lib.Sequential(lib.Tanh())), [type(m).__name__ for m in s]]
        return out

    assert ops(nn) == ops(tnn)


def test_module_list_and_dict_as_torch():
    def ops(lib: Any) -> list[Any]:
        ml = lib.ModuleList([lib.ReLU(), lib.Tanh()])
        ml.append(lib.ReLU())
        ml.extend([lib.ReLU()])
        ml.insert(0, lib.Sigmoid())
        ml += [lib.Tanh()]
        out = [len(ml), repr(ml), repr(ml[1:3]), type(ml[-1]).__name__]
        del ml[0]
        out.append(list(ml._modules))
        md = lib.ModuleDict([("x", lib.ReLU()), ("y", lib.Tanh())])
        md["z"] = lib.Sigmoid()
        md.update({"w": lib.ReLU()})
        out += [list(md.keys()), "x" in md, len(md), type(md.pop("y")).__name__, repr(md), [k for k in md]]
        return out

    assert ops(nn) == ops(tnn)


# ------------------------------------------------------------------------------ layers and losses here
def _linear_pair(bias: bool = True) -> tuple[Any, Any]:
    t = tnn.Linear(5, 3, bias=bias).double()
    a = nn.Linear(5, 3, bias=bias)
    a.load_state_dict(_state_from_torch(t))
    return a, t


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize(
    "activation", ["ReLU", "Tanh", "Sigmoid", "Identity", ("Softmax", 1), ("LogSoftmax", -1), ("Flatten", 0)]
)
def test_linear_and_activation_modules_match_torch(bias, activation):
    name, args = (activation, ()) if isinstance(activation, str) else (activation[0], activation[1:])
    a_lin, t_lin = _linear_pair(bias)
    a = nn.Sequential(a_lin, getattr(nn, name)(*args))
    t = tnn.Sequential(t_lin, getattr(tnn, name)(*args))
    x = np.random.default_rng(1).standard_normal((4, 5))
    ax, tx = ag.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    aout, tout = a(ax), t(tx)
    np.testing.assert_allclose(aout.detach().numpy(), tout.detach().numpy(), rtol=1e-12, atol=1e-14)
    g = np.random.default_rng(2).standard_normal(tout.shape)
    sync.backward(aout, ag.tensor(g))
    tout.backward(torch.tensor(g))
    np.testing.assert_allclose(ax.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(a_lin.weight.grad.numpy(), t_lin.weight.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_relu_inplace_module_overwrites_its_input():
    x = ag.tensor([-1.0, 2.0])
    out = nn.ReLU(inplace=True)(x)
    assert out is x and x.tolist() == [0.0, 2.0]


@pytest.mark.parametrize(
    "loss, kwargs",
    [
        ("MSELoss", {}), ("MSELoss", {"reduction": "sum"}), ("MSELoss", {"reduction": "none"}),
        ("NLLLoss", {}), ("NLLLoss", {"ignore_index": 1}), ("NLLLoss", {"reduction": "sum"}),
        ("CrossEntropyLoss", {}), ("CrossEntropyLoss", {"label_smoothing": 0.2}),
        ("CrossEntropyLoss", {"weight": [0.2, 0.3, 0.5]}), ("NLLLoss", {"weight": [0.2, 0.3, 0.5]}),
    ],
)
def test_loss_modules_match_torch(loss, kwargs):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 3))
    if loss == "MSELoss":
        target = rng.standard_normal((6, 3))
        at, tt = ag.tensor(target), torch.tensor(target)
    else:
        target = rng.integers(0, 3, 6)
        at, tt = ag.tensor(target), torch.tensor(target)
        if loss == "NLLLoss":
            x = x - np.log(np.exp(x).sum(1, keepdims=True))
    akw = {k: ag.tensor(v) if k == "weight" else v for k, v in kwargs.items()}
    tkw = {k: torch.tensor(v, dtype=torch.float64) if k == "weight" else v for k, v in kwargs.items()}
    a, t = getattr(nn, loss)(**akw), getattr(tnn, loss)(**tkw)
    assert repr(a) == repr(t)
    assert list(a.state_dict()) == list(t.state_dict())
    ax, tx = ag.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    aout, tout = a(ax, at), t(tx, tt)
    np.testing.assert_allclose(aout.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
    sync.backward(aout.sum())
    tout.sum().backward()
    np.testing.assert_allclose(ax.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_legacy_loss_flags_warn_and_pick_the_reduction_as_torch():
    with pytest.warns(UserWarning) as a_warn:
        a = nn.MSELoss(size_average=False)
    with pytest.warns(UserWarning) as t_warn:
        t = tnn.MSELoss(size_average=False)
    assert a.reduction == t.reduction == "sum"
    assert str(a_warn[0].message) == str(t_warn[0].message)


# ------------------------------------------------------------------------------ clip_grad
def _grads_pair(seed: int) -> tuple[list[Any], list[Any]]:
    rng = np.random.default_rng(seed)
    values = [rng.standard_normal((3, 4)) * 3, rng.standard_normal(5)]
    aps, tps = [], []
    for v in values:
        ap, tp = nn.Parameter(ag.tensor(v)), tnn.Parameter(torch.tensor(v))
        ap.grad, tp.grad = ag.tensor(v * 2), torch.tensor(v * 2)
        aps.append(ap)
        tps.append(tp)
    return aps, tps


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf, 0])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    aps, tps = _grads_pair(0)
    a_total = nn.utils.clip_grad_norm_(aps, max_norm, norm_type)
    t_total = tnn.utils.clip_grad_norm_(tps, max_norm, norm_type)
    np.testing.assert_allclose(a_total.numpy(), t_total.numpy(), rtol=1e-12)
    for ap, tp in zip(aps, tps):
        np.testing.assert_allclose(ap.grad.numpy(), tp.grad.numpy(), rtol=1e-12)


def test_clip_grad_norm_of_one_tensor_and_of_nothing():
    aps, tps = _grads_pair(1)
    np.testing.assert_allclose(
        nn.utils.clip_grad_norm_(aps[0], 1.0).numpy(), tnn.utils.clip_grad_norm_(tps[0], 1.0).numpy(), rtol=1e-12
    )
    assert float(nn.utils.clip_grad_norm_([], 1.0)) == float(tnn.utils.clip_grad_norm_([], 1.0)) == 0.0
    with pytest.warns(UserWarning, match="empty generator"):
        nn.utils.clip_grad_norm_((p for p in []), 1.0)


def test_clip_grad_norm_nonfinite_error_matches_torch():
    aps, tps = _grads_pair(2)
    aps[0].grad.data[0, 0] = np.inf
    tps[0].grad[0, 0] = np.inf
    _same_error(
        lambda: nn.utils.clip_grad_norm_(aps, 1.0, error_if_nonfinite=True),
        lambda: tnn.utils.clip_grad_norm_(tps, 1.0, error_if_nonfinite=True),
    )


def test_clip_grad_value_matches_torch():
    aps, tps = _grads_pair(3)
    assert nn.utils.clip_grad_value_(aps, 0.7) is None
    tnn.utils.clip_grad_value_(tps, 0.7)
    for ap, tp in zip(aps, tps):
        np.testing.assert_array_equal(ap.grad.numpy(), tp.grad.numpy())


def test_parameters_to_vector_and_back_match_torch():
    a_lin, t_lin = _linear_pair()
    av = nn.utils.parameters_to_vector(a_lin.parameters())
    tv = tnn.utils.parameters_to_vector(t_lin.parameters())
    np.testing.assert_array_equal(av.detach().numpy(), tv.detach().numpy())
    new = np.arange(av.numel(), dtype=np.float64)
    nn.utils.vector_to_parameters(ag.tensor(new), a_lin.parameters())
    tnn.utils.vector_to_parameters(torch.tensor(new), t_lin.parameters())
    np.testing.assert_array_equal(a_lin.weight.detach().numpy(), t_lin.weight.detach().numpy())


# ------------------------------------------------------------------------------ odds and ends
def test_get_submodule_as_torch():
    for target in ("", "0", "1.0"):
        a = nn.Sequential(nn.Linear(1, 1), nn.Sequential(nn.ReLU()))
        t = tnn.Sequential(tnn.Linear(1, 1), tnn.Sequential(tnn.ReLU()))
        assert repr(a.get_submodule(target)) == repr(t.get_submodule(target))
    for target in ("0.x", "0.weight", "foo"):
        _same_error(
            lambda target=target: nn.Sequential(nn.Linear(1, 1)).get_submodule(target),
            lambda target=target: tnn.Sequential(tnn.Linear(1, 1)).get_submodule(target),
        )


def test_unflatten_module_matches_torch():
    x = np.arange(24.0).reshape(2, 12)
    for dim, sizes in [(1, (3, 4)), (-1, (2, -1, 3)), (0, [1, 2])]:
        a, t = nn.Unflatten(dim, sizes), tnn.Unflatten(dim, sizes)
        assert repr(a) == repr(t)
        np.testing.assert_array_equal(a(ag.tensor(x)).numpy(), t(torch.tensor(x)).numpy())


def test_load_state_dict_post_hook_sees_and_may_clear_the_incompatible_keys():
    def run(lib: Any, T: Any) -> list[Any]:
        m = lib.Linear(1, 1)
        seen: list[Any] = []

        def hook(module: Any, keys: Any) -> None:
            seen.append((list(keys.missing_keys), list(keys.unexpected_keys)))
            keys.missing_keys.clear()

        handle = m.register_load_state_dict_post_hook(hook)
        m.load_state_dict({"weight": T([[2.0]])})
        handle.remove()
        m.load_state_dict({"weight": T([[2.0]]), "bias": T([1.0])})
        return seen

    assert run(nn, ag.tensor) == run(tnn, _tt) == [(["bias"], [])]


# ------------------------------------------------------------------------------ a CuPy-like device
@pytest.fixture
def fake_cupy_device() -> Any:
    """The CuPy stand-in (tests/fake_cupy.py) registered as a device type for one test."""
    import fake_cupy

    from aiograd._devices import _device

    name = "nnfakecupy"
    _device.register_device_type(name, fake_cupy.device_type())
    try:
        yield name, fake_cupy
    finally:
        del _device._SOURCES[name]
        _device._LOADED.pop(name, None)
        for key in [k for k in _device._interned if k[0] == name]:
            del _device._interned[key]


def test_modules_live_on_a_device_whose_arrays_are_not_numpys(fake_cupy_device, tmp_path):
    name, fake_cupy = fake_cupy_device
    built_there = nn.Sequential(nn.Linear(3, 4, device=name), nn.ReLU(), nn.Embedding(4, 2, padding_idx=0, device=name))
    assert all(type(p.data) is fake_cupy.FakeArray for p in built_there.parameters())
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    reference = copy.deepcopy(model)
    weight = model[0].weight
    model.to(name)
    assert model[0].weight is weight and type(weight.data) is fake_cupy.FakeArray
    assert type(copy.deepcopy(model)[0].weight.data) is fake_cupy.FakeArray
    x = np.random.default_rng(0).standard_normal((5, 3))
    out = model(ag.tensor(x).to(name))
    sync.backward(nn.MSELoss()(out, ag.zeros(5, 2).to(name)))
    sync.backward(nn.MSELoss()(reference(ag.tensor(x)), ag.zeros(5, 2)))
    np.testing.assert_allclose(out.detach().cpu().numpy(), reference(ag.tensor(x)).detach().numpy(), rtol=1e-12)
    for p in (nn.utils.clip_grad_norm_(model.parameters(), 0.1), nn.utils.clip_grad_norm_(reference.parameters(), 0.1)):
        assert p.shape == ()
    for a, b in zip(model.parameters(), reference.parameters()):
        np.testing.assert_allclose(a.grad.cpu().numpy(), b.grad.numpy(), rtol=1e-10)
    nn.init.orthogonal_(model[2].weight)
    save_path = tmp_path / "m.safetensors"
    nn.utils.save_safetensors(model.state_dict(), save_path)
    model.cpu()
    model.load_state_dict(nn.utils.load_safetensors(save_path, device=name))  # across devices
    assert type(model[2].weight.data) is np.ndarray
