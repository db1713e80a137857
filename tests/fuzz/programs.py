"""A program's arguments: what they are, how each library builds them, and their repro code.

A program is one call of one op on arguments drawn here: tensors (float64/float32/int64/bool,
broadcast shapes with 0-size and 0-dim ones, NaN/inf/-0.0/subnormal values, leaves or
transposed, step-sliced and expanded views of leaves), Python scalars, dtypes and plain
constants. Each argument knows how to build itself in either library (``Lib``) and how to write
itself as Python (the repro), so the same description runs on torch and on aiograd.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .source import Source, pick, weighted

DTYPES = ("float64", "float32", "int64", "bool")
FLOATS = ("float64", "float32")


@dataclass(frozen=True)
class Lib:
    """One library under test: its name in repros and where its functions live."""

    name: str  # the module's name in a repro: "torch" or "ag"
    mod: Any
    functional: Any  # <lib>.nn.functional
    linalg: Any

    def dtype(self, name: str) -> Any:
        # aiograd spells bool as numpy does (``ag.bool_``)
        return getattr(self.mod, "bool_" if name == "bool" and self.name == "ag" else name)

    def dtype_code(self, name: str) -> str:
        return f"{self.name}.{'bool_' if name == 'bool' and self.name == 'ag' else name}"


def libs() -> tuple[Lib, Lib]:
    """(torch, aiograd); imported lazily so the fuzz package imports without torch."""
    import torch

    import aiograd as ag
    import aiograd.linalg
    import aiograd.nn.functional

    return (Lib("torch", torch, torch.nn.functional, torch.linalg),
            Lib("ag", ag, ag.nn.functional, ag.linalg))


# --- values -------------------------------------------------------------------------------------

def _specials(dtype: str) -> list[float]:
    tiny = 5e-324 if dtype == "float64" else 1e-40  # subnormals
    huge = 1e300 if dtype == "float64" else 1e30
    return [np.nan, np.inf, -np.inf, -0.0, 0.0, tiny, -tiny, huge]


def draw_values(src: Source, shape: tuple[int, ...], dtype: str, *, distinct: bool = False,
                lo: float | None = None, hi: float | None = None, specials: bool = True) -> np.ndarray:
    """Values of a tensor: small 2-decimal numbers (short repros, and ties happen), sometimes
    non-finite or subnormal ones; ``distinct`` avoids ties (ops whose tie-breaking is unspecified);
    ``lo``/``hi`` bound them (ints: an index range, floats: a domain)."""
    rng = np.random.default_rng(src.seed())
    n = int(np.prod(shape))
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype == "int64":
        a, b = (-4, 4) if lo is None else (int(lo), int(hi))  # type: ignore[arg-type]
        return rng.integers(a, b + 1, size=shape).astype(np.int64)
    if distinct:
        flat = (rng.permutation(n) - n // 2) * 0.25
    elif lo is not None:
        flat = rng.uniform(lo, hi, size=n)
    else:
        flat = rng.normal(0.0, 2.0, size=n)
    flat = np.round(flat, 2)
    if specials and n and src.chance(0.15):
        options = _specials(dtype)
        for _ in range(src.integer(1, min(n, 3))):
            flat[src.integer(0, n - 1)] = pick(src, options)
    return flat.reshape(shape).astype(dtype)


# --- shapes -------------------------------------------------------------------------------------

def draw_shape(src: Source, *, min_ndim: int = 0, max_ndim: int = 3, max_size: int = 4,
               zero: float = 0.06) -> tuple[int, ...]:
    """A small shape; 0-dim and 0-size ones included."""
    ndim = src.integer(min_ndim, max_ndim)
    return tuple(0 if src.chance(zero) else src.integer(1, max_size) for _ in range(ndim))


def broadcast_variant(src: Source, shape: tuple[int, ...], *, bad: float = 0.03) -> tuple[int, ...]:
    """A shape that broadcasts with ``shape``: leading dims dropped, some dims 1; rarely one
    that does not (an invalid argument)."""
    out = list(shape[src.integer(0, len(shape)) if src.chance(0.3) else 0:])
    out = [1 if src.chance(0.25) else d for d in out]
    if out and src.chance(bad):
        i = src.integer(0, len(out) - 1)
        out[i] = out[i] + 2
    if src.chance(0.1) and len(out) < 4:  # a broadcast that adds a leading dim
        out.insert(0, src.integer(1, 2))
    return tuple(out)


# --- arguments ----------------------------------------------------------------------------------

def _array_code(a: np.ndarray) -> str:
    if a.size == 0:
        return f"np.zeros({a.shape}, dtype='{a.dtype}')"
    body = repr(a.tolist())
    body = re.sub(r"\bnan\b", "nan", body)
    body = re.sub(r"\binf\b", "inf", body)
    return f"np.array({body}, dtype='{a.dtype}')"


@dataclass
class TensorArg:
    """A tensor argument: a leaf of ``values``, then maybe a view of it. An in-place target is
    built through ``clone()`` when it requires grad (torch forbids in-place writes to such a
    leaf), so the write reaches a non-leaf base whose gradient flows back to the leaf."""

    name: str
    values: np.ndarray
    requires_grad: bool = False
    view: tuple[Any, ...] = ()  # ("permute", dims) | ("step", axis) | ("expand", shape)
    inplace_target: bool = False

    @property
    def dtype(self) -> str:
        return str(self.values.dtype)

    def shape(self) -> tuple[int, ...]:
        """The shape the op sees (after the view)."""
        s = self.values.shape
        kind = self.view[0] if self.view else None
        if kind == "permute":
            return tuple(s[d] for d in self.view[1])
        if kind == "step":
            ax = self.view[1]
            return s[:ax] + ((s[ax] + 1) // 2,) + s[ax + 1:]
        if kind == "expand":
            return tuple(self.view[1])
        return s

    def _view_code(self) -> str:
        if not self.view:
            return ""
        kind, arg = self.view
        if kind == "permute":
            return f".permute{tuple(arg)}"
        if kind == "step":
            return "[" + ":, " * arg + "::2]"
        return f".expand{tuple(arg)}"

    def build(self, lib: Lib) -> tuple[Any, Any, Any]:
        """(leaf, base, tensor): the leaf, the tensor views are taken of, what the op gets."""
        leaf = lib.mod.tensor(self.values, dtype=lib.dtype(self.dtype), requires_grad=self.requires_grad)
        base = leaf.clone() if self.inplace_target and self.requires_grad else leaf
        x = base
        if self.view:
            kind, arg = self.view
            if kind == "permute":
                x = base.permute(*arg)
            elif kind == "step":
                x = base[(slice(None),) * arg + (slice(None, None, 2),)]
            else:
                x = base.expand(*arg)
        return leaf, base, x

    def code(self, lib: Lib) -> list[str]:
        rg = ", requires_grad=True" if self.requires_grad else ""
        leaf = f"{lib.name}.tensor(v_{self.name}, dtype={lib.dtype_code(self.dtype)}{rg})"
        if self.inplace_target and self.requires_grad:
            return [f"leaf_{self.name} = {leaf}", f"base_{self.name} = leaf_{self.name}.clone()",
                    f"{self.name} = base_{self.name}{self._view_code()}"]
        if self.view:
            return [f"leaf_{self.name} = {leaf}", f"{self.name} = leaf_{self.name}{self._view_code()}"]
        return [f"{self.name} = {leaf}"]

    def size(self) -> int:
        return int(self.values.size) + (3 if self.view else 0)

    def base_name(self) -> str:
        """The repro's name of the tensor an in-place write lands in."""
        if self.inplace_target and self.requires_grad:
            return f"base_{self.name}"
        return f"leaf_{self.name}" if self.view else self.name


