"""aiograd.nn.utils.parametrize, parametrizations.weight_norm/spectral_norm and the old-style
nn.utils.weight_norm/spectral_norm, each scenario also run on torch in float64: forward values,
the original parameters' gradients (through ``await loss.backward()``), state dict keys, loading
torch's state dicts, the class swap and error messages. Spectral norm's random initial ``u``/``v``
are copied from torch (its state dict) before values are compared."""

from __future__ import annotations

import copy
import pickle
import re
import warnings
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag
import aiograd.nn as nn
from aiograd.nn.utils import parametrizations as P
from aiograd.nn.utils import parametrize

pytestmark = [requires_torch, pytest.mark.aiograd(backends=["asyncio"])]
tnn = torch.nn if torch is not None else None
TOL = {"rtol": 1e-10, "atol": 1e-12}


def _message(error: BaseException) -> str:
    """torch's message with its type names spelled as aiograd's."""
    text = str(error)
    text = re.sub(r"torch\.Size\(\[([0-9, ]*)\]\)", r"aiograd.Size([\1])", text)
    return text.replace("torch.", "aiograd.")


def _same_error(ours: Any, theirs: Any) -> None:
    """Run both callables: the same exception type and message."""
    with pytest.raises(Exception) as t_info:
        theirs()
    with pytest.raises(type(t_info.value)) as a_info:
        ours()
    assert _message(a_info.value) == _message(t_info.value)


def _pair(kind: str) -> tuple[Any, Any]:
    """The same layer in torch and aiograd (float64, torch's weights)."""
    torch.manual_seed(0)
    if kind == "linear":
        t, a = tnn.Linear(4, 3), nn.Linear(4, 3)
    elif kind == "conv":
        t, a = tnn.Conv2d(2, 3, 3), nn.Conv2d(2, 3, 3)
    else:
        t, a = tnn.ConvTranspose2d(2, 3, 3), nn.ConvTranspose2d(2, 3, 3)
    t = t.double()
    a = a.to(ag.float64)
    a.load_state_dict(t.state_dict())
    return t, a


def _input(kind: str) -> np.ndarray:
    shape = (5, 4) if kind == "linear" else (2, 2, 5, 5)
    return np.random.default_rng(1).standard_normal(shape)


def _close(ours: Any, theirs: Any) -> None:
    np.testing.assert_allclose(np.asarray(ours.detach().numpy()), theirs.detach().numpy(), **TOL)


async def _step(a: Any, t: Any, x: np.ndarray) -> None:
    """One forward and backward of ``sum(out**2)`` on both; outputs compared."""
    ya = a(ag.tensor(x))
    yt = t(torch.tensor(x))
    _close(ya, yt)
    await (ya * ya).sum().backward()
    (yt * yt).sum().backward()


def _grads_match(a: Any, t: Any) -> None:
    ta = dict(t.named_parameters())
    aa = dict(a.named_parameters())
    assert list(aa) == list(ta)
    for name, p in ta.items():
        assert aa[name].grad is not None, name
        _close(aa[name].grad, p.grad)


def _keys(sd: Any) -> list[str]:
    return list(sd.keys())


# ------------------------------------------------------------------------ weight_norm (parametrization)
@pytest.mark.parametrize("kind", ["linear", "conv"])
@pytest.mark.parametrize("dim", [0, 1, None])
async def test_weight_norm_parametrization_values_and_gradients(kind: str, dim: Any) -> None:
    t, a = _pair(kind)
    tnn.utils.parametrizations.weight_norm(t, dim=dim)
    P.weight_norm(a, dim=dim)
    assert (
        type(a).__name__
        == type(t).__name__
        == "Parametrized"
        + type(nn.Linear(1, 1) if kind == "linear" else nn.Conv2d(1, 1, 1)).__name__
    )
    assert _keys(a.state_dict()) == _keys(t.state_dict())
    assert _keys(a.state_dict())[-2:] == [
        "parametrizations.weight.original0",
        "parametrizations.weight.original1",
    ]
    for name, value in t.state_dict().items():
        _close(a.state_dict()[name], value)
    _close(a.weight, t.weight)
    await _step(a, t, _input(kind))
    _grads_match(a, t)
    assert repr(a) == repr(t)


