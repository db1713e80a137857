"""The walk of ``aiograd.viz``: one DOT statement per graph node, tensor box and edge, in the
order the graph is walked (depth first from each root, ``next_functions`` in order)."""

from __future__ import annotations

from .._core._node import AccumulateGrad, Node
from .._core._saved import FREED, HookedSavedTensor, SavedTensor
from .._core._tensor import Tensor
from .._engine.graph_task import ExecInfo
from ._labels import (
    BASE_COLOR,
    CAPTURED,
    LEAF_COLOR,
    MODIFIED_EDGE,
    NOT_RUN,
    NOT_RUN_EDGE,
    ROOT_COLOR,
    SAVED_COLOR,
    SAVED_EDGE,
    describe,
    describe_array,
    describe_value,
    find_tensor,
    label,
    output_label,
    quote,
    saved_fields,
)

__all__ = ["Drawing"]


class Drawing:
    """The DOT statements of one graph, made while walking it."""

    def __init__(
        self, names: dict[int, tuple[str, Tensor]], exec_info: dict[Node, ExecInfo] | None, show_saved: bool,
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
        """``obj``'s DOT id: ``n`` and the order in which the walk first met it."""
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

    def name_of(self, tensor: object) -> str:
        """The name ``params`` gives ``tensor`` (by identity), or ""."""
        entry = self.names.get(id(tensor))
        return entry[0] if entry is not None else ""

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
            self.tensor_box(root, name or self.name_of(root), ROOT_COLOR)
            base = root._base
            if base is not None:
                if self.first_time(base):
                    self.tensor_box(base, self.name_of(base), BASE_COLOR)
                self.edge(self.dot_id(base), self.dot_id(root), "style=dotted")
        for root in walked:
            fn = root.grad_fn
            if fn is not None:
                self.edge(self.dot_id(fn), self.dot_id(root), output_label(fn, root.output_nr))
                self.walk(fn)

    def walk(self, fn: Node) -> None:
        """Draw ``fn`` and every node it leads to that is not drawn yet, with their edges."""
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
                attrs = [output_label(child, input_nr)]
                if not (self.runs(node) and (self.runs(child) or self.captured(child))):
                    attrs.append(NOT_RUN_EDGE)
                self.edge(self.dot_id(child), self.dot_id(node), *attrs)
                children.append(child)
            stack.extend(reversed(children))

    def draw_node(self, node: Node) -> None:
        """One graph node: its label (name, saved numbers, attributes), its style under
        ``inputs``, a leaf's box and the boxes of the tensors it saved."""
        nid = self.dot_id(node)
        header = [node.name()]
        variable = node.variable if isinstance(node, AccumulateGrad) else None
        if isinstance(node, AccumulateGrad) and variable is None:
            header.append("(its leaf is gone)")
        saved = saved_fields(node) if self.show_saved else []
        tensors: list[tuple[str, SavedTensor | Tensor]] = []
        for field, value in saved:
            if value is FREED:
                header.append(f"{field}: freed")
            elif isinstance(value, (SavedTensor, Tensor)):
                tensors.append((field, value))
            elif value is not None:  # (None: nothing saved there, e.g. the operand was a number)
                header.append(f"{field} = {self._cut(describe_value(value))}")
        attr_lines = self._attribute_lines(node) if self.show_attrs else []
        attrs = [f"label={label(header, attr_lines)}"]
        if not self.runs(node):
            attrs.append(NOT_RUN)
        if self.captured(node):
            attrs.append(CAPTURED)
        self.statements.append(f"{nid} [{' '.join(attrs)}]")
        if variable is not None:
            if self.first_time(variable):
                self.tensor_box(variable, self.name_of(variable), LEAF_COLOR)
            self.edge(self.dot_id(variable), nid, "" if self.runs(node) else NOT_RUN_EDGE)
        for field, value in tensors:
            self.draw_saved(node, field, value)

    def draw_saved(self, node: Node, field: str, value: SavedTensor | Tensor) -> None:
        """An orange box for one saved tensor, or the box of the tensor it is (a leaf, a root,
        or a tensor saved by another node too), joined to ``node`` by an edge named ``field``."""
        box: object
        if isinstance(value, Tensor):  # a tensor kept on a custom Function's ctx
            box, lines = value, [describe(value)]
        elif isinstance(value, HookedSavedTensor):
            packed = value.hooked.packed
            inner = find_tensor(packed)
            box = value
            lines = ["packed by hooks", describe(inner) if inner is not None else type(packed).__name__]
        elif value.tensor is not None:  # a saved input: the tensor itself
            box, lines = value.tensor, [describe(value.tensor)]
        else:  # a saved output: its array, and the root's box when it is a root
            root = self._outputs.get((id(node), value.output_nr))
            box = root if root is not None and root.data is value.data else value.data
            lines = [describe_array(value.data, value.device)]
        # A leaf's box is blue wherever it is first drawn (its AccumulateGrad may come later).
        leaf = isinstance(box, Tensor) and box.grad_fn is None and box.requires_grad
        if self.first_time(box):
            name = self.name_of(box)
            body = ([name] if name else []) + lines
            color = LEAF_COLOR if leaf else SAVED_COLOR
            self.statements.append(f"{self.dot_id(box)} [label={label(body)} fillcolor={color}]")
        edge_label, style = field, SAVED_EDGE
        if (
            isinstance(value, SavedTensor) and not isinstance(value, HookedSavedTensor)
            and value.version_counter[0] != value.version
        ):
            # The backward's in-place check would fail on this save (a save through hooks is
            # not checked). A mark of this edge: another node may have saved the same tensor
            # at its current version.
            edge_label += f": modified in place, version {value.version_counter[0]}, saved at {value.version}"
            style = MODIFIED_EDGE
        self.edge(self.dot_id(box), self.dot_id(node), f"label={quote(edge_label)}", style)

    def tensor_box(self, tensor: Tensor, name: str, color: str) -> None:
        """A root's, a base's or a leaf's box."""
        lines = ([name] if name else []) + [describe(tensor)]
        self.statements.append(f"{self.dot_id(tensor)} [label={label(lines)} fillcolor={color}]")

    def edge(self, tail: str, head: str, *attrs: str) -> None:
        given = " ".join(a for a in attrs if a)
        self.statements.append(f"{tail} -> {head} [{given}]" if given else f"{tail} -> {head}")

    def _cut(self, text: str) -> str:
        limit = self.max_attr_chars
        return text if len(text) <= limit else text[:limit] + "..."

    def _attribute_lines(self, node: Node) -> list[str]:
        """``name: value`` for the node's public attributes other than its saved fields, and
        its hook counts (what torchviz's ``show_attrs`` lists)."""
        saved = {field for field, _ in saved_fields(node)} | set(node._saved)
        own = vars(node) if hasattr(node, "__dict__") else {}
        lines = [
            f"{key}: {self._cut(describe_value(value))}"
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