@dataclass
class TensorList:
    """A list of tensors (``cat``, ``stack``)."""

    items: list[TensorArg]


@dataclass
class DTypeArg:
    """A dtype argument (``sum(dtype=...)``, ``to(...)``)."""

    name: str


@dataclass
class IndexArg:
    """An index (``t[...]``): ints, slices, None, Ellipsis, and index/mask tensors."""

    parts: tuple[Any, ...]  # each: int | slice | None | Ellipsis | TensorArg


@dataclass
class Const:
    """A Python value passed as is: a number (NaN included), None, a string, a list of ints."""

    value: Any


Arg = TensorArg | TensorList | DTypeArg | IndexArg | Const


def tensors_of(args: Sequence[Arg]) -> list[TensorArg]:
    out: list[TensorArg] = []
    for a in args:
        if isinstance(a, TensorArg):
            out.append(a)
        elif isinstance(a, TensorList):
            out.extend(a.items)
        elif isinstance(a, IndexArg):
            out.extend(p for p in a.parts if isinstance(p, TensorArg))
    return out


def build_arg(a: Arg, lib: Lib, built: dict[str, Any]) -> Any:
    """The library's value of ``a``; ``built`` maps tensor names to built tensors."""
    if isinstance(a, TensorArg):
        return built[a.name]
    if isinstance(a, TensorList):
        return [built[t.name] for t in a.items]
    if isinstance(a, DTypeArg):
        return lib.dtype(a.name)
    if isinstance(a, IndexArg):
        parts = tuple(built[p.name] if isinstance(p, TensorArg) else p for p in a.parts)
        return parts[0] if len(parts) == 1 else parts
    return a.value


