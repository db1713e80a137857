"""The in-place variants made from the out-of-place ops (aiograd/_ops/inplace_variants.py), each
checked against torch: values, dtype, the version bump, the grad_fn name, the gradient through
the op on a non-leaf and on a view of one (``CopySlices``), and PyTorch's errors (a leaf and a
view of a leaf that require grad, a write into an expanded tensor, a result that cannot be cast
to ``self``'s dtype).

One ``Case`` per variant (several where PyTorch records different nodes: a number or a tensor
operand, ``squeeze_()``, ``squeeze_(dim)``, ``squeeze_(dims)``); ``INPLACE_SPECS`` makes an
``OpSpec`` row of each (the factory's gradcheck, gradgradcheck, comparisons with torch, float32
and grad_fn tests; tests/test_op_registry.py reads it).
"""

from __future__ import annotations

import re
import warnings
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, away_from, make_op_tests

import aiograd as ag
from aiograd._ops._registry import OPS
from aiograd._ops.inplace_variants import VARIANTS

pytestmark = [pytest.mark.aiograd(backends=["asyncio"])]  # op math: one loop is enough

LEAF = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF = (
    "a view of a leaf Variable that requires grad is being used in an in-place operation."
)
OVERLAP = (
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation."
)

INTEGERS = (-2.0, -1.0, 0.0, 1.0, 2.0)
positive = (0.5, 2.0)


def _mask(lib: Any) -> Any:
    return lib.tensor(np.array([[True, False, True], [False, False, True]]))


def _fmod_pair(rng: np.random.Generator) -> list[Any]:
    # 1 < x / y < 2 everywhere: fmod(x, y) = x - y, smooth in both
    return [rng.uniform(2.1, 2.3, (2, 3)), rng.uniform(1.5, 2.0, (2, 3))]


@dataclass(frozen=True)
class Case:
    """One in-place call: ``call(lib, self, *operands)`` modifies ``self`` (inputs[0]) in place;
    the other inputs are the differentiable tensor operands."""

    name: str
    call: Callable[..., Any]
    inputs: Sequence[tuple[int, ...]] | Callable[[np.random.Generator], Sequence[Any]] = ((2, 3),)
    domain: tuple[float, float] = (-2.0, 2.0)
    grad_fn: str | None = None
    #: the registered op (default: the longest variant's name that ``name`` starts with)
    op: str | None = None
    gradgrad: bool = True
    why: str = ""

    @property
    def variant(self) -> str:
        return self.op or max((v.name for v in VARIANTS if self.name.startswith(v.name)), key=len)

    @property
    def kind(self) -> str:
        return next(v.kind for v in VARIANTS if v.name == self.variant)

    def arrays(self, salt: int = 0) -> list[np.ndarray]:
        rng = np.random.default_rng(zlib.crc32(self.name.encode()) + salt)
        if callable(self.inputs):
            return [np.asarray(a, dtype=np.float64) for a in self.inputs(rng)]
        return [rng.uniform(*self.domain, size=s) for s in self.inputs]


def _unary(
    name: str, node: str, domain: tuple[float, float] = (-2.0, 2.0), inputs: Any = ((2, 3),)
) -> Case:
    return Case(f"{name}_", lambda lib, t: getattr(t, f"{name}_")(), inputs, domain, node)


def _kinked(*kinks: float) -> Callable[[np.random.Generator], list[Any]]:
    return away_from(*kinks, gap=0.15)([(2, 3)])


