"""The small torch namespaces training scripts touch: ``aiograd.amp`` (``GradScaler`` against
torch's on CPU, step for step, overflow included; ``autocast`` disabled is a no-op, enabled an
error), ``aiograd.compile`` (the identity), ``aiograd.backends`` (flags kept, torch's defaults)
and ``aiograd.accelerator`` (on a machine without CUDA: torch's CPU build's answers)."""

from __future__ import annotations

import pickle
import warnings
from typing import Any

import numpy as np
import pytest

import aiograd as ag
from aiograd import optim

torch = pytest.importorskip("torch")

SHAPES = [(4, 6), (6,), (6, 1)]
NO_CUDA = not ag.cuda.is_available()


def _initial() -> list[np.ndarray]:
    g = np.random.default_rng(3)
    return [g.standard_normal(s) * 0.5 for s in SHAPES]


def _data() -> tuple[np.ndarray, np.ndarray]:
    g = np.random.default_rng(4)
    return g.standard_normal((10, 4)), g.standard_normal((10, 1))


def _loss(params: list[Any], x: Any, y: Any, factor: float) -> Any:
    w1, b1, w2 = params
    return (((x @ w1 + b1).tanh() @ w2 - y) ** 2).mean() * factor


#: Per step, the factor the loss is multiplied by: 1e308 makes the scaled loss (and so the
#: gradients) overflow to inf, a step the scaler must skip.
FACTORS = [1.0, 1.0, 1e308, 1.0, 1.0, 1.0, 1e308, 1e308, 1.0, 1.0]


def _scalers(**kw: Any) -> tuple[Any, Any]:
    return ag.amp.GradScaler("cpu", **kw), torch.amp.GradScaler("cpu", **kw)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning", "ignore:invalid value encountered:RuntimeWarning")
async def test_grad_scaler_follows_torch_through_overflows() -> None:
    ours_p = [ag.tensor(a, requires_grad=True) for a in _initial()]
    theirs_p = [torch.tensor(a, requires_grad=True) for a in _initial()]
    ours_opt, theirs_opt = optim.Adam(ours_p, lr=0.01), torch.optim.Adam(theirs_p, lr=0.01)
    ours, theirs = _scalers(init_scale=2.0**10, growth_interval=3)
    (xa, ya), (xt, yt) = (ag.tensor(a) for a in _data()), (torch.tensor(a) for a in _data())
    skipped = []
    for factor in FACTORS:
        ours_opt.zero_grad()
        theirs_opt.zero_grad()
        scaled = ours.scale(_loss(ours_p, xa, ya, factor))
        assert isinstance(scaled, ag.Tensor)
        await scaled.backward()
        theirs.scale(_loss(theirs_p, xt, yt, factor)).backward()
        before = [p.detach().clone() for p in theirs_p]
        ours.step(ours_opt)
        theirs.step(theirs_opt)
        skipped.append(all(torch.equal(b, p) for b, p in zip(before, theirs_p)))
        ours.update()
        theirs.update()
        assert ours.get_scale() == theirs.get_scale()
        assert ours.state_dict() == theirs.state_dict()
        for a, t in zip(ours_p, theirs_p):
            np.testing.assert_allclose(a.detach().numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-14)
            if t.grad is not None and torch.isfinite(t.grad).all():
                np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-14)
    # The overflowing steps were skipped (torch's params unchanged there), the others were not;
    # the scale backed off three times and grew after each run of three clean steps.
    assert skipped == [f != 1.0 for f in FACTORS]
    assert ours.get_scale() != 2.0**10