def _slice_code(s: slice) -> str:
    parts = ["" if v is None else str(v) for v in (s.start, s.stop, s.step)]
    return ":".join(parts[:2]) + (f":{parts[2]}" if s.step is not None else "")


def arg_code(a: Arg, lib: Lib) -> str:
    if isinstance(a, TensorArg):
        return a.name
    if isinstance(a, TensorList):
        return "[" + ", ".join(t.name for t in a.items) + "]"
    if isinstance(a, DTypeArg):
        return lib.dtype_code(a.name)
    if isinstance(a, IndexArg):
        def one(p: Any) -> str:
            if isinstance(p, TensorArg):
                return p.name
            if isinstance(p, slice):
                return _slice_code(p)
            return "..." if p is Ellipsis else repr(p)
        return ", ".join(one(p) for p in a.parts)
    v = a.value
    if isinstance(v, float) and (np.isnan(v) or np.isinf(v)):
        return f"float('{v}')"
    return repr(v)


@dataclass
class Call:
    """A drawn call: positional and keyword arguments, and how to call (function or method)."""

    op: str
    args: list[Arg]
    kwargs: dict[str, Arg] = field(default_factory=dict)
    as_method: bool = False  # ``x.op(...)`` instead of ``<lib>.op(x, ...)``

    def tensors(self) -> list[TensorArg]:
        return tensors_of([*self.args, *self.kwargs.values()])

    def size(self) -> int:
        """How big the program is (the hunt keeps the smallest repro of each difference)."""
        n = sum(t.size() for t in self.tensors())
        specials = sum(int((~np.isfinite(t.values)).sum()) if t.values.dtype.kind == "f" else 0
                       for t in self.tensors())
        return n + 2 * len(self.args) + 3 * len(self.kwargs) + 5 * specials

    def nonfinite(self) -> bool:
        """True if any input holds NaN, inf, a subnormal or a huge number (where differences
        are reported apart from those on ordinary inputs)."""
        for t in self.tensors():
            v = t.values
            if v.dtype.kind == "f" and v.size:
                a = np.abs(v[np.isfinite(v)])
                if not np.isfinite(v).all() or (a[a > 0] < np.finfo(v.dtype).tiny).any() or (a > 1e20).any():
                    return True
        for a in [*self.args, *self.kwargs.values()]:
            if isinstance(a, Const) and isinstance(a.value, float) and not np.isfinite(a.value):
                return True
        return False


def weighted_dtype(src: Source, allowed: Sequence[str] = DTYPES) -> str:
    weights = {"float64": 50, "float32": 25, "int64": 15, "bool": 10}
    return weighted(src, [(d, weights[d]) for d in allowed])


def make_tensor(src: Source, name: str, shape: tuple[int, ...], dtype: str, *, grad: bool = True,
                views: bool = True, **value_opts: Any) -> TensorArg:
    """A tensor argument of the given shape (as the op sees it) and dtype; float ones mostly
    require grad; sometimes a transposed, step-sliced or expanded view of a leaf."""
    requires_grad = grad and dtype in FLOATS and not src.chance(0.15)
    view: tuple[Any, ...] = ()
    leaf_shape = shape
    if views and shape and src.chance(0.2):
        # (an expanded view repeats values: no ties where the tie-breaking is unspecified)
        kind = pick(src, ("permute", "step") if value_opts.get("distinct") else ("permute", "step", "expand"))
        nd = len(shape)
        if kind == "permute" and nd >= 2:
            i = src.integer(0, nd - 2)
            perm = list(range(nd))
            perm[i], perm[-1] = perm[-1], perm[i]  # swap one dim with the last: a transpose
            leaf_shape = tuple(shape[perm.index(d)] for d in range(nd))
            view = ("permute", tuple(perm))
        elif kind == "step":
            ax = src.integer(0, nd - 1)
            leaf_shape = shape[:ax] + (2 * shape[ax] - (1 if shape[ax] and src.chance(0.5) else 0),) + shape[ax + 1:]
            view = ("step", ax)
        elif kind == "expand":
            leaf_shape = tuple(1 if (d != 1 and src.chance(0.6)) else d for d in shape)
            if leaf_shape != shape:
                view = ("expand", shape)
    values = draw_values(src, leaf_shape, dtype, **value_opts)
    return TensorArg(name, values, requires_grad, view)
