"""The op-test factory (MyGrad style): one ``OpSpec`` row per op, ``make_op_tests`` turns a table of
rows into gradcheck, gradgradcheck, torch-comparison, dtype and grad_fn-name tests.

Each row exercises one op of the registry (``aiograd._ops._registry.OPS``): ``spec_op`` says
which (``op=``, or the longest registered name that the row's name starts with, as ``add`` for
``add_scalar``). tests/test_op_registry.py checks that every registered op has a row and that
every row names a registered op."""

from __future__ import annotations

import warnings
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag
from aiograd.testing import gradcheck, gradgradcheck


def const(lib: Any, value: Any) -> Any:
    """A constant operand: the raw numpy array for aiograd, a tensor for torch."""
    if lib is ag:
        return value
    return torch.as_tensor(np.asarray(value))


@dataclass(frozen=True)
class OpSpec:
    """One op under test. ``fn(lib, *inputs)`` computes it with ``lib`` = aiograd or torch."""

    name: str
    fn: Callable[..., Any]
    #: Shapes of the differentiable inputs (drawn uniformly from ``domain``), or ``rng -> arrays``.
    inputs: Sequence[tuple[int, ...]] | Callable[[np.random.Generator], Sequence[Any]] = ((2, 3),)
    domain: tuple[float, float] = (-2.0, 2.0)
    #: PyTorch's grad_fn name for this op (checked against torch too when it is installed).
    grad_fn: str | None = None
    #: Smooth at the sampled points: run gradgradcheck and compare second derivatives with torch.
    gradgrad: bool = True
    #: Compare with torch (False where torch cannot run it as written).
    torch: bool = True
    #: float32 inputs give float32 outputs and gradients (False: a float64 constant promotes).
    float32: bool = True
    rtol: float = 1e-7
    #: Finite-difference step of gradcheck/gradgradcheck (coarse for float32 intermediates).
    eps: float = 1e-6
    #: The registered op this row exercises; by default derived from ``name`` (see ``spec_op``);
    #: None for a row that composes several ops and stands for none of them.
    op: str | None = "<from name>"
    #: False for ops without a gradient (comparisons, argmax, integer casts): forward only.
    grad: bool = True
    #: Why ``gradgrad``, ``torch`` or ``grad`` is False (required then).
    why: str = ""

    def arrays(self) -> list[np.ndarray]:
        rng = np.random.default_rng(zlib.crc32(self.name.encode()))
        if callable(self.inputs):
            return [np.asarray(a, dtype=np.float64) for a in self.inputs(rng)]
        return [rng.uniform(*self.domain, size=s) for s in self.inputs]

    def tensors(self, dtype: Any = np.float64) -> list[ag.Tensor]:
        return [ag.tensor(a, dtype=dtype, requires_grad=True) for a in self.arrays()]

    def run(self, *inputs: Any) -> Any:
        return self.fn(ag, *inputs)


def spec_op(spec: OpSpec) -> str | None:
    """The registered op ``spec`` exercises: ``spec.op``, else the longest registered op name
    that ``spec.name`` is or starts with (followed by ``_``), else the name itself (which the
    registry test then reports as not registered)."""
    from aiograd._ops._registry import OPS

    if spec.op != "<from name>":
        return spec.op
    parts = spec.name.split("_")
    for n in range(len(parts), 0, -1):
        candidate = "_".join(parts[:n])
        if candidate in OPS:
            return candidate
    return spec.name


def away_from(*kinks: float, lo: float = -2.0, hi: float = 2.0, gap: float = 0.1) -> Callable[..., Any]:
    """Sampler for non-smooth ops: values in [lo, hi] at least ``gap`` from every kink."""

    def sample(shapes: Sequence[tuple[int, ...]]) -> Callable[[np.random.Generator], list[Any]]:
        def draw(rng: np.random.Generator) -> list[Any]:
            out = []
            for s in shapes:
                x = rng.uniform(lo, hi, size=s)
                while True:
                    bad = np.zeros(x.shape, dtype=bool)
                    for k in kinks:
                        bad |= np.abs(x - k) < gap
                    if not bad.any():
                        break
                    x[bad] = rng.uniform(lo, hi, size=int(bad.sum()))
                out.append(x)
            return out

        return draw

    return sample


def apart(*shapes: tuple[int, ...], gap: float = 0.1) -> Callable[[np.random.Generator], list[Any]]:
    """Two operands whose broadcast values differ by at least ``gap`` everywhere (no ties)."""

    def draw(rng: np.random.Generator) -> list[Any]:
        while True:
            a, b = (rng.uniform(-2, 2, size=s) for s in shapes)
            if np.min(np.abs(a - b)) >= gap:
                return [a, b]

    return draw


def _seed_like(name: str, arrays: Sequence[Any], salt: int) -> list[np.ndarray]:
    rng = np.random.default_rng(zlib.crc32(name.encode()) + salt)
    return [rng.standard_normal(np.shape(a)) for a in arrays]


def as_numpy(x: Any, like: Any) -> np.ndarray:
    """A gradient as an array (None, i.e. unused, as zeros)."""
    if x is None:
        return np.zeros(np.shape(like))
    if torch is not None and isinstance(x, torch.Tensor):
        return x.detach().numpy(force=True)  # force: torch's efficient ZeroTensor (abs, sign)
    return np.asarray(x.data)


