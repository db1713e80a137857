"""Test helpers: the torch oracle (optional), float64 input makers, a gather for any backend,
and small graph pieces several test modules use."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import numpy as np
import pytest

import aiograd as ag

try:
    import torch
except ImportError:  # pragma: no cover - the oracle is optional
    torch = None

requires_torch = pytest.mark.skipif(torch is None, reason="torch not installed (the oracle extra)")


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def to_torch(x: Any, requires_grad: bool = True) -> Any:
    """A torch leaf with the same data as an aiograd tensor or array."""
    data = x.data if hasattr(x, "data") and not isinstance(x, np.ndarray) else x
    return torch.tensor(np.asarray(data), requires_grad=requires_grad)


#: How many units in the last place two correct implementations of one function may differ by.
#: Which kernel computes exp, tanh, erf or a sum depends on the CPU and the build (AVX-512, AVX2,
#: or none: torch picks one at run time, numpy too): torch's vectorised kernels (SLEEF) are
#: within 1 to 3.5 ulp of the exact result, numpy's SIMD and SVML ones within about 4, so two
#: correct answers can be their sum apart, and neither side's last bit is a promise. A wrong
#: formula, a lost term or a float32 intermediate in a float64 result is much further off.
ULPS = 8


def assert_matches_torch(actual: Any, expected: Any, what: str = "", *, ulps: float = ULPS,
                         zero_signs: Any = True, scale: float = 0.0) -> None:
    """``actual`` (aiograd's) equals ``expected`` (torch's or numpy's) up to what a kernel may
    choose, and exactly in what is semantics: the same dtype and shape, NaNs at the same
    positions, infinities equal (signs included), finite values within ``ulps`` units in the
    last place of the larger magnitude, and the same sign where both are zero (a signed zero is
    semantics, not rounding).

    - Below the smallest normal number the unit is that number: whether a subnormal result is
      kept, flushed to zero or computed with subnormal operands that lost their bits is the
      kernel's choice (torch's vectorised log1p flushes, its scalar loop does not), sign
      included. Above it, values of opposite signs are always many units apart.
    - ``scale``: a result computed by cancellation (a gradient that is 0 in exact arithmetic,
      ``g - softmax * sum(g)``) is off by units of its terms, not of itself; ``scale`` is the
      magnitude of those terms, and the unit is never below its ulp.
    - ``zero_signs``: False where the sign of a zero is a rounding (an underflowed product) or
      no fixed choice, or a boolean array saying where it counts.
    - ``ulps=0`` asks for equality, signs of zeros included: where both sides are correctly
      rounded IEEE arithmetic."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    where = f"{what}: " if what else ""
    assert actual.dtype == expected.dtype, f"{where}dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{where}shape {actual.shape} != {expected.shape}"
    if np.issubdtype(expected.dtype, np.complexfloating):
        for part in ("real", "imag"):
            assert_matches_torch(getattr(actual, part), getattr(expected, part), f"{where}{part}",
                                 ulps=ulps, zero_signs=zero_signs, scale=scale)
        return
    if not np.issubdtype(expected.dtype, np.floating):  # integers and booleans are exact
        np.testing.assert_array_equal(actual, expected, err_msg=what)
        return
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(actual), nan, err_msg=f"{where}NaNs")
    inf = np.isinf(actual) | np.isinf(expected)
    np.testing.assert_array_equal(actual[inf], expected[inf], err_msg=f"{where}infinities")
    finite = ~nan & ~inf
    a, e = actual[finite], expected[finite]
    magnitude = np.maximum(np.maximum(np.abs(a), np.abs(e)), np.asarray(scale, e.dtype))
    unit = np.maximum(np.spacing(magnitude), np.finfo(e.dtype).tiny).astype(np.float64)
    with np.errstate(all="ignore"):  # (an overflow is inf: apart)
        apart = np.abs(a.astype(np.float64) - e.astype(np.float64)) / unit
    if ulps == 0:
        apart = np.where(a == e, 0.0, np.maximum(apart, 1.0))  # (two subnormals apart are apart)
    if not (apart <= ulps).all():
        i = int(np.argmax(apart))
        raise AssertionError(
            f"{where}{int((apart > ulps).sum())} of {apart.size} finite values more than {ulps} ulp "
            f"apart; the furthest, {apart[i]:.3g} ulp: {a[i]!r} (actual) != {e[i]!r} (expected)\n"
            f"actual: {actual!r}\nexpected: {expected!r}")
    zeros = (actual == 0) & (expected == 0) & np.broadcast_to(np.asarray(zero_signs, bool), actual.shape)
    np.testing.assert_array_equal(np.signbit(actual[zeros]), np.signbit(expected[zeros]),
                                  err_msg=f"{where}signs of zeros")


