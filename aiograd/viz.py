"""The backward graph as a picture: Graphviz DOT text, after torchviz's ``make_dot``.

    print(aiograd.viz.to_dot(loss, params=model.named_parameters()))
    aiograd.viz.to_graphviz(loss).render("graph", format="svg")  # the graphviz package and `dot`

:func:`to_dot` walks ``grad_fn`` and ``next_functions`` from the given outputs and returns the
graph as DOT text; :func:`to_graphviz` wraps that text in a ``graphviz.Source`` (the optional
``graphviz`` package: ``pip install aiograd[viz]``), which renders it with Graphviz's ``dot``.

What is drawn, as torchviz draws it (docs/visualizing.md shows a picture and every style):

- each node as a grey box named as PyTorch names it (``MulBackward0``); an arrow runs from a
  node to the node that used its output in the forward pass (gradients flow against arrows);
- the outputs (``roots``) as green boxes, leaves (an ``AccumulateGrad``'s ``variable``) as blue
  boxes, with their shape and dtype and their name from ``params``; a root that is a view also
  shows its base (a dotted arrow from it);
- with ``show_saved``, the tensors a node saved for backward as orange boxes joined to it by an
  undirected orange edge named after the saved field (a saved leaf or output shares its box),
  numbers the node saved by value in its label; a saved tensor freed by a backward without
  ``retain_graph`` is listed as ``freed``, one modified in place since (the backward would
  fail) in red, one packed by saved-tensor hooks as ``packed``;
- with ``inputs``, what ``grad(roots, inputs)`` would do: nodes it would not run dashed and grey
  (as the engine decides it: its own ``init_to_execute``), nodes whose incoming gradient it
  returns with a double outline (they need not run themselves: a leaf's AccumulateGrad does
  not, ``.grad`` is not touched), and a legend under the graph.

Node ids (``n0``, ``n1``, ...) follow the walk's order, so the text is the same for the same
graph on every run. Nothing is computed: no node runs, no saved tensor is unpacked (so no hook
and no in-place check fires), and hooks, ``retain_grad`` and freed graphs are fine to draw.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from ._autograd import _as_tuple, _input_edges
from ._device import CPU
from ._engine.graph_task import ExecInfo, init_to_execute
from ._graph import GradientEdge
from ._node import AccumulateGrad, GraphRoot, Node, edge_of
from ._saved import FREED, HookedSavedTensor, SavedTensor
from ._tensor import Tensor
from .function._ctx import FunctionCtx

if TYPE_CHECKING:
    import graphviz  # type: ignore[import-untyped, import-not-found, unused-ignore]

__all__ = ["to_dot", "to_graphviz"]

#: The outputs to draw from: one tensor, several, or several by name (the names label them).
Roots: TypeAlias = Tensor | Sequence[Tensor] | Mapping[str, Tensor]
#: Names for tensors: a mapping name -> tensor, or pairs as ``model.named_parameters()`` gives.
Params: TypeAlias = Mapping[str, Tensor] | Iterable[tuple[str, Tensor]]
#: What ``grad(roots, inputs)`` would differentiate with respect to.
Inputs: TypeAlias = Tensor | GradientEdge | Sequence[Tensor | GradientEdge]

# Colours and styles, torchviz's where it has one.
_GRAPH_ATTRS = 'graph [size="12,12"]'
_NODE_ATTRS = (
    "node [align=left fontname=monospace fontsize=10 height=0.2 ranksep=0.1 shape=box style=filled]"
)
_ROOT_COLOR = "darkolivegreen1"
_BASE_COLOR = "darkolivegreen3"
_LEAF_COLOR = "lightblue"
_SAVED_COLOR = "orange"
_MODIFIED_COLOR = "red"
_NOT_RUN = 'style="filled,dashed" fillcolor=white color=gray50 fontcolor=gray50'
_NOT_RUN_EDGE = "style=dashed color=gray50"
_CAPTURED = "peripheries=2"
_LEGEND = (
    "dashed grey: not run by grad(roots, inputs); "
    "double outline: its incoming gradient is what grad() returns"
)


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
    drawing = _Drawing(names, exec_info, show_saved, show_attrs, max_attr_chars)
    drawing.draw(named_roots)
    lines = [f"digraph {_quote(graph_name)} {{", f"\t{_GRAPH_ATTRS}", f"\t{_NODE_ATTRS}"]
    if exec_info is not None:
        lines.append(f"\tlabel={_quote(_LEGEND)} labelloc=b fontname=monospace fontsize=10")
    lines.extend(f"\t{statement}" for statement in drawing.statements)
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_graphviz(
    roots: Roots,
    *,
    params: Params | None = None,
    inputs: Inputs | None = None,
    show_saved: bool = True,
    show_attrs: bool = False,
    max_attr_chars: int = 50,
    graph_name: str = "aiograd",
) -> graphviz.Source:
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
    text = to_dot(
        roots, params=params, inputs=inputs, show_saved=show_saved, show_attrs=show_attrs,
        max_attr_chars=max_attr_chars, graph_name=graph_name,
    )
    return graphviz.Source(text)


# ------------------------------------------------------------------------------ arguments
def _check_roots(roots: Roots) -> list[tuple[str, Tensor]]:
    """(label, tensor) per root, checked: each has a backward graph to draw."""
    if isinstance(roots, Tensor):
        items: list[tuple[str, Any]] = [("", roots)]
        where = ["roots"]
    elif isinstance(roots, Mapping):
        items = [(str(k), v) for k, v in roots.items()]
        where = [f"roots[{k!r}]" for k, _ in items]
    elif isinstance(roots, Sequence) and not isinstance(roots, str):
        items = [("", v) for v in roots]
        where = [f"roots[{i}]" for i in range(len(items))]
    else:
        raise TypeError(
            "to_dot expects a Tensor, a sequence of Tensors or a mapping of names to Tensors as "
            f"roots, but got {type(roots).__name__}"
        )
    if not items:
        raise ValueError("to_dot got no roots: pass the output tensor(s) whose backward graph to draw")
    for (_, tensor), at in zip(items, where):
        if not isinstance(tensor, Tensor):
            raise TypeError(f"to_dot: {at} is a {type(tensor).__name__}, not a Tensor")
        if tensor.grad_fn is None and not tensor.requires_grad:
            raise ValueError(
                f"to_dot: {at} does not require grad and has no grad_fn, so there is no backward "
                "graph to draw (was it computed under no_grad, or from tensors none of which "
                "requires grad?)"
            )
    return items


def _names(params: Params | None) -> dict[int, str]:
    """id(tensor) -> its name(s) from ``params`` (tied tensors get every name, comma-separated)."""
    if params is None:
        return {}
    pairs = params.items() if isinstance(params, Mapping) else params
    names: dict[int, str] = {}
    for name, tensor in pairs:
        if not isinstance(tensor, Tensor):
            raise TypeError(f"to_dot: params[{name!r}] is a {type(tensor).__name__}, not a Tensor")
        key = id(tensor)  # the tensors stay alive in ``params`` while the walk runs
        names[key] = f"{names[key]}, {name}" if key in names else str(name)
    return names


def _exec_info(roots: list[tuple[str, Tensor]], inputs: Inputs) -> dict[Node, ExecInfo]:
    """What the engine would run for ``grad(roots, inputs)``: its own ``init_to_execute``, on the
    root it would make (the one root node, or a GraphRoot over several)."""
    as_tuple = _as_tuple(inputs)
    if not as_tuple:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    output_edges = _input_edges(as_tuple)
    root_edges = [edge for _, tensor in roots if (edge := edge_of(tensor)) is not None]
    root: Node = root_edges[0][0] if len(root_edges) == 1 else GraphRoot(tuple(root_edges), [])
    min_topo_nr = min((e[0].topological_nr for e in output_edges), default=0)
    return init_to_execute(root, output_edges, False, min_topo_nr)


# ------------------------------------------------------------------------------ the drawing
class _Drawing:
    """The DOT statements of one graph, made while walking it."""

    def __init__(
        self, names: dict[int, str], exec_info: dict[Node, ExecInfo] | None, show_saved: bool,
        show_attrs: bool, max_attr_chars: int,
    ) -> None:
        self.names = names
        self.exec_info = exec_info
        self.show_saved = show_saved
        self.show_attrs = show_attrs
        self.max_attr_chars = max_attr_chars
        self.statements: list[str] = []
        self._ids: dict[int, str] = {}  # id(object) -> DOT id, in order of first reference
        self._alive: list[object] = []  # every object keyed by id() above, kept for the walk
        self._drawn: set[int] = set()  # ids of the nodes (graph nodes, tensors) already drawn
        #: (id(node), output_nr) -> the root tensor that is that output: a saved output that is
        #: a root shares its box
        self._outputs: dict[tuple[int, int], Tensor] = {}

    # ----------------------------------------------------------------------------- ids
    def dot_id(self, obj: object) -> str:
        key = id(obj)
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = f"n{len(self._ids)}"
            self._alive.append(obj)
        return found

    def first_time(self, obj: object) -> bool:
        """True the first time it is asked about ``obj`` (which is then drawn)."""
        key = id(obj)
        if key in self._drawn:
            return False
        self._drawn.add(key)
        self.dot_id(obj)
        return True

    # ----------------------------------------------------------------------------- status
    def runs(self, node: Node) -> bool:
        """Whether the engine would run ``node`` (always, without ``inputs``)."""
        if self.exec_info is None:
            return True
        info = self.exec_info.get(node)
        return info is not None and info.needed

    def captured(self, node: Node) -> bool:
        """Whether ``grad()`` returns the gradient flowing into ``node``."""
        if self.exec_info is None:
            return False
        info = self.exec_info.get(node)
        return info is not None and bool(info.captures)

    # ----------------------------------------------------------------------------- walk
    def draw(self, roots: list[tuple[str, Tensor]]) -> None:
        """The roots' boxes first (so a root is drawn as one wherever else it appears), then
        the graph from each root's ``grad_fn``."""
        walked: list[Tensor] = []
        for name, root in roots:
            if not self.first_time(root):
                continue  # given twice
            walked.append(root)
            if root.grad_fn is not None:
                self._outputs.setdefault((id(root.grad_fn), root.output_nr), root)
            self.tensor_box(root, name or self.names.get(id(root), ""), _ROOT_COLOR)
            base = root._base
            if base is not None:
                if self.first_time(base):
                    self.tensor_box(base, self.names.get(id(base), ""), _BASE_COLOR)
                self.edge(self.dot_id(base), self.dot_id(root), "style=dotted")
        for root in walked:
            fn = root.grad_fn
            if fn is not None:
                self.edge(self.dot_id(fn), self.dot_id(root), _output_label(fn, root.output_nr))
                self.walk(fn)

    def walk(self, fn: Node) -> None:
        # Depth first, iteratively (a 100,000-node chain draws too), children in edge order.
        stack = [fn]
        while stack:
            node = stack.pop()
            if not self.first_time(node):
                continue
            self.draw_node(node)
            children: list[Node] = []
            for edge in node.next_edges:
                if edge is None:
                    continue
                child, input_nr = edge
                attrs = [_output_label(child, input_nr)]
                if not (self.runs(node) and (self.runs(child) or self.captured(child))):
                    attrs.append(_NOT_RUN_EDGE)
                self.edge(self.dot_id(child), self.dot_id(node), *attrs)
                children.append(child)
            stack.extend(reversed(children))

    def draw_node(self, node: Node) -> None:
        nid = self.dot_id(node)
        header = [node.name()]
        variable = node.variable if isinstance(node, AccumulateGrad) else None
        if isinstance(node, AccumulateGrad) and variable is None:
            header.append("(its leaf is gone)")
        saved = _saved_fields(node) if self.show_saved else []
        tensors: list[tuple[str, SavedTensor | Tensor]] = []
        for field, value in saved:
            if value is FREED:
                header.append(f"{field}: freed")
            elif isinstance(value, (SavedTensor, Tensor)):
                tensors.append((field, value))
            elif value is not None:  # (None: nothing saved there, e.g. the operand was a number)
                header.append(f"{field} = {self._cut(_describe_value(value))}")
        attr_lines = self._attribute_lines(node) if self.show_attrs else []
        attrs = [f"label={_label(header, attr_lines)}"]
        if not self.runs(node):
            attrs.append(_NOT_RUN)
        if self.captured(node):
            attrs.append(_CAPTURED)
        self.statements.append(f"{nid} [{' '.join(attrs)}]")
        if variable is not None:
            if self.first_time(variable):
                self.tensor_box(variable, self.names.get(id(variable), ""), _LEAF_COLOR)
            self.edge(self.dot_id(variable), nid, "" if self.runs(node) else _NOT_RUN_EDGE)
        for field, value in tensors:
            self.draw_saved(node, field, value)

    def draw_saved(self, node: Node, field: str, value: SavedTensor | Tensor) -> None:
        """An orange box for one saved tensor, or the box of the tensor it is (a leaf, a root,
        or a tensor saved by another node too), joined to ``node`` by an edge named ``field``."""
        box: object
        if isinstance(value, Tensor):  # a tensor kept on a custom Function's ctx
            box, lines = value, [_describe(value)]
        elif isinstance(value, HookedSavedTensor):
            packed = value.hooked.packed
            inner = _find_tensor(packed)
            box = value
            lines = ["packed by hooks", _describe(inner) if inner is not None else type(packed).__name__]
        elif value.tensor is not None:  # a saved input: the tensor itself
            box, lines = value.tensor, [_describe(value.tensor)]
        else:  # a saved output: its array, and the root's box when it is a root
            root = self._outputs.get((id(node), value.output_nr))
            box = root if root is not None and root.data is value.data else value.data
            lines = [_describe_array(value.data, value.device)]
        # A leaf's box is blue wherever it is first drawn (its AccumulateGrad may come later).
        leaf = isinstance(box, Tensor) and box.grad_fn is None and box.requires_grad
        color = _LEAF_COLOR if leaf else _SAVED_COLOR
        if isinstance(value, SavedTensor) and value.version_counter[0] != value.version:
            color = _MODIFIED_COLOR
            lines.append(f"modified in place: version {value.version_counter[0]}, saved at {value.version}")
        if self.first_time(box):
            name = self.names.get(id(box), "")
            body = ([name] if name else []) + lines
            self.statements.append(f"{self.dot_id(box)} [label={_label(body)} fillcolor={color}]")
        self.edge(self.dot_id(box), self.dot_id(node), f"label={_quote(field)}", _SAVED_EDGE)

    def tensor_box(self, tensor: Tensor, name: str, color: str) -> None:
        lines = ([name] if name else []) + [_describe(tensor)]
        self.statements.append(f"{self.dot_id(tensor)} [label={_label(lines)} fillcolor={color}]")

    def edge(self, tail: str, head: str, *attrs: str) -> None:
        given = " ".join(a for a in attrs if a)
        self.statements.append(f"{tail} -> {head} [{given}]" if given else f"{tail} -> {head}")

    def _cut(self, text: str) -> str:
        limit = self.max_attr_chars
        return text if len(text) <= limit else text[:limit] + "..."

    def _attribute_lines(self, node: Node) -> list[str]:
        """``name: value`` for the node's public attributes other than its saved fields, and
        its hook counts (what torchviz's ``show_attrs`` lists)."""
        saved = {field for field, _ in _saved_fields(node)} | set(node._saved)
        own = vars(node) if hasattr(node, "__dict__") else {}
        lines = [
            f"{key}: {self._cut(_describe_value(value))}"
            for key, value in own.items()
            if not key.startswith("_") and key not in saved
        ]
        hooks = node._hooks
        if hooks is not None:
            counts = [
                ("pre", len(hooks.pre)), ("post", len(hooks.post)),
                ("tensor_pre", sum(len(h) for h in hooks.tensor_pre.values())),
                ("retains_grad", len(hooks.retains_grad)), ("post_accumulate", len(hooks.post_accumulate)),
            ]
            listed = ", ".join(f"{kind} {n}" for kind, n in counts if n)
            if listed:
                lines.append(f"hooks: {listed}")
        return lines


