"""Run one drawn call on torch and on aiograd, and list how the two differ.

Compared: the exception type when either raises (each side's nearest built-in exception class,
so ``torch.linalg.LinAlgError`` and ``aiograd.linalg.LinAlgError`` are both RuntimeError); the
number of outputs; per output its dtype, shape, values (NaNs at the same places, infinities
equal, finite values within a tolerance any CPU kernel meets), ``requires_grad`` and the
``grad_fn`` name; then the gradient of every float leaf that requires grad, of a random
weighted sum of the float outputs (``grad(outputs, leaves, weights)``), compared likewise.
"""

from __future__ import annotations

import builtins
import operator
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .ops import Target
from .programs import Call, DTypeArg, Lib, TensorArg, arg_code, build_arg

#: (rtol, atol) per float dtype; atol is scaled by the largest finite magnitude of the expected
#: values (at least 1), since a sum or product is only as exact as its largest terms.
TOLERANCE = {"float64": (1e-7, 1e-10), "float32": (1e-4, 1e-5), "float16": (1e-2, 1e-3)}


#: Every kind of difference ``compare`` reports (known.py's keys use these).
KINDS = ("value", "grad", "value_nonfinite", "grad_nonfinite", "dtype", "shape", "outputs", "grad_fn",
         "missing", "aiograd_raises", "torch_raises", "error_type")


#: Outputs unique only up to a choice each library makes its own way (eigenvectors' and singular
#: vectors' signs): only the listed outputs are compared and enter the backward.
GAUGE: dict[str, tuple[int, ...]] = {"linalg_eigh": (0,), "linalg_svd": (1,), "svd": (1,)}


@dataclass
class Outcome:
    """What one library did with a call."""

    error: BaseException | None = None
    phase: str = ""  # where ``error`` came from: "lookup", "forward", "backward"
    outputs: list[Any] = field(default_factory=list)  # tensors, or other values as returned
    grads: list[np.ndarray | None] | None = None  # per leaf that requires grad; None: no backward
    weights: list[np.ndarray] = field(default_factory=list)


@dataclass
class Difference:
    """One way the libraries disagreed on a call."""

    op: str
    kind: str
    detail: str
    call: Call
    target: Target

    @property
    def key(self) -> tuple[str, str]:
        return (self.op, self.kind)


def _is_tensor(lib: Lib, x: Any) -> bool:
    return isinstance(x, lib.mod.Tensor)


def _function(lib: Lib, t: Target, call: Call) -> Any:
    """The callable for ``t`` in ``lib`` (AttributeError: the library lacks it)."""
    if t.where == "operator":
        return getattr(operator, t.attr)
    if t.where in ("method", "attr") or call.as_method:
        return None  # looked up on the first argument
    home = {"mod": lib.mod, "functional": lib.functional, "linalg": lib.linalg}[t.where]
    return getattr(home, t.attr)


def _invoke(lib: Lib, t: Target, call: Call, args: list[Any], kwargs: dict[str, Any]) -> Any:
    fn = _function(lib, t, call)
    if t.where == "attr":
        return getattr(args[0], t.attr)
    if fn is None:
        return getattr(args[0], t.attr)(*args[1:], **kwargs)
    return fn(*args, **kwargs)


def _flatten(lib: Lib, result: Any) -> list[Any]:
    if isinstance(result, (tuple, list)):
        return [x for r in result for x in _flatten(lib, r)]
    return [result]


def _numpy(lib: Lib, x: Any) -> np.ndarray:
    if lib.name == "torch":
        return x.detach().resolve_conj().numpy(force=True)
    return np.asarray(x.data)


def _dtype(x: Any) -> str:
    return str(x.dtype).removeprefix("torch.").replace("bool_", "bool")


def grad_fn_name(lib: Lib, x: Any) -> str | None:
    fn = x.grad_fn
    if fn is None:
        return None
    if lib.name == "torch":
        return type(fn).__name__
    return fn.name() if hasattr(fn, "name") else type(fn).__name__


