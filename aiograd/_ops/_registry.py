"""The op registry: every op's forward function and the backward rule it records, side by side.

An op's rule is written once, next to its forward (micrograd's locality), and registered here
(HIPS autograd's ``defvjp``, tinygrad's gradient table). Three ways to write one:

* a unary elementwise op is one row of a table (``Unary``, see ``unary_math.UNARY``):
  name, PyTorch's node name, forward on arrays, vjp on tensors, what to save;
* any other op decorates its backward formula with ``@backward(saved=...)``, which makes the
  Node subclass named after the function (``MulBackward0``), and its forward with
  ``@op(MulBackward0)``, which registers it;
* a node PyTorch names differently for a variant of the same rule is ``variant("RsubBackward1",
  SubBackward0)``.

A rule declares where it is written whether it batches (``Node.batched``: ``@backward(batched=
True)``, a variant inherits its rule's, a table row's ``batched`` field): a batched rule takes the
number of leading batch dims of its gradients as an argument, ``def MulBackward0(self, grads,
batch=0)``, and under ``grad(..., is_grads_batched=True)`` runs once on the whole batch; any other
one runs once per sample (``aiograd._engine.batched``). See ``batching`` for how rules keep the
batch dims.

The generated nodes are ordinary ``aiograd._core._node.Node`` subclasses: ``_saved`` names the
SavedTensor fields that ``release_variables`` frees, and a ``cost`` override (matmul's) is kept.
``OPS`` maps each op's name to its ``OpRule`` (forward, node classes, family): what the tests
iterate over.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal, Protocol, TypeVar

from .._base._dtypes import get_default_dtype
from .._core._node import Node, edge_of, save
from .._core._tensor import Tensor
from ._util import CPU, attach, first_order, needs_grad, not_tensor, wrap
from .quiet import quietly1

__all__ = ["OPS", "OpRule", "Unary", "UnaryOp", "backward", "op", "register", "unary", "variant"]

F = TypeVar("F", bound=Callable[..., Any])
#: A backward formula: ``(node, grads of the outputs) -> one gradient (or None) per input``; a
#: batched one also takes ``batch``, the number of leading batch dims of the gradients.
Rule = Callable[..., Sequence[Any]]


@dataclass(frozen=True)
class OpRule:
    """One registered op: its public forward function and the nodes it may record."""

    name: str
    family: str
    forward: Callable[..., Any]
    #: The Node classes the op records (several where PyTorch names variants differently);
    #: empty for ops with no gradient (comparisons, argmax, ...).
    nodes: tuple[type[Node], ...] = ()
    #: Re-exported as ``aiograd.<name>`` (and its ``aliases``): tools/gen_tensor_api.py writes
    #: those imports into aiograd/__init__.py. False for a Tensor method only (``view``, ``to``),
    #: an in-place op (a trailing ``_``), or an op public elsewhere (``aiograd.linalg``,
    #: ``nn.functional``).
    top_level: bool = True
    aliases: tuple[str, ...] = ()

    @property
    def differentiable(self) -> bool:
        """True if the op records a node (has a gradient)."""
        return bool(self.nodes)

    @property
    def node_names(self) -> tuple[str, ...]:
        """PyTorch's names of the nodes this op records."""
        return tuple(n.__name__ for n in self.nodes)


#: Every registered op by name, in registration order.
OPS: dict[str, OpRule] = {}


def register(
    name: str,
    forward: F,
    *nodes: type[Node],
    family: str | None = None,
    top_level: bool | None = None,
    aliases: tuple[str, ...] = (),
) -> F:
    """Register ``forward`` as op ``name`` recording ``nodes``; returns ``forward``. ``top_level``
    (by default: unless ``name`` ends in ``_``, an in-place op) and ``aliases``: see ``OpRule``."""
    if name in OPS:
        raise ValueError(f"op {name!r} is registered twice")
    if family is None:
        family = forward.__module__.rsplit(".", 1)[-1]
    if top_level is None:
        top_level = not name.endswith("_")
    OPS[name] = OpRule(name, family, forward, nodes, top_level, aliases)
    return forward