async def test_unscale_then_clip_matches_torch() -> None:
    ours_p = [ag.tensor(a, requires_grad=True) for a in _initial()]
    theirs_p = [torch.tensor(a, requires_grad=True) for a in _initial()]
    ours_opt, theirs_opt = optim.SGD(ours_p, lr=0.1), torch.optim.SGD(theirs_p, lr=0.1)
    ours, theirs = _scalers()
    (xa, ya), (xt, yt) = (ag.tensor(a) for a in _data()), (torch.tensor(a) for a in _data())
    for _ in range(3):
        ours_opt.zero_grad()
        theirs_opt.zero_grad()
        await ours.scale(_loss(ours_p, xa, ya, 1.0)).backward()
        theirs.scale(_loss(theirs_p, xt, yt, 1.0)).backward()
        ours.unscale_(ours_opt)
        theirs.unscale_(theirs_opt)
        for a, t in zip(ours_p, theirs_p):  # unscaled: the plain gradients
            np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-12)
        ag.nn.utils.clip_grad_norm_(ours_p, 0.1)
        torch.nn.utils.clip_grad_norm_(theirs_p, 0.1)
        ours.step(ours_opt)
        theirs.step(theirs_opt)
        ours.update()
        theirs.update()
    for a, t in zip(ours_p, theirs_p):
        np.testing.assert_allclose(a.detach().numpy(), t.detach().numpy(), rtol=1e-12)


def _errors(make: Any) -> tuple[str, str]:
    got = []
    for lib in (ag, torch):
        with pytest.raises(Exception) as info:
            make(lib)
        got.append(f"{type(info.value).__name__}: {info.value}")
    return got[0], got[1]


async def test_misuse_raises_torchs_errors() -> None:
    def setup(lib: Any) -> tuple[Any, Any, Any]:
        p = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        opt = (optim if lib is ag else torch.optim).SGD([p], lr=0.1)
        return p, opt, lib.amp.GradScaler("cpu")

    def step_before_scale(lib: Any) -> None:
        _, opt, scaler = setup(lib)
        scaler.step(opt)

    def unscale_twice(lib: Any) -> None:
        p, opt, scaler = setup(lib)
        p.grad = lib.ones(2, dtype=lib.float64)
        scaler.scale(p.sum())
        scaler.unscale_(opt)
        scaler.unscale_(opt)

    def step_twice(lib: Any) -> None:
        p, opt, scaler = setup(lib)
        p.grad = lib.ones(2, dtype=lib.float64)
        scaler.scale(p.sum())
        scaler.step(opt)
        scaler.step(opt)

    def closure(lib: Any) -> None:
        p, opt, scaler = setup(lib)
        scaler.step(opt, closure=lambda: None)

    def update_without_step(lib: Any) -> None:
        p, opt, scaler = setup(lib)
        scaler.scale(p.sum())
        scaler.update()

    def bad_output(lib: Any) -> None:
        lib.amp.GradScaler("cpu").scale([lib.ones(1), 3])

    for case in (step_before_scale, unscale_twice, step_twice, closure, update_without_step, bad_output):
        ours, theirs = _errors(case)
        assert ours == theirs, case.__name__
    ours, theirs = _errors(lambda lib: lib.amp.GradScaler("cpu", growth_factor=1.0))
    assert ours == theirs
    ours, theirs = _errors(lambda lib: lib.amp.GradScaler("cpu", backoff_factor=1.0))
    assert ours == theirs


def test_scale_keeps_containers_and_dtypes() -> None:
    scaler = ag.amp.GradScaler("cpu", init_scale=4.0)
    a, b = ag.tensor([1.0, 2.0]), ag.tensor([3.0], dtype=ag.float32)
    out = scaler.scale([a, (b, a)])
    assert isinstance(out, list) and isinstance(out[1], tuple)
    np.testing.assert_array_equal(out[1][0].numpy(), [12.0])
    assert out[0].dtype == ag.float64 and out[1][0].dtype == ag.float32  # (as torch: 0-dim scale)
    assert scaler.get_scale() == 4.0


