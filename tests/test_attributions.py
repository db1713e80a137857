"""``aiograd.serving._attributions``: saliency, input x gradient, integrated gradients and
smoothgrad, batched, checked against Captum (computed with torch on the same weights), against
finite differences, and against themselves (a mixed batch gives each request what it gets
alone, with one backward); float32 models; ``check_request``'s messages.

Captum rounds its integration weights to float32 (``torch.tensor(step_sizes).float()``) and
makes its Riemann points in torch's default dtype; aiograd's are float64. The float64
comparisons therefore run Captum with those kept in float64 (``captum_float64``), and one test
compares with Captum as shipped, to float32 rounding of its weights. Smoothgrad's noise cannot
come from torch's generator: Captum's ``NoiseTunnel`` is given aiograd's noise (drawn again
from the seed) in place of its own draw, so that everything else is Captum's.

Comparisons are relative to the magnitude of the whole expected array (its largest element):
two correct summation orders differ by roundings of the terms, which an element near zero (a
cancellation, a ReLU's zero) does not bound. The math does not depend on the event loop.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from helpers import torch

import aiograd as ag
import aiograd.serving._requests as requests_module
from aiograd import nn
from aiograd.serving._attributions import (
    IG_RULES,
    METHODS,
    NOISE_TYPES,
    Attribution,
    AttributionRequest,
    attribute,
    check_request,
    expanded_rows,
)

try:
    import captum.attr as captum_attr
except ImportError:  # pragma: no cover - the oracle is optional
    captum_attr = None

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough

requires_captum = pytest.mark.skipif(
    torch is None or captum_attr is None, reason="torch and captum not installed (the oracle)")

FEATURES, CLASSES = 5, 4
IMAGE = (1, 6, 6)  # CNN input: one channel of 6 x 6


# ----------------------------------------------------------------------------------- models
def mlp(seed: int = 0, dtype: Any = ag.float64) -> nn.Sequential:
    """A served MLP (frozen, eval), smooth: tanh."""
    ag.manual_seed(seed)
    model = nn.Sequential(nn.Linear(FEATURES, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(),
                          nn.Linear(8, CLASSES))
    return model.to(dtype).requires_grad_(False).eval()


def cnn(seed: int = 0, dtype: Any = ag.float64) -> nn.Sequential:
    """A served CNN: Conv2d, ReLU, flatten, Linear."""
    ag.manual_seed(seed)
    model = nn.Sequential(nn.Conv2d(1, 3, 3), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 4 * 4, CLASSES))
    return model.to(dtype).requires_grad_(False).eval()


def torch_model(kind: str, seed: int = 0) -> Any:
    """A float64 torch model, the MLP or the CNN."""
    torch.manual_seed(seed)
    if kind == "mlp":
        layers = [torch.nn.Linear(FEATURES, 8), torch.nn.Tanh(), torch.nn.Linear(8, 8),
                  torch.nn.Tanh(), torch.nn.Linear(8, CLASSES)]
    else:
        layers = [torch.nn.Conv2d(1, 3, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                  torch.nn.Linear(3 * 4 * 4, CLASSES)]
    return torch.nn.Sequential(*layers).double().eval()


def twin(model: Any) -> nn.Sequential:
    """The aiograd model with the torch model's weights (its state dict, through numpy)."""
    ours = mlp() if isinstance(model[0], torch.nn.Linear) else cnn()
    ours.load_state_dict({k: ag.tensor(v.detach().numpy()) for k, v in model.state_dict().items()})
    return ours


def inputs(kind: str, rows: int = 3, seed: int = 1) -> np.ndarray:
    shape = (FEATURES,) if kind == "mlp" else IMAGE
    return np.random.default_rng(seed).standard_normal((rows, *shape))


def some_targets(rows: int, seed: int = 2) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, CLASSES, rows).astype(np.int64)