async def test_weight_norm_parametrization_loads_a_torch_state_dict() -> None:
    t, a = _pair("linear")
    tnn.utils.parametrizations.weight_norm(t)
    P.weight_norm(a)
    with torch.no_grad():
        t.parametrizations.weight.original0.mul_(3.0)
        t.parametrizations.weight.original1.add_(0.5)
    result = a.load_state_dict(t.state_dict())
    assert not result.missing_keys and not result.unexpected_keys
    _close(a.weight, t.weight)
    await _step(a, t, _input("linear"))
    _grads_match(a, t)


# ------------------------------------------------------------------------ weight_norm (old style)
@pytest.mark.parametrize("kind", ["linear", "conv"])
@pytest.mark.parametrize("dim", [0, 1, None])
async def test_old_weight_norm_values_gradients_and_removal(kind: str, dim: Any) -> None:
    t, a = _pair(kind)
    with pytest.warns(FutureWarning, match="is deprecated in favor of"):
        tnn.utils.weight_norm(t, dim=dim)
    with pytest.warns(FutureWarning, match="is deprecated in favor of"):
        nn.utils.weight_norm(a, dim=dim)
    assert _keys(a.state_dict()) == _keys(t.state_dict()) == ["bias", "weight_g", "weight_v"]
    _close(a.weight_g, t.weight_g)
    await _step(a, t, _input(kind))
    _grads_match(a, t)
    with torch.no_grad():
        t.weight_g.mul_(2.0)
    a.load_state_dict(t.state_dict())
    await _step(a, t, _input(kind))  # the pre-hook recomputes the weight from the loaded g
    tnn.utils.remove_weight_norm(t)
    nn.utils.remove_weight_norm(a)
    assert _keys(a.state_dict()) == _keys(t.state_dict()) == ["bias", "weight"]
    assert isinstance(a.weight, nn.Parameter)
    _close(a.weight, t.weight)


def test_old_weight_norm_errors_match_torch() -> None:
    t, a = _pair("linear")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        tnn.utils.weight_norm(t)
        nn.utils.weight_norm(a)
        _same_error(lambda: nn.utils.weight_norm(a), lambda: tnn.utils.weight_norm(t))
    _same_error(
        lambda: nn.utils.remove_weight_norm(a, "bias"),
        lambda: tnn.utils.remove_weight_norm(t, "bias"),
    )


# ------------------------------------------------------------------------ spectral_norm (parametrization)
@pytest.mark.parametrize("kind", ["linear", "conv", "convT"])
async def test_spectral_norm_parametrization_train_and_eval(kind: str) -> None:
    t, a = _pair(kind)
    tnn.utils.parametrizations.spectral_norm(t)
    P.spectral_norm(a)
    assert _keys(a.state_dict()) == _keys(t.state_dict())
    assert "parametrizations.weight.0._u" in _keys(a.state_dict())
    u = a.parametrizations.weight[0]._u
    assert u.shape == tuple(t.parametrizations.weight[0]._u.shape)
    np.testing.assert_allclose(np.linalg.norm(u.numpy()), 1.0, rtol=1e-12)
    a.load_state_dict(t.state_dict())  # torch's random u, v
    for _ in range(2):  # training: a power-iteration step per access
        await _step(a, t, _input(kind))
        _close(a.parametrizations.weight[0]._u, t.parametrizations.weight[0]._u)
        _close(a.parametrizations.weight[0]._v, t.parametrizations.weight[0]._v)
    _grads_match(a, t)
    a.eval()
    t.eval()
    u_before = a.parametrizations.weight[0]._u.numpy().copy()
    a.zero_grad()
    t.zero_grad()
    await _step(a, t, _input(kind))
    np.testing.assert_array_equal(a.parametrizations.weight[0]._u.numpy(), u_before)
    _grads_match(a, t)