def test_state_dict_round_trip_and_torch_interchange() -> None:
    theirs = torch.amp.GradScaler("cpu", init_scale=128.0, growth_factor=3.0, backoff_factor=0.25, growth_interval=7)
    ours = ag.amp.GradScaler("cpu")
    ours.load_state_dict(theirs.state_dict())
    assert ours.state_dict() == theirs.state_dict()
    ours.scale(ag.ones(1))
    ours.load_state_dict({**ours.state_dict(), "scale": 32.0, "_growth_tracker": 5})
    assert ours.get_scale() == 32.0 and ours.state_dict()["_growth_tracker"] == 5
    again = ag.amp.GradScaler("cpu")
    again.load_state_dict(ours.state_dict())
    assert again.state_dict() == ours.state_dict()
    assert (ours.get_growth_factor(), ours.get_backoff_factor(), ours.get_growth_interval()) == (3.0, 0.25, 7)
    ours.set_growth_factor(4.0)
    ours.set_backoff_factor(0.125)
    ours.set_growth_interval(9)
    assert (ours.get_growth_factor(), ours.get_backoff_factor(), ours.get_growth_interval()) == (4.0, 0.125, 9)
    restored = pickle.loads(pickle.dumps(ours))
    assert restored.state_dict() == ours.state_dict()
    with pytest.raises(RuntimeError, match="saved from a disabled instance"):
        ours.load_state_dict({})


def test_disabled_scaler_passes_everything_through() -> None:
    p = ag.tensor([1.0, -1.0], requires_grad=True)
    opt = optim.SGD([p], lr=0.5)
    p.grad = ag.tensor([float("inf"), 1.0])
    scaler = ag.amp.GradScaler("cpu", enabled=False)
    loss = p.sum()
    assert scaler.scale(loss) is loss
    assert not scaler.is_enabled() and scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    scaler.unscale_(opt)
    scaler.step(opt)  # not skipped, inf and all: a disabled scaler just steps
    scaler.update()
    scaler.load_state_dict({})
    assert np.isinf(p.detach().numpy()[0]) and p.detach().numpy()[1] == -1.5


@pytest.mark.skipif(not NO_CUDA, reason="CUDA is available here")
def test_cuda_scaler_without_cuda_warns_and_disables_as_torch() -> None:
    with pytest.warns(UserWarning, match="CUDA is not available.  Disabling."):
        ours = ag.amp.GradScaler()
    with pytest.warns(UserWarning, match="CUDA is not available.  Disabling."):
        theirs = torch.amp.GradScaler()
    assert ours.is_enabled() is theirs.is_enabled() is False


# ------------------------------------------------------------------------------ autocast
async def test_disabled_autocast_changes_nothing() -> None:
    assert ag.autocast is ag.amp.autocast
    x = ag.tensor([[1.0, 2.0]], requires_grad=True)
    w = ag.tensor([[0.5], [0.25]])
    with ag.autocast("cpu", enabled=False):
        y = x @ w
    assert y.dtype == ag.float64
    await y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0.5, 0.25]])
    async with ag.amp.autocast("cpu", dtype=ag.float16, enabled=False):
        assert (x * 2).dtype == ag.float64

    async def forward(t: Any) -> Any:
        return t * 3

    assert ag.autocast("cpu", enabled=False)(forward) is forward
    assert (await forward(x)).dtype == ag.float64


def test_enabled_autocast_refuses_rather_than_pretends() -> None:
    with pytest.raises(NotImplementedError, match="aiograd has no autocast"):
        ag.autocast("cpu")
    with pytest.raises(NotImplementedError, match="aiograd has no autocast"):
        ag.amp.autocast("cpu", dtype=ag.float16, enabled=True)
    assert not ag.amp.is_autocast_available("cpu")


def test_autocast_argument_errors_are_torchs() -> None:
    for bad in (3, "xyz"):
        ours, theirs = _errors(lambda lib, bad=bad: lib.autocast(bad))  # noqa: B023
        assert ours == theirs


@pytest.mark.skipif(not NO_CUDA, reason="CUDA is available here")
def test_cuda_autocast_without_cuda_warns_and_disables_as_torch() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ag.autocast("cuda"):
            pass
        torch.autocast("cuda")
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2 and messages[0] == messages[1]