# ------------------------------------------------------------------------------ comparisons
def assert_close(actual: Any, expected: Any, rtol: float = 1e-10, what: str = "") -> None:
    """Same dtype and shape, and ``max|actual - expected| <= rtol * max|expected|``."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    scale = float(np.abs(expected).max()) if expected.size else 0.0
    err = float(np.abs(actual.astype(np.float64) - expected.astype(np.float64)).max()) if expected.size else 0.0
    assert err <= rtol * scale, f"{what}: off by {err:.3g}, {err / scale:.3g} of the scale {scale:.3g}"


def assert_same_result(a: Attribution, b: Attribution, rtol: float = 1e-12, what: str = "") -> None:
    assert_close(a.output, b.output, rtol, f"{what} output")
    np.testing.assert_array_equal(a.predicted, b.predicted, err_msg=f"{what} predicted")
    np.testing.assert_array_equal(a.target, b.target, err_msg=f"{what} target")
    assert_close(a.attributions, b.attributions, rtol, f"{what} attributions")
    assert (a.delta is None) == (b.delta is None) and a.seed == b.seed, what
    if a.delta is not None:
        assert_close(a.delta, b.delta, rtol, f"{what} delta")


async def one(model: Any, request: AttributionRequest, **kw: Any) -> Attribution:
    (result,) = await attribute(model, [request], **kw)
    return result


def captum_target(result: Attribution) -> Any:
    return torch.tensor(result.target)


def leaf(x: np.ndarray) -> Any:
    return torch.tensor(x, requires_grad=True)


@pytest.fixture
def captum_float64(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Captum's integrated gradients with its weights and points in float64: torch's default
    dtype float64 (its Riemann points are ``torch.linspace`` in it) and ``Tensor.float`` the
    identity on float64 tensors (its ``torch.tensor(step_sizes).float()``), for the test only."""
    original = torch.Tensor.float

    def keep_float64(self: Any, *args: Any, **kwargs: Any) -> Any:
        return self if self.dtype == torch.float64 else original(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "float", keep_float64)
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(default)


# ---------------------------------------------------------------------- against Captum
@requires_captum
@pytest.mark.parametrize("kind", ["mlp", "cnn"])
async def test_saliency_and_input_x_gradient_match_captum(kind):
    tmodel = torch_model(kind)
    model = twin(tmodel)
    x = inputs(kind)
    y = tmodel(torch.tensor(x)).detach().numpy()
    for target in (some_targets(3), None):
        for absolute in (False, True):
            r = await one(model, AttributionRequest("saliency", x, target, abs=absolute))
            assert_close(r.output, y, what="output")
            np.testing.assert_array_equal(r.predicted, y.argmax(axis=1))
            np.testing.assert_array_equal(r.target, y.argmax(axis=1) if target is None else target)
            assert r.target.dtype == r.predicted.dtype == np.int64 and r.delta is None and r.seed is None
            expected = captum_attr.Saliency(tmodel).attribute(leaf(x), captum_target(r), abs=absolute)
            assert_close(r.attributions, expected.detach().numpy(), what=f"saliency abs={absolute}")
        r = await one(model, AttributionRequest("input_x_gradient", x, target))
        expected = captum_attr.InputXGradient(tmodel).attribute(leaf(x), captum_target(r))
        assert_close(r.attributions, expected.detach().numpy(), what="input_x_gradient")


@requires_captum
@pytest.mark.parametrize("kind", ["mlp", "cnn"])
@pytest.mark.parametrize("rule", IG_RULES)
async def test_integrated_gradients_and_delta_match_captum(kind, rule, captum_float64):
    tmodel = torch_model(kind)
    model = twin(tmodel)
    x = inputs(kind)
    rng = np.random.default_rng(3)
    row_shape = x.shape[1:]
    baselines = {  # ours, and the same baseline as Captum takes it
        "zeros": (None, None),
        "per row": (b := rng.standard_normal(x.shape), torch.tensor(b)),
        "one row": (b1 := rng.standard_normal((1, *row_shape)), torch.tensor(b1)),
        "row shape": (b1[0], torch.tensor(b1)),
    }
    ig = captum_attr.IntegratedGradients(tmodel)
    for steps in ((1, 2, 7) if rule == "gausslegendre" else (2, 5)):
        for n, (name, (ours, theirs)) in enumerate(baselines.items()):
            target = None if n % 2 else some_targets(3)
            r = await one(model, AttributionRequest("integrated_gradients", x, target, steps=steps,
                                                    rule=rule, baseline=ours))
            expected, delta = ig.attribute(leaf(x), baselines=theirs, target=captum_target(r),
                                           n_steps=steps, method=rule, return_convergence_delta=True)
            what = f"{rule} steps={steps} baseline {name}"
            assert_close(r.attributions, expected.detach().numpy(), what=what)
            assert r.delta is not None and r.delta.shape == (3,)
            # delta is a difference of sums: its roundings are those of its terms
            scale = np.abs(r.output).max()
            assert np.abs(r.delta - delta.numpy()).max() <= 1e-10 * scale, what