def test_spectral_norm_parametrization_sigma_is_the_top_singular_value() -> None:
    _t, a = _pair("linear")
    P.spectral_norm(a)
    a.eval()
    top = np.linalg.svd(a.weight.detach().numpy(), compute_uv=False)[0]
    np.testing.assert_allclose(top, 1.0, rtol=1e-6)


def test_spectral_norm_parametrization_errors_match_torch() -> None:
    t, a = _pair("linear")
    _same_error(
        lambda: P.spectral_norm(a, dim=2),
        lambda: tnn.utils.parametrizations.spectral_norm(t, dim=2),
    )
    _same_error(
        lambda: P.spectral_norm(a, n_power_iterations=0),
        lambda: tnn.utils.parametrizations.spectral_norm(t, n_power_iterations=0),
    )
    _same_error(
        lambda: P.spectral_norm(a, "nope"),
        lambda: tnn.utils.parametrizations.spectral_norm(t, "nope"),
    )


# ------------------------------------------------------------------------ spectral_norm (old style)
@pytest.mark.parametrize("kind", ["linear", "conv"])
async def test_old_spectral_norm_train_eval_and_removal(kind: str) -> None:
    t, a = _pair(kind)
    tnn.utils.spectral_norm(t)
    nn.utils.spectral_norm(a)
    sd = t.state_dict()
    assert _keys(a.state_dict()) == _keys(sd) == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert a.state_dict()._metadata[""]["spectral_norm"] == sd._metadata[""]["spectral_norm"]
    a.load_state_dict(sd)
    for _ in range(2):
        await _step(a, t, _input(kind))
        _close(a.weight_u, t.weight_u)
        _close(a.weight_v, t.weight_v)
    _grads_match(a, t)
    a.eval()
    t.eval()
    await _step(a, t, _input(kind))
    tnn.utils.remove_spectral_norm(t)
    nn.utils.remove_spectral_norm(a)
    assert _keys(a.state_dict()) == _keys(t.state_dict()) == ["bias", "weight"]
    assert not a._state_dict_hooks
    _close(a.weight, t.weight)


def test_old_spectral_norm_errors_match_torch() -> None:
    t, a = _pair("linear")
    tnn.utils.spectral_norm(t)
    nn.utils.spectral_norm(a)
    _same_error(lambda: nn.utils.spectral_norm(a), lambda: tnn.utils.spectral_norm(t))
    _same_error(
        lambda: nn.utils.remove_spectral_norm(a, "bias"),
        lambda: tnn.utils.remove_spectral_norm(t, "bias"),
    )
    t2, a2 = _pair("linear")
    _same_error(
        lambda: nn.utils.spectral_norm(a2, n_power_iterations=0),
        lambda: tnn.utils.spectral_norm(t2, n_power_iterations=0),
    )


# ------------------------------------------------------------------------ custom parametrizations
def _symmetric(lib: Any) -> Any:
    class Symmetric(lib.Module):
        def forward(self, x: Any) -> Any:
            return x.triu() + x.triu(1).transpose(-1, -2)

        def right_inverse(self, a: Any) -> Any:
            return a.triu()

    return Symmetric()


def _split(lib: Any) -> Any:
    class Split(lib.Module):  # weight = a + b, kept as two tensors
        def forward(self, a: Any, b: Any) -> Any:
            return a + 2 * b

        def right_inverse(self, w: Any) -> Any:
            return (w * 0.5, w * 0.25)

    return Split()


def _square_pair() -> tuple[Any, Any]:
    torch.manual_seed(0)
    t = tnn.Linear(3, 3).double()
    a = nn.Linear(3, 3).to(ag.float64)
    a.load_state_dict(t.state_dict())
    return t, a


