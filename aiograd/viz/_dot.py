"""``to_dot`` and ``to_graphviz``: the arguments checked, what ``grad()`` would run, the text."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ParamSpec, TypeAlias, cast

from .._api._autograd import _input_edges, _nonempty_inputs
from .._core._graph import GradientEdge
from .._core._node import GraphRoot, Node, edge_of
from .._core._tensor import Tensor
from .._engine.graph_task import ExecInfo, init_to_execute
from ._drawing import Drawing
from ._labels import EDGE_ATTRS, GRAPH_ATTRS, LEGEND, NODE_ATTRS, quote

if TYPE_CHECKING:
    import graphviz  # type: ignore[import-untyped, import-not-found, unused-ignore]

__all__ = ["Inputs", "Params", "Roots", "to_dot", "to_graphviz"]

#: The outputs to draw from: one tensor, several, or several by name (the names label them).
Roots: TypeAlias = Tensor | Sequence[Tensor] | Mapping[str, Tensor]
#: Names for tensors: a mapping name -> tensor, or pairs as ``model.named_parameters()`` gives.
Params: TypeAlias = Mapping[str, Tensor] | Iterable[tuple[str, Tensor]]
#: What ``grad(roots, inputs)`` would differentiate with respect to.
Inputs: TypeAlias = Tensor | GradientEdge | Sequence[Tensor | GradientEdge]

_P = ParamSpec("_P")


def to_dot(
    roots: Roots,
    *,
    params: Params | None = None,
    inputs: Inputs | None = None,
    show_saved: bool = True,
    show_attrs: bool = False,
    max_attr_chars: int = 50,
    graph_name: str = "aiograd",
) -> str:
    """The backward graph of ``roots`` as Graphviz DOT text (torchviz's ``make_dot``).

    ``roots``: the output tensor, a sequence of them, or a mapping name -> tensor (the names
    label the outputs). Each must have a ``grad_fn`` or require grad. ``params``: names for
    tensors, a mapping name -> tensor or ``model.named_parameters()``; a leaf or saved tensor
    found there (by identity) is labelled with its name. ``inputs``: tensors (or gradient
    edges) as for ``aiograd.grad(roots, inputs)``; the nodes that call would not run are drawn
    dashed and grey, the nodes whose gradient it returns with a double outline.
    ``show_saved``: draw the tensors each node saved for backward (and the numbers it saved, in
    its label). ``show_attrs``: list each node's other attributes (and its hook counts) in its
    label, values cut to ``max_attr_chars`` characters. ``graph_name``: the digraph's name.

    Raises ``TypeError`` for a root that is not a Tensor, ``ValueError`` for no roots or a root
    with no backward graph (no ``grad_fn`` and not requiring grad), and ``grad()``'s own errors
    for bad ``inputs``.
    """
    named_roots = _check_roots(roots)
    names = _names(params)
    exec_info = _exec_info(named_roots, inputs) if inputs is not None else None
    drawing = Drawing(names, exec_info, show_saved, show_attrs, max_attr_chars)
    drawing.draw(named_roots)
    lines = [f"digraph {quote(graph_name)} {{", f"\t{GRAPH_ATTRS}", f"\t{NODE_ATTRS}", f"\t{EDGE_ATTRS}"]
    if exec_info is not None:
        lines.append(f"\tlabel={quote(LEGEND)} labelloc=b fontname=monospace fontsize=10")
    lines.extend(f"\t{statement}" for statement in drawing.statements)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _as_graphviz_source(to_text: Callable[_P, str]) -> Callable[_P, graphviz.Source]:
    """``to_graphviz``: ``to_text``'s parameters (to type checkers through ``_P``, to
    ``inspect.signature`` and the docs through ``__signature__``), its text as a Source."""

    def to_graphviz(*args: _P.args, **kwargs: _P.kwargs) -> graphviz.Source:
        """:func:`to_dot`'s text as a ``graphviz.Source`` (same arguments), which renders it
        (``.render("graph", format="svg")``, or shown inline in Jupyter). Needs the ``graphviz``
        package (``pip install aiograd[viz]``); rendering also needs Graphviz's ``dot`` program."""
        try:
            import graphviz
        except ImportError as exc:
            raise ImportError(
                "aiograd.viz.to_graphviz needs the graphviz package: pip install aiograd[viz] "
                "(to_dot gives the DOT text without it)"
            ) from exc
        return graphviz.Source(to_text(*args, **kwargs))

    to_graphviz.__qualname__ = to_graphviz.__name__
    to_graphviz.__signature__ = inspect.signature(to_text).replace(  # type: ignore[attr-defined]
        return_annotation="graphviz.Source"
    )
    return to_graphviz