CASES = [
    _unary("abs", "AbsBackward0", inputs=_kinked(0.0)),
    _unary("acos", "AcosBackward0", (-0.9, 0.9)),
    _unary("asin", "AsinBackward0", (-0.9, 0.9)),
    _unary("atan", "AtanBackward0", (-3.0, 3.0)),
    _unary("ceil", "CeilBackward0", inputs=_kinked(*INTEGERS)),
    _unary("cos", "CosBackward0"),
    _unary("cosh", "CoshBackward0"),
    _unary("erf", "ErfBackward0"),
    _unary("erfc", "ErfcBackward0"),
    _unary("nan_to_num", "NanToNumBackward0"),
    _unary("erfinv", "ErfinvBackward0", (-0.9, 0.9)),
    _unary("lgamma", "LgammaBackward0", (0.5, 3.0)),
    # (its second derivative, polygamma(2, x), is the Hurwitz zeta, computed in long double on
    # numpy and in the array module's float64 elsewhere: the device-parity test would see an ulp)
    Case("digamma_", lambda lib, t: t.digamma_(), ((2, 3),), (0.5, 3.0), "DigammaBackward0", gradgrad=False,
         why="second derivative checked by tests/test_ops_special_gamma.py"),
    _unary("expm1", "Expm1Backward0"),
    _unary("floor", "FloorBackward0", inputs=_kinked(*INTEGERS)),
    _unary("frac", "FracBackward0", inputs=_kinked(*INTEGERS)),
    _unary("log", "LogBackward0", positive),
    _unary("log10", "Log10Backward0", positive),
    _unary("log1p", "Log1PBackward0", (-0.5, 2.0)),
    _unary("log2", "Log2Backward0", positive),
    _unary("reciprocal", "ReciprocalBackward0", inputs=away_from(0.0, gap=0.3)([(2, 3)])),
    _unary("rsqrt", "RsqrtBackward0", positive),
    _unary("sigmoid", "SigmoidBackward0"),
    _unary("sign", "SignBackward0", inputs=_kinked(0.0)),
    _unary("sin", "SinBackward0"),
    _unary("sinh", "SinhBackward0"),
    _unary("sqrt", "SqrtBackward0", positive),
    _unary("square", "PowBackward0"),
    _unary("tan", "TanBackward0", (-1.2, 1.2)),
    _unary("tanh", "TanhBackward0"),
    _unary("trunc", "TruncBackward0", inputs=_kinked(*INTEGERS)),
    # ---------------------------------------------------------------- binary
    Case("atan2_", lambda lib, t, o: t.atan2_(o), ((2, 3), (3,)), grad_fn="Atan2Backward0"),
    Case(
        "arctan2_",
        lambda lib, t, o: t.arctan2_(o),
        ((2, 3), (2, 3)),
        grad_fn="Atan2Backward0",
        op="atan2_",
    ),
    Case("hypot_", lambda lib, t, o: t.hypot_(o), ((2, 3), (2, 3)), grad_fn="HypotBackward0"),
    Case(
        "fmod_number",
        lambda lib, t: t.fmod_(0.7),
        _kinked(*(0.7 * k for k in range(-3, 4))),
        grad_fn="FmodBackward0",
    ),
    Case("fmod_tensor", lambda lib, t, o: t.fmod_(o), _fmod_pair, grad_fn="FmodBackward1"),
    Case("xlogy_number", lambda lib, t: t.xlogy_(2.5), grad_fn="XlogyBackward2"),
    Case(
        "xlogy_tensor",
        lambda lib, t, o: t.xlogy_(o),
        lambda r: [r.uniform(-2, 2, (2, 3)), r.uniform(0.5, 2, (3,))],
        grad_fn="XlogyBackward0",
    ),
    Case("true_divide_number", lambda lib, t: t.true_divide_(1.5), grad_fn="DivBackward0"),
    Case(
        "true_divide_tensor",
        lambda lib, t, o: t.true_divide_(o),
        lambda r: [r.uniform(-2, 2, (2, 3)), *away_from(0.0, gap=0.3)([(2, 3)])(r)],
        grad_fn="DivBackward0",
    ),
    Case(
        "lerp_number", lambda lib, t, e: t.lerp_(e, 0.3), ((2, 3), (2, 3)), grad_fn="LerpBackward0"
    ),
    Case(
        "lerp_tensor",
        lambda lib, t, e, w: t.lerp_(e, w),
        ((2, 3), (2, 3), (3,)),
        grad_fn="LerpBackward1",
    ),
    Case(
        "addcmul_",
        lambda lib, t, a, b: t.addcmul_(a, b, value=0.5),
        ((2, 3), (2, 3), (3,)),
        grad_fn="AddcmulBackward0",
    ),
    Case(
        "addcdiv_",
        lambda lib, t, a, b: t.addcdiv_(a, b, value=-2.0),
        lambda r: [
            r.uniform(-2, 2, (2, 3)),
            r.uniform(-2, 2, (2, 3)),
            *away_from(0.0, gap=0.3)([(2, 3)])(r),
        ],
        grad_fn="AddcdivBackward0",
    ),
    Case(
        "masked_fill_number",
        lambda lib, t: t.masked_fill_(_mask(lib), 0.25),
        grad_fn="MaskedFillBackward0",
    ),
    Case(
        "masked_fill_tensor",
        lambda lib, t, v: t.masked_fill_(_mask(lib), v),
        ((2, 3), ()),
        grad_fn="MaskedFillBackward1",
    ),
    Case("cumsum_", lambda lib, t: t.cumsum_(1), grad_fn="CumsumBackward0"),
    Case("cumprod_", lambda lib, t: t.cumprod_(1), _kinked(0.0), grad_fn="CumprodBackward0"),
    # ---------------------------------------------------------------- comparisons (zero gradients)
    *(
        Case(
            f"{name}_{which}",
            call,
            inputs,
            grad_fn=f"{name.capitalize()}Backward{which == 'tensor':d}",
            gradgrad=False,
            why="its gradient is a constant zero: nothing to differentiate again",
        )
        for name in ("eq", "ne", "lt", "le", "gt", "ge")
        for which, call, inputs in (
            ("number", (lambda n: lambda lib, t: getattr(t, f"{n}_")(0.5))(name), ((2, 3),)),
            ("tensor", (lambda n: lambda lib, t, o: getattr(t, f"{n}_")(o))(name), ((2, 3), (3,))),
        )
    ),
    # ---------------------------------------------------------------- views
    Case("t_", lambda lib, t: t.t_(), grad_fn="TBackward1"),
    Case("t_vector", lambda lib, t: t.t_(), ((3,),), grad_fn="TBackward1"),
    Case(
        "transpose_", lambda lib, t: t.transpose_(0, -1), ((2, 3, 4),), grad_fn="TransposeBackward1"
    ),
    Case("squeeze_all", lambda lib, t: t.squeeze_(), ((2, 1, 3),), grad_fn="SqueezeBackward3"),
    Case("squeeze_dim", lambda lib, t: t.squeeze_(1), ((2, 1, 3),), grad_fn="SqueezeBackward4"),
    Case(
        "squeeze_dims", lambda lib, t: t.squeeze_((0, 1)), ((2, 1, 3),), grad_fn="SqueezeBackward5"
    ),
    Case("unsqueeze_", lambda lib, t: t.unsqueeze_(-1), grad_fn="UnsqueezeBackward1"),
]
CASES_BY_NAME = {c.name: c for c in CASES}
assert len(CASES_BY_NAME) == len(CASES)
ids = [c.name for c in CASES]