def op(
    *nodes: type[Node],
    name: str | None = None,
    family: str | None = None,
    top_level: bool | None = None,
    aliases: tuple[str, ...] = (),
) -> Callable[[F], F]:
    """Decorator: register the decorated forward (under its own name unless ``name`` is given)
    as an op recording ``nodes``, in ``family`` (by default its module's name); ``top_level``
    and ``aliases`` as ``register``'s."""

    def deco(forward: F) -> F:
        return register(name or forward.__name__, forward, *nodes, family=family, top_level=top_level, aliases=aliases)

    return deco


def _node_class(name: str, base: type[Node], module: str, namespace: dict[str, Any]) -> type[Node]:
    namespace.setdefault("__doc__", None)
    cls = type(name, (base,), {"__module__": module, "__qualname__": name, **namespace})
    return cls


def backward(
    *,
    name: str | None = None,
    saved: tuple[str, ...] = (),
    base: type[Node] = Node,
    cost: Callable[..., float] | None = None,
    batched: bool | property | None = None,
    **attrs: Any,
) -> Callable[[Rule], type[Node]]:
    """Decorator: the Node subclass whose ``apply`` is the decorated formula, named after it
    (or ``name``).

    ``saved`` names the SavedTensor fields the forward stores on the node, ``cost`` overrides
    ``Node.cost`` (the engine's offload estimate), ``batched`` sets ``Node.batched`` (a property
    decides it per node; unset, ``base``'s), ``attrs`` are class attributes."""

    def deco(rule: Rule) -> type[Node]:
        namespace: dict[str, Any] = {"apply": rule, "__doc__": rule.__doc__, **attrs}
        if batched is not None:
            namespace["batched"] = batched
        if (base.batched if batched is None else batched) and "batch" not in inspect.signature(rule).parameters:
            # (the engine would call it with the batch: a TypeError in the middle of a backward)
            raise TypeError(f"{rule.__qualname__} is declared batched but takes no batch argument")
        if saved:
            namespace["_saved"] = saved
        if cost is not None:
            namespace["cost"] = cost
        return _node_class(name or rule.__name__, base, rule.__module__, namespace)

    return deco


def variant(name: str, of: type[Node], doc: str | None = None, *, module: str | None = None,
            **attrs: Any) -> type[Node]:
    """A node with ``of``'s rule under another of PyTorch's names (``RsubBackward1`` for
    ``number - tensor``); ``attrs`` override class attributes (``batched=False``: the variant
    runs per sample though ``of`` batches). ``module``: the module that binds the class to its
    name, when that is not ``of``'s (so pickling and tracebacks find it)."""
    return _node_class(name, of, module or of.__module__, {"__doc__": doc, **attrs})


# ----------------------------------------------------------------------- unary elementwise rows
Saves = Literal["input", "result"] | None


class UnaryOp(Protocol):
    """The signature of a unary op made from a table row: ``exp(input) -> Tensor``."""

    def __call__(self, input: Tensor) -> Tensor: ...


@dataclass(frozen=True)
class Unary:
    """One unary elementwise op as a table row.

    ``forward`` names the function of the input's array module ``xp`` that computes the output
    array (``"tanh"``: ``xp.tanh(array)``), or is a ``forward(xp, array)`` callable;
    ``vjp(grad, saved)`` is the input's gradient from the output's gradient and the saved
    tensor (the input or the result, as ``saves`` says; None if nothing is saved), written with
    aiograd ops so it can be differentiated again. ``fast(grad_array, saved_array)``, where
    given, computes the same on arrays when grad mode is off (the common first-order backward).
    ``batched`` is the node's ``Node.batched``: an elementwise vjp broadcasts a batch of
    gradients against the saved tensor from the right, so a row batches unless it says not.
    """

    name: str
    node: str
    forward: str | Callable[[Any, Any], Any]
    vjp: Callable[[Any, Any], Any]
    saves: Saves = None
    fast: Callable[[Any, Any], Any] | None = None
    doc: str = field(default="", compare=False)
    batched: bool = True
    aliases: tuple[str, ...] = ()  # its other names (``negative`` of ``neg``): see ``OpRule``


