"""``nn.functional.pad`` (constant, reflect, replicate, circular) and ``nn.functional.one_hot``
(aiograd/_ops/padding.py).

The per-op tests come from the ``OpSpec`` table and tests/op_factory.py: every mode is
differentiable to second order and matches torch's values and derivatives, with torch's pad
tuple order (last dim first) and negative widths (crops). Then torch's error messages, and
one_hot's int64 results.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, make_op_tests

import aiograd as ag
import aiograd.nn.functional as F

pytestmark = [pytest.mark.filterwarnings("error"), pytest.mark.aiograd(backends=["asyncio"])]  # op math: one loop is enough

X3 = ((2, 3, 5),)
X4 = ((2, 3, 4, 5),)
X5 = ((1, 2, 3, 4, 5),)


def _pad(*widths: int, mode: str = "constant", **kw: Any) -> Any:
    return lambda lib, x: lib.nn.functional.pad(x, widths, mode=mode, **kw)


SPECS = [
    # ---------------------------------------------------------------- constant
    OpSpec("pad", _pad(1, 2), X3, grad_fn="ConstantPadNdBackward0"),
    OpSpec("pad_value", lambda lib, x: lib.nn.functional.pad(x, [0, 1, 2, 0], "constant", 1.5), X3),
    OpSpec("pad_crop", _pad(-1, 2, 1, -2), X3),
    OpSpec("pad_all_dims", _pad(1, 0, 0, 2, 1, 1), X3),
    OpSpec("pad_1d", _pad(2, 1), ((4,),)),
    OpSpec("pad_squared", lambda lib, x: lib.nn.functional.pad(x ** 2, (1, 1, 1, 1), value=-1.0) ** 2, X3),
    # ---------------------------------------------------------------- reflect
    OpSpec("pad_reflect", _pad(2, 1, mode="reflect"), X3, grad_fn="ReflectionPad1DBackward0"),
    OpSpec("pad_reflect_2d", _pad(1, 3, 2, 1, mode="reflect"), X4, grad_fn="ReflectionPad2DBackward0"),
    OpSpec("pad_reflect_3d", _pad(1, 1, 2, 0, 1, 2, mode="reflect"), X5, grad_fn="ReflectionPad3DBackward0"),
    OpSpec("pad_reflect_crop", _pad(-1, 3, mode="reflect"), ((3, 5),)),
    OpSpec("pad_reflect_squared", lambda lib, x: lib.nn.functional.pad(x, (3, 2), mode="reflect") ** 2, X3),
    # ---------------------------------------------------------------- replicate
    OpSpec("pad_replicate", _pad(3, 7, mode="replicate"), X3, grad_fn="ReplicationPad1DBackward0"),
    OpSpec("pad_replicate_2d", _pad(2, 0, 1, 4, mode="replicate"), ((3, 4, 5),), grad_fn="ReplicationPad2DBackward0"),
    OpSpec("pad_replicate_3d", _pad(1, 1, 1, 1, 1, 1, mode="replicate"), X5, grad_fn="ReplicationPad3DBackward0"),
    OpSpec("pad_replicate_crop", _pad(2, -2, mode="replicate"), X3),
    OpSpec("pad_replicate_squared", lambda lib, x: lib.nn.functional.pad(x, (2, 2), mode="replicate") ** 2, X3),
    # ---------------------------------------------------------------- circular
    # (torch's node is its CopySlices, from the slices its composite writes: no grad_fn row)
    OpSpec("pad_circular", _pad(2, 5, mode="circular"), X3),
    OpSpec("pad_circular_2d", _pad(1, 1, 3, 2, mode="circular"), X4),
    OpSpec("pad_circular_3d", _pad(1, 0, 0, 2, 1, 1, mode="circular"), X5),
    OpSpec("pad_circular_crop", _pad(-2, 3, 1, -1, mode="circular"), ((3, 4, 5),)),
    OpSpec("pad_circular_squared", lambda lib, x: lib.nn.functional.pad(x, (1, 2), mode="circular") ** 2, X3),
    # ---------------------------------------------------------------- one_hot
    OpSpec("one_hot", lambda lib, x: lib.nn.functional.one_hot((x.abs() * 2).long()), X3, grad=False,
           why="an integer result"),
    OpSpec("one_hot_classes", lambda lib, x: lib.nn.functional.one_hot((x.abs() * 2).long(), num_classes=7),
           ((4,),), grad=False, why="an integer result"),
]

globals().update(make_op_tests(SPECS))


# ================================================================================ errors
NON_CONSTANT = (
    "Supported combinations for non-constant padding:\n"
    "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
    "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
    "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
)

# (id, op taking (lib, F), exception, message); torch raises the same
ERRORS = [
    ("odd", lambda lib, F: F.pad(lib.zeros(3, 4, 5), (1,)), RuntimeError, "Padding length must be divisible by 2"),
    ("too_long", lambda lib, F: F.pad(lib.zeros(3, 4, 5), (1,) * 8), RuntimeError,
     "Padding length should be less than or equal to two times the input dimension but got padding length 8 "
     "and input of dimension 3"),
    ("0d", lambda lib, F: F.pad(lib.tensor(1.0), (1, 1)), RuntimeError,
     "Padding length should be less than or equal to two times the input dimension but got padding length 2 "
     "and input of dimension 0"),
    ("mode", lambda lib, F: F.pad(lib.zeros(3, 4, 5), (1, 1), mode="foo"), NotImplementedError,
     "Unrecognised padding mode foo"),
    ("crop_too_much", lambda lib, F: F.pad(lib.zeros(3, 4, 5), (-3, -3)), RuntimeError,
     "narrow(): length must be non-negative."),
    ("reflect_value", lambda lib, F: F.pad(lib.zeros(3, 4, 5), (1, 1), mode="reflect", value=1.0), RuntimeError,
     'Padding mode "reflect" doesn\'t take in value argument'),
    ("reflect_1d", lambda lib, F: F.pad(lib.zeros(5), (1, 1), mode="reflect"), NotImplementedError,
     f"Padding size 2 is not supported for 1D input tensor.\n{NON_CONSTANT}"),
    ("replicate_4_of_2d", lambda lib, F: F.pad(lib.zeros(3, 4), (1, 1, 1, 1), mode="replicate"), NotImplementedError,
     f"Padding size 4 is not supported for 2D input tensor.\n{NON_CONSTANT}"),
    ("circular_6_of_3d", lambda lib, F: F.pad(lib.zeros(3, 4, 5), (1,) * 6, mode="circular"), NotImplementedError,
     f"Padding size 6 is not supported for 3D input tensor.\n{NON_CONSTANT}"),
    ("reflect_too_wide", lambda lib, F: F.pad(lib.zeros(3, 4, 5), (5, 1), mode="reflect"), RuntimeError,
     "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (5, 1) "
     "at dimension 2 of input [3, 4, 5]"),
    ("reflect_too_high", lambda lib, F: F.pad(lib.zeros(2, 3, 4, 5), (1, 1, 0, 4), mode="reflect"), RuntimeError,
     "Argument #6: Padding size should be less than the corresponding input dimension, but got: padding (0, 4) "
     "at dimension 2 of input [2, 3, 4, 5]"),
    ("reflect_too_deep", lambda lib, F: F.pad(lib.zeros(1, 2, 3, 4, 5), (1, 1, 1, 1, 3, 1), mode="reflect"),
     RuntimeError, "Argument #8: Padding size should be less than the corresponding input dimension, but got: "
     "padding (3, 1) at dimension 2 of input [1, 2, 3, 4, 5]"),
    ("replicate_empty", lambda lib, F: F.pad(lib.zeros(3, 4, 0), (1, 1), mode="replicate"), RuntimeError,
     "Expected 2D or 3D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, "
     "but got: [3, 4, 0]"),
    ("reflect_too_small", lambda lib, F: F.pad(lib.zeros(3, 4, 5), (-5, -1), mode="reflect"), RuntimeError,
     "input (W: 5) is too small. Calculated output W: -1"),
    ("replicate_too_small", lambda lib, F: F.pad(lib.zeros(3, 4, 5), (-5, 0), mode="replicate"), RuntimeError,
     "input (W: 5) is too small. Calculated output W: 0"),
    ("circular_wraps_twice", lambda lib, F: F.pad(lib.zeros(3, 4, 5), (6, 1), mode="circular"), RuntimeError,
     "Padding value causes wrapping around more than once."),
    ("circular_negative", lambda lib, F: F.pad(lib.zeros(3, 4, 5), (-6, -1), mode="circular"), RuntimeError,
     "Negative padding value is resulting in an empty dimension"),
    ("one_hot_dtype", lambda lib, F: F.one_hot(lib.tensor([0.0, 1.0])), RuntimeError,
     "one_hot is only applicable to index tensor of type LongTensor."),
    ("one_hot_int32", lambda lib, F: F.one_hot(lib.tensor(np.array([0, 1], dtype=np.int32))), RuntimeError,
     "one_hot is only applicable to index tensor of type LongTensor."),
    ("one_hot_negative", lambda lib, F: F.one_hot(lib.tensor([0, -1]), 3), RuntimeError,
     "Class values must be non-negative."),
    ("one_hot_too_large", lambda lib, F: F.one_hot(lib.tensor([0, 2, 1]), 2), RuntimeError,
     "Class values must be smaller than num_classes."),
    ("one_hot_empty", lambda lib, F: F.one_hot(lib.tensor(np.zeros(0, dtype=np.int64))), RuntimeError,
     "Can not infer total number of classes from empty tensor."),
]


@requires_torch
@pytest.mark.parametrize(("op", "exc", "message"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_error_messages_are_torchs(op: Any, exc: Any, message: str) -> None:
    for lib, functional in ((ag, F), (torch, torch.nn.functional)):
        with pytest.raises(exc, match=f"^{re.escape(message)}$"):
            op(lib, functional)


# ================================================================================ values
@requires_torch
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("widths", [(0, 0), (1, 2), (2, -1), (-1, 2), (-2, -2), (1, 1, 2, 0), (-1, 2, -2, 1)])
async def test_every_mode_and_width_matches_torch(mode: str, widths: tuple[int, ...]) -> None:
    a = np.random.default_rng(5).standard_normal((2, 3, 5))
    x, tx = ag.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    out, tout = F.pad(x, widths, mode=mode), torch.nn.functional.pad(tx, widths, mode=mode)
    np.testing.assert_array_equal(out.data, tout.detach().numpy())
    u = np.random.default_rng(6).standard_normal(out.shape)
    (g,) = await ag.grad(out, [x], ag.tensor(u))
    (tg,) = torch.autograd.grad(tout, [tx], torch.tensor(u))
    np.testing.assert_allclose(g.data, tg.numpy(), rtol=1e-14)


@requires_torch
def test_circular_crops_to_nothing_as_torch() -> None:
    for widths in ((-3, -2), (-6, 1), (-5, 0)):
        out = F.pad(ag.zeros(3, 4, 5), widths, mode="circular")
        assert out.shape == tuple(torch.nn.functional.pad(torch.zeros(3, 4, 5), widths, mode="circular").shape)


@requires_torch
def test_integer_and_float32_inputs_keep_their_dtype() -> None:
    for a in (np.arange(24).reshape(2, 3, 4), np.arange(24, dtype=np.float32).reshape(2, 3, 4)):
        for mode in ("constant", "reflect", "replicate", "circular"):
            out = F.pad(ag.tensor(a), (1, 2), mode=mode)
            tout = torch.nn.functional.pad(torch.tensor(a), (1, 2), mode=mode)
            assert out.dtype == a.dtype
            np.testing.assert_array_equal(out.data, tout.numpy())


@requires_torch
def test_one_hot_is_int64_as_torchs() -> None:
    for args in (([0, 2, 1],), ([0, 2, 1], 5), (np.array(2),), (np.array(2), 4), ([[0, 1], [3, 0]],),
                 (np.zeros(0, dtype=np.int64), 3)):
        data = np.asarray(args[0], dtype=np.int64)
        out = F.one_hot(ag.tensor(data), *args[1:])
        tout = torch.nn.functional.one_hot(torch.tensor(data), *args[1:])
        assert out.dtype == np.int64 and out.shape == tuple(tout.shape)
        np.testing.assert_array_equal(out.data, tout.numpy())


# ================================================================================ saved tensors
@requires_torch
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate"])
async def test_saved_input_behaves_as_torchs(mode: str) -> None:
    """reflect and replicate save their input, as torch's nodes do: an in-place change of it
    before the backward raises torch's error; constant saves nothing."""
    outcomes = []
    for lib, functional in ((ag, F), (torch, torch.nn.functional)):
        x = lib.tensor(np.ones((2, 3, 4)), requires_grad=True)
        y = x.clone()
        out = functional.pad(y, (1, 2), mode=mode)
        y.add_(1.0)
        try:
            if lib is ag:
                await ag.grad(out.sum(), [x])
            else:
                torch.autograd.grad(out.sum(), [x])
            outcomes.append("ok")
        except RuntimeError as e:
            outcomes.append(str(e).replace("aiograd.", "torch.").split(" Hint")[0])
    assert outcomes[0] == outcomes[1]
    assert (outcomes[0] == "ok") == (mode == "constant")