# ------------------------------------------------------------------------------ compile
def test_compile_is_the_identity() -> None:
    model = ag.nn.Linear(2, 3)
    assert ag.compile(model) is model
    assert ag.compile(model, mode="max-autotune", fullgraph=True, dynamic=False) is model

    def f(t: Any) -> Any:
        return t + 1

    assert ag.compile(f, backend="eager") is f
    assert ag.compile()(f) is f
    assert ag.compile(options={"trace.enabled": False})(f) is f
    with pytest.raises(RuntimeError, match="Model can't be None"):
        ag.compile()(None)
    ours, theirs = _errors(lambda lib: lib.compile(f, mode="default", options={}))
    assert ours == theirs


# ------------------------------------------------------------------------------ backends
FLAGS = [
    ("cudnn", "enabled"), ("cudnn", "benchmark"), ("cudnn", "deterministic"), ("cudnn", "allow_tf32"),
    ("cudnn", "benchmark_limit"), ("cuda.matmul", "allow_tf32"),
    ("cuda.matmul", "allow_fp16_reduced_precision_reduction"),
    ("cuda.matmul", "allow_bf16_reduced_precision_reduction"),
]


def _owner(lib: Any, path: str) -> Any:
    obj = lib.backends
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize(("path", "flag"), FLAGS, ids=[f"{p}.{f}" for p, f in FLAGS])
def test_backend_flags_default_as_torch_and_are_settable(path: str, flag: str) -> None:
    ours = _owner(ag, path)
    default = getattr(ours, flag)
    assert default == getattr(_owner(torch, path), flag)
    new = 5 if flag == "benchmark_limit" else not default
    setattr(ours, flag, new)
    try:
        assert getattr(ours, flag) == new
    finally:
        setattr(ours, flag, default)
    assert getattr(ours, flag) == default


def test_backend_queries_are_a_cpu_builds() -> None:
    b = ag.backends
    assert b.cudnn.is_available() is False and b.cudnn.version() is None
    assert b.mps.is_available() is False and b.mps.is_built() is False
    assert b.cpu.get_cpu_capability() == torch.backends.cpu.get_cpu_capability()
    with pytest.raises(AttributeError, match="Unknown attribute foo"):
        b.cuda.matmul.foo = True
    with pytest.raises(AttributeError, match="Unknown attribute foo"):
        _ = b.cuda.matmul.foo
    try:
        import cupy  # noqa: F401
        has_cupy = True
    except ImportError:
        has_cupy = False
    assert b.cuda.is_built() is has_cupy


# ------------------------------------------------------------------------------ accelerator
@pytest.mark.skipif(not NO_CUDA, reason="CUDA is available here")
def test_accelerator_without_cuda_answers_as_torchs_cpu_build() -> None:
    a = ag.accelerator
    assert a.is_available() is torch.accelerator.is_available() is False
    assert a.current_accelerator() is None and a.current_accelerator(check_available=True) is None
    assert a.device_count() == torch.accelerator.device_count() == 0
    for name, args in [("current_device_index", ()), ("synchronize", ()), ("set_device_index", (0,))]:
        ours, theirs = _errors(lambda lib, name=name, args=args: getattr(lib.accelerator, name)(*args))  # noqa: B023
        assert ours == theirs


@pytest.mark.skipif(NO_CUDA, reason="no CUDA here")
def test_accelerator_with_cuda_is_cuda() -> None:
    a = ag.accelerator
    assert a.is_available() and a.device_count() == ag.cuda.device_count()
    dev = a.current_accelerator(check_available=True)
    assert dev is not None and dev.type == "cuda"
    assert a.current_device_index() == ag.cuda.current_device()
    a.synchronize()


def test_the_namespaces_are_exported() -> None:
    for name in ("accelerator", "backends", "amp", "compile", "autocast"):
        assert name in ag.__all__ and getattr(ag, name) is not None


