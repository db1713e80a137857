"""Labels and styles of ``aiograd.viz``'s DOT text: what a tensor, a saved field or an attribute
reads as, DOT quoting, and the colours (torchviz's where it has one)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from .._core._node import Node
from .._core._saved import FREED
from .._core._tensor import Tensor
from .._devices._device import CPU
from ..function._ctx import FunctionCtx

# Colours and styles, torchviz's where it has one.
GRAPH_ATTRS = 'graph [size="12,12"]'
EDGE_ATTRS = "edge [fontname=monospace fontsize=8]"  # saved fields and output numbers
NODE_ATTRS = (
    "node [align=left fontname=monospace fontsize=10 height=0.2 ranksep=0.1 shape=box style=filled]"
)
ROOT_COLOR = "darkolivegreen1"
BASE_COLOR = "darkolivegreen3"
LEAF_COLOR = "lightblue"
SAVED_COLOR = "orange"
NOT_RUN = 'style="filled,dashed" fillcolor=white color=gray50 fontcolor=gray50'
NOT_RUN_EDGE = "style=dashed color=gray50"
CAPTURED = "peripheries=2"
SAVED_EDGE = f"dir=none color={SAVED_COLOR}"
MODIFIED_EDGE = "dir=none color=red fontcolor=red"
LEGEND = (
    "dashed grey: not run by grad(roots, inputs); "
    "double outline: its incoming gradient is what grad() returns"
)


# ------------------------------------------------------------------------------ what is saved
def saved_fields(node: Node) -> list[tuple[str, Any]]:
    """(field, value) for what ``node`` saved for backward, read without unpacking anything
    (no unpack hook runs, no in-place check): its ``_saved`` fields, or a custom Function's
    ``save_for_backward`` tensors (``saved_tensors[i]``; ``FREED`` once released)."""
    if isinstance(node, FunctionCtx):  # a custom Function's node: its ``saved_tensors`` unpacks
        if node._freed:
            return [("saved_tensors", FREED)]
        return [(f"saved_tensors[{i}]", v) for i, v in enumerate(node._saved_variables) if v is not None]
    return [(field, getattr(node, field, None)) for field in node._saved]


def find_tensor(packed: Any) -> Tensor | None:
    """The tensor in what a pack hook returned (itself, or the first in a tuple/list)."""
    if isinstance(packed, Tensor):
        return packed
    if isinstance(packed, (tuple, list)):
        for item in cast("Sequence[Any]", packed):
            if isinstance(item, Tensor):
                return item
    return None


# ------------------------------------------------------------------------------ labels
def describe(tensor: Tensor) -> str:
    """A tensor as its box reads: ``(2, 3) float32`` (see ``describe_array``)."""
    return describe_array(tensor.data, tensor._device)


def describe_array(data: Any, device: Any) -> str:
    """``(2, 3) float32``; a 0-dim CPU array also by value; a device other than the CPU named."""
    text = f"{tuple(data.shape)} {data.dtype}"
    if device is CPU and data.ndim == 0:
        value = data.item()
        text += f" = {value:.6g}" if isinstance(value, float) else f" = {value!r}"
    if device is not CPU:
        text += f" {device}"
    return text


def describe_value(value: Any) -> str:
    """A saved number or a node's attribute: a tensor or array by shape and dtype, a node by
    name, anything else by its repr."""
    if isinstance(value, Tensor):
        return describe(value)
    if isinstance(value, Node):
        return value.name()
    if hasattr(value, "shape") and hasattr(value, "dtype"):  # an array
        return f"array {tuple(value.shape)} {value.dtype}"
    return repr(value)


def output_label(node: Node, output_nr: int) -> str:
    """Which output of a multi-output node an edge leaves from (split, unbind, ...)."""
    return f"taillabel={quote(str(output_nr))}" if node.num_inputs > 1 else ""


def escape(text: str) -> str:
    """``text`` inside a DOT double-quoted label, shown as it is: backslashes (Graphviz's
    escapes ``\\N``, ``\\l``, ...) and quotes escaped, ``&`` as an entity (Graphviz expands
    entities in labels), line breaks as centred ones."""
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("&", "&amp;")
    return text.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n")


def quote(text: str) -> str:
    """``text`` as a DOT double-quoted string."""
    return f'"{escape(text)}"'


def label(centred: list[str], left: Sequence[str] = ()) -> str:
    """A quoted label: ``centred`` lines, then ``left`` lines (left-justified) under a rule."""
    text = "\\n".join(escape(line) for line in centred)
    if left:
        text += "\\n" + "-" * max(len(line) for line in centred) + "\\l"
        text += "".join(escape(line) + "\\l" for line in left)
    return f'"{text}"'