def _spec(case: Case) -> OpSpec:
    arrays = case.arrays()
    return OpSpec(
        case.name,
        lambda lib, x, *rest: case.call(lib, x.clone(), *rest),
        lambda rng: arrays,
        grad_fn=case.grad_fn,
        gradgrad=case.gradgrad,
        why=case.why,
        op=case.variant,
    )


#: The factory's rows: one per case.
INPLACE_SPECS = [_spec(c) for c in CASES]
globals().update(make_op_tests(INPLACE_SPECS))

#: The variants whose edge values ``test_edge_values_equal_the_out_of_place_op`` covers
#: (tests/test_edge_values.py counts them as covered).
EDGE_COVERED = {v.name for v in VARIANTS if v.kind != "view"}


def test_every_variant_has_a_case() -> None:
    made = {v.name for v in VARIANTS} | {"arctan2_"}
    assert {c.variant for c in CASES} | {"arctan2_"} == made
    for v in VARIANTS:
        rule = OPS[v.name]
        assert not rule.top_level and rule.family == "inplace" and rule.name == v.name
        assert v.name in dir(ag.Tensor)


# ------------------------------------------------------------------------------ helpers
def _torch_default(lib: Any) -> Any:
    return torch.float64 if ag.get_default_dtype() == np.float64 else torch.float32