to_graphviz = _as_graphviz_source(to_dot)


# ------------------------------------------------------------------------------ arguments
def _check_roots(roots: Roots) -> list[tuple[str, Tensor]]:
    """(label, tensor) per root, checked: each has a backward graph to draw."""
    if isinstance(roots, Tensor):
        items: list[tuple[str, Any]] = [("", roots)]
        where = ["roots"]
    elif isinstance(roots, Mapping):
        items = [(str(k), v) for k, v in roots.items()]
        where = [f"roots[{k!r}]" for k, _ in items]
    elif isinstance(roots, Sequence) and not isinstance(roots, str):  # pyright: ignore[reportUnnecessaryIsInstance]  (untyped callers)
        items = [("", v) for v in roots]
        where = [f"roots[{i}]" for i in range(len(items))]
    else:
        raise TypeError(
            "to_dot expects a Tensor, a sequence of Tensors or a mapping of names to Tensors as "
            f"roots, but got {type(roots).__name__}"
        )
    if not items:
        raise ValueError("to_dot got no roots: pass the output tensor(s) whose backward graph to draw")
    checked: list[tuple[str, object]] = items
    for (_, tensor), at in zip(checked, where):
        if not isinstance(tensor, Tensor):
            raise TypeError(f"to_dot: {at} is a {type(tensor).__name__}, not a Tensor")
        if tensor.grad_fn is None and not tensor.requires_grad:
            raise ValueError(
                f"to_dot: {at} does not require grad and has no grad_fn, so there is no backward "
                "graph to draw (was it computed under no_grad, or from tensors none of which "
                "requires grad?)"
            )
    return items


def _names(params: Params | None) -> dict[int, tuple[str, Tensor]]:
    """id(tensor) -> (its name(s) from ``params``, the tensor, which keeps the id valid); tied
    tensors get every name, comma-separated."""
    if params is None:
        return {}
    pairs: Iterable[tuple[Any, Any]] = (
        cast("Mapping[Any, Any]", params).items() if isinstance(params, Mapping) else params
    )
    names: dict[int, tuple[str, Tensor]] = {}
    for name, tensor in pairs:
        if not isinstance(tensor, Tensor):
            raise TypeError(f"to_dot: params[{name!r}] is a {type(tensor).__name__}, not a Tensor")
        found = names.get(id(tensor))
        names[id(tensor)] = (f"{found[0]}, {name}" if found else str(name), tensor)
    return names


def _exec_info(roots: list[tuple[str, Tensor]], inputs: Inputs) -> dict[Node, ExecInfo]:
    """What the engine would run for ``grad(roots, inputs)``: its own ``init_to_execute``, on the
    root it would make (the one root node, or a GraphRoot over several)."""
    output_edges = _input_edges(_nonempty_inputs(inputs, "grad"))
    root_edges = [edge for _, tensor in roots if (edge := edge_of(tensor)) is not None]
    root: Node = root_edges[0][0] if len(root_edges) == 1 else GraphRoot(tuple(root_edges), [])
    min_topo_nr = min((e[0].topological_nr for e in output_edges), default=0)
    return init_to_execute(root, output_edges, False, min_topo_nr)