def weights_for(seed: int, i: int, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """The weight of output ``i`` in the summed loss: 2-decimal numbers (short repros)."""
    return np.round(np.random.default_rng(seed + 7919 * i).normal(size=shape), 2).astype(dtype)


def _topk_in_order(lib: Lib, t: Target, args: list[Any], kwargs: dict[str, Any], outputs: list[Any]) -> list[Any]:
    """``topk(sorted=False)``'s values and indices sorted along ``dim``: torch documents no order
    for them (on a CPU it is the C++ library's ``nth_element``'s), so only the set is compared;
    sorted by differentiable ``gather`` so the gradients still are."""
    bound = dict(zip((p.name for p in t.params), args)) | kwargs
    if bound.get("sorted", True) or len(outputs) != 2:
        return outputs
    values, indices = outputs
    dim = bound.get("dim", -1)
    if values.dim() == 0:
        return outputs
    order = lib.mod.argsort(values.detach(), dim=dim, descending=bool(bound.get("largest", True)), stable=True)
    return [values.gather(dim, order), indices.gather(dim, order)]


def run(lib: Lib, t: Target, call: Call, seed: int, grad: Any) -> Outcome:
    """Build ``call``'s arguments in ``lib``, run it, then the backward (``grad`` is the
    library's ``grad(outputs, inputs, grad_outputs, allow_unused=True)``)."""
    out = Outcome()
    built: dict[str, Any] = {}
    leaves: list[Any] = []
    bases: dict[str, Any] = {}
    for ta in call.tensors():
        leaf, base, x = ta.build(lib)
        built[ta.name] = x
        bases[ta.name] = base
        if ta.requires_grad:
            leaves.append(leaf)
    args = [build_arg(a, lib, built) for a in call.args]
    kwargs = {k: build_arg(a, lib, built) for k, a in call.kwargs.items()}
    try:
        _function(lib, t, call)
    except AttributeError as e:
        out.error, out.phase = e, "lookup"
        return out
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = _invoke(lib, t, call, args, kwargs)
    except Exception as e:  # noqa: BLE001 - any error is an outcome to compare
        out.error, out.phase = e, "forward"
        return out
    outputs = [] if result is None else _flatten(lib, result)
    if t.name == "topk":
        outputs = _topk_in_order(lib, t, args, kwargs, outputs)
    if t.name in GAUGE:
        outputs = [outputs[i] for i in GAUGE[t.name] if i < len(outputs)]
    if t.inplace and isinstance(call.args[0], TensorArg):
        outputs.append(bases[call.args[0].name])  # the write landed in the view's base
    out.outputs = outputs
    diff = [o for o in outputs if _is_tensor(lib, o) and o.requires_grad]
    if not diff or not leaves:
        return out
    out.weights = [weights_for(seed, i, tuple(o.shape), _dtype(o)) for i, o in enumerate(diff)]
    ws = [lib.mod.tensor(w, dtype=lib.dtype(_dtype(o))) for w, o in zip(out.weights, diff)]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            grads = grad(diff, leaves, ws)
    except Exception as e:  # noqa: BLE001
        out.error, out.phase = e, "backward"
        return out
    out.grads = [None if g is None else _numpy(lib, g) for g in grads]
    return out


def builtin_class(e: BaseException) -> str:
    """The nearest built-in exception class: what a caller can portably catch."""
    for cls in type(e).__mro__:
        if getattr(builtins, cls.__name__, None) is cls:
            return cls.__name__
    return type(e).__name__


def _missing_argument(e: BaseException) -> bool:
    s = str(e)
    return isinstance(e, TypeError) and ("unexpected keyword" in s or "positional argument" in s
                                         or "required positional" in s)


def _missing_name(e: BaseException) -> bool:
    return isinstance(e, AttributeError) and "has no attribute" in str(e)


#: Ops whose gradients amplify rounding (a normalization divides by sqrt(var + eps), up to
#: 1/sqrt(eps) ~ 300 when a group's values are equal): their atol is this many times larger.
LOOSE = {"layer_norm": 1000.0, "group_norm": 1000.0, "batch_norm": 1000.0}


def precision(call: Call, *outcomes: Outcome) -> str:
    """The dtype whose tolerance applies: float32's if any float32 tensor took part (a float64
    result computed from float32 inputs carries their rounding), else float64's."""
    names = [t.dtype for t in call.tensors()]
    names += [a.name for a in [*call.args, *call.kwargs.values()] if isinstance(a, DTypeArg)]
    for o in outcomes:
        names += [str(x.dtype).removeprefix("torch.") for x in o.outputs if hasattr(x, "dtype")]
    return "float16" if "float16" in names else "float32" if "float32" in names else "float64"


def close(actual: np.ndarray, expected: np.ndarray, tol: str = "float64", loose: float = 1.0) -> str | None:
    """None if ``actual`` matches ``expected`` (same shape) within ``tol``'s tolerance, else
    what is off."""
    if expected.dtype.kind not in "fc":
        if np.array_equal(actual, expected):
            return None
        return f"{int((actual != expected).sum())} of {actual.size} differ"
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    nan_a, nan_e = np.isnan(a), np.isnan(e)
    if (nan_a != nan_e).any():
        return f"NaNs at different places ({int(nan_a.sum())} vs {int(nan_e.sum())})"
    inf = np.isinf(a) | np.isinf(e)
    if (a[inf] != e[inf]).any():
        return "infinities differ"
    fin = ~(nan_e | inf)
    if not fin.any():
        return None
    own = str(expected.dtype) if str(expected.dtype) in TOLERANCE else "float32"
    rtol, atol = max(TOLERANCE[own], TOLERANCE[tol])  # the looser of the two
    atol *= loose
    scale = max(1.0, float(np.abs(e[fin]).max()))
    bad = np.abs(a[fin] - e[fin]) > rtol * np.abs(e[fin]) + atol * scale
    if bad.any():
        i = int(np.argmax(bad))
        return f"{int(bad.sum())} of {int(fin.sum())} values differ, e.g. {a[fin][i]!r} vs {e[fin][i]!r}"
    return None


def _short(x: Any) -> str:
    s = np.array2string(np.asarray(x), threshold=12, precision=6) if isinstance(x, np.ndarray) else repr(x)
    return s if len(s) < 300 else s[:300] + "..."


def compare(t: Target, call: Call, ours: Outcome, theirs: Outcome, ag: Lib, torch: Lib) -> list[Difference]:
    """The differences between aiograd's outcome (``ours``) and torch's (``theirs``)."""
    nonfinite = call.nonfinite()
    tol, loose = precision(call, ours, theirs), LOOSE.get(t.name, 1.0)
    diffs: list[Difference] = []

    def add(kind: str, detail: str) -> None:
        if kind in ("value", "grad") and nonfinite:
            kind += "_nonfinite"
        diffs.append(Difference(t.name, kind, detail, call, t))

    if ours.error is not None or theirs.error is not None:
        _compare_errors(ours, theirs, add)
        if ours.error is not None and (theirs.error is not None or ours.phase != "backward"):
            return diffs
        if theirs.error is not None and theirs.phase != "backward":
            return diffs
    if len(ours.outputs) != len(theirs.outputs):
        add("outputs", f"{len(ours.outputs)} outputs vs torch's {len(theirs.outputs)}")
        return diffs
    same_graph = True
    for i, (o, r) in enumerate(zip(ours.outputs, theirs.outputs)):
        same_graph &= _compare_output(i, o, r, ag, torch, add, tol)
    if same_graph and ours.grads is not None and theirs.grads is not None:
        for g, h, leaf in zip(ours.grads, theirs.grads,
                                  [x for x in call.tensors() if x.requires_grad]):
            shape = leaf.values.shape
            g = np.zeros(shape, leaf.dtype) if g is None else g
            h = np.zeros(shape, leaf.dtype) if h is None else h
            if g.shape != h.shape or g.dtype != h.dtype:
                add("grad", f"gradient of {leaf.name}: {g.dtype}{g.shape} vs torch's {h.dtype}{h.shape}")
                continue
            off = close(g, h, tol, loose)
            if off:
                add("grad", f"gradient of {leaf.name}: {off}\n  aiograd: {_short(g)}\n  torch:   {_short(h)}")
    return diffs


def _compare_errors(ours: Outcome, theirs: Outcome, add: Any) -> None:
    if ours.error is not None and ours.phase == "lookup":
        add("missing", f"aiograd has no such function/method: {ours.error}")
    elif ours.error is not None and theirs.error is not None:
        a, b = builtin_class(ours.error), builtin_class(theirs.error)
        if a != b:
            add("error_type", f"{ours.phase}: aiograd raises {type(ours.error).__name__}({str(ours.error)[:200]!r}), "
                              f"torch {type(theirs.error).__name__}({str(theirs.error)[:200]!r})")
    elif ours.error is not None:
        kind = "missing" if _missing_argument(ours.error) or _missing_name(ours.error) else "aiograd_raises"
        add(kind, f"{ours.phase}: aiograd raises {type(ours.error).__name__}: {str(ours.error)[:300]}")
    else:
        add("torch_raises", f"{theirs.phase}: torch raises {type(theirs.error).__name__}: "
                            f"{str(theirs.error).splitlines()[0][:300] if str(theirs.error) else ''}")


def _compare_output(i: int, o: Any, r: Any, ag: Lib, torch: Lib, add: Any, tol: str) -> bool:
    """Compare output ``i``; False if its autograd status differs (gradients are then moot)."""
    ot, rt = _is_tensor(ag, o), _is_tensor(torch, r)
    if ot != rt:
        add("outputs", f"output {i}: aiograd {type(o).__name__} vs torch {type(r).__name__}")
        return False
    if not ot:
        if o != r:
            add("value", f"output {i}: {o!r} vs torch's {r!r}")
        return True
    od, rd = _dtype(o), _dtype(r)
    if od != rd:
        add("dtype", f"output {i}: {od} vs torch's {rd}")
    if tuple(o.shape) != tuple(r.shape):
        add("shape", f"output {i}: {tuple(o.shape)} vs torch's {tuple(r.shape)}")
    elif od == rd:
        a, e = _numpy(ag, o), _numpy(torch, r)
        off = close(a, e, tol)
        if off:
            add("value", f"output {i}: {off}\n  aiograd: {_short(a)}\n  torch:   {_short(e)}")
    if bool(o.requires_grad) != bool(r.requires_grad):
        add("grad_fn", f"output {i}: requires_grad {o.requires_grad} vs torch's {r.requires_grad}")
        return False
    on, rn = grad_fn_name(ag, o), grad_fn_name(torch, r)
    if on != rn:
        add("grad_fn", f"output {i}: grad_fn {on} vs torch's {rn}")
    return True


# --- repros -------------------------------------------------------------------------------------

def _call_code(lib: Lib, t: Target, call: Call) -> str:
    args = [arg_code(a, lib) for a in call.args]
    args += [f"{k}={arg_code(a, lib)}" for k, a in call.kwargs.items()]
    if t.where == "operator":
        x, index = args[0], args[1]
        return f"{x}[{index}]" if t.attr == "getitem" else f"{x}[{index}] = {args[2]}"
    if t.where == "attr":
        return f"{args[0]}.{t.attr}"
    if t.where == "method" or call.as_method:
        return f"{args[0]}.{t.attr}({', '.join(args[1:])})"
    home = {"mod": lib.name, "functional": f"{lib.name}.nn.functional", "linalg": f"{lib.name}.linalg"}[t.where]
    return f"{home}.{t.attr}({', '.join(args)})"


def _lib_block(lib: Lib, t: Target, call: Call, weights: list[np.ndarray], with_grad: bool) -> list[str]:
    lines = [f"# {lib.mod.__name__}"]
    for ta in call.tensors():
        lines += ta.code(lib)
    expr = _call_code(lib, t, call)
    if t.where == "operator" and t.attr == "setitem":
        lines.append(expr)
        outs = [call.args[0].base_name()]  # type: ignore[union-attr]
    else:
        lines.append(f"y = {expr}")
        outs = ["y"]
        if t.inplace and isinstance(call.args[0], TensorArg):
            outs.append(call.args[0].base_name())
    lines.append(f"print({', '.join(outs)})")
    leaves = [f"leaf_{x.name}" if (x.view or (x.inplace_target and x.requires_grad)) else x.name
              for x in call.tensors() if x.requires_grad]
    if with_grad and weights and leaves:
        flat = "[y]" if outs == ["y"] and len(weights) == 1 else f"[o for o in ({', '.join(outs)},) if o.requires_grad]"
        if outs == ["y"] and len(weights) > 1:
            flat = "[o for o in y if o.requires_grad]"
        ws = ", ".join(f"{lib.name}.tensor(w{i}, dtype={lib.dtype_code(str(w.dtype))})" for i, w in enumerate(weights))
        grad = "torch.autograd.grad" if lib.name == "torch" else "aiograd.sync.grad"
        lines.append(f"print({grad}({flat}, [{', '.join(leaves)}], [{ws}], allow_unused=True))")
    return lines


def repro(d: Difference, ours: Outcome, theirs: Outcome, ag: Lib, torch: Lib) -> str:
    """A copy-pasteable script that shows difference ``d``."""
    call, t = d.call, d.target
    from .programs import _array_code

    lines = ["import numpy as np, torch, aiograd as ag, aiograd.sync", "nan, inf = float('nan'), float('inf')"]
    for ta in call.tensors():
        lines.append(f"v_{ta.name} = {_array_code(ta.values)}")
    with_grad = d.kind.startswith("grad") and not d.kind.startswith("grad_fn") or "backward" in d.detail
    weights = theirs.weights or ours.weights
    if with_grad:
        for i, w in enumerate(weights):
            lines.append(f"w{i} = {_array_code(w)}")
    lines += _lib_block(torch, t, call, weights, with_grad)
    lines += _lib_block(ag, t, call, weights, with_grad)
    return "\n".join(lines)