def _check_close(actual: Any, expected: Any, rtol: float, what: str) -> None:
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=1e-10, err_msg=what)


def make_op_tests(specs: Sequence[OpSpec]) -> dict[str, Any]:
    """The per-op tests for ``specs``; a test module does ``globals().update(make_op_tests(...))``."""
    specs = list(specs)
    names = [s.name for s in specs]
    assert len(set(names)) == len(names), "spec names must be unique"

    def over(pred: Callable[[OpSpec], bool] = lambda s: True) -> Any:
        chosen = [s for s in specs if pred(s)]
        return pytest.mark.parametrize("spec", chosen, ids=[s.name for s in chosen])

    # An op's numbers do not depend on the event loop that awaits its backward: these run once,
    # on asyncio's loop (the engine's tests cover the other backends).
    once = pytest.mark.aiograd(backends=["asyncio"])

    @over(lambda s: s.grad)
    @once
    async def test_gradcheck(spec: OpSpec) -> None:
        assert await gradcheck(spec.run, spec.tensors(), eps=spec.eps)

    @over(lambda s: s.grad and s.gradgrad)
    @once
    async def test_gradgradcheck(spec: OpSpec) -> None:
        with warnings.catch_warnings():
            # An op with a float32 output (``float``) gets float32 grad_outputs, about which
            # gradgradcheck warns as torch's does; its tolerance (``eps``) accounts for them.
            warnings.filterwarnings("ignore", "Input #\\d+ requires gradient and is not a double", UserWarning)
            assert await gradgradcheck(spec.run, spec.tensors(), eps=spec.eps)

    @requires_torch
    @over(lambda s: s.torch)
    @once
    async def test_matches_torch(spec: OpSpec) -> None:
        xs = spec.tensors()
        ts = [torch.tensor(x.data, requires_grad=True) for x in xs]
        out, tout = spec.run(*xs), spec.fn(torch, *ts)
        assert out.shape == tuple(tout.shape)
        assert out.dtype == np.dtype(str(tout.dtype).removeprefix("torch."))
        _check_close(out.data, tout.detach().numpy(), spec.rtol, "forward")
        if not spec.grad:
            assert out.grad_fn is None and not out.requires_grad and not tout.requires_grad
            return
        (u,) = _seed_like(spec.name, [out.data], 1)
        grads = await ag.grad(out, xs, ag.tensor(u), allow_unused=True)
        tgrads = torch.autograd.grad(tout, ts, torch.tensor(u), allow_unused=True)
        for i, (g, tg, x) in enumerate(zip(grads, tgrads, xs)):
            assert g is None or g.shape == x.shape
            _check_close(as_numpy(g, x.data), as_numpy(tg, x.data), spec.rtol, f"gradient of input {i}")

    @requires_torch
    @over(lambda s: s.torch and s.grad and s.gradgrad)
    @once
    async def test_second_derivatives_match_torch(spec: OpSpec) -> None:
        xs = spec.tensors()
        ts = [torch.tensor(x.data, requires_grad=True) for x in xs]
        out, tout = spec.run(*xs), spec.fn(torch, *ts)
        (u,) = _seed_like(spec.name, [out.data], 2)
        vs = _seed_like(spec.name, [x.data for x in xs], 3)
        ug, tu = ag.tensor(u, requires_grad=True), torch.tensor(u, requires_grad=True)

        grads = await ag.grad(out, xs, ug, create_graph=True, allow_unused=True)
        s = sum((g * v).sum() for g, v in zip(grads, vs) if g is not None)
        second = await ag.grad(s, [*xs, ug], allow_unused=True)

        tgrads = torch.autograd.grad(tout, ts, tu, create_graph=True, allow_unused=True)
        ts_ = sum((g * torch.tensor(v)).sum() for g, v in zip(tgrads, vs) if g is not None)
        # torch returns constant zeros (no graph) where a gradient does not depend on anything
        tsecond = (
            torch.autograd.grad(ts_, [*ts, tu], allow_unused=True)
            if isinstance(ts_, torch.Tensor) and ts_.requires_grad
            else [None] * (len(ts) + 1)
        )
        for i, (g, tg, x) in enumerate(zip(second, tsecond, [*xs, ug])):
            _check_close(as_numpy(g, x.data), as_numpy(tg, x.data), spec.rtol, f"second derivative {i}")

    @over(lambda s: s.float32 and s.grad)
    @once
    async def test_float32_stays_float32(spec: OpSpec) -> None:
        xs = spec.tensors(np.float32)
        out = spec.run(*xs)
        assert out.dtype == np.float32
        u = ag.ones_like(out)
        for g, x in zip(await ag.grad(out, xs, u, allow_unused=True), xs):
            assert g is None or (g.dtype == np.float32 and g.shape == x.shape)

    @over(lambda s: s.grad_fn is not None)
    def test_grad_fn_name(spec: OpSpec) -> None:
        out = spec.run(*spec.tensors())
        assert out.grad_fn.name() == spec.grad_fn
        if torch is not None and spec.torch:
            ts = [torch.tensor(a, requires_grad=True) for a in spec.arrays()]
            assert spec.fn(torch, *ts).grad_fn.name() == spec.grad_fn

    tests = [
        test_gradcheck,
        test_gradgradcheck,
        test_matches_torch,
        test_second_derivatives_match_torch,
        test_float32_stays_float32,
        test_grad_fn_name,
    ]
    return {t.__name__: t for t in tests}
