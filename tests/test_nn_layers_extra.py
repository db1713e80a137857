"""The extra nn layers (aiograd/nn/_activations_extra.py, _fold.py, _pooling1d.py,
_instance_norm.py, conv_transpose1d in _conv.py) and their modules: one ``OpSpec`` row per
registered op (gradcheck, gradgradcheck, torch's values, gradients and grad_fn names), then the
modules against torch (values, float64 gradients, state_dict keys, repr) and PyTorch's errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, away_from, make_op_tests

import aiograd as ag
import aiograd.nn as nn
import aiograd.nn.functional as F

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough


def nnf(lib: Any) -> Any:
    """``aiograd.nn.functional`` or ``torch.nn.functional``."""
    return F if lib is ag else torch.nn.functional


def distinct(shape: tuple[int, ...]) -> Any:
    """Distinct values (no ties for a max)."""

    def draw(rng: np.random.Generator) -> list[Any]:
        n = int(np.prod(shape))
        return [(rng.permutation(n) / n * 4 - 2).reshape(shape)]

    return draw


def prelu_inputs(rng: np.random.Generator) -> list[Any]:
    x = rng.uniform(-2, 2, size=(2, 3, 4))
    x = np.where(np.abs(x) < 0.1, 0.5, x)
    return [x, rng.uniform(0.1, 0.5, size=(3,))]


EXTRA_SPECS = [
    OpSpec("hardswish", lambda lib, x: nnf(lib).hardswish(x), away_from(-3.0, 3.0, lo=-4, hi=4)([(3, 4)]),
           grad_fn="HardswishBackward0"),
    OpSpec("hardsigmoid", lambda lib, x: nnf(lib).hardsigmoid(x), away_from(-3.0, 3.0, lo=-4, hi=4)([(3, 4)]),
           grad_fn="HardsigmoidBackward0", gradgrad=False,
           why="torch has no derivative for hardsigmoid_backward (ours is 0, piecewise constant)"),
    OpSpec("logsigmoid", lambda lib, x: nnf(lib).logsigmoid(x), ((3, 4),), domain=(-5, 5), grad_fn="LogSigmoidBackward0"),
    OpSpec("threshold", lambda lib, x: nnf(lib).threshold(x, 0.3, -1.5), away_from(0.3)([(3, 4)]),
           grad_fn="ThresholdBackward0"),
    OpSpec("selu", lambda lib, x: nnf(lib).selu(x), away_from(0.0)([(3, 4)]), grad_fn="EluBackward0"),
    OpSpec("celu", lambda lib, x: nnf(lib).celu(x, 0.7), away_from(0.0)([(3, 4)]), grad_fn="CeluBackward0"),
    OpSpec("glu", lambda lib, x: nnf(lib).glu(x, 1), ((2, 6, 3),), grad_fn="GluBackward0"),
    OpSpec("glu_last", lambda lib, x: nnf(lib).glu(x), ((3, 4),), grad_fn="GluBackward0", op="glu"),
    OpSpec("prelu", lambda lib, x, w: nnf(lib).prelu(x, w), prelu_inputs, grad_fn="PreluKernelBackward0"),
    OpSpec("pixel_shuffle", lambda lib, x: nnf(lib).pixel_shuffle(x, 2), ((2, 8, 2, 3),), grad_fn="PixelShuffleBackward0"),
    OpSpec("pixel_unshuffle", lambda lib, x: nnf(lib).pixel_unshuffle(x, 2), ((2, 2, 4, 6),),
           grad_fn="PixelUnshuffleBackward0"),
    OpSpec("unfold", lambda lib, x: nnf(lib).unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
           ((2, 3, 5, 6),), grad_fn="Im2ColBackward0"),
    OpSpec("fold", lambda lib, x: nnf(lib).fold(x, (4, 5), 2, padding=1), ((2, 12, 30),), grad_fn="Col2ImBackward0"),
    OpSpec("adaptive_max_pool2d", lambda lib, x: nnf(lib).adaptive_max_pool2d(x, (2, 3)), distinct((2, 3, 5, 7)),
           grad_fn="AdaptiveMaxPool2DBackward0"),
    OpSpec("conv_transpose1d", lambda lib, x, w, b: nnf(lib).conv_transpose1d(x, w, b, stride=2, padding=1,
           output_padding=1, groups=2), ((2, 4, 5), (4, 3, 3), (6,)), grad_fn="ConvolutionBackward0"),
]

globals().update(make_op_tests(EXTRA_SPECS))


def _arr(t: Any) -> Any:
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t.data)


async def _compare(ours: Any, theirs: Any, x: np.ndarray, params: tuple[Any, Any] = ((), ())) -> None:
    """Values, float64 gradients (input and parameters) and grad_fn names against torch."""
    a, t = ag.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    o, to = ours(a), theirs(t)
    if isinstance(to, tuple):
        assert np.array_equal(_arr(o[1]), _arr(to[1]))
        o, to = o[0], to[0]
    np.testing.assert_allclose(_arr(o), _arr(to), rtol=1e-10, atol=1e-12)
    assert o.grad_fn.name() == to.grad_fn.name()
    w = np.random.default_rng(0).normal(size=to.shape)
    grads = await ag.grad((o * ag.tensor(w)).sum(), [a, *params[0]])
    tgrads = torch.autograd.grad((to * torch.tensor(w)).sum(), [t, *params[1]])
    for g, tg in zip(grads, tgrads):
        np.testing.assert_allclose(_arr(g), tg.numpy(), rtol=1e-10, atol=1e-12)


COMPOSED = {
    "relu6": (lambda f, x: f.relu6(x), (3, 4)),
    "softsign": (lambda f, x: f.softsign(x), (3, 4)),
    "tanhshrink": (lambda f, x: f.tanhshrink(x), (3, 4)),
    "softmin": (lambda f, x: f.softmin(x, 1), (3, 4)),
    "max_pool1d": (lambda f, x: f.max_pool1d(x, 3, 2, 1), (2, 3, 9)),
    "max_pool1d_indices": (lambda f, x: f.max_pool1d(x, 2, return_indices=True), (2, 3, 8)),
    "avg_pool1d": (lambda f, x: f.avg_pool1d(x, 3, 2, 1, count_include_pad=False), (2, 3, 9)),
    "adaptive_avg_pool1d": (lambda f, x: f.adaptive_avg_pool1d(x, 4), (2, 3, 9)),
    "adaptive_avg_pool1d_one": (lambda f, x: f.adaptive_avg_pool1d(x, 1), (3, 9)),
    "adaptive_max_pool1d": (lambda f, x: f.adaptive_max_pool1d(x, 4, return_indices=True), (2, 3, 9)),
    "adaptive_max_pool2d_none": (lambda f, x: f.adaptive_max_pool2d(x, (None, 2), return_indices=True), (3, 4, 5)),
    "instance_norm": (lambda f, x: f.instance_norm(x), (2, 3, 5)),
    "unfold_unbatched": (lambda f, x: f.unfold(x, 2), (3, 4, 4)),
}


@requires_torch
@pytest.mark.parametrize("name", list(COMPOSED))
async def test_composed_forms_match_torch(name: str) -> None:
    call, shape = COMPOSED[name]
    x = np.random.default_rng(len(name)).permutation(int(np.prod(shape))).reshape(shape) / 7.0 - 1.0
    await _compare(lambda a: call(F, a), lambda t: call(torch.nn.functional, t), x)


MODULES = [
    ("Hardswish", (), (3, 4)), ("Hardsigmoid", (), (3, 4)), ("LogSigmoid", (), (3, 4)), ("GLU", (1,), (2, 4, 3)),
    ("PReLU", (3, 0.1), (2, 3, 4)), ("PReLU", (), (2, 3)), ("SELU", (), (3, 4)), ("CELU", (2.0,), (3, 4)),
    ("Softsign", (), (3, 4)), ("Tanhshrink", (), (3, 4)), ("Threshold", (0.1, 20), (3, 4)), ("Softmin", (1,), (3, 4)),
    ("Softmax2d", (), (2, 3, 4, 5)), ("PixelShuffle", (2,), (1, 8, 2, 2)), ("PixelUnshuffle", (2,), (1, 2, 4, 4)),
    ("InstanceNorm1d", (3,), (2, 3, 5)), ("InstanceNorm2d", (3,), (2, 3, 4, 4)),
    ("InstanceNorm3d", (3,), (2, 3, 2, 3, 3)), ("MaxPool1d", (3, 2, 1), (2, 3, 9)), ("AvgPool1d", (3,), (2, 3, 9)),
    ("AdaptiveAvgPool1d", (4,), (2, 3, 9)), ("AdaptiveMaxPool1d", (4,), (2, 3, 9)),
    ("AdaptiveMaxPool2d", ((2, None),), (2, 3, 5, 4)), ("Unfold", (2,), (2, 3, 4, 4)), ("Fold", ((4, 4), 2), (2, 8, 9)),
    ("ConvTranspose1d", (2, 3, 3), (2, 2, 5)),
]


@requires_torch
@pytest.mark.parametrize(("name", "args", "shape"), MODULES, ids=[f"{m[0]}{i}" for i, m in enumerate(MODULES)])
async def test_modules_match_torch(name: str, args: tuple[Any, ...], shape: tuple[int, ...]) -> None:
    theirs = getattr(torch.nn, name)(*args).double()
    ours = getattr(nn, name)(*args)
    ours.load_state_dict({k: ag.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    x = np.random.default_rng(1).permutation(int(np.prod(shape))).reshape(shape) / 5.0 - 1.0
    ps = dict(ours.named_parameters())
    tps = dict(theirs.named_parameters())
    assert list(ps) == list(tps)
    await _compare(ours, theirs, x, (list(ps.values()), list(tps.values())))


@requires_torch
@pytest.mark.parametrize("kw", [dict(affine=True), dict(track_running_stats=True), dict(affine=True, track_running_stats=True, momentum=None)])
async def test_instance_norm_parameters_and_running_stats_match_torch(kw: dict[str, Any]) -> None:
    theirs = torch.nn.InstanceNorm2d(3, **kw).double()
    ours = nn.InstanceNorm2d(3, **kw)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    x = np.random.default_rng(2).normal(size=(4, 3, 3, 5))
    for _ in range(2):
        await _compare(ours, theirs, x, (list(ours.parameters()), list(theirs.parameters())))
    for k, v in theirs.state_dict().items():
        np.testing.assert_allclose(_arr(ours.state_dict()[k]), v.numpy(), rtol=1e-10)
    ours.eval()
    theirs.eval()
    np.testing.assert_allclose(_arr(ours(ag.tensor(x))), theirs(torch.tensor(x)).detach().numpy(), rtol=1e-9, atol=1e-12)


def _errors(f: Any) -> tuple[type, str]:
    try:
        f()
    except Exception as e:  # noqa: BLE001
        return type(e), str(e).replace("torch.Size", "Size").replace("aiograd.Size", "Size")
    raise AssertionError("no error")


ERRORS = {
    "glu_odd": lambda f, lib: f.glu(lib.ones(3, 5)),
    "glu_scalar": lambda f, lib: f.glu(lib.tensor(1.0)),
    "prelu_channels": lambda f, lib: f.prelu(lib.ones(3, 5), lib.ones(3)),
    "pixel_shuffle_dims": lambda f, lib: f.pixel_shuffle(lib.ones(3, 5), 2),
    "pixel_shuffle_channels": lambda f, lib: f.pixel_shuffle(lib.ones(3, 5, 2), 2),
    "pixel_shuffle_factor": lambda f, lib: f.pixel_shuffle(lib.ones(4, 5, 2), 0),
    "pixel_unshuffle_height": lambda f, lib: f.pixel_unshuffle(lib.ones(4, 5, 4), 2),
    "pixel_unshuffle_width": lambda f, lib: f.pixel_unshuffle(lib.ones(4, 4, 3), 2),
    "fold_channels": lambda f, lib: f.fold(lib.ones(2, 7, 9), (4, 4), 2),
    "fold_blocks": lambda f, lib: f.fold(lib.ones(2, 8, 10), (4, 4), 2),
    "hardswish_long": lambda f, lib: f.hardswish(lib.tensor([1, 2])),
    "instance_norm_spatial": lambda f, lib: f.instance_norm(lib.ones(1, 3, 1)),
}


@requires_torch
@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch(name: str) -> None:
    assert _errors(lambda: ERRORS[name](F, ag)) == _errors(lambda: ERRORS[name](torch.nn.functional, torch))


@requires_torch
def test_module_errors_match_torch() -> None:
    assert _errors(lambda: nn.Softmax2d()(ag.ones(3, 4))) == _errors(lambda: torch.nn.Softmax2d()(torch.ones(3, 4)))
    assert _errors(lambda: nn.InstanceNorm1d(3, affine=True)(ag.ones(2, 4, 5))) == _errors(
        lambda: torch.nn.InstanceNorm1d(3, affine=True)(torch.ones(2, 4, 5)))
    assert _errors(lambda: nn.InstanceNorm2d(3)(ag.ones(2, 3))) == _errors(lambda: torch.nn.InstanceNorm2d(3)(torch.ones(2, 3)))