# ------------------------------------------------------------------------------ what is saved
def _saved_fields(node: Node) -> list[tuple[str, Any]]:
    """(field, value) for what ``node`` saved for backward, read without unpacking anything
    (no unpack hook runs, no in-place check): its ``_saved`` fields, or a custom Function's
    ``save_for_backward`` tensors (``saved_tensors[i]``; ``FREED`` once released)."""
    if isinstance(node, FunctionCtx):  # a custom Function's node: its ``saved_tensors`` unpacks
        if node._freed:
            return [("saved_tensors", FREED)]
        return [(f"saved_tensors[{i}]", v) for i, v in enumerate(node._saved_variables) if v is not None]
    return [(field, getattr(node, field, None)) for field in node._saved]


def _find_tensor(packed: Any) -> Tensor | None:
    """The tensor in what a pack hook returned (itself, or the first in a tuple/list)."""
    if isinstance(packed, Tensor):
        return packed
    if isinstance(packed, (tuple, list)):
        for item in packed:
            if isinstance(item, Tensor):
                return item
    return None


# ------------------------------------------------------------------------------ labels
def _describe(tensor: Tensor) -> str:
    return _describe_array(tensor.data, tensor._device)


def _describe_array(data: Any, device: Any) -> str:
    """``(2, 3) float32``; a 0-dim CPU array also by value; a device other than the CPU named."""
    text = f"{tuple(data.shape)} {data.dtype}"
    if device is CPU and data.ndim == 0:
        value = data.item()
        text += f" = {value:.6g}" if isinstance(value, float) else f" = {value!r}"
    if device is not CPU:
        text += f" {device}"
    return text


