"""``repr(t)`` and ``str(t)`` are torch's, character for character, over a generated set of
tensors: every dtype, 0-d to 4-d, empty shapes, values from 1e-10 to 1e12, negatives, nan, inf,
-0.0, whole-valued floats, tensors long enough to summarise and rows wide enough to wrap, the
grad suffixes, a float64 default dtype, and each of ``set_printoptions``' knobs.

The one spelling apart: aiograd's dtypes print without torch's ``torch.`` (``dtype=float64``). So
the expected text is torch's with its dtype suffix spelled aiograd's way *before* torch lays the
suffixes out (its ``_add_suffixes`` is wrapped): a suffix moves to a line of its own by the length
of the text aiograd prints, not of torch's.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import aiograd as ag

torch = pytest.importorskip("torch")
import torch._tensor_str as torch_tensor_str  # noqa: E402

pytestmark = pytest.mark.real_default_dtype  # float32, torch's default, unless a test sets it

_TORCH_DTYPES = {
    np.dtype(np.float16): torch.float16, np.dtype(np.float32): torch.float32,
    np.dtype(np.float64): torch.float64,
}


@pytest.fixture(autouse=True)
def _torch_alike(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """torch with aiograd's default dtype and dtype spelling; both libraries' print options back
    to their defaults after the test."""
    original = torch_tensor_str._add_suffixes

    def add_suffixes(tensor_str: str, suffixes: list[str], *args: Any, **kwargs: Any) -> str:
        suffixes = [s.replace("dtype=torch.", "dtype=") for s in suffixes]
        return original(tensor_str, suffixes, *args, **kwargs)

    monkeypatch.setattr(torch_tensor_str, "_add_suffixes", add_suffixes)
    torch.set_default_dtype(_TORCH_DTYPES[np.dtype(ag.get_default_dtype())])
    try:
        yield
    finally:
        torch.set_default_dtype(torch.float32)
        torch.set_printoptions(profile="default")
        ag.set_printoptions(profile="default")


def _both(array: np.ndarray) -> tuple[Any, Any]:
    return ag.tensor(array), torch.from_numpy(np.array(array, copy=True))


def _assert_same(ours: Any, theirs: Any) -> None:
    assert repr(ours) == repr(theirs)
    assert str(ours) == str(theirs) == repr(ours)


# ------------------------------------------------------------------------------ the generated set
_RNG = np.random.default_rng(20240611)

_FLOAT_VALUES: dict[str, Callable[[int], np.ndarray]] = {
    "unit": lambda n: _RNG.uniform(0.0, 1.0, n),
    "signed": lambda n: _RNG.normal(0.0, 3.0, n),
    "whole": lambda n: _RNG.integers(-50, 50, n).astype(np.float64),
    "whole_big": lambda n: _RNG.integers(-(10**9), 10**9, n).astype(np.float64),
    "span": lambda n: 10.0 ** _RNG.uniform(-10.0, 12.0, n) * _RNG.choice([-1.0, 1.0], n),
    "tiny": lambda n: _RNG.uniform(1e-7, 1e-5, n),
    "decade": lambda n: _RNG.uniform(1.0, 999.0, n),  # fixed point: the ratio stays under 1000
    "specials": lambda n: _RNG.choice([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5, -2.25, 7.0], n),
    "whole_specials": lambda n: _RNG.choice([np.nan, np.inf, -0.0, 0.0, 1.0, -3.0, 100.0], n),
    "zeros": lambda n: np.zeros(n),
}
_INT_VALUES: dict[str, Callable[[int], np.ndarray]] = {
    "small": lambda n: _RNG.integers(-9, 10, n),
    "wide": lambda n: _RNG.integers(-(10**6), 10**6, n),
}

_SHAPES = [(), (0,), (0, 3), (2, 0, 4), (1,), (5,), (3, 4), (2, 3, 4), (2, 1, 3, 2), (3, 17), (1001,), (40, 30), (11, 10, 10)]
_FLOAT_DTYPES = [np.float32, np.float64, np.float16]
_INT_DTYPES = [np.int64, np.int32, np.uint8]


def _values(dtype: Any, family: str, shape: tuple[int, ...]) -> np.ndarray:
    n = int(np.prod(shape))
    if dtype is np.bool_:
        return (_RNG.random(n) < 0.5).reshape(shape)
    if np.dtype(dtype).kind == "f":
        with np.errstate(over="ignore"):  # float16 overflows the largest to inf, as torch's would
            return _FLOAT_VALUES[family](n).astype(dtype).reshape(shape)
    raw = _INT_VALUES[family](n)
    if dtype is np.uint8:
        raw = np.abs(raw) % 256
    return raw.astype(dtype).reshape(shape)


def _cases() -> list[Any]:
    cases = []
    for dtype, family, shape in itertools.chain(
        itertools.product(_FLOAT_DTYPES, _FLOAT_VALUES, _SHAPES),
        itertools.product(_INT_DTYPES, _INT_VALUES, _SHAPES),
        itertools.product([np.bool_], ["bits"], _SHAPES),
    ):
        name = f"{np.dtype(dtype).name}-{family}-{'x'.join(map(str, shape)) or 'scalar'}"
        cases.append(pytest.param(_values(dtype, family, shape), id=name))
    return cases


_CASES = _cases()
#: A lighter set for the option variants: the float families over a few shapes.
_OPTION_CASES = [c for c in _CASES if c.id.startswith(("float32", "float64")) and c.id.rsplit("-", 1)[1] in ("scalar", "5", "3x17", "2x3x4", "1001", "40x30")]


@pytest.mark.parametrize("array", _CASES)
def test_repr_is_torchs(array: np.ndarray) -> None:
    _assert_same(*_both(array))


@pytest.mark.parametrize("array", _OPTION_CASES)
@pytest.mark.parametrize(
    "options",
    [
        {"precision": 2},
        {"precision": 6},
        {"sci_mode": True},
        {"sci_mode": False},
        {"profile": "full"},
        {"profile": "short"},
        {"profile": "short", "precision": 3},
        {"linewidth": 40},
        {"linewidth": 120},
        {"threshold": 10, "edgeitems": 1},
        {"threshold": 4, "edgeitems": 0},
        {"edgeitems": 0},
    ],
    ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()),
)
def test_repr_under_print_options_is_torchs(array: np.ndarray, options: dict[str, Any]) -> None:
    ag.set_printoptions(**options)
    torch.set_printoptions(**options)
    _assert_same(*_both(array))


@pytest.mark.parametrize("array", [c for c in _CASES if c.id.rsplit("-", 1)[1] in ("scalar", "0", "0x3", "5", "3x17", "1001")])
def test_repr_under_a_float64_default_is_torchs(array: np.ndarray) -> None:
    ag.set_default_dtype(ag.float64)
    torch.set_default_dtype(torch.float64)
    _assert_same(*_both(array))


@pytest.mark.parametrize(
    "values",
    [
        [1.0, 2.0],
        [[1.5, -2.25e-6], [3.0, 4.0]],
        list(np.linspace(-3.0, 3.0, 30)),  # wraps: the suffix goes on a line of its own, or not
        list(np.linspace(-3.0, 3.0, 14)),
        list(np.linspace(-3.0, 3.0, 15)),
        list(np.linspace(-3.0, 3.0, 38)),  # float16's dtype suffix fits where torch's would not
        list(np.linspace(1.0, 2.0, 2000)),  # summarised
        2.5,
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_grad_suffixes_are_torchs(values: Any, dtype: str) -> None:
    ours = ag.tensor(values, dtype=getattr(ag, dtype), requires_grad=True)
    theirs = torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=True)
    _assert_same(ours, theirs)  # requires_grad=True
    _assert_same(ours * 2, theirs * 2)  # MulBackward0
    _assert_same(ours + 1, theirs + 1)  # AddBackward0
    _assert_same(ours.max(), theirs.max())  # MaxBackward1, 0-d
    _assert_same(-ours, -theirs)  # NegBackward0
    _assert_same(ours.exp(), theirs.exp())  # ExpBackward0


def test_complex_repr_is_torchs() -> None:
    for values in ([1 + 2j, -0.5j], [[1.25 - 1e-5j, 3j], [np.nan + 1j, -0.0 - 0.0j]], 2 - 1j, [1e10 + 1j]):
        for dtype in (np.complex64, np.complex128):
            _assert_same(*_both(np.array(values, dtype=dtype)))


def test_set_printoptions_is_torchs() -> None:
    """The signature, and a profile resetting the four numbers while keyword arguments win."""
    import inspect

    ours, theirs = (inspect.signature(f).parameters for f in (ag.set_printoptions, torch.set_printoptions))
    assert [(p.name, p.default) for p in ours.values()] == [(p.name, p.default) for p in theirs.values()]
    x = np.linspace(0.0, 1.0, 30)
    for lib in (ag, torch):
        lib.set_printoptions(precision=1, linewidth=30, sci_mode=True)
        lib.set_printoptions(profile="short", edgeitems=4)  # sci_mode back to automatic
    _assert_same(*_both(x))
    # an unknown profile is ignored, as torch's
    ag.set_printoptions(profile="nonesuch")
    torch.set_printoptions(profile="nonesuch")
    _assert_same(*_both(x))


def test_parameter_repr_is_torchs() -> None:
    for values in ([[0.5, -1.0], [2.0, 3.25]], [1e-6, 1.0]):
        ours = ag.nn.Parameter(ag.tensor(values))
        theirs = torch.nn.Parameter(torch.tensor(values))
        assert repr(ours) == repr(theirs) and str(ours) == str(theirs)


def test_str_is_repr_off_the_cpu() -> None:
    x = ag.tensor([1.0, 2.5], device="sim")
    assert str(x) == repr(x) == "tensor([1.0000, 2.5000], device='sim:0')"
