"""Every registered op as a fuzz target, read off the registry and the forward's signature.

``targets()`` turns each ``OPS`` record into a ``Target``: where the op lives in both libraries
(``torch.<name>`` / ``aiograd.<name>``, the Tensor method for Tensor-only and in-place ops,
``nn.functional`` / ``linalg`` by family), and how to draw its arguments: one strategy per
parameter, chosen by the parameter's annotation and name (``Tensor``/``TensorLike`` -> a tensor
or a Python scalar, ``int`` named ``dim`` -> a dim, mostly in range, ``bool`` -> a bool, ...).
``OVERRIDES`` is the small table of ops whose arguments relate in ways a signature cannot say
(matrix shapes, index tensors, reshape targets); ``SKIPPED`` lists the ops not fuzzed, with why.
A new op with ordinary parameters is fuzzed with no change here; one with a parameter no rule
knows makes ``test_every_op_is_fuzzed_or_skipped`` fail until it gets an override or a skip.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .programs import (
    DTYPES,
    FLOATS,
    Arg,
    Call,
    Const,
    DTypeArg,
    IndexArg,
    TensorArg,
    TensorList,
    broadcast_variant,
    draw_shape,
    make_tensor,
    weighted_dtype,
)
from .source import Source, pick

#: Families whose ops are public in ``nn.functional`` (in both libraries).
FUNCTIONAL_FAMILIES = {"activations", "losses", "functional", "_conv", "_pooling", "normalization",
                       "dropout", "attention", "distance", "embedding", "padding"}

#: Ops not fuzzed, with why (keep short; each is a gap in the fuzzer, not in the library).
SKIPPED: dict[str, str] = {
    "multi_head_attention_forward": "two dozen interlocked arguments; covered by test_nn_attention",
    "cpu": "device move: nothing to compare on a CPU-only build",
    # (aiograd/_ops/joining_more.py, scatter_more.py, scatter_reduce.py, search.py: index and sorted
    # operands no rule draws yet; compared with torch in tests/test_ops_shape_more.py)
    **dict.fromkeys(("index_fill", "index_fill_", "index_put", "index_put_", "scatter_reduce", "scatter_reduce_",
                     "select_scatter", "tensor_split", "unravel_index"), "index operands; covered by test_ops_shape_more"),
    **dict.fromkeys(("bucketize", "searchsorted"), "a sorted operand; covered by test_ops_shape_more"),
    **dict.fromkeys(("tril_indices", "triu_indices", "logspace"), "a constructor; covered by test_ops_shape_more"),
    "linalg_eig": "complex outputs, eigenvectors up to a phase each LAPACK picks; covered by test_linalg_lstsq_eig",
    "linalg_eigvals": "complex outputs; covered by test_linalg_lstsq_eig",
    "poisson": "random samples (torch's for torch's seed, but the programs do not seed); covered by test_random_poisson",
}

#: Ops whose ties (equal values) pick an index by an unspecified rule: drawn without ties.
DISTINCT = {"sort", "argsort", "topk", "kthvalue", "median", "max", "min", "argmax", "argmin"}

#: Dim-like int parameter names.
DIM_NAMES = {"dim", "dim0", "dim1", "dim2", "start_dim", "end_dim", "source", "destination", "axis0", "axis1"}


@dataclass
class Ctx:
    """What a program has drawn so far: the base shape every tensor relates to, the first
    tensor, and a counter for tensor names."""

    src: Source
    shape: tuple[int, ...]
    dtype: str
    first: TensorArg | None = None
    count: int = 0

    @property
    def nd(self) -> int:
        return len(self.first.shape()) if self.first is not None else len(self.shape)

    def tensor(self, shape: tuple[int, ...], dtype: str | None = None, **opts: Any) -> TensorArg:
        t = make_tensor(self.src, f"x{self.count}", shape, dtype or weighted_dtype(self.src), **opts)
        self.count += 1
        if self.first is None:
            self.first = t
        return t

    def dim(self, *, ndim: int | None = None, bad: float = 0.08) -> int:
        """A dim of an ``ndim``-d tensor: in range (negative ones too), sometimes not."""
        n = self.nd if ndim is None else ndim
        m = max(n, 1)  # a 0-d tensor takes dim 0 and -1
        if self.src.chance(bad):
            return pick(self.src, (m, -m - 1))
        return self.src.integer(-m, m - 1)

    def dims(self) -> tuple[int, ...]:
        """Distinct dims (a multi-dim reduction), sometimes with a repeat (invalid)."""
        n = self.nd
        k = self.src.integer(0, n) if n else 0
        ds = [d - n if self.src.chance(0.3) else d for d in range(n)][:k]
        if ds and self.src.chance(0.05):
            ds.append(ds[0])
        return tuple(ds)


Strategy = Callable[[Ctx], dict[str, Arg]]


@dataclass(frozen=True)
class Target:
    """One fuzzed op: where it lives, its parameters, and its argument overrides."""

    name: str
    family: str
    where: str  # "mod" | "functional" | "linalg" | "method" | "attr" | "operator"
    attr: str
    params: tuple[inspect.Parameter, ...]
    inplace: bool
    override: Strategy | None = None
    dtypes: tuple[str, ...] = DTYPES
    extra: dict[str, Any] = field(default_factory=dict)


def _scalar(src: Source, ann: str) -> Const:
    """A Python scalar operand: floats mostly, ints, bools, non-finite ones."""
    options: list[Any] = [1.5, -2.25, 0.5, 2, -3, 0, True, False, float("nan"), float("inf"), -0.0]
    if "float" in ann and "Number" not in ann and "TensorLike" not in ann:
        options = [1.5, -2.25, 0.5, 2.0, 0.0, -0.0, float("nan"), float("inf")]
    return Const(pick(src, options))


def _tensor_param(ctx: Ctx, name: str, ann: str, opts: dict[str, Any]) -> Arg:
    src = ctx.src
    if "None" in ann and src.chance(0.25):
        return Const(None)
    if ("TensorLike" in ann or "Number" in ann) and ctx.first is not None and src.chance(0.3):
        return _scalar(src, ann)
    if name in ("mask", "condition"):
        dtype = "bool" if not src.chance(0.05) else weighted_dtype(src)
        return ctx.tensor(broadcast_variant(src, ctx.first.shape() if ctx.first else ctx.shape), dtype, grad=False)
    if ctx.first is None:
        return ctx.tensor(ctx.shape, ctx.dtype, **opts)
    return ctx.tensor(broadcast_variant(src, ctx.first.shape()), **opts)


def _generic(ctx: Ctx, p: inspect.Parameter, t: Target) -> Arg | None:
    """The argument for parameter ``p`` by its annotation and name; None: leave it out (only
    where ``p`` has a default)."""
    src, ann, name = ctx.src, str(p.annotation), p.name
    opts: dict[str, Any] = {"distinct": t.name in DISTINCT}
    if ann in ("Tensor", "TensorLike", "Any", "Tensor | None", "TensorLike | None", "Tensor | Number | None"):
        return _tensor_param(ctx, name, ann, opts)
    if ann == "Sequence[Tensor]":
        shape = ctx.shape
        return TensorList([ctx.tensor(broadcast_variant(src, shape, bad=0.0) if src.chance(0.1) else shape)
                           for _ in range(src.integer(1, 3))])
    if name in DIM_NAMES and "int" in ann:
        if "None" in ann and src.chance(0.3):
            return Const(None)
        if "Sequence" in ann and src.chance(0.3):
            return Const(ctx.dims())
        return Const(ctx.dim())
    if ann == "int" and name in ("diagonal", "offset"):
        return Const(src.integer(-2, 2))
    if ann == "int" and name == "chunks":
        return Const(src.integer(0, 4))
    if ann in ("bool", "bool | None"):
        if ann.endswith("None") and src.chance(0.3):
            return Const(None)
        if name in ("inplace", "sparse", "sparse_grad", "non_blocking"):
            return Const(src.chance(0.1))
        return Const(src.chance(0.5))
    if ann in ("float", "float | None", "Number"):
        if "None" in ann and src.chance(0.3):
            return Const(None)
        if name == "eps":
            return Const(pick(src, (1e-5, 1e-3, 0.1)))
        return Const(pick(src, (0.5, -1.5, 2.0, 0.0, 1, -0.0, float("nan"), 3)))
    if ann == "DTypeLike | None":
        return Const(None) if src.chance(0.6) else DTypeArg(pick(src, ("float64", "float32", "int64")))
    if p.default is not inspect.Parameter.empty:
        return None
    raise LookupError(f"{t.name}: no strategy for parameter {name}: {ann}")


def draw_call(src: Source, t: Target) -> Call:
    """Draw one call of ``t``: overrides first, then the generic strategy per parameter;
    parameters with defaults are sometimes left out, sometimes passed by keyword."""
    ctx = Ctx(src, draw_shape(src), weighted_dtype(src, t.dtypes))
    fixed = t.override(ctx) if t.override else {}
    args: list[Arg] = []
    kwargs: dict[str, Arg] = {}
    positional = True
    for p in t.params:
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            continue
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            extra = fixed.get("*" + p.name)
            if extra is not None:
                items = extra.value if isinstance(extra, Const) else [extra]
                args.extend(v if isinstance(v, (TensorArg, TensorList, DTypeArg, IndexArg, Const)) else Const(v)
                            for v in items)
            continue
        optional = p.default is not inspect.Parameter.empty
        if p.name in fixed:
            a: Arg | None = fixed[p.name]
        elif optional and not src.chance(0.6):
            positional = positional and p.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD
            continue
        else:
            a = _generic(ctx, p, t)
        if a is None:  # (an override may leave a parameter out)
            positional = False
            continue
        if p.kind is inspect.Parameter.KEYWORD_ONLY or not positional or (optional and src.chance(0.15)):
            positional = False
            kwargs[p.name] = a
        else:
            args.append(a)
    as_method = t.where == "mod" and t.extra.get("method", False) and src.chance(0.25) \
        and bool(args) and isinstance(args[0], TensorArg)
    if t.where == "mod" and not as_method:
        args = _pack_int_varargs(t, args)
    call = Call(t.name, args, kwargs, as_method)
    if t.inplace and args and isinstance(args[0], TensorArg):
        args[0].inplace_target = True
    return call


def _pack_int_varargs(t: Target, args: list[Arg]) -> list[Arg]:
    """torch's functions take a *dims argument as one tuple (``torch.reshape(x, (2, 3))``); only
    the Tensor methods take separate ints, so the function form always gets the tuple."""
    var = [i for i, p in enumerate(t.params) if p.kind is inspect.Parameter.VAR_POSITIONAL]
    if not var or str(t.params[var[0]].annotation) != "Dims":
        return args
    i = var[0]
    rest = args[i:]
    if len(rest) == 1 and isinstance(rest[0], Const) and isinstance(rest[0].value, tuple):
        return args
    if all(isinstance(a, Const) and isinstance(a.value, int) for a in rest):
        return [*args[:i], Const(tuple(a.value for a in rest))]  # type: ignore[union-attr]
    return args


# --- the override table -------------------------------------------------------------------------
# Each returns the arguments (by parameter name; "*name" for a *args parameter) it decides; the
# generic strategies fill in the rest. Keep each small: they are the fuzzer's own assumptions.

def _reshape_target(src: Source, shape: tuple[int, ...]) -> tuple[int, ...]:
    n = int(np.prod(shape))
    if n == 0:
        out = [0, *([src.integer(1, 3)] if src.chance(0.5) else [])]
    else:
        out, rest = [], n
        for f in (2, 3, 5, 7):
            while rest % f == 0 and src.chance(0.6):
                out.append(f)
                rest //= f
        out.append(rest)
    if src.chance(0.05):
        out.append(2)  # a wrong numel
    if out and src.chance(0.3):
        out[src.integer(0, len(out) - 1)] = -1
    return tuple(out)


def _dims_star(values: tuple[int, ...], src: Source) -> Const:
    """A *dims argument: separate ints or one tuple (both spellings are public)."""
    return Const([values] if src.chance(0.3) else list(values))


def _first(ctx: Ctx, **opts: Any) -> TensorArg:
    return ctx.tensor(ctx.shape, ctx.dtype, **opts)


def o_reshape(ctx: Ctx) -> dict[str, Arg]:
    x = _first(ctx)
    return {"input": x, "*shape": _dims_star(_reshape_target(ctx.src, x.shape()), ctx.src)}


def o_permute(ctx: Ctx) -> dict[str, Arg]:
    x = _first(ctx)
    perm = list(np.random.default_rng(ctx.src.seed()).permutation(x.values.ndim if not x.view else len(x.shape())))
    perm = [int(d) - len(perm) if ctx.src.chance(0.2) else int(d) for d in perm]
    if ctx.src.chance(0.05):
        perm = perm[:-1]  # too few dims
    return {"input": x, "*dims": _dims_star(tuple(perm), ctx.src)}


def _expand_sizes(ctx: Ctx, shape: tuple[int, ...]) -> tuple[int, ...]:
    src = ctx.src
    out = [pick(src, (-1, d, 3)) if d == 1 else pick(src, (-1, d, d, 2)) if src.chance(0.3) else d for d in shape]
    if src.chance(0.3):
        out.insert(0, src.integer(0, 2))
    return tuple(out)


def o_expand(ctx: Ctx) -> dict[str, Arg]:
    x = _first(ctx)
    return {"input": x, "*sizes": _dims_star(_expand_sizes(ctx, x.shape()), ctx.src)}


def o_broadcast_to(ctx: Ctx) -> dict[str, Arg]:
    x = _first(ctx)
    return {"input": x, "shape": Const(tuple(_expand_sizes(ctx, x.shape())))}


def o_sum_to_size(ctx: Ctx) -> dict[str, Arg]:
    x = _first(ctx)
    return {"input": x, "*size": _dims_star(broadcast_variant(ctx.src, x.shape(), bad=0.05), ctx.src)}


def o_repeat(ctx: Ctx) -> dict[str, Arg]:
    x = _first(ctx)
    n = x.values.ndim if not x.view else len(x.shape())
    k = ctx.src.integer(max(n - 1 if ctx.src.chance(0.1) else n, 0), n + 1)
    reps = tuple(ctx.src.integer(0 if ctx.src.chance(0.1) else 1, 3) for _ in range(k))
    return {"input": x, "*sizes": _dims_star(reps, ctx.src), "*dims": _dims_star(reps, ctx.src)}


def o_flip(ctx: Ctx) -> dict[str, Arg]:
    x = _first(ctx)
    return {"input": x, "*dims": _dims_star(ctx.dims(), ctx.src)}


def _mat_shapes(ctx: Ctx, kind: str) -> list[tuple[int, ...]]:
    src = ctx.src
    n, k, m, b = (src.integer(0 if src.chance(0.1) else 1, 4) for _ in range(4))
    kk = k + 1 if src.chance(0.05) else k  # mismatched inner dims
    if kind == "mm":
        return [(n, k), (kk, m)]
    if kind == "bmm":
        return [(b, n, k), (b, kk, m)]
    if kind == "dot":
        return [(k,), (kk,)]
    if kind == "outer":
        return [(n,), (m,)]
    # matmul: any of 1-D/2-D/batched on each side
    left = pick(src, [(k,), (n, k), (b, n, k), (1, n, k)])
    right = pick(src, [(kk,), (kk, m), (b, kk, m), (2, 1, kk, m)])
    return [left, right]


def _two(kind: str, names: tuple[str, str]) -> Strategy:
    def strategy(ctx: Ctx) -> dict[str, Arg]:
        dt = weighted_dtype(ctx.src, ("float64", "float32", "int64"))
        a, b = _mat_shapes(ctx, kind)
        return {names[0]: ctx.tensor(a, dt), names[1]: ctx.tensor(b, dt if ctx.src.chance(0.9) else weighted_dtype(ctx.src))}
    return strategy


def o_linear(ctx: Ctx) -> dict[str, Arg]:
    src = ctx.src
    k, o = src.integer(1, 4), src.integer(1, 3)
    lead = draw_shape(src, max_ndim=2)
    dt = weighted_dtype(src, FLOATS)
    out: dict[str, Arg] = {"input": ctx.tensor((*lead, k), dt), "weight": ctx.tensor((o, k), dt)}
    out["bias"] = Const(None) if src.chance(0.3) else ctx.tensor((o,), dt)
    return out


def o_tensordot(ctx: Ctx) -> dict[str, Arg]:
    src = ctx.src
    k = src.integer(0, 2)
    shared = tuple(src.integer(1, 3) for _ in range(k))
    a = ctx.tensor((*draw_shape(src, max_ndim=2), *shared), ctx.dtype if ctx.dtype in FLOATS else "float64")
    b = ctx.tensor((*shared, *draw_shape(src, max_ndim=2)), a.dtype)
    return {"a": a, "b": b, "dims": Const(k)}


EINSUMS = [("ij,jk->ik", [(2, 3), (3, 4)]), ("ii->i", [(3, 3)]), ("ij->", [(2, 3)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
           ("i,i->", [(3,)]), ("i,j->ij", [(2,), (3,)]), ("...ij->...ji", [(2, 1, 3)]), ("ij,ij->i", [(2, 3), (1, 3)])]


def o_einsum(ctx: Ctx) -> dict[str, Arg]:
    eq, shapes = pick(ctx.src, EINSUMS)
    dt = weighted_dtype(ctx.src, FLOATS)
    return {"equation": Const(eq), "*operands": Const([ctx.tensor(s, dt) for s in shapes])}


def _index_tensor(ctx: Ctx, shape: tuple[int, ...], size: int, *, bad: float = 0.05) -> TensorArg:
    hi = size - 1 if size else 0
    lo = -size if ctx.src.chance(0.2) else 0
    if ctx.src.chance(bad):
        hi = size  # one past the end
    t = ctx.tensor(shape, "int64", grad=False, views=False, lo=lo, hi=max(hi, lo))
    return t


def o_getitem(ctx: Ctx) -> dict[str, Arg]:
    src = ctx.src
    x = _first(ctx)
    shape = x.shape()
    parts: list[Any] = []
    for size in shape:
        kind = pick(src, ("all", "int", "slice", "step", "tensor", "none", "ellipsis", "stop"))
        if kind == "stop":
            break
        if kind == "int":
            parts.append(src.integer(-size, size - 1) if size and not src.chance(0.05) else size)
        elif kind == "slice":
            parts.append(slice(src.integer(-3, 3), None))
        elif kind == "step":
            parts.append(slice(None, None, src.integer(1, 3)))
        elif kind == "tensor":
            parts.append(_index_tensor(ctx, (src.integer(0, 3),), size) if not src.chance(0.2)
                         else ctx.tensor((size,), "bool", grad=False, views=False))
        elif kind == "none":
            parts.append(None)
        elif kind == "ellipsis" and Ellipsis not in parts:
            parts.append(Ellipsis)
        else:
            parts.append(slice(None))
    if not parts:
        parts.append(slice(None) if shape else None)
    return {"input": x, "self": x, "index": IndexArg(tuple(parts))}


def o_setitem(ctx: Ctx) -> dict[str, Arg]:
    out = o_getitem(ctx)
    # the value: a scalar, or a tensor that broadcasts to the selection (its shape is only known
    # after indexing: a scalar-shaped tensor always fits; a mismatch is an invalid argument)
    v = _scalar(ctx.src, "float") if ctx.src.chance(0.4) else ctx.tensor(
        pick(ctx.src, [(), (1,), (2,)]), weighted_dtype(ctx.src, FLOATS))
    out["value"] = v
    return out


def _along(ctx: Ctx, *, idx_shape_same: bool) -> tuple[TensorArg, int, TensorArg]:
    src = ctx.src
    x = ctx.tensor(draw_shape(src, min_ndim=1), weighted_dtype(src, FLOATS + ("int64",)))
    shape = x.shape()
    d = ctx.dim(ndim=len(shape), bad=0.04)
    size = shape[d] if -len(shape) <= d < len(shape) else 1
    if idx_shape_same:
        ishape = tuple(src.integer(0, s) if s and src.chance(0.3) else s for s in shape)
    else:
        ishape = (src.integer(0, 4),)
    return x, d, _index_tensor(ctx, ishape, size)


def o_index_select(ctx: Ctx) -> dict[str, Arg]:
    x, d, idx = _along(ctx, idx_shape_same=False)
    return {"input": x, "dim": Const(d), "index": idx}


def o_gather(ctx: Ctx) -> dict[str, Arg]:
    x, d, idx = _along(ctx, idx_shape_same=True)
    return {"input": x, "dim": Const(d), "index": idx, "indices": idx, "sparse_grad": None}


def o_take_along_dim(ctx: Ctx) -> dict[str, Arg]:
    x, d, idx = _along(ctx, idx_shape_same=True)
    return {"input": x, "indices": idx, "dim": Const(d)}


def o_scatter(ctx: Ctx) -> dict[str, Arg]:
    x, d, idx = _along(ctx, idx_shape_same=True)
    out: dict[str, Arg] = {"input": x, "dim": Const(d), "index": idx}
    if ctx.src.chance(0.3):
        out["src"] = None  # type: ignore[assignment]
        out["value"] = _scalar(ctx.src, "float")
    else:
        out["src"] = ctx.tensor(idx.shape(), x.dtype)
        out["value"] = None  # type: ignore[assignment]
    return out


def o_scatter_add(ctx: Ctx) -> dict[str, Arg]:
    x, d, idx = _along(ctx, idx_shape_same=True)
    return {"input": x, "dim": Const(d), "index": idx, "src": ctx.tensor(idx.shape(), x.dtype)}


def o_index_add(ctx: Ctx) -> dict[str, Arg]:
    x, d, idx = _along(ctx, idx_shape_same=False)
    shape = list(x.shape())
    if -len(shape) <= d < len(shape):
        shape[d] = idx.shape()[0]
    return {"input": x, "dim": Const(d), "index": idx, "source": ctx.tensor(tuple(shape), x.dtype)}


def o_masked_select(ctx: Ctx) -> dict[str, Arg]:
    x = _first(ctx)
    return {"input": x, "mask": ctx.tensor(broadcast_variant(ctx.src, x.shape()), "bool", grad=False)}


def o_pad(ctx: Ctx) -> dict[str, Arg]:
    src = ctx.src
    mode = pick(src, ("constant", "constant", "reflect", "replicate", "circular"))
    x = ctx.tensor(draw_shape(src, min_ndim=1 if mode == "constant" else 2), weighted_dtype(src, FLOATS))
    n = src.integer(1, min(len(x.shape()), 3))
    pad = [src.integer(-1 if mode == "constant" else 0, 2) for _ in range(2 * n)]
    out: dict[str, Arg] = {"input": x, "pad": Const(pad), "mode": Const(mode)}
    if mode == "constant" and src.chance(0.5):
        out["value"] = Const(pick(src, (1.5, -2.0, 0.0)))
    return out


def o_one_hot(ctx: Ctx) -> dict[str, Arg]:
    t = ctx.tensor(draw_shape(ctx.src), "int64", grad=False, lo=0, hi=3)
    return {"tensor": t, "num_classes": Const(pick(ctx.src, (-1, 4, 5, 2)))}


def o_to(ctx: Ctx) -> dict[str, Arg]:
    return {"input": _first(ctx), "*args": Const([DTypeArg(pick(ctx.src, DTYPES))])}


def o_split(ctx: Ctx) -> dict[str, Arg]:
    x = ctx.tensor(draw_shape(ctx.src, min_ndim=1), ctx.dtype)
    d = ctx.dim(bad=0.04)
    size = x.shape()[d] if -len(x.shape()) <= d < len(x.shape()) else 2
    sizes = []
    rest = size
    while rest > 0:
        s = ctx.src.integer(0 if ctx.src.chance(0.1) else 1, rest)
        sizes.append(s)
        rest -= s
    if ctx.src.chance(0.05):
        sizes.append(1)  # not summing to the size
    out: dict[str, Arg] = {"input": x, "dim": Const(d), "split_sizes": Const(sizes)}
    out["split_size_or_sections"] = Const(sizes if ctx.src.chance(0.4) else ctx.src.integer(1, 3))
    return out


def o_narrow(ctx: Ctx) -> dict[str, Arg]:
    x = ctx.tensor(draw_shape(ctx.src, min_ndim=1), ctx.dtype)
    d = ctx.dim(bad=0.04)
    size = x.shape()[d] if -len(x.shape()) <= d < len(x.shape()) else 1
    start = ctx.src.integer(-size, size) if size else 0
    return {"input": x, "dim": Const(d), "start": Const(start),
            "length": Const(ctx.src.integer(0, max(size - (start % size if size else 0), 0) + (1 if ctx.src.chance(0.05) else 0)))}


def o_select(ctx: Ctx) -> dict[str, Arg]:
    x = ctx.tensor(draw_shape(ctx.src, min_ndim=1), ctx.dtype)
    d = ctx.dim(bad=0.04)
    size = x.shape()[d] if -len(x.shape()) <= d < len(x.shape()) else 1
    i = ctx.src.integer(-size, size - 1) if size and not ctx.src.chance(0.05) else size
    return {"input": x, "dim": Const(d), "index": Const(i)}


def o_unflatten(ctx: Ctx) -> dict[str, Arg]:
    x = ctx.tensor(draw_shape(ctx.src, min_ndim=1), ctx.dtype)
    d = ctx.dim(bad=0.04)
    size = x.shape()[d] if -len(x.shape()) <= d < len(x.shape()) else 1
    return {"input": x, "dim": Const(d), "sizes": Const(_reshape_target(ctx.src, (size,)))}


def o_movedim(ctx: Ctx) -> dict[str, Arg]:
    x = ctx.tensor(draw_shape(ctx.src), ctx.dtype)
    if ctx.src.chance(0.5):
        return {"input": x, "source": Const(ctx.dim()), "destination": Const(ctx.dim())}
    k = ctx.src.integer(0, len(x.shape()))
    perm = list(np.random.default_rng(ctx.src.seed()).permutation(len(x.shape())))
    return {"input": x, "source": Const([int(v) for v in perm[:k]]), "destination": Const(list(range(k)))}


def o_k(ctx: Ctx) -> dict[str, Arg]:
    x = ctx.tensor(draw_shape(ctx.src), ctx.dtype, distinct=True)
    d = ctx.dim(bad=0.04)
    shape = x.shape() or (1,)
    size = shape[d] if -len(shape) <= d < len(shape) else 1
    lo = 1 if ctx.name_kth else 0  # type: ignore[attr-defined]
    k = ctx.src.integer(lo, max(size, lo)) if not ctx.src.chance(0.05) else size + 1
    return {"input": x, "k": Const(k), "dim": Const(d)}


def o_topk(ctx: Ctx) -> dict[str, Arg]:
    ctx.name_kth = False  # type: ignore[attr-defined]
    return o_k(ctx)


def o_kthvalue(ctx: Ctx) -> dict[str, Arg]:
    ctx.name_kth = True  # type: ignore[attr-defined]
    return o_k(ctx)


def o_roll(ctx: Ctx) -> dict[str, Arg]:
    x = _first(ctx)
    if ctx.src.chance(0.3):
        return {"input": x, "shifts": Const(ctx.src.integer(-3, 3)), "dims": Const(None)}
    ds = ctx.dims()
    return {"input": x, "shifts": Const(tuple(ctx.src.integer(-3, 3) for _ in ds)), "dims": Const(ds)}


def o_matrix(ctx: Ctx) -> dict[str, Arg]:
    """Square (batched) matrices for linalg ops, trace, diag."""
    src = ctx.src
    n = src.integer(0 if src.chance(0.1) else 1, 3)
    shape = (*draw_shape(src, max_ndim=1), n, n if not src.chance(0.05) else n + 1)
    return {"A": ctx.tensor(shape, weighted_dtype(src, FLOATS), views=True)}


def o_solve(ctx: Ctx) -> dict[str, Arg]:
    a = o_matrix(ctx)["A"]
    n = a.shape()[-1]
    b_shape = pick(ctx.src, [(n,), (n, 2), a.shape()[:-1] + (1,)])
    return {"A": a, "B": ctx.tensor(b_shape, a.dtype)}


def o_lstsq(ctx: Ctx) -> dict[str, Arg]:
    """A (batched) m x n matrix, B a vector, a matrix or a batch of either (rarely mismatched),
    a driver drawn (rarely an unknown one), rcond rarely given."""
    src = ctx.src
    m, n = src.integer(0 if src.chance(0.1) else 1, 4), src.integer(0 if src.chance(0.1) else 1, 3)
    batch = draw_shape(src, max_ndim=1)
    a = ctx.tensor((*batch, m, n), weighted_dtype(src, FLOATS), views=True)
    rows = m + src.chance(0.03)
    b_shape = pick(src, [(rows,), (rows, 2), (*batch, rows), (*batch, rows, 1)])
    driver = pick(src, [None, None, "gels", "gelsy", "gelsd", "gelss", "gelsx" if src.chance(0.1) else None])
    return {"A": a, "B": ctx.tensor(b_shape, a.dtype), "rcond": Const(1e-3 if src.chance(0.1) else None),
            "driver": Const(driver)}


def o_solve_triangular(ctx: Ctx) -> dict[str, Arg]:
    """Square (batched) A, B with matching rows (left) or columns, flags drawn; rarely a
    mismatch, a vector B or another dtype (PyTorch's errors, B converted to A's dtype)."""
    src = ctx.src
    a = o_matrix(ctx)["A"]
    n, left = a.shape()[-1], src.chance(0.7)
    k = src.integer(0 if src.chance(0.05) else 1, 3)
    mat = (n + src.chance(0.03), k) if left else (k, n + src.chance(0.03))
    b_shape = pick(src, [mat, a.shape()[:-2] + mat, (2, *a.shape()[-3:-2], *mat), (n,) if src.chance(0.1) else mat])
    b = ctx.tensor(b_shape, a.dtype if not src.chance(0.05) else weighted_dtype(src, FLOATS))
    return {"A": a, "B": b, "upper": Const(src.chance(0.5)), "left": Const(left),
            "unitriangular": Const(src.chance(0.3))}


def o_trace(ctx: Ctx) -> dict[str, Arg]:
    return {"input": ctx.tensor(draw_shape(ctx.src, min_ndim=2 if not ctx.src.chance(0.05) else 1, max_ndim=2), ctx.dtype)}


def o_diag(ctx: Ctx) -> dict[str, Arg]:
    return {"input": ctx.tensor(draw_shape(ctx.src, min_ndim=1, max_ndim=2 if not ctx.src.chance(0.05) else 3), ctx.dtype)}


def o_diagonal(ctx: Ctx) -> dict[str, Arg]:
    x = ctx.tensor(draw_shape(ctx.src, min_ndim=2), ctx.dtype)
    d1 = ctx.dim()
    d2 = ctx.dim()
    return {"input": x, "dim1": Const(d1), "dim2": Const(d2)}


def o_tril(ctx: Ctx) -> dict[str, Arg]:
    return {"input": ctx.tensor(draw_shape(ctx.src, min_ndim=2 if not ctx.src.chance(0.05) else 1), ctx.dtype)}


def o_conv(ctx: Ctx, *, dims: int, transpose: bool = False) -> dict[str, Arg]:
    src = ctx.src
    groups = pick(src, (1, 1, 2))
    cin, cout = groups * src.integer(1, 2), groups * src.integer(1, 2)
    k = tuple(src.integer(1, 3) for _ in range(dims))
    spatial = tuple(src.integer(k[i], k[i] + 3) for i in range(dims))
    dt = weighted_dtype(src, FLOATS)
    x = ctx.tensor((src.integer(1, 2), cin, *spatial), dt)
    w = ctx.tensor((cin, cout // groups, *k) if transpose else (cout, cin // groups, *k), dt)
    bias = ctx.tensor((cout,), dt) if src.chance(0.5) else Const(None)
    return {"input": x, "weight": w, "bias": bias, "stride": Const(src.integer(1, 2)),
            "padding": Const(src.integer(0, 1)), "dilation": Const(1), "groups": Const(groups),
            "output_padding": Const(0)}


def o_pool(ctx: Ctx, *, dims: int = 2) -> dict[str, Arg]:
    src = ctx.src
    k = src.integer(1, 3)
    x = ctx.tensor((src.integer(1, 2), src.integer(1, 2), *(src.integer(k, k + 3) for _ in range(dims))),
                   weighted_dtype(src, FLOATS), distinct=True)
    return {"input": x, "kernel_size": Const(k), "stride": Const(pick(src, (None, 1, 2))),
            "padding": Const(src.integer(0, k // 2)),
            "output_size": Const(pick(src, (1, 2, (2, 3) if dims == 2 else (2, 3, 2))))}


def o_norm_layer(ctx: Ctx) -> dict[str, Arg]:
    src = ctx.src
    shape = draw_shape(src, min_ndim=1)
    k = src.integer(1, len(shape))
    dt = weighted_dtype(src, FLOATS)
    norm = shape[-k:]
    return {"input": ctx.tensor(shape, dt), "normalized_shape": Const(list(norm)),
            "weight": ctx.tensor(norm, dt) if src.chance(0.5) else Const(None),
            "bias": ctx.tensor(norm, dt) if src.chance(0.5) else Const(None)}


def o_batch_norm(ctx: Ctx) -> dict[str, Arg]:
    src = ctx.src
    c = src.integer(1, 3)
    shape = (src.integer(2, 3), c, *draw_shape(src, max_ndim=1, zero=0.0))
    dt = weighted_dtype(src, FLOATS)
    stats = src.chance(0.5)
    return {"input": ctx.tensor(shape, dt),
            "running_mean": ctx.tensor((c,), dt, grad=False) if stats else Const(None),
            "running_var": ctx.tensor((c,), dt, grad=False, lo=0.5, hi=2.0, specials=False) if stats else Const(None),
            "weight": ctx.tensor((c,), dt) if src.chance(0.5) else Const(None),
            "bias": ctx.tensor((c,), dt) if src.chance(0.5) else Const(None),
            "training": Const(True if not stats else src.chance(0.5))}


def o_group_norm(ctx: Ctx) -> dict[str, Arg]:
    src = ctx.src
    g = src.integer(1, 2)
    c = g * src.integer(1, 2)
    dt = weighted_dtype(src, FLOATS)
    return {"input": ctx.tensor((src.integer(1, 2), c, *draw_shape(src, max_ndim=1, zero=0.0)), dt),
            "num_groups": Const(g), "weight": ctx.tensor((c,), dt) if src.chance(0.5) else Const(None),
            "bias": ctx.tensor((c,), dt) if src.chance(0.5) else Const(None)}


def o_embedding(ctx: Ctx) -> dict[str, Arg]:
    src = ctx.src
    n = src.integer(1, 4)
    idx = _index_tensor(ctx, draw_shape(src, max_ndim=2), n)
    w = ctx.tensor((n, src.integer(1, 3)), weighted_dtype(src, FLOATS))
    return {"input": idx, "weight": w, "padding_idx": Const(pick(src, (None, 0, -1))), "max_norm": Const(None),
            "sparse": Const(False)}


def o_sdpa(ctx: Ctx) -> dict[str, Arg]:
    src = ctx.src
    b, lq, lk, e = (src.integer(1, 3) for _ in range(4))
    dt = weighted_dtype(src, FLOATS)
    out: dict[str, Arg] = {"query": ctx.tensor((b, lq, e), dt), "key": ctx.tensor((b, lk, e), dt),
                           "value": ctx.tensor((b, lk, src.integer(1, 3)), dt), "dropout_p": Const(0.0),
                           "enable_gqa": Const(False)}
    out["attn_mask"] = Const(None) if src.chance(0.6) else ctx.tensor((lq, lk), pick(src, ("bool", dt)), grad=False)
    out["is_causal"] = Const(src.chance(0.3) and isinstance(out["attn_mask"], Const))
    return out


def _loss(kind: str) -> Strategy:
    def strategy(ctx: Ctx) -> dict[str, Arg]:
        src = ctx.src
        dt = weighted_dtype(src, FLOATS)
        shape = draw_shape(src)
        if kind == "probability":  # binary_cross_entropy: inputs in (0, 1)
            x = ctx.tensor(shape, dt, lo=0.01, hi=0.99)
            y = ctx.tensor(shape, dt, lo=0.0, hi=1.0)
        else:
            x = ctx.tensor(shape, dt)
            y = ctx.tensor(shape if src.chance(0.9) else broadcast_variant(src, shape), dt)
        out: dict[str, Arg] = {"input": x, "target": y, "reduction": Const(pick(src, ("mean", "sum", "none"))),
                               "size_average": None, "reduce": None, "weight": None, "pos_weight": None}  # type: ignore[dict-item]
        return out
    return strategy


def o_nll(ctx: Ctx) -> dict[str, Arg]:
    src = ctx.src
    c = src.integer(1, 4)
    n = src.integer(0 if src.chance(0.1) else 1, 3)
    dt = weighted_dtype(src, FLOATS)
    x = ctx.tensor(pick(src, [(n, c), (c,), (n, c, 2)]), dt)
    tshape = x.shape()[:1] + x.shape()[2:] if len(x.shape()) > 1 else ()
    t = _index_tensor(ctx, tshape, c)
    out: dict[str, Arg] = {"input": x, "target": t, "reduction": Const(pick(src, ("mean", "sum", "none"))),
                           "weight": ctx.tensor((c,), dt, grad=False, lo=0.1, hi=2.0, specials=False) if src.chance(0.3) else Const(None),
                           "ignore_index": Const(pick(src, (-100, 0, 1))), "size_average": None, "reduce": None}  # type: ignore[dict-item]
    if src.chance(0.3):
        out["label_smoothing"] = Const(0.1)
    return out


def o_dropout(ctx: Ctx) -> dict[str, Arg]:
    # random masks cannot match: only the deterministic cases (p = 0, or not training)
    x = _first(ctx)
    if ctx.src.chance(0.5):
        return {"input": x, "p": Const(0.0), "training": Const(True), "inplace": Const(False)}
    return {"input": x, "p": Const(0.5), "training": Const(False), "inplace": Const(False)}


def o_cosine(ctx: Ctx) -> dict[str, Arg]:
    x = ctx.tensor(draw_shape(ctx.src, min_ndim=1), weighted_dtype(ctx.src, FLOATS))
    return {"x1": x, "x2": ctx.tensor(broadcast_variant(ctx.src, x.shape()), x.dtype),
            "dim": Const(ctx.dim())}


def o_normalize(ctx: Ctx) -> dict[str, Arg]:
    x = ctx.tensor(draw_shape(ctx.src, min_ndim=1), weighted_dtype(ctx.src, FLOATS))
    return {"input": x, "dim": Const(ctx.dim()), "out": None, "p": Const(pick(ctx.src, (2.0, 1.0, 3.0)))}  # type: ignore[dict-item]


def o_norm(ctx: Ctx) -> dict[str, Arg]:
    x = ctx.tensor(ctx.shape, weighted_dtype(ctx.src, FLOATS))
    return {"input": x, "p": Const(pick(ctx.src, ("fro", 2, 1, 3.0, float("inf"), 0)))}


def o_matrix_arg(name: str) -> Strategy:
    def strategy(ctx: Ctx) -> dict[str, Arg]:
        return {name: o_matrix(ctx)["A"]}
    return strategy


def o_str(name: str, *options: str) -> Strategy:
    def strategy(ctx: Ctx) -> dict[str, Arg]:
        return {name: Const(pick(ctx.src, options))}
    return strategy


def both(*strategies: Strategy) -> Strategy:
    def strategy(ctx: Ctx) -> dict[str, Arg]:
        out: dict[str, Arg] = {}
        for s in strategies:
            out.update(s(ctx))
        return out
    return strategy


def o_expand_as(ctx: Ctx) -> dict[str, Arg]:
    x = _first(ctx)
    sizes = _expand_sizes(ctx, x.shape())
    full = tuple(d if s == -1 else s for s, d in zip(sizes[len(sizes) - len(x.shape()):], x.shape()))
    return {"input": x, "other": ctx.tensor(sizes[:len(sizes) - len(x.shape())] + full, grad=False)}


def o_view_as(ctx: Ctx) -> dict[str, Arg]:
    x = _first(ctx)
    return {"input": x, "other": ctx.tensor(tuple(abs(d) if d != -1 else int(np.prod(x.shape())) for d in
                                                  _reshape_target(ctx.src, x.shape())), grad=False)}


def o_where(ctx: Ctx) -> dict[str, Arg]:
    c = ctx.tensor(ctx.shape, "bool" if not ctx.src.chance(0.05) else "int64", grad=False)
    return {"condition": c}


def o_pixel_shuffle(ctx: Ctx, *, unshuffle: bool = False) -> dict[str, Arg]:
    src = ctx.src
    r = src.integer(1, 2)
    c = src.integer(1, 2) * (1 if unshuffle else r * r)
    h, w = (src.integer(1, 2) * (r if unshuffle else 1) for _ in range(2))
    x = ctx.tensor((*((src.integer(1, 2),) if src.chance(0.7) else ()), c, h, w), weighted_dtype(src, FLOATS))
    return {"input": x, ("downscale_factor" if unshuffle else "upscale_factor"): Const(r)}


def o_prelu(ctx: Ctx) -> dict[str, Arg]:
    src = ctx.src
    dt = weighted_dtype(src, FLOATS)
    shape = (src.integer(1, 2), src.integer(1, 3), *draw_shape(src, max_ndim=1, zero=0.0))
    return {"input": ctx.tensor(shape, dt), "weight": ctx.tensor((pick(src, (1, shape[1])),), dt)}


def o_unfold(ctx: Ctx) -> dict[str, Arg]:
    src = ctx.src
    k = (src.integer(1, 2), src.integer(1, 2))
    x = ctx.tensor((src.integer(1, 2), src.integer(1, 2), src.integer(k[0], k[0] + 2), src.integer(k[1], k[1] + 2)),
                   weighted_dtype(src, FLOATS))
    return {"input": x, "kernel_size": Const(k), "dilation": Const(1), "padding": Const(src.integer(0, 1)),
            "stride": Const(src.integer(1, 2))}


def o_fold(ctx: Ctx) -> dict[str, Arg]:
    src = ctx.src
    k, out = (src.integer(1, 2), src.integer(1, 2)), (src.integer(2, 4), src.integer(2, 4))
    blocks = (out[0] - k[0] + 1) * (out[1] - k[1] + 1)
    x = ctx.tensor((src.integer(1, 2), src.integer(1, 2) * k[0] * k[1], blocks), weighted_dtype(src, FLOATS))
    return {"input": x, "output_size": Const(out), "kernel_size": Const(k), "dilation": Const(1),
            "padding": Const(0), "stride": Const(1)}


def o_polygamma(ctx: Ctx) -> dict[str, Arg]:
    return {"n": Const(pick(ctx.src, (0, 1, 2, 3, -1))), "input": _first(ctx)}


def o_mvlgamma(ctx: Ctx) -> dict[str, Arg]:
    return {"input": _first(ctx), "p": Const(pick(ctx.src, (1, 2, 3)))}


def o_window(ctx: Ctx) -> dict[str, Arg]:
    """A window's length (sometimes negative: invalid) and dtype (sometimes an integer one)."""
    src = ctx.src
    dtype = Const(None) if src.chance(0.4) else DTypeArg(pick(src, ("float64", "float32", "float32", "int64")))
    return {"window_length": Const(pick(src, (0, 1, 2, 3, 5, 8, -1))), "dtype": dtype}