@requires_captum
async def test_integrated_gradients_match_captum_as_shipped_to_float32_weights():
    """Captum as installed (float32 weights and Riemann points): the same up to those roundings."""
    tmodel = torch_model("mlp")
    model = twin(tmodel)
    x = inputs("mlp")
    for rule in ("gausslegendre", "riemann_middle"):
        r = await one(model, AttributionRequest("integrated_gradients", x, rule=rule))
        expected = captum_attr.IntegratedGradients(tmodel).attribute(
            leaf(x), target=captum_target(r), method=rule)
        assert_close(r.attributions, expected.detach().numpy(), rtol=1e-6, what=rule)


@requires_captum
@pytest.mark.parametrize("kind", ["mlp", "cnn"])
async def test_smoothgrad_matches_captum_noise_tunnel_on_the_same_noise(kind, monkeypatch):
    tmodel = torch_model(kind)
    model = twin(tmodel)
    x = inputs(kind)
    samples, stdev, seed = 4, 0.3, 11
    # aiograd's noise, drawn again; Captum's layout is repeat_interleave: row n * samples + k
    eps = np.random.default_rng(seed).normal(0.0, stdev, (samples, *x.shape))
    noise = torch.tensor(eps.swapaxes(0, 1).reshape(-1, *x.shape[1:]))

    def given_noise(input: Any, std: float, partition: int) -> Any:
        assert std == stdev and partition == samples
        return input.repeat_interleave(partition, dim=0) + noise

    monkeypatch.setattr(captum_attr.NoiseTunnel, "_add_noise_to_input", staticmethod(given_noise))
    tunnel = captum_attr.NoiseTunnel(captum_attr.Saliency(tmodel))
    for noise_type in NOISE_TYPES:
        for absolute, target in ((False, some_targets(3)), (True, None)):
            r = await one(model, AttributionRequest("smoothgrad", x, target, abs=absolute,
                                                    samples=samples, stdev=stdev,
                                                    noise_type=noise_type, seed=seed))
            assert r.seed == seed and r.delta is None
            # the target is the one at x: the predicted class there, not at the noisy points
            y = tmodel(torch.tensor(x)).detach().numpy()
            assert_close(r.output, y, what="output")
            np.testing.assert_array_equal(r.target, y.argmax(axis=1) if target is None else target)
            expected = tunnel.attribute(leaf(x), nt_type=noise_type, nt_samples=samples,
                                        stdevs=stdev, target=captum_target(r), abs=absolute)
            what = f"{noise_type} abs={absolute}"
            # vargrad cancels (mean of squares minus squared mean): judged on the squares' scale
            scale_of = np.abs(expected.detach().numpy()).max()
            if noise_type == "vargrad":
                squares = [captum_attr.Saliency(tmodel).attribute(leaf(x + e), captum_target(r),
                                                                  abs=absolute).detach().numpy() ** 2
                           for e in eps]
                scale_of = np.abs(np.mean(squares, axis=0)).max()
            assert np.abs(r.attributions - expected.detach().numpy()).max() <= 1e-10 * scale_of, what
            # and by Captum's definition spelled out: Saliency at each x + eps_k
            g = np.stack([captum_attr.Saliency(tmodel).attribute(
                leaf(x + e), captum_target(r), abs=absolute).detach().numpy() for e in eps])
            mean, mean_sq = g.mean(axis=0), (g ** 2).mean(axis=0)
            spelled = {"smoothgrad": mean, "smoothgrad_sq": mean_sq, "vargrad": mean_sq - mean ** 2}
            assert np.abs(r.attributions - spelled[noise_type]).max() <= 1e-10 * scale_of, what


# --------------------------------------------------------------- without an oracle
async def test_saliency_matches_central_finite_differences():
    model = mlp()
    x, target = inputs("mlp"), some_targets(3)
    r = await one(model, AttributionRequest("saliency", x, target))
    h = 1e-5
    numeric = np.empty_like(x)
    with ag.no_grad():
        for n in range(x.shape[0]):
            for i in range(x.shape[1]):
                step = np.zeros_like(x)
                step[n, i] = h
                up = model(ag.tensor(x + step)).numpy()[n, target[n]]
                down = model(ag.tensor(x - step)).numpy()[n, target[n]]
                numeric[n, i] = (up - down) / (2 * h)
    assert_close(r.attributions, numeric, rtol=1e-7, what="saliency vs central differences")