@contextmanager
def same_default_dtype() -> Iterator[None]:
    """torch's default dtype set to aiograd's (an integer input's float results are in it)."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(
        torch.float64 if ag.get_default_dtype() == np.float64 else torch.float32
    )
    try:
        yield
    finally:
        torch.set_default_dtype(before)


def _tensor(lib: Any, a: Any, dtype: Any = np.float64, requires_grad: bool = False) -> Any:
    if lib is ag:
        return ag.tensor(np.asarray(a, dtype=dtype), requires_grad=requires_grad)
    return torch.tensor(np.asarray(a, dtype=dtype), requires_grad=requires_grad)


def _numpy(t: Any) -> np.ndarray:
    if isinstance(t, np.ndarray):
        return t
    if torch is not None and isinstance(t, torch.Tensor):
        return t.detach().numpy(force=True)
    return np.asarray(t.data)


def _close(actual: Any, expected: Any, what: str, rtol: float = 1e-10) -> None:
    a, e = _numpy(actual), _numpy(expected)
    assert a.shape == e.shape, (what, a.shape, e.shape)
    np.testing.assert_allclose(a, e, rtol=rtol, atol=1e-12, equal_nan=True, err_msg=what)


def _node_name(t: Any) -> str | None:
    fn = t.grad_fn
    if fn is None:
        return None
    return fn.name().removeprefix("torch::autograd::")


class _Recorder:
    """Stands for ``self`` in a case's call: records the method called and its arguments."""

    def __getattr__(self, name: str) -> Any:
        def record(*args: Any, **kwargs: Any) -> Any:
            self.called = (name, args, kwargs)
            return self

        return record