def o_quantile(ctx: Ctx) -> dict[str, Arg]:
    """``q``: a number in [0, 1] (sometimes not) or a 0-d/1-D tensor of them in the input's
    dtype (sometimes another); an interpolation mode (sometimes an unknown one)."""
    src = ctx.src
    x = _first(ctx)
    if src.chance(0.5):
        q: Arg = Const(pick(src, (0.0, 0.25, 0.5, 0.7, 1.0, 1.5, -0.1)))
    else:
        dt = x.dtype if x.dtype in FLOATS and not src.chance(0.05) else pick(src, FLOATS)
        q = ctx.tensor(pick(src, [(), (1,), (3,)]), dt, grad=False, lo=0.0, hi=1.0, specials=False)
    return {"input": x, "q": q,
            "interpolation": Const(pick(src, ("linear", "lower", "higher", "midpoint", "nearest", "cubic")))}


def o_matrix_power(name: str) -> Strategy:
    def strategy(ctx: Ctx) -> dict[str, Arg]:
        return {name: o_matrix(ctx)["A"], "n": Const(pick(ctx.src, (0, 1, 2, 3, 4, 6, -1, -2)))}
    return strategy


OVERRIDES: dict[str, Strategy] = {
    "polygamma": o_polygamma, "mvlgamma": o_mvlgamma,  # (aiograd/_ops/special_gamma.py)
    "reshape": o_reshape, "view": o_reshape, "permute": o_permute, "expand": o_expand,
    "broadcast_to": o_broadcast_to, "sum_to_size": o_sum_to_size, "repeat": o_repeat, "tile": o_repeat,
    "flip": o_flip, "matmul": _two("matmul", ("input", "other")), "mm": _two("mm", ("input", "mat2")),
    "bmm": _two("bmm", ("input", "mat2")), "dot": _two("dot", ("input", "tensor")),
    "outer": _two("outer", ("input", "vec2")), "linear": o_linear, "tensordot": o_tensordot, "einsum": o_einsum,
    "getitem": o_getitem, "setitem": o_setitem, "index_select": o_index_select, "gather": o_gather,
    "take_along_dim": o_take_along_dim, "scatter": o_scatter, "scatter_": o_scatter,
    "scatter_add": o_scatter_add, "scatter_add_": o_scatter_add, "index_add": o_index_add,
    "index_add_": o_index_add, "masked_select": o_masked_select, "pad": o_pad, "one_hot": o_one_hot,
    "to": o_to, "split": o_split, "split_with_sizes": o_split, "narrow": o_narrow, "select": o_select,
    "unflatten": o_unflatten, "movedim": o_movedim, "moveaxis": o_movedim, "topk": o_topk,
    "kthvalue": o_kthvalue, "roll": o_roll, "trace": o_trace, "diag": o_diag, "diagonal": o_diagonal,
    "tril_": o_tril, "triu_": o_tril, "tril": o_tril, "triu": o_tril,
    "linalg_inv": o_matrix, "linalg_pinv": o_matrix, "linalg_det": o_matrix, "linalg_slogdet": o_matrix, "linalg_solve": o_solve,
    "linalg_solve_triangular": o_solve_triangular, "linalg_lstsq": o_lstsq,
    "linalg_cholesky": o_matrix, "linalg_qr": both(o_matrix, o_str("mode", "reduced", "complete", "r")),
    "linalg_eigh": both(o_matrix, o_str("UPLO", "L", "U")), "linalg_svd": o_matrix,
    "conv1d": lambda c: o_conv(c, dims=1), "conv2d": lambda c: o_conv(c, dims=2),
    "conv_transpose2d": lambda c: o_conv(c, dims=2, transpose=True),
    "max_pool2d": o_pool, "avg_pool2d": o_pool, "adaptive_avg_pool2d": o_pool, "adaptive_max_pool2d": o_pool,
    "conv_transpose1d": lambda c: o_conv(c, dims=1, transpose=True), "prelu": o_prelu,
    "conv3d": lambda c: o_conv(c, dims=3), "conv_transpose3d": lambda c: o_conv(c, dims=3, transpose=True),
    "max_pool3d": lambda c: o_pool(c, dims=3), "avg_pool3d": lambda c: o_pool(c, dims=3),
    "adaptive_avg_pool3d": lambda c: o_pool(c, dims=3), "adaptive_max_pool3d": lambda c: o_pool(c, dims=3),
    "pixel_shuffle": o_pixel_shuffle, "pixel_unshuffle": lambda c: o_pixel_shuffle(c, unshuffle=True),
    "unfold": o_unfold, "fold": o_fold,
    "layer_norm": o_norm_layer, "batch_norm": o_batch_norm, "group_norm": o_group_norm,
    "embedding": o_embedding, "scaled_dot_product_attention": o_sdpa,
    "l1_loss": _loss("plain"), "smooth_l1_loss": _loss("plain"), "huber_loss": _loss("plain"),
    "mse_loss": _loss("plain"), "kl_div": _loss("plain"), "binary_cross_entropy": _loss("probability"),
    "binary_cross_entropy_with_logits": _loss("plain"), "nll_loss": o_nll, "cross_entropy": o_nll,
    "dropout": o_dropout, "cosine_similarity": o_cosine, "normalize": o_normalize, "norm": o_norm,
    "gelu": o_str("approximate", "none", "tanh"), "expand_as": o_expand_as, "view_as": o_view_as,
    "reshape_as": o_view_as, "where": o_where,
    # (aiograd/_ops/windows.py, statistics_more.py, linalg_compat.py)
    **dict.fromkeys(("hann_window", "hamming_window", "blackman_window", "bartlett_window"), o_window),
    "quantile": o_quantile, "nanquantile": o_quantile, "svd": o_matrix_arg("input"),
    "matrix_power": o_matrix_power("input"), "linalg_matrix_power": o_matrix_power("A"),
}


