"""Non-numeric data is refused, with PyTorch's exception type and words: objects, strings,
None, ragged lists and object/string arrays at ``tensor()``, ``as_tensor()`` and ``Tensor()``,
and as an op's operand. Nothing makes an object or string tensor (which would cut the graph)."""

from __future__ import annotations

import decimal
import fractions
import operator
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag

pytestmark = requires_torch


class Opaque:
    pass


DATA: list[tuple[str, Any]] = [
    ("str", "a"),
    ("bytes", b"a"),
    ("list_of_str", ["a"]),
    ("str_then_number", ["a", 1.0]),
    ("number_then_str", [1.0, "a"]),
    ("nested_str", [[1.0], ["a"]]),
    ("str_in_second_row", [[1, 2], [3, "x"]]),
    ("list_of_bytes", [1.0, b"a"]),
    ("none", None),
    ("list_of_none", [None]),
    ("number_then_none", [1, None]),
    ("none_then_str", [None, "a"]),
    ("nested_none", [[1], [None]]),
    ("dict", {}),
    ("list_with_dict", [1, {}]),
    ("object", Opaque()),
    ("list_of_objects", [Opaque()]),
    ("decimal", [decimal.Decimal(1)]),
    ("fraction", [fractions.Fraction(1, 2)]),
    ("numpy_str_scalar", np.str_("a")),
    ("numpy_str_in_list", [1.0, np.str_("a")]),
    ("object_array", np.array([1, 2], dtype=object)),
    ("object_array_of_str", np.array(["a"], dtype=object)),
    ("str_array", np.array(["a"])),
    ("bytes_array", np.array([b"a"])),
    ("datetime_array", np.array([1], dtype="datetime64[s]")),
    ("list_of_object_arrays", [np.array([1, 2], dtype=object)]),
    ("ragged", [[1.0], [1.0, 2.0]]),
    ("ragged_short", [[1, 2], [3]]),
    ("number_then_list", [1.0, [1.0]]),
    ("list_then_number", [[1.0], 1.0]),
]


def _outcome(fn: Any) -> str:
    try:
        out = fn()
    except (TypeError, ValueError, RuntimeError) as e:
        return f"{type(e).__name__}: {e}"
    return f"ok {np.dtype(str(out.dtype).removeprefix('torch.'))}"


@pytest.mark.parametrize("name, data", DATA, ids=[d[0] for d in DATA])
def test_tensor_refuses_what_torch_refuses(name: str, data: Any) -> None:
    expected = _outcome(lambda: torch.tensor(data))
    assert not expected.startswith("ok")
    assert _outcome(lambda: ag.tensor(data)) == expected


@pytest.mark.parametrize("name, data", DATA, ids=[d[0] for d in DATA])
def test_as_tensor_refuses_what_torch_refuses(name: str, data: Any) -> None:
    assert _outcome(lambda: ag.as_tensor(data)) == _outcome(lambda: torch.as_tensor(data))


@pytest.mark.parametrize("name, data", [d for d in DATA if isinstance(d[1], np.ndarray)])
def test_from_array_refuses_what_torch_from_numpy_refuses(name: str, data: Any) -> None:
    # aiograd's as_tensor shares an array's memory, as torch.from_numpy does
    assert _outcome(lambda: ag.as_tensor(data)) == _outcome(lambda: torch.from_numpy(data))
    assert _outcome(lambda: ag.Tensor(data)) == _outcome(lambda: torch.from_numpy(data))


@pytest.mark.parametrize("dtype", [None, np.float32])
def test_numbers_still_make_tensors(dtype: Any) -> None:
    data = [[1, 2.5], [True, np.float64(3)]]
    x = ag.tensor(data, dtype=dtype)
    t = torch.tensor(data, dtype=None if dtype is None else torch.float32)
    assert x.dtype == (np.float64 if dtype is None else dtype)
    np.testing.assert_array_equal(x.data, t.numpy())


@pytest.mark.parametrize(
    "data", [["1.5"], [None], [1.0, "a"], [[1.0], [None]], [1.0, np.str_("a")], None, [1.0, {}]]
)
def test_a_dtype_does_not_parse_strings_or_turn_none_to_nan(data: Any) -> None:
    # numpy would make 1.5 and nan of these; torch refuses them (without inferring a dtype)
    expected = _outcome(lambda: torch.tensor(data, dtype=torch.float64))
    assert _outcome(lambda: ag.tensor(data, dtype=np.float64)) == expected
    assert not expected.startswith("ok")


OPERANDS = [("str", "a"), ("none", None), ("object", Opaque()),
            ("object_array", np.array([1, 2], dtype=object))]
OPS = {
    "add": lambda lib, x, v: lib.add(x, v),
    "sub": lambda lib, x, v: lib.sub(x, v),
    "mul": lambda lib, x, v: lib.mul(x, v),
    "div": lambda lib, x, v: lib.div(x, v),
    "maximum": lambda lib, x, v: lib.maximum(x, v),
    "lt": lambda lib, x, v: lib.lt(x, v),
}


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("name, value", OPERANDS, ids=[o[0] for o in OPERANDS])
def test_ops_refuse_non_numeric_operands(op: str, name: str, value: Any) -> None:
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError) as expected:
        if isinstance(value, np.ndarray) and op in ("add", "sub", "mul", "div"):
            # torch's functions take no arrays; its operators convert them (and refuse this one)
            getattr(operator, {"div": "truediv"}.get(op, op))(tx.detach(), value)
        else:
            OPS[op](torch, tx, value)
    with pytest.raises(TypeError) as got:
        OPS[op](ag, x, value)
    if op in ("add", "sub", "mul") or (op == "div" and isinstance(value, np.ndarray)):
        # the same words where torch's parser names the argument (or converts the array)
        assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("symbol", ["+", "-", "*", "/", "**"])
@pytest.mark.parametrize("name, value", OPERANDS[:3], ids=[o[0] for o in OPERANDS[:3]])
def test_operators_refuse_non_numeric_operands(symbol: str, name: str, value: Any) -> None:
    # torch's operators return NotImplemented and Python raises; aiograd raises the functional
    # form's TypeError: the type matches, the words do not
    for tensor in (ag.tensor([1.0]), torch.tensor([1.0])):
        with pytest.raises(TypeError):
            eval(f"tensor {symbol} value", {"tensor": tensor, "value": value})