async def gather(*awaitables: Any, return_exceptions: bool = False) -> list[Any]:
    """``asyncio.gather`` for any backend (asyncio, uvloop, trio): the awaitables run
    concurrently in an anyio task group, started in order; the results come back in order. An
    error cancels the others and is raised (in an ExceptionGroup), unless ``return_exceptions``."""
    import anyio

    results: list[Any] = [None] * len(awaitables)

    async def run(i: int, awaitable: Any) -> None:
        try:
            results[i] = await awaitable
        except Exception as exc:
            if not return_exceptions:
                raise
            results[i] = exc

    async with anyio.create_task_group() as group:
        for i, awaitable in enumerate(awaitables):
            group.start_soon(run, i, awaitable)
    return results


class Fails(ag.Function):
    """A custom Function whose backward raises ``ValueError("boom in backward")``."""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return x * 2

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        raise ValueError("boom in backward")


class Heavy(ag.Node):
    """An identity node that claims to be expensive: the engine offloads it."""

    def cost(self, grads: Any) -> float:
        return 1e12

    def apply(self, grads: Any) -> Any:
        return [grads[0]] * len(self.next_edges)


class Nested(ag.Function):
    """A custom Function whose backward runs a backward of its own (reentrant): the gradient of
    ``x * 1`` times d(sum(x * x))/dx, so ``x.grad`` is ``2 * x``."""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return x * 1

    @staticmethod
    async def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved_tensors
        with ag.enable_grad():
            y = x.detach().requires_grad_()
            (g,) = await ag.grad((y * y).sum(), y)
        return grad * g


class Blocks(ag.Function):
    """A custom Function whose async backward waits until cancelled: it sets ``Blocks.started``
    (an asyncio.Event the test provides) when it begins, and appends to ``Blocks.cancelled``
    when it is cancelled."""

    started: Any
    cancelled: list[bool] = []

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return x * 1

    @staticmethod
    async def backward(ctx: Any, grad: Any) -> Any:
        Blocks.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            Blocks.cancelled.append(True)
            raise
        return grad


def entering(name: str, factory: Callable[..., AbstractAsyncContextManager[Any]]) -> Callable[[Any], Any]:
    """Decorates an async test that takes ``name``: the test runs inside ``async with
    factory(...) as value``, on its own loop, and gets ``value`` as ``name``. ``factory``'s
    parameters are fixtures, which pytest provides. (An async fixture would be set up on
    another loop than the test's: aiograd's pytest plugin makes the test's loop when it runs it.)
    Decorators stack: ``@entering("url", service)`` over ``@entering("session", session)``."""
    made_of = list(inspect.signature(factory).parameters)

    def decorate(test: Any) -> Any:
        signature = inspect.signature(test)
        wanted = [p for n, p in signature.parameters.items() if n != name]
        extra = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY)
                 for n in made_of if n not in signature.parameters]

        @functools.wraps(test)
        async def run(*args: Any, **kwargs: Any) -> Any:
            inputs = {n: kwargs[n] for n in made_of}
            for parameter in extra:
                del kwargs[parameter.name]
            async with factory(**inputs) as value:
                return await test(*args, **kwargs, **{name: value})

        run.__signature__ = signature.replace(parameters=wanted + extra)  # type: ignore[attr-defined]
        return run

    return decorate


def raised(fn: Callable[[], Any]) -> BaseException:
    """The exception ``fn()`` raises (the oracle's, whatever its type); AssertionError if none."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the oracle's exception, whatever it is
        return e
    raise AssertionError(f"{fn} raised nothing")