def _unary_node(row: Unary, module: str) -> type[Node]:
    vjp, fast, by_result = row.vjp, row.fast, row.saves == "result"
    if row.saves is None:

        def apply(self: Node, grads: list[Any], batch: int = 0) -> tuple[Any]:
            return (vjp(grads[0], None),)

    else:

        def apply(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
            saved = self.result if by_result else self.x
            g = grads[0]
            if fast is not None and first_order():
                out = wrap(fast(g.data, saved.unpack_data(self)))
                if g._device is not CPU:
                    out._device = g._device
                return (out,)
            return (vjp(g, saved.unpack(self)),)

    namespace: dict[str, Any] = {"apply": apply, "__doc__": f"Backward of ``{row.name}``.", "batched": row.batched}
    if row.saves is not None:
        # the names in-place ops and ``release_variables`` know: ``result`` or the input ``x``
        namespace["_saved"] = ("result",) if by_result else ("x",)
    return _node_class(row.node, Node, module, namespace)


def _floating_input(compute: Callable[[Any, Any], Any], xp: Any, data: Any) -> Any:
    """An integer or bool input of a unary op, cast to the default dtype where the op's result
    is floating (``sqrt``, ``sin``; not ``abs`` or ``floor``): torch computes those in the
    default dtype, where numpy gives float64 (float16 for bool). Tried on one element."""
    probe = data.reshape(-1)[:1]
    try:
        floating = quietly1(partial(compute, xp), probe).dtype.kind == "f"
    except Exception:  # (bool negation: the op itself raises torch's error on the whole input)
        return data
    return data.astype(get_default_dtype()) if floating else data


def unary(row: Unary, module: str) -> tuple[UnaryOp, type[Node]]:
    """The forward function and node class of a unary table row, registered."""
    saves = row.saves
    cls = _unary_node(row, module)
    forward = row.forward
    if isinstance(forward, str):  # the name of an array-module function, e.g. "tanh"
        name = forward
        on_cpu: Any = getattr(CPU.xp, name)  # resolved once: the CPU is the hot path

        def compute(xp: Any, data: Any) -> Any:
            return getattr(xp, name)(data)

    else:
        on_cpu, compute = partial(forward, CPU.xp), forward

    by_result, by_input = saves == "result", saves == "input"  # decided once, not per call

    def fn(input: Tensor) -> Tensor:
        try:
            dev = input._device
        except AttributeError:  # a number, an array, a list: PyTorch's TypeError
            raise not_tensor(row.name, input) from None
        data = input.data
        if data.dtype.kind in "biu":
            data = _floating_input(compute, dev.xp, data)
        if dev is CPU:
            try:  # (the hot path: no context entered, see aiograd/_ops/quiet.py)
                out = wrap(on_cpu(data))
            except RuntimeWarning:
                # numpy's warning made an error by the user's filters: an underflow at a
                # subnormal input, say (tanh's baseline kernel flags one, its AVX-512 kernel
                # does not; torch never warns). Computed again quietly, as torch is silent.
                out = wrap(quietly1(on_cpu, data))
        else:
            out = wrap(compute(dev.xp, data))
            out._device = dev
        if needs_grad(input):
            # attach, then save: a saved output must already require grad (for create_graph)
            node: Any = attach(cls((edge_of(input),)), out)
            if by_result:
                node.result = save(out, is_output=True)
            elif by_input:
                node.x = save(input)
        return out

    fn.__name__ = fn.__qualname__ = row.name
    fn.__module__ = module
    fn.__doc__ = row.doc
    register(row.name, fn, cls, family=module.rsplit(".", 1)[-1], aliases=row.aliases)
    return fn, cls