# ------------------------------------------------------------------------- torch.jit, precision
def test_jit_queries_and_decorators_are_eager() -> None:
    def f(x):
        return x * 2

    model = ag.nn.Linear(2, 2)
    assert ag.jit.is_scripting() is torch.jit.is_scripting() is False
    assert ag.jit.is_tracing() is torch.jit.is_tracing() is False
    assert ag.jit.script(model) is model and ag.jit.script(f) is f
    assert ag.jit.trace(f, (ag.ones(2),)) is f
    assert ag.jit.ignore(f) is f and ag.jit.ignore(drop=True)(f) is f
    assert ag.jit.unused(f) is f and ag.jit.export(f) is f and ag.jit.annotate(list[int], [1]) == [1]
    with pytest.raises(NotImplementedError, match="TorchScript"):
        ag.jit.save(model, "m.pt")


def test_assert_as_torchs() -> None:
    ag._assert(ag.tensor(True), "unused")
    for mod in (ag, torch):
        with pytest.raises(AssertionError, match="^shape mismatch$"):
            mod._assert(False, "shape mismatch")


def test_float32_matmul_precision_round_trips_and_ties_to_tf32() -> None:
    assert ag.get_float32_matmul_precision() == "highest"
    try:
        ag.set_float32_matmul_precision("medium")
        assert (ag.get_float32_matmul_precision(), ag.backends.cuda.matmul.allow_tf32) == ("medium", True)
        with pytest.warns(UserWarning, match="is not one of 'highest', 'high', or 'medium'"):
            ag.set_float32_matmul_precision("low")
        assert ag.get_float32_matmul_precision() == "medium"
        ag.backends.cuda.matmul.allow_tf32 = False
        assert ag.get_float32_matmul_precision() == "highest"
    finally:
        ag.set_float32_matmul_precision("highest")
    assert ag.backends.cuda.matmul.allow_tf32 is False


# ------------------------------------------------------------------------------- torch.special
SPECIAL = ["digamma", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammaln", "log1p", "logit", "psi", "sinc"]


@pytest.mark.parametrize("name", SPECIAL)
async def test_special_functions_are_torchs(name: str) -> None:
    x = np.linspace(0.05, 0.95, 7)  # (inside every one's domain: erfinv, logit)
    ours, theirs = ag.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y, ty = getattr(ag.special, name)(ours), getattr(torch.special, name)(theirs)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12)
    assert y.grad_fn.name() == ty.grad_fn.name()
    (g,) = await ag.grad(y.sum(), ours)
    (tg,) = torch.autograd.grad(ty.sum(), theirs)
    np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-10)


def test_special_reductions_and_aliases() -> None:
    x = np.random.default_rng(0).standard_normal((3, 4))
    for name, args in [("softmax", (1,)), ("log_softmax", (0,)), ("logsumexp", (1,)), ("multigammaln", (1,)),
                       ("polygamma", ()), ("round", ()), ("xlogy", ())]:
        a, t = ag.tensor(np.abs(x) + 1), torch.tensor(np.abs(x) + 1)
        if name == "polygamma":
            got, want = ag.special.polygamma(1, a), torch.special.polygamma(1, t)
        elif name == "xlogy":
            got, want = ag.special.xlogy(a, a), torch.special.xlogy(t, t)
        else:
            got, want = getattr(ag.special, name)(a, *args), getattr(torch.special, name)(t, *args)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, err_msg=name)
    assert ag.special.expit is ag.sigmoid and ag.special.gammaln is ag.lgamma


def test_top_level_cosine_similarity_and_pairwise_distance() -> None:
    x, y = np.random.default_rng(1).standard_normal((2, 3, 5))
    for name in ("cosine_similarity", "pairwise_distance"):
        got = getattr(ag, name)(ag.tensor(x), ag.tensor(y))
        want = getattr(torch, name)(torch.tensor(x), torch.tensor(y))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