async def test_riemann_trapezoid_weights_are_captums_and_sum_to_steps_minus_one_over_steps():
    """On a linear model every rule's integral is exact, except Captum's trapezoid, whose
    weights (1/steps, the two ends halved) sum to (steps - 1)/steps: delta shows the shortfall."""
    ag.manual_seed(0)
    model = nn.Linear(FEATURES, CLASSES).requires_grad_(False)
    x, target = inputs("mlp"), some_targets(3)
    baseline = np.random.default_rng(4).standard_normal((1, FEATURES))
    with ag.no_grad():
        rows = np.arange(3)
        change = (model(ag.tensor(x)).numpy() - model(ag.tensor(baseline)).numpy())[rows, target]
    for rule in IG_RULES:
        for steps in (2, 5):
            r = await one(model, AttributionRequest("integrated_gradients", x, target, steps=steps,
                                                    rule=rule, baseline=baseline))
            share = (steps - 1) / steps if rule == "riemann_trapezoid" else 1.0
            assert_close(r.attributions.sum(axis=1), share * change, rtol=1e-12, what=rule)
            assert r.delta is not None
            assert np.abs(r.delta - (share - 1) * change).max() <= 1e-12 * np.abs(change).max(), rule


async def test_smoothgrad_reports_its_seed_and_the_seed_reproduces_it():
    model = mlp()
    x = inputs("mlp")
    for noise_type in NOISE_TYPES:
        first, second = await attribute(model, [
            AttributionRequest("smoothgrad", x, noise_type=noise_type) for _ in range(2)])
        assert isinstance(first.seed, int) and 0 <= first.seed < 2**53
        assert first.seed != second.seed  # drawn from the OS, one per request
        again = await one(model, AttributionRequest("smoothgrad", x, noise_type=noise_type,
                                                    seed=first.seed))
        assert again.seed == first.seed
        np.testing.assert_array_equal(again.attributions, first.attributions)


async def test_smoothgrad_without_noise_is_saliency():
    for model, kind in ((mlp(), "mlp"), (cnn(), "cnn")):
        x = inputs(kind)
        for absolute in (False, True):
            base = await one(model, AttributionRequest("saliency", x, abs=absolute))
            results = await attribute(model, [
                AttributionRequest("smoothgrad", x, abs=absolute, stdev=0.0, samples=3,
                                   noise_type=t, seed=0) for t in NOISE_TYPES])
            smooth, sq, var = (r.attributions for r in results)
            assert_close(smooth, base.attributions, rtol=1e-12, what="smoothgrad, stdev 0")
            assert_close(sq, base.attributions ** 2, rtol=1e-12, what="smoothgrad_sq, stdev 0")
            assert np.abs(var).max() <= 1e-12 * np.abs(sq).max()
            np.testing.assert_array_equal(results[0].target, base.target)


