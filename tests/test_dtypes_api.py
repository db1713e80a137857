"""torch's dtype names (``aiograd.long``, ``aiograd.float``...), ``finfo``/``iinfo``, the cast
methods (``.half()``, ``.int()``, ``.type()``...), ``new_*`` and ``element_size``, against torch."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from op_factory import OpSpec, make_op_tests

import aiograd as ag

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.aiograd(backends=["asyncio"])

COARSE = 0.25  # (a step float16 resolves: the inputs below are multiples of 1/8)
eighths = lambda r: [r.integers(-16, 16, (2, 3)) / 8]  # noqa: E731 - exact in float16

#: The casts registered as ops (``tests/test_op_registry.py`` reads this table).
CAST_SPECS = [
    OpSpec("half", lambda lib, x: x.half().to(x.dtype) * x, eighths, eps=COARSE, rtol=1e-6, gradgrad=False,
           why="second derivatives through a float16 round trip agree only to float16's rounding"),
    OpSpec("type", lambda lib, x: x.type(lib.float32), ((2, 3),), eps=COARSE, rtol=1e-6),
    *(
        OpSpec(name, (lambda n: lambda lib, x: getattr(x * 3, n)())(name), ((2, 3),), grad=False, why="an integer result")
        for name in ("int", "short", "char", "byte")
    ),
]
globals().update(make_op_tests(CAST_SPECS))

NAMES = ["long", "int", "short", "bool", "float", "double", "half", "int8", "int16", "int32", "int64", "uint8",
         "float16", "float32", "float64"]


@pytest.mark.parametrize("name", NAMES)
def test_dtype_names_are_torchs(name: str) -> None:
    assert str(getattr(torch, name)) == f"torch.{getattr(ag, name)}".replace("bool_", "bool")
    assert ag.tensor([1, 0], dtype=getattr(ag, name)).dtype is getattr(ag, name)


def test_aliases_are_the_same_objects() -> None:
    assert ag.bool is ag.bool_ and ag.long is ag.int64 and ag.int is ag.int32 and ag.float is ag.float32
    assert ag.short is ag.int16 and ag.double is ag.float64 and ag.half is ag.float16
    assert not hasattr(ag, "bfloat16")  # (numpy has none; see aiograd/_base/_dtypes.py)


FLOATS = ["float16", "float32", "float64", "complex64", "complex128"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]


@pytest.mark.parametrize("name", FLOATS)
def test_finfo(name: str) -> None:
    ours, theirs = ag.finfo(np.dtype(name)), torch.finfo(getattr(torch, name))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(ours, attr) == getattr(theirs, attr), attr
        assert type(getattr(ours, attr)) is type(getattr(theirs, attr)), attr
    assert repr(ours) == repr(theirs)
    assert ours == ag.finfo(np.dtype(name)) and ours != ag.finfo(ag.float16 if name != "float16" else ag.float64)


@pytest.mark.real_default_dtype
def test_finfo_of_the_default_dtype() -> None:
    assert ag.finfo() == ag.finfo(ag.float32) and repr(ag.finfo()) == repr(torch.finfo())
    ag.set_default_dtype(ag.float64)
    try:
        assert ag.finfo().dtype == "float64"
    finally:
        ag.set_default_dtype(ag.float32)


@pytest.mark.parametrize("name", INTS)
def test_iinfo(name: str) -> None:
    ours, theirs = ag.iinfo(np.dtype(name)), torch.iinfo(getattr(torch, name))
    for attr in ("bits", "max", "min", "dtype"):
        assert getattr(ours, attr) == getattr(theirs, attr) and type(getattr(ours, attr)) is type(getattr(theirs, attr))
    assert repr(ours) == repr(theirs)


def test_python_types_name_dtypes_as_in_torch() -> None:
    assert ag.finfo(float).dtype == torch.finfo(float).dtype == "float64"
    assert ag.iinfo(int).dtype == torch.iinfo(int).dtype == "int64"
    assert ag.finfo(np.float32).dtype == "float32"


@pytest.mark.parametrize(
    ("call", "torch_call"),
    [
        (lambda: ag.finfo(ag.int64), lambda: torch.finfo(torch.int64)),
        (lambda: ag.finfo(ag.bool), lambda: torch.finfo(torch.bool)),
        (lambda: ag.iinfo(ag.float32), lambda: torch.iinfo(torch.float32)),
        (lambda: ag.iinfo(ag.bool), lambda: torch.iinfo(torch.bool)),
        (lambda: ag.iinfo(), lambda: torch.iinfo()),
    ],
)
def test_info_errors_are_torchs(call, torch_call) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TypeError) as theirs:
        torch_call()
    with pytest.raises(TypeError, match=f"^{_escaped(str(theirs.value).replace('torch', 'aiograd'))}$"):
        call()


def test_info_refuses_strings() -> None:
    with pytest.raises(TypeError, match=r"^finfo\(\): argument 'type' \(position 1\) must be dtype, not str$"):
        ag.finfo("float32")  # type: ignore[arg-type]


def _escaped(message: str) -> str:
    import re

    return re.escape(message)


# ------------------------------------------------------------------------------ casts
CASTS = ["long", "int", "short", "char", "byte", "bool", "half", "float", "double"]


@pytest.mark.parametrize("method", CASTS)
def test_cast_methods_match_torch(method: str) -> None:
    values = [-2.5, 0.0, 1.5, 3.0]
    ours = getattr(ag.tensor(values, requires_grad=True), method)()
    theirs = getattr(torch.tensor(values, dtype=torch.float64, requires_grad=True), method)()
    assert str(theirs.dtype) == f"torch.{ours.dtype}".replace("bool_", "bool")
    assert ours.tolist() == theirs.tolist()
    assert ours.requires_grad == theirs.requires_grad
    assert (ours.grad_fn is None) == (theirs.grad_fn is None)
    assert ours.type() == theirs.type().replace("torch", "aiograd")
    assert ours.element_size() == theirs.element_size()


async def test_half_gradient_comes_back_in_the_input_dtype() -> None:
    x = ag.tensor([1.0, 2.0], dtype=ag.float64, requires_grad=True)
    await (x.half() * 3).sum().backward()
    assert x.grad is not None and x.grad.dtype == ag.float64 and x.grad.tolist() == [3.0, 3.0]
    assert x.half().grad_fn is not None and x.half().grad_fn.name() == "ToCopyBackward0"


def test_type() -> None:
    x = ag.ones(2, dtype=ag.float32, requires_grad=True)
    assert x.type() == "aiograd.FloatTensor"
    assert x.type(ag.float32) is x and x.type("aiograd.FloatTensor") is x and x.type("torch.FloatTensor") is x
    y = x.type("torch.DoubleTensor")
    assert y.dtype == ag.float64 and y.grad_fn is not None and y.grad_fn.name() == "ToCopyBackward0"
    assert x.type(np.int64).dtype == ag.int64 and x.type("aiograd.BoolTensor").dtype == ag.bool
    sim = x.to("sim:0")
    assert sim.type() == "aiograd.sim.FloatTensor"
    assert x.type("aiograd.sim.DoubleTensor").device == ag.device("sim:0")


@pytest.mark.parametrize(("arg", "error"), [("torch.FooTensor", ValueError), ("float", ValueError), (float, ValueError), (3, TypeError)])
def test_type_errors_are_torchs(arg: object, error: type) -> None:
    with pytest.raises(error) as theirs:
        torch.ones(2).type(arg)
    with pytest.raises(error, match=f"^{_escaped(str(theirs.value))}$"):
        ag.ones(2).type(arg)


# ------------------------------------------------------------------------------ new_*
def _same(ours: ag.Tensor, theirs: object) -> None:
    assert str(theirs.dtype) == f"torch.{ours.dtype}".replace("bool_", "bool")  # type: ignore[attr-defined]
    assert ours.shape == tuple(theirs.shape)  # type: ignore[attr-defined]
    assert ours.requires_grad == theirs.requires_grad  # type: ignore[attr-defined]
    if ours.numel():
        assert ours.tolist() == theirs.tolist()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "make",
    [
        lambda lib, t: t.new_zeros(2, 3),
        lambda lib, t: t.new_zeros((2, 3)),
        lambda lib, t: t.new_ones([3], dtype=lib.float64, requires_grad=True),
        lambda lib, t: t.new_full((2,), 3.5),
        lambda lib, t: t.new_full((2,), 7, dtype=lib.float32),
        lambda lib, t: t.new_tensor([1.5, 2.5]),
        lambda lib, t: t.new_tensor([[1, 2]], dtype=lib.float64, requires_grad=True),
        lambda lib, t: t.new_empty(2, 0),
        lambda lib, t: t.new_empty((4,)).fill_(0),
    ],
)
@pytest.mark.parametrize("source_dtype", ["int64", "float32"])
def test_new_factories_match_torch(make, source_dtype: str) -> None:  # type: ignore[no-untyped-def]
    ours = make(ag, ag.tensor([1, 2], dtype=np.dtype(source_dtype)))
    theirs = make(torch, torch.tensor([1, 2], dtype=getattr(torch, source_dtype)))
    _same(ours, theirs)
    assert ours.is_leaf and ours.grad_fn is None


def test_new_factories_follow_the_source_device() -> None:
    x = ag.ones(2, device="sim:0")
    assert x.new_zeros(3).device == ag.device("sim:0") and x.new_tensor([1.0]).device == ag.device("sim:0")
    assert x.new_ones(3, device="cpu").device == ag.device("cpu")


def test_new_tensor_of_a_tensor_copies_it_detached_with_torchs_warning() -> None:
    src = ag.ones(2, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = src.new_tensor(src)
    with warnings.catch_warnings(record=True) as torch_caught:
        warnings.simplefilter("always")
        torch.ones(2, requires_grad=True).new_tensor(torch.ones(2))
    assert [str(w.message) for w in caught] == [str(w.message) for w in torch_caught]
    assert caught[0].category is UserWarning
    assert not out.requires_grad and out.grad_fn is None
    out.data[0] = 5
    assert src.tolist() == [1.0, 1.0]


def test_new_factories_refuse_integer_requires_grad() -> None:
    with pytest.raises(RuntimeError, match="floating point"):
        ag.tensor([1, 2]).new_zeros(2, requires_grad=True)


def test_from_numpy_shares_memory_and_keeps_the_dtype_as_torch() -> None:
    a = np.arange(3.0)
    t = ag.from_numpy(a)
    assert t.dtype == np.float64 and not t.requires_grad  # (not the default float32)
    a[0] = 9.0
    t.data[1] = 7.0
    assert t.tolist() == [9.0, 7.0, 2.0] and a.tolist() == [9.0, 7.0, 2.0]
    assert ag.from_numpy(np.array([True])).dtype == np.bool_
    for bad in (np.array(["a"]), np.array([1, 2], dtype=object), [1, 2]):
        with pytest.raises(TypeError) as theirs:
            torch.from_numpy(bad)
        with pytest.raises(TypeError, match=f"^{re.escape(str(theirs.value))}$"):
            ag.from_numpy(bad)


def test_dlpack_shares_memory_both_ways_and_refuses_a_tensor_that_requires_grad() -> None:
    t = ag.tensor([1.0, 2.0], dtype=ag.float32)
    theirs = torch.from_dlpack(t)
    theirs[0] = 5.0
    assert t.tolist() == [5.0, 2.0]
    source = torch.arange(3.0)
    ours = ag.from_dlpack(source)
    source[1] = 7.0
    assert ours.tolist() == [0.0, 7.0, 2.0] and ours.dtype == np.float32
    assert ag.from_dlpack(np.arange(2)).dtype == np.int64
    with pytest.raises(BufferError, match="^Can't export tensors that require gradient, use tensor.detach\\(\\)$"):
        torch.from_dlpack(ag.tensor([1.0], requires_grad=True))
    with pytest.raises(TypeError, match="expected an object with __dlpack__"):
        ag.from_dlpack([1.0])