def out_of_place(case: Case, x: Any, *others: Any) -> np.ndarray:
    """What the out-of-place op (the registry's, for the variant) gives for the case's call."""
    recorder = _Recorder()
    case.call(ag, recorder, *others)
    name, args, kwargs = recorder.called
    variant = next(v for v in VARIANTS if v.name == (name if name != "arctan2_" else "atan2_"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no numpy warning reaches the user)
        return np.asarray(OPS[variant.of].forward(x, *args, **kwargs).data)


def outcome(fn: Callable[..., Any], *args: Any) -> tuple[Any, ...]:
    """What ``fn(*args)`` did: ("error", type, message) or ("ok", values, dtype name, version)."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            out = fn(*args)
    except Exception as e:  # noqa: BLE001 - compared with torch's
        message = re.sub(r"torch\.(\w+)Tensor", r"aiograd.\1Tensor", str(e)).split("\n")[0]
        return ("error", type(e).__name__, message)
    return ("ok", _numpy(out), str(out.dtype).removeprefix("torch."), out._version)


def assert_same_outcome(mine: tuple[Any, ...], theirs: tuple[Any, ...]) -> None:
    if theirs[0] == "error" or mine[0] == "error":
        assert mine == theirs
        return
    assert mine[2:] == theirs[2:], (mine, theirs)
    _close(mine[1], theirs[1], "values")


# ------------------------------------------------------------------------------ values
@requires_torch
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("case", CASES, ids=ids)
def test_values_dtype_version_and_self(case: Case, dtype: Any) -> None:
    arrays = case.arrays()
    x = _tensor(ag, arrays[0], dtype)
    data, before = x.data, x.data.copy()
    others = [_tensor(ag, a, dtype) for a in arrays[1:]]
    t = _tensor(torch, arrays[0], dtype)
    out = case.call(ag, x, *others)
    tout = case.call(torch, t, *[_tensor(torch, a, dtype) for a in arrays[1:]])
    assert out is x and tout is t
    assert x.dtype == dtype and x.shape == tuple(t.shape) and x._version == t._version == 1
    _close(x, t, "values", rtol=1e-10 if dtype == np.float64 else 1e-5)
    assert np.shares_memory(x.data, data)  # written into its own array (or a view of it)
    if case.kind != "view":
        assert x.data is data
        # the out-of-place op on the old values gives the same numbers
        np.testing.assert_array_equal(
            x.data, out_of_place(case, _tensor(ag, before, dtype), *others).astype(dtype)
        )
    with ag.no_grad():  # bumps under no_grad too
        x2 = _tensor(ag, arrays[0], dtype)
        case.call(ag, x2, *others)
        assert x2._version == 1


def test_comparisons_write_ones_and_zeros_in_selfs_dtype() -> None:
    b = np.array([1.0, 1.0, 1.0])

    def compare(lib: Any, name: str, a: np.ndarray, dtype: Any) -> Any:
        return getattr(_tensor(lib, a, dtype), f"{name}_")(_tensor(lib, b))

    for name in ("eq", "ne", "lt", "le", "gt", "ge"):
        for dtype in (np.float64, np.float32, np.int64, np.bool_):
            a = np.array([[0.0, 1.0, 2.0], [np.nan if dtype != np.int64 else 0.0, 1.0, -1.0]])
            mine = outcome(compare, ag, name, a, dtype)
            if torch is not None:
                assert_same_outcome(mine, outcome(compare, torch, name, a, dtype))
            assert mine[0] == "ok" and mine[2] == np.dtype(dtype).name


# ------------------------------------------------------------------------------ gradients
@requires_torch
@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_gradient_through_a_non_leaf(case: Case) -> None:
    """``y = x * 1.0; y.op_(...)``: the grad_fn and every input's gradient, as torch's."""
    arrays = case.arrays()
    xs = [_tensor(ag, a, requires_grad=True) for a in arrays]
    ts = [_tensor(torch, a, requires_grad=True) for a in arrays]
    y, ty = xs[0] * 1.0, ts[0] * 1.0
    case.call(ag, y, *xs[1:])
    case.call(torch, ty, *ts[1:])
    assert _node_name(y) == _node_name(ty) == case.grad_fn
    assert y._version == ty._version == 1
    w = np.random.default_rng(1).standard_normal(tuple(ty.shape))
    await (y * ag.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    for i, (x, t) in enumerate(zip(xs, ts)):
        _close(
            x.grad if x.grad is not None else np.zeros(x.shape),
            t.grad if t.grad is not None else np.zeros(x.shape),
            f"gradient of input {i}",
        )


def _through_a_view(
    lib: Any, case: Case, arrays: list[np.ndarray], w: np.ndarray, u: np.ndarray
) -> tuple[Any, ...]:
    """A view (row 1) of a non-leaf base modified in place; the loss reads base and view."""
    shape = arrays[0].shape
    base_values = np.stack([np.linspace(-1.0, 1.0, arrays[0].size).reshape(shape), arrays[0]])
    leaf = _tensor(lib, base_values, requires_grad=True)
    others = [_tensor(lib, a, requires_grad=True) for a in arrays[1:]]
    base = leaf * 1.0
    view = base[1]
    case.call(lib, view, *others)
    loss = (base * _tensor(lib, w)).sum() + (
        view * _tensor(lib, u.reshape(tuple(view.shape)))
    ).sum()
    return leaf, others, base, view, loss


@requires_torch
@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_in_place_on_a_view_of_a_non_leaf(case: Case) -> None:
    """The base is rebased (``CopySlices``, none for the view ops: only the view changes shape),
    the view's grad_fn is regenerated, and the gradients are torch's."""
    arrays = case.arrays()
    rng = np.random.default_rng(2)
    w, u = rng.standard_normal((2, *arrays[0].shape)), rng.standard_normal(arrays[0].size)
    leaf, others, base, view, loss = _through_a_view(ag, case, arrays, w, u)
    tleaf, tothers, tbase, tview, tloss = _through_a_view(torch, case, arrays, w, u)
    _close(base, tbase, "base values")
    _close(view, tview, "view values")
    assert base._version == view._version == tbase._version == 1
    assert _node_name(base) == _node_name(tbase)
    assert _node_name(view) == _node_name(tview)
    assert _node_name(base) == ("MulBackward0" if case.kind == "view" else "CopySlices")
    await loss.backward()
    tloss.backward()
    _close(leaf.grad, tleaf.grad, "gradient of the base's leaf")
    for i, (o, t) in enumerate(zip(others, tothers)):
        _close(
            o.grad if o.grad is not None else np.zeros(o.shape),
            t.grad if t.grad is not None else np.zeros(o.shape),
            f"gradient of operand {i}",
        )


@requires_torch
@pytest.mark.parametrize(
    "case",
    [c for c in CASES if c.kind == "values"],
    ids=[c.name for c in CASES if c.kind == "values"],
)
async def test_the_saved_result_is_self(case: Case) -> None:
    """A node that saves its result saves ``self`` (modifying it again breaks the backward, with
    torch's message); one that saves the old ``self`` saves a copy (no error)."""
    arrays = case.arrays()
    results = []
    for lib in (ag, torch):
        xs = [_tensor(lib, a, requires_grad=True) for a in arrays]
        y = xs[0] * 1.0
        case.call(lib, y, *xs[1:])
        y.mul_(2.0)
        loss = (y * 1.0).sum()
        if lib is ag:
            try:
                await loss.backward()
                results.append(("ok", [_numpy(x.grad) for x in xs if x.grad is not None]))
            except RuntimeError as e:
                results.append(("error", str(e).replace("aiograd.", "torch.")))
        else:
            try:
                loss.backward()
                results.append(("ok", [_numpy(x.grad) for x in xs if x.grad is not None]))
            except RuntimeError as e:
                results.append(("error", str(e)))
    (mine, theirs) = results
    assert mine[0] == theirs[0], (mine, theirs)
    if mine[0] == "error":
        assert mine[1].split(" Hint")[0] == theirs[1].split(" Hint")[0]
    else:
        for a, b in zip(mine[1], theirs[1]):
            _close(a, b, "gradient")


# ------------------------------------------------------------------------------ errors
@requires_torch
@pytest.mark.parametrize("case", CASES, ids=ids)
def test_leaf_and_view_of_leaf_errors(case: Case) -> None:
    arrays = case.arrays()
    for lib in (ag, torch):
        x = _tensor(lib, arrays[0], requires_grad=True)
        others = [_tensor(lib, a) for a in arrays[1:]]
        assert outcome(case.call, lib, x, *others) == ("error", "RuntimeError", LEAF)
        assert x._version == 0
        base = _tensor(lib, np.stack([arrays[0], arrays[0]]), requires_grad=True)
        assert outcome(case.call, lib, base[0], *others) == ("error", "RuntimeError", VIEW_OF_LEAF)
    # under no_grad a leaf may be modified
    x = _tensor(ag, arrays[0], requires_grad=True)
    with ag.no_grad():
        case.call(ag, x, *[_tensor(ag, a) for a in arrays[1:]])
    assert x._version == 1 and x.is_leaf and x.grad_fn is None


@requires_torch
@pytest.mark.parametrize("case", CASES, ids=ids)
def test_views_made_under_no_grad_refuse(case: Case) -> None:
    arrays = case.arrays()
    messages = []
    for lib in (ag, torch):
        y = _tensor(lib, np.stack([arrays[0], arrays[0]]), requires_grad=True) * 1.0
        with lib.no_grad():
            v = y[0]
        messages.append(outcome(case.call, lib, v, *[_tensor(lib, a) for a in arrays[1:]]))
    assert messages[0] == messages[1] and messages[0][0] == "error"


@requires_torch
@pytest.mark.parametrize("case", CASES, ids=ids)
def test_expanded_tensor(case: Case) -> None:
    """A write into an expanded tensor is PyTorch's internal-overlap error (a view op is not a
    write: allowed), with and without a gradient involved."""
    arrays = case.arrays()
    shape = arrays[0].shape
    if shape[0] < 2:
        pytest.skip("no dim to expand")
    for requires_grad in (False, True):
        results = []
        for lib in (ag, torch):
            row = _tensor(lib, arrays[0][:1], requires_grad=requires_grad)
            e = (row * 1.0 if requires_grad else row).expand(*shape)
            results.append(outcome(case.call, lib, e, *[_tensor(lib, a) for a in arrays[1:]]))
        assert_same_outcome(*results)
        if case.kind != "view" and case.variant != "masked_fill_":
            assert results[0] == ("error", "RuntimeError", OVERLAP)


@requires_torch
def test_masked_fill_writes_an_expanded_tensor_with_a_warning() -> None:
    """PyTorch's ``masked_fill_`` writes into an expanded tensor (deprecated, it warns): the
    masked elements' memory gets the value, in every element that shares it."""
    mask = np.array([[True, False, False], [False, False, True]])
    results = []
    for lib in (ag, torch):
        row = _tensor(lib, [[1.0, 2.0, 3.0]])
        with pytest.warns(
            UserWarning, match="^Use of masked_fill_ on expanded tensors is deprecated"
        ):
            e = row.expand(2, 3).masked_fill_(_tensor(lib, mask, np.bool_), 5.0)
        results.append((_numpy(e).tolist(), _numpy(row).tolist(), e._version))
    assert results[0] == results[1] == ([[5.0, 2.0, 5.0], [5.0, 2.0, 5.0]], [[5.0, 2.0, 5.0]], 1)


#: Where aiograd's out-of-place op differs from torch's on an integer tensor (not the variant's).
INTEGER_EXCEPTIONS = {
    "frac_": "aiograd's frac of an integer tensor is a copy; torch's is not implemented for Long"
}


@requires_torch
@pytest.mark.parametrize("case", CASES, ids=ids)
def test_integer_self(case: Case) -> None:
    """On an integer tensor: torch's values where the result casts back (``abs_``, ``floor_``,
    ``cumsum_``, the comparisons...), else torch's "result type Float can't be cast to the
    desired output type Long" (a float result: ``sin_``, or a float operand: ``atan2_``)."""
    if case.name in INTEGER_EXCEPTIONS:
        pytest.skip(INTEGER_EXCEPTIONS[case.name])
    arrays = case.arrays()
    values = np.arange(1, arrays[0].size + 1).reshape(arrays[0].shape) - 3
    with same_default_dtype():
        mine, theirs = (
            outcome(
                case.call,
                lib,
                _tensor(lib, values, np.int64),
                *[_tensor(lib, a) for a in arrays[1:]],
            )
            for lib in (ag, torch)
        )
    assert_same_outcome(mine, theirs)


CAST_ERRORS: list[tuple[str, Callable[[Any], Any]]] = [
    ("sin_long", lambda lib: lib.tensor([1, 2]).sin_()),
    ("sqrt_bool", lambda lib: lib.tensor([True, False]).sqrt_()),
    ("square_bool", lambda lib: lib.tensor([True, False]).square_()),
    (
        "atan2_int_float32",
        lambda lib: lib.tensor([1, 2], dtype=lib.int32).atan2_(lib.ones(2, dtype=lib.float32)),
    ),
    ("true_divide_long", lambda lib: lib.tensor([1, 2]).true_divide_(2)),
    ("fmod_long_float", lambda lib: lib.tensor([1, 2]).fmod_(2.5)),
    (
        "masked_fill_long",
        lambda lib: lib.tensor([1, 2]).masked_fill_(lib.tensor([True, False]), 1.5),
    ),
    ("cumsum_dtype", lambda lib: lib.tensor([1, 2]).cumsum_(0, dtype=lib.float64)),
    ("cumprod_dtype", lambda lib: lib.ones(2, dtype=lib.float32).cumprod_(0, dtype=lib.float64)),
    (
        "float32_from_float64",
        lambda lib: lib.ones(2, dtype=lib.float32).hypot_(lib.ones(2, dtype=lib.float64)),
    ),
    (
        "complex",
        lambda lib: lib.ones(2, dtype=lib.float64).xlogy_(_tensor(lib, [1.0, 2.0], np.complex128)),
    ),
    (
        "broadcast",
        lambda lib: lib.ones(3, dtype=lib.float64).atan2_(lib.ones(2, 3, dtype=lib.float64)),
    ),
    (
        "broadcast_mask",
        lambda lib: lib.ones(3, dtype=lib.float64).masked_fill_(
            _tensor(lib, np.ones((2, 3)), np.bool_), 1.0
        ),
    ),
    ("wrong_argument", lambda lib: lib.ones(3, dtype=lib.float64).atan2_(2.0)),
    ("wrong_arguments", lambda lib: lib.ones(3, dtype=lib.float64).hypot_(2.0)),
    ("t_3d", lambda lib: lib.ones(2, 3, 4).t_()),
    ("transpose_dim", lambda lib: lib.ones(2, 3).transpose_(0, 5)),
    ("unsqueeze_dim", lambda lib: lib.ones(2, 3).unsqueeze_(3)),
]


@requires_torch
@pytest.mark.parametrize("name,fn", CAST_ERRORS, ids=[n for n, _ in CAST_ERRORS])
def test_dtype_shape_and_argument_errors(name: str, fn: Callable[[Any], Any]) -> None:
    with same_default_dtype():
        mine, theirs = outcome(fn, ag), outcome(fn, torch)
    assert_same_outcome(mine, theirs)


def test_failed_write_leaves_self_alone() -> None:
    x = ag.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="can't be cast"):
        x.sqrt_()
    assert x._version == 0 and x.tolist() == [1, 2, 3]
    y = ag.tensor([1.0, 2.0], dtype=ag.float64, requires_grad=True) * 1.0
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        y.atan2_(ag.ones(3, 2, dtype=ag.float64, requires_grad=True))
    assert y._version == 0 and y.grad_fn.name() == "MulBackward0"


# ------------------------------------------------------------------------------ the view ops
@requires_torch
async def test_view_op_on_a_base_with_views() -> None:
    """``y.t_()`` on a base whose views exist: the views keep their shape and regenerate their
    grad_fn against the transposed base; the gradients are torch's."""
    grads = []
    for lib in (ag, torch):
        x = _tensor(lib, np.arange(6.0).reshape(2, 3), requires_grad=True)
        y = x * 1.0
        row = y[0]
        y.t_()
        assert tuple(y.shape) == (3, 2) and tuple(row.shape) == (3,)
        assert _node_name(y) == "TBackward1" and _node_name(row) == "AsStridedBackward0"
        row.mul_(_tensor(lib, [2.0, 3.0, 4.0]))
        loss = (y * _tensor(lib, np.arange(6.0).reshape(3, 2))).sum() + (row * row).sum()
        if lib is ag:
            await loss.backward()
        else:
            loss.backward()
        grads.append(_numpy(x.grad))
    _close(*grads, "gradient")


@requires_torch
async def test_chained_view_ops_and_retained_grad() -> None:
    """The view ops chain; a grad retained before stays with the version before (``y.grad`` is
    its gradient, shaped as it was), as PyTorch's."""
    for lib in (ag, torch):
        x = _tensor(lib, np.arange(6.0).reshape(2, 3), requires_grad=True)
        y = x * 1.0
        y.retain_grad()
        y.unsqueeze_(0).transpose_(0, 2).squeeze_()
        assert tuple(y.shape) == (3, 2) and y._version == 3
        assert _node_name(y) == "SqueezeBackward3"
        loss = (y * _tensor(lib, np.arange(6.0).reshape(3, 2))).sum()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (torch warns that y's .grad is not populated: it is)
            if lib is ag:
                await loss.backward()
                mine = (_numpy(x.grad), _numpy(y.grad))
            else:
                loss.backward()
                theirs = (_numpy(x.grad), _numpy(y.grad))
    for a, b in zip(mine, theirs):
        _close(a, b, "gradient")


def test_view_ops_share_memory_and_counters() -> None:
    x = ag.tensor(np.arange(6.0).reshape(2, 3))
    d = x.data
    v = x[1:]
    x.t_()
    assert np.shares_memory(x.data, d) and x.shape == (3, 2) and v._version == 1
    x[0, 1] = 9.0  # a write through the transposed tensor reaches the old views
    assert v.tolist() == [[9.0, 4.0, 5.0]]


# ------------------------------------------------------------------------------ edge values
EDGES = np.array(
    [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, np.inf, -np.inf, np.nan, 1e-300, -1e300, 1e300, 5e-324]
)


@pytest.mark.parametrize("name", sorted(EDGE_COVERED))
def test_edge_values_equal_the_out_of_place_op(name: str) -> None:
    """At infinities, NaN, signed zeros and subnormals each elementwise variant writes the out-of-
    place op's result, bit for bit (whose edge values tests/test_edge_values.py compares with
    torch's), without numpy's warnings."""
    case = CASES_BY_NAME.get(name) or next(c for c in CASES if c.variant == name)
    for dtype in (np.float64, np.float32):
        with np.errstate(all="ignore"):
            data = EDGES.astype(dtype)
        grid = np.stack(np.meshgrid(data, data)).reshape(2, -1)  # every pair of edges
        arrays = case.arrays()
        size = grid.shape[1]
        others = [np.resize(grid[1], size) if a.shape else a for a in arrays[1:]]
        if name == "masked_fill_":
            continue  # (a fixed mask shape: its edges are the value's, written as given)
        x = ag.tensor(grid[0], dtype=dtype)
        ops = [ag.tensor(o, dtype=dtype) for o in others]
        if any(a.shape == (3,) for a in arrays[1:]):
            ops = [ag.tensor(np.resize(grid[1], size), dtype=dtype) for _ in ops]
        run = case
        if name in ("cumsum_", "cumprod_"):
            run = Case(name, (lambda n: lambda lib, t: getattr(t, n)(0))(name))
        expected = out_of_place(run, x.clone(), *ops)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            run.call(ag, x, *ops)
        np.testing.assert_array_equal(x.data, expected.astype(dtype))