class Counting(nn.Module):
    """A model that counts its forward calls (and their rows)."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner
        self.rows: list[int] = []

    def forward(self, x: ag.Tensor) -> ag.Tensor:
        self.rows.append(x.shape[0])
        return self.inner(x)


def mixed_requests(kind: str) -> list[AttributionRequest]:
    """Every method, several requests, targets given and not, rows 1 to 3."""
    rng = np.random.default_rng(5)
    shape = (FEATURES,) if kind == "mlp" else IMAGE

    def rows(n: int) -> np.ndarray:
        return rng.standard_normal((n, *shape))

    return [
        AttributionRequest("saliency", rows(2)),
        AttributionRequest("saliency", rows(3), some_targets(3), abs=True),
        AttributionRequest("input_x_gradient", rows(1), some_targets(1)),
        AttributionRequest("integrated_gradients", rows(2), steps=4,
                           baseline=rng.standard_normal((1, *shape))),
        AttributionRequest("integrated_gradients", rows(3), some_targets(3), steps=3,
                           rule="riemann_trapezoid"),
        AttributionRequest("smoothgrad", rows(2), samples=3, stdev=0.5, noise_type="vargrad", seed=1),
        AttributionRequest("input_x_gradient", rows(2)),
        AttributionRequest("smoothgrad", rows(1), some_targets(1), abs=True, samples=2, seed=2),
    ]


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
async def test_a_mixed_batch_gives_each_request_its_own_result_with_one_backward(kind, monkeypatch):
    model = Counting(mlp() if kind == "mlp" else cnn())
    reqs = mixed_requests(kind)
    alone = [await one(model, r) for r in reqs]

    backwards: list[int] = []
    real_grad = requests_module._grad

    async def counted_grad(*args: Any, **kwargs: Any) -> Any:
        backwards.append(1)
        return await real_grad(*args, **kwargs)

    monkeypatch.setattr(requests_module, "_grad", counted_grad)
    model.rows.clear()
    batched = await attribute(model, reqs)
    assert len(batched) == len(reqs) and len(backwards) == 1
    # one forward without a graph (x of IG and smoothgrad, IG's baselines), one with
    no_graph = sum(r.x.shape[0] * (2 if r.method == "integrated_gradients" else 1)
                   for r in reqs if r.method in ("integrated_gradients", "smoothgrad"))
    assert model.rows == [no_graph, sum(expanded_rows(r) for r in reqs) - no_graph]
    for i, (a, b) in enumerate(zip(batched, alone)):
        assert_same_result(a, b, what=f"request {i} ({reqs[i].method})")

    model.rows.clear()
    backwards.clear()
    await attribute(model, [r for r in reqs if r.method in ("saliency", "input_x_gradient")])
    assert len(model.rows) == 1 and len(backwards) == 1  # no forward without a graph needed


async def test_float32_model_gives_float32_results_close_to_float64():
    for kind, build in (("mlp", mlp), ("cnn", cnn)):
        reqs = mixed_requests(kind)
        wide = await attribute(build(dtype=ag.float64), reqs)
        narrow = await attribute(build(dtype=ag.float32), reqs)
        for i, (a, b) in enumerate(zip(narrow, wide)):
            what = f"{kind} request {i} ({reqs[i].method})"
            for field in ("output", "attributions"):
                assert getattr(a, field).dtype == np.float32, what
                assert_close(getattr(a, field), getattr(b, field).astype(np.float32), rtol=1e-4,
                             what=f"{what} {field}")
            np.testing.assert_array_equal(a.target, b.target, err_msg=what)
            assert a.predicted.dtype == a.target.dtype == np.int64
            if b.delta is not None:
                assert a.delta is not None and a.delta.dtype == np.float32
                assert np.abs(a.delta - b.delta).max() <= 1e-4 * np.abs(b.output).max(), what


async def test_gradients_go_to_the_inputs_only():
    ag.manual_seed(0)
    model = nn.Sequential(nn.Linear(FEATURES, 8), nn.Tanh(), nn.Linear(8, CLASSES))  # not frozen
    await attribute(model, mixed_requests("mlp"))
    assert all(p.grad is None for p in model.parameters())


async def test_a_model_with_batch_statistics_is_refused_before_any_forward():
    model = Counting(nn.Sequential(nn.Linear(FEATURES, 8), nn.BatchNorm1d(8), nn.Linear(8, CLASSES)))
    with pytest.raises(ValueError, match=r"BatchNorm1d 'inner\.1' in training mode normalises"):
        await attribute(model, mixed_requests("mlp"))
    assert model.rows == []


def test_expanded_rows():
    x = np.zeros((3, FEATURES))
    assert expanded_rows(AttributionRequest("saliency", x)) == 3
    assert expanded_rows(AttributionRequest("input_x_gradient", x)) == 3
    assert expanded_rows(AttributionRequest("integrated_gradients", x, steps=7)) == 3 * 7 + 6
    assert expanded_rows(AttributionRequest("smoothgrad", x, samples=4)) == 3 * 4 + 3


# ---------------------------------------------------------------------- check_request
BAD = [
    (dict(method="lime"), "method must be one of saliency, input_x_gradient, "
                          "integrated_gradients, smoothgrad; got 'lime'"),
    (dict(rule="simpson"), "rule must be one of gausslegendre, riemann_left, riemann_right, "
                           "riemann_middle, riemann_trapezoid; got 'simpson'"),
    (dict(noise_type="smoothgrad_abs"), "noise_type must be one of smoothgrad, smoothgrad_sq, "
                                        "vargrad; got 'smoothgrad_abs'"),
    (dict(x=np.float64(1.0)), "x must be an array of real numbers with rows first (rows, "
                              "*input_shape); got dtype float64 and shape ()"),
    (dict(x=np.array([["a"]])), "x must be an array of real numbers with rows first"),
    (dict(x=np.array([[1.0, np.nan]])), "x must be finite (no NaN or infinity)"),
    (dict(target=np.array([0, 1, 2])), "target must have shape (rows,) = (2,), one class per row "
                                       "of x; got shape (3,)"),
    (dict(target=np.array([[0, 1]])), "target must have shape (rows,) = (2,)"),
    (dict(target=np.array([0.0, 1.0])), "target must be integers (one class per row); got dtype float64"),
    (dict(target=np.array([0, -1])), "target must be class indices >= 0; got -1"),
    (dict(abs=1), "abs must be a bool; got 1"),
    (dict(steps=0), "steps must be an integer >= 1; got 0"),
    (dict(steps=2.0), "steps must be an integer >= 1; got 2.0"),
    (dict(steps=1, rule="riemann_left"), "steps must be an integer >= 2 for rule riemann_left "
                                         "(as Captum); got 1"),
    (dict(steps=1, rule="riemann_trapezoid"), "steps must be an integer >= 2 for rule "
                                              "riemann_trapezoid (as Captum); got 1"),
    (dict(samples=0), "samples must be an integer >= 1; got 0"),
    (dict(stdev=-0.5), "stdev must be a finite number >= 0; got -0.5"),
    (dict(stdev=float("inf")), "stdev must be a finite number >= 0; got inf"),
    (dict(stdev=float("nan")), "stdev must be a finite number >= 0; got nan"),
    (dict(baseline=np.zeros((3, 2))), "baseline of shape (3, 2) does not broadcast to x's shape (2, 2)"),
    (dict(baseline=np.zeros(3)), "baseline of shape (3,) does not broadcast to x's shape (2, 2)"),
    (dict(baseline=np.zeros((2, 2, 2))), "baseline of shape (2, 2, 2) does not broadcast to x's "
                                         "shape (2, 2)"),
    (dict(baseline=np.array([np.inf, 0.0])), "baseline must be finite (no NaN or infinity)"),
    (dict(seed=-1), "seed must be None or an integer >= 0; got -1"),
]


@pytest.mark.parametrize(("fields", "message"), BAD, ids=[str(sorted(f)) + str(i) for i, (f, _) in enumerate(BAD)])
def test_check_request_names_the_bad_field(fields, message):
    request = AttributionRequest(**{"method": "integrated_gradients", "x": np.ones((2, 2)), **fields})
    with pytest.raises(ValueError, match=re.escape(message)):
        check_request(request)


def test_check_request_accepts_good_requests_and_bounds_targets_by_classes():
    x = np.ones((2, 2))
    for method in METHODS:
        check_request(AttributionRequest(method, x, np.array([0, 3])))
    for rule in IG_RULES:
        check_request(AttributionRequest("integrated_gradients", x, steps=2, rule=rule,
                                         baseline=np.zeros((1, 2))))
    check_request(AttributionRequest("integrated_gradients", x, steps=1, baseline=np.float64(0.5)))
    check_request(AttributionRequest("smoothgrad", x.astype(np.int64), stdev=0, seed=2**70))
    check_request(AttributionRequest("saliency", x, np.array([0, 3])), classes=4)
    with pytest.raises(ValueError, match=re.escape("target must be class indices < 4 (the model's "
                                                   "classes); got 4")):
        check_request(AttributionRequest("saliency", x, np.array([0, 4])), classes=4)


async def test_attribute_checks_every_request_before_computing():
    model = Counting(mlp())
    x = inputs("mlp")
    reqs = [AttributionRequest("saliency", x), AttributionRequest("smoothgrad", x, samples=0)]
    with pytest.raises(ValueError, match=re.escape("attribute: request 1: samples must be an "
                                                   "integer >= 1; got 0")):
        await attribute(model, reqs)
    assert model.rows == []
    with pytest.raises(ValueError, match=re.escape("attribute: request 0's target 4 is not a "
                                                   "class of the model's 4")):
        await attribute(model, [AttributionRequest("saliency", x, np.array([0, 4, 1]))])
    assert await attribute(model, []) == []