async def test_symmetric_parametrization_with_right_inverse() -> None:
    t, a = _square_pair()
    tnn.utils.parametrize.register_parametrization(t, "weight", _symmetric(tnn))
    parametrize.register_parametrization(a, "weight", _symmetric(nn))
    assert parametrize.is_parametrized(a) and parametrize.is_parametrized(a, "weight")
    assert not parametrize.is_parametrized(a, "bias")
    assert parametrize.type_before_parametrizations(a) is nn.Linear
    assert (
        _keys(a.state_dict())
        == _keys(t.state_dict())
        == ["bias", "parametrizations.weight.original"]
    )
    w = a.weight.detach().numpy()
    np.testing.assert_array_equal(w, w.T)
    _close(a.weight, t.weight)
    await _step(a, t, _input("linear")[:, :3])
    _grads_match(a, t)
    # assigning goes through right_inverse
    x = np.arange(9.0).reshape(3, 3)
    a.weight = ag.tensor(x)
    t.weight = torch.tensor(x)
    _close(a.parametrizations.weight.original, t.parametrizations.weight.original)
    _close(a.weight, t.weight)
    a.load_state_dict(t.state_dict())
    _close(a.weight, t.weight)


async def test_right_inverse_returning_a_tuple_gives_original0_original1() -> None:
    t, a = _square_pair()
    tnn.utils.parametrize.register_parametrization(t, "weight", _split(tnn))
    parametrize.register_parametrization(a, "weight", _split(nn))
    assert _keys(a.state_dict()) == _keys(t.state_dict())
    assert _keys(a.state_dict())[1:] == [
        "parametrizations.weight.original0",
        "parametrizations.weight.original1",
    ]
    _close(a.weight, t.weight)
    await _step(a, t, _input("linear")[:, :3])
    _grads_match(a, t)
    _same_error(
        lambda: parametrize.remove_parametrizations(a, "weight", leave_parametrized=False),
        lambda: tnn.utils.parametrize.remove_parametrizations(
            t, "weight", leave_parametrized=False
        ),
    )


async def test_two_stacked_parametrizations_and_a_buffer() -> None:
    t, a = _square_pair()
    for lib, m in ((tnn, t), (nn, a)):
        mod = tnn.utils.parametrize if lib is tnn else parametrize
        mod.register_parametrization(m, "weight", _symmetric(lib))
        mod.register_parametrization(m, "weight", _symmetric(lib))
        m.register_buffer(
            "scale",
            (torch.ones(3, dtype=torch.float64) if lib is tnn else ag.ones(3, dtype=ag.float64)),
        )
        mod.register_parametrization(m, "scale", _split(lib))
    assert _keys(a.state_dict()) == _keys(t.state_dict())
    assert len(a.parametrizations.weight) == 2
    _close(a.scale, t.scale)
    await _step(a, t, _input("linear")[:, :3])
    _grads_match(a, t)


@pytest.mark.parametrize("leave", [True, False])
def test_remove_parametrizations_both_ways(leave: bool) -> None:
    t, a = _square_pair()
    tnn.utils.parametrize.register_parametrization(t, "weight", _symmetric(tnn))
    parametrize.register_parametrization(a, "weight", _symmetric(nn))
    original = a.parametrizations.weight.original
    tnn.utils.parametrize.remove_parametrizations(t, "weight", leave_parametrized=leave)
    parametrize.remove_parametrizations(a, "weight", leave_parametrized=leave)
    assert type(a) is nn.Linear
    assert not hasattr(a, "parametrizations")
    assert a.weight is original and isinstance(a.weight, nn.Parameter)
    assert _keys(a.state_dict()) == _keys(t.state_dict()) == ["bias", "weight"]
    _close(a.weight, t.weight)
    w = a.weight.detach().numpy()
    assert np.array_equal(w, w.T) == leave


def test_cached_computes_each_parametrized_tensor_once() -> None:
    calls = []

    class Counting(nn.Module):
        def forward(self, x: Any) -> Any:
            calls.append(1)
            return x * 2

    a = nn.Linear(3, 3)
    parametrize.register_parametrization(a, "weight", Counting())
    calls.clear()
    with parametrize.cached():
        first = a.weight
        assert a.weight is first
        with parametrize.cached():
            assert a.weight is first
    assert len(calls) == 1
    assert a.weight is not first
    assert len(calls) == 2