def _where(name: str, rule: Any) -> tuple[str, str]:
    import torch

    if name in ("getitem", "setitem"):
        return "operator", name
    if name.startswith("linalg_"):
        return "linalg", name.removeprefix("linalg_")
    if rule.family in FUNCTIONAL_FAMILIES or name == "linear":
        return "functional", name
    if name in ("T", "mT"):
        return "attr", name
    if rule.top_level and hasattr(torch, name):
        return "mod", name
    return "method", name


def _signature(rule: Any) -> tuple[inspect.Parameter, ...]:
    return tuple(inspect.signature(rule.forward).parameters.values())


def targets() -> dict[str, Target]:
    """Every registered op not in ``SKIPPED``, as a fuzz target."""
    import torch

    from aiograd._ops._registry import OPS

    out: dict[str, Target] = {}
    for name, rule in OPS.items():
        if name in SKIPPED:
            continue
        where, attr = _where(name, rule)
        out[name] = Target(
            name, rule.family, where, attr, _signature(rule),
            inplace=name.endswith("_") or name == "setitem", override=OVERRIDES.get(name),
            extra={"method": hasattr(torch.Tensor, attr)},
        )
    return out


def alias_pairs() -> list[tuple[str, str]]:
    """(op, alias) for every registered alias: each must exist where torch has it."""
    from aiograd._ops._registry import OPS

    return [(n, a) for n, r in OPS.items() for a in r.aliases]


__all__ = ["OVERRIDES", "SKIPPED", "Ctx", "Target", "alias_pairs", "draw_call", "targets"]