def _describe_value(value: Any) -> str:
    if isinstance(value, Tensor):
        return _describe(value)
    if isinstance(value, Node):
        return value.name()
    if hasattr(value, "shape") and hasattr(value, "dtype"):  # an array
        return f"array {tuple(value.shape)} {value.dtype}"
    return repr(value)


def _output_label(node: Node, output_nr: int) -> str:
    """Which output of a multi-output node an edge leaves from (split, unbind, ...)."""
    return f"taillabel={_quote(str(output_nr))}" if node.num_inputs > 1 else ""


_SAVED_EDGE = f"dir=none color={_SAVED_COLOR} fontsize=8"


def _escape(text: str) -> str:
    """``text`` inside a DOT double-quoted label, shown as it is: backslashes (Graphviz's
    escapes ``\\N``, ``\\l``, ...) and quotes escaped, ``&`` as an entity (Graphviz expands
    entities in labels), line breaks as centred ones."""
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("&", "&amp;")
    return text.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n")


def _quote(text: str) -> str:
    return f'"{_escape(text)}"'


def _label(centred: list[str], left: Sequence[str] = ()) -> str:
    """A quoted label: ``centred`` lines, then ``left`` lines (left-justified) under a rule."""
    text = "\\n".join(_escape(line) for line in centred)
    if left:
        text += "\\n" + "-" * max(len(line) for line in centred) + "\\l"
        text += "".join(_escape(line) + "\\l" for line in left)
    return f'"{text}"'