def test_parametrized_modules_deepcopy_but_do_not_pickle() -> None:
    _t, a = _pair("linear")
    P.weight_norm(a)
    b = copy.deepcopy(a)
    assert type(b) is type(a)
    np.testing.assert_array_equal(b.weight.detach().numpy(), a.weight.detach().numpy())
    with pytest.raises(RuntimeError, match="Serialization of parametrized modules is only"):
        pickle.dumps(a)


class _Bad(nn.Module):
    def __init__(self, out: Any) -> None:
        super().__init__()
        self.out = out

    def forward(self, x: Any) -> Any:
        return self.out(x)


def test_registration_errors_match_torch() -> None:
    t, a = _pair("linear")

    def both(fn_t: Any, fn_a: Any) -> None:
        t2, a2 = _pair("linear")
        _same_error(lambda: fn_a(a2), lambda: fn_t(t2))

    reg_t, reg_a = (
        tnn.utils.parametrize.register_parametrization,
        parametrize.register_parametrization,
    )

    class TBad(tnn.Module):
        def __init__(self, out: Any) -> None:
            super().__init__()
            self.out = out

        def forward(self, x: Any) -> Any:
            return self.out(x)

    _same_error(
        lambda: reg_a(a, "nope", _Bad(lambda x: x)), lambda: reg_t(t, "nope", TBad(lambda x: x))
    )
    both(
        lambda m: reg_t(m, "weight", TBad(lambda x: x[:2])),
        lambda m: reg_a(m, "weight", _Bad(lambda x: x[:2])),
    )
    both(
        lambda m: reg_t(m, "weight", TBad(lambda x: x.float())),
        lambda m: reg_a(m, "weight", _Bad(lambda x: x.float())),
    )
    both(
        lambda m: reg_t(m, "weight", TBad(lambda x: 1.0)),
        lambda m: reg_a(m, "weight", _Bad(lambda x: 1.0)),
    )
    both(
        lambda m: (reg_t(m, "bias", TBad(lambda x: x)), reg_t(m, "bias", TBad(lambda x: x[:1]))),
        lambda m: (reg_a(m, "bias", _Bad(lambda x: x)), reg_a(m, "bias", _Bad(lambda x: x[:1]))),
    )
    _same_error(
        lambda: parametrize.remove_parametrizations(a, "weight"),
        lambda: tnn.utils.parametrize.remove_parametrizations(t, "weight"),
    )
    with pytest.raises(ValueError, match="ParametrizationList requires one or more modules."):
        parametrize.ParametrizationList([], a.weight)


def test_spectral_norm_of_a_vector_normalizes_it() -> None:
    t, a = _pair("linear")
    tnn.utils.parametrizations.spectral_norm(t, "bias")
    P.spectral_norm(a, "bias")
    assert _keys(a.state_dict()) == _keys(t.state_dict())
    _close(a.bias, t.bias)
    np.testing.assert_allclose(np.linalg.norm(a.bias.detach().numpy()), 1.0, rtol=1e-12)


def test_old_weight_norm_warning_matches_torch() -> None:
    t, a = _pair("linear")
    with pytest.warns(FutureWarning) as t_record:
        tnn.utils.weight_norm(t)
    with pytest.warns(FutureWarning) as a_record:
        nn.utils.weight_norm(a)
    assert [str(w.message) for w in a_record] == [
        str(w.message).replace("torch.", "aiograd.") for w in t_record
    ]


# ------------------------------------------------------------------------ orthogonal
@pytest.mark.parametrize(
    ("shape", "orthogonal_map", "trivialization"),
    [
        ((4, 4), None, True),
        ((4, 4), "cayley", True),
        ((4, 4), "householder", True),
        ((5, 3), None, True),
        ((3, 5), None, True),
        ((5, 3), "matrix_exp", True),
        ((3, 5), "cayley", True),
        ((5, 3), "householder", False),
    ],
)
async def test_orthogonal_values_and_gradients(
    shape: Any, orthogonal_map: Any, trivialization: bool
) -> None:
    torch.manual_seed(0)
    t = tnn.Linear(shape[1], shape[0]).double()
    a = nn.Linear(shape[1], shape[0]).to(ag.float64)
    a.load_state_dict(t.state_dict())
    kwargs = {"orthogonal_map": orthogonal_map, "use_trivialization": trivialization}
    tnn.utils.parametrizations.orthogonal(t, **kwargs)
    P.orthogonal(a, **kwargs)
    assert _keys(a.state_dict()) == _keys(t.state_dict())
    w = a.weight.detach().numpy()
    gram = w @ w.T if shape[0] < shape[1] else w.T @ w
    np.testing.assert_allclose(gram, np.eye(min(shape)), atol=1e-12)
    if not (shape[0] != shape[1] and trivialization):  # else: a random completion of the basis
        _close(a.weight, t.weight)
    with torch.no_grad():  # away from the identity map's fixed point
        t.parametrizations.weight.original.add_(0.3 * torch.randn(shape, dtype=torch.float64))
    a.load_state_dict(t.state_dict())
    await _step(a, t, np.random.default_rng(2).standard_normal((5, shape[1])))
    _grads_match(a, t)


def test_orthogonal_assignment_and_errors_match_torch() -> None:
    t, a = _square_pair()
    tnn.utils.parametrizations.orthogonal(t)
    P.orthogonal(a)
    q = np.linalg.qr(np.random.default_rng(3).standard_normal((3, 3)))[0]
    t.weight = torch.tensor(q)
    a.weight = ag.tensor(q)
    _close(a.weight, t.weight)
    np.testing.assert_allclose(a.weight.detach().numpy(), q, atol=1e-12)
    _same_error(
        lambda: setattr(a, "weight", ag.zeros(2, 3)),
        lambda: setattr(t, "weight", torch.zeros(2, 3)),
    )
    t2, a2 = _square_pair()
    orth_t, orth_a = tnn.utils.parametrizations.orthogonal, P.orthogonal
    _same_error(lambda: orth_a(a2, "bias"), lambda: orth_t(t2, "bias"))
    _same_error(
        lambda: orth_a(a2, orthogonal_map="nope"), lambda: orth_t(t2, orthogonal_map="nope")
    )
    _same_error(lambda: orth_a(a2, "nope"), lambda: orth_t(t2, "nope"))


async def test_weight_norm_parametrization_loads_an_old_style_checkpoint() -> None:
    t_old, _ = _pair("conv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        tnn.utils.weight_norm(t_old)
    with torch.no_grad():
        t_old.weight_g.mul_(1.5)
    t, a = _pair("conv")
    tnn.utils.parametrizations.weight_norm(t)
    P.weight_norm(a)
    t.load_state_dict(t_old.state_dict())
    result = a.load_state_dict(t_old.state_dict())
    assert not result.missing_keys and not result.unexpected_keys
    _close(a.weight, t.weight)
    await _step(a, t, _input("conv"))
    _grads_match(a, t)


def test_transfer_parametrizations_and_params_shares_the_originals() -> None:
    t, a = _square_pair()
    parametrize.register_parametrization(a, "weight", _symmetric(nn))
    b = nn.Linear(3, 3).to(ag.float64)
    parametrize.transfer_parametrizations_and_params(a, b)
    assert parametrize.is_parametrized(b, "weight")
    assert b.parametrizations.weight.original is a.parametrizations.weight.original
    np.testing.assert_array_equal(b.weight.detach().numpy(), a.weight.detach().numpy())
    assert parametrize.type_before_parametrizations(b) is nn.Linear


def test_assigning_without_right_inverse_matches_torch() -> None:
    t, a = _square_pair()

    def double(lib: Any) -> Any:
        class Double(lib.Module):
            def forward(self, x: Any) -> Any:
                return x * 2

        return Double()

    tnn.utils.parametrize.register_parametrization(t, "weight", double(tnn))
    parametrize.register_parametrization(a, "weight", double(nn))
    _close(a.weight, t.weight)
    _same_error(
        lambda: setattr(a, "weight", ag.zeros(3, 3, dtype=ag.float64)),
        lambda: setattr(t, "weight", torch.zeros(3, 3, dtype=torch.float64)),
    )
