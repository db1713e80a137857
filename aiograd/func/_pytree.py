"""Nested tuples, lists and dicts of leaves (torch's pytrees, the part the transforms need):
flatten to a list of leaves and a spec, rebuild from them, and broadcast a prefix tree (such as
``in_dims``) over a spec."""

from __future__ import annotations

from typing import Any


class TreeSpec:
    """The shape of a pytree: ``kind`` None for a leaf, else the container's type, with its dict
    keys (``context``) and one spec per child."""

    __slots__ = ("kind", "context", "children", "num_leaves")

    def __init__(self, kind: type | None, context: Any, children: list[TreeSpec]) -> None:
        self.kind = kind
        self.context = context
        self.children = children
        self.num_leaves = 1 if kind is None else sum(c.num_leaves for c in children)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, TreeSpec) and self.kind is other.kind and self.context == other.context
            and self.children == other.children
        )

    def __hash__(self) -> int:  # pragma: no cover - specs are compared, not hashed
        return hash((self.kind, self.num_leaves))

    def __repr__(self) -> str:
        if self.kind is None:
            return "*"
        inner = ", ".join(repr(c) for c in self.children)
        if self.kind is dict:
            inner = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.context, self.children))
        return f"{self.kind.__name__}({inner})"


LEAF = TreeSpec(None, None, [])


def _is_node(tree: Any) -> bool:
    return isinstance(tree, (tuple, list, dict))


def tree_flatten(tree: Any) -> tuple[list[Any], TreeSpec]:
    """``(the leaves in order, the spec)``; tuples (namedtuples too), lists and dicts are nodes."""
    leaves: list[Any] = []

    def walk(node: Any) -> TreeSpec:
        if isinstance(node, dict):
            keys = list(node)
            return TreeSpec(dict, keys, [walk(node[k]) for k in keys])
        if isinstance(node, (tuple, list)):
            return TreeSpec(type(node), None, [walk(c) for c in node])
        leaves.append(node)
        return LEAF

    spec = walk(tree)
    return leaves, spec


def tree_unflatten(leaves: list[Any], spec: TreeSpec) -> Any:
    """The pytree with ``spec``'s structure and ``leaves`` in order."""
    it = iter(leaves)

    def build(s: TreeSpec) -> Any:
        if s.kind is None:
            return next(it)
        children = [build(c) for c in s.children]
        if s.kind is dict:
            return dict(zip(s.context, children))
        if s.kind is list:
            return children
        if s.kind is tuple:
            return tuple(children)
        if hasattr(s.kind, "_fields"):  # a namedtuple
            return s.kind(*children)
        return s.kind(children)

    return build(spec)


def tree_map(fn: Any, tree: Any) -> Any:
    """``tree`` with ``fn`` applied to each leaf."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def broadcast_to_and_flatten(prefix: Any, spec: TreeSpec) -> list[Any] | None:
    """``prefix``'s leaves repeated over the subtrees of ``spec`` they stand for (a leaf of
    ``prefix`` covers a whole subtree), or None when ``prefix`` is not a prefix of ``spec``."""
    out: list[Any] = []

    def walk(p: Any, s: TreeSpec) -> bool:
        if not _is_node(p):
            out.extend([p] * s.num_leaves)
            return True
        if s.kind is None:
            return False
        if isinstance(p, dict):
            if s.kind is not dict or set(p) != set(s.context):
                return False
            return all(walk(p[k], c) for k, c in zip(s.context, s.children))
        if s.kind is dict or not isinstance(p, (tuple, list)) or len(p) != len(s.children):
            return False
        if isinstance(p, list) != (s.kind is list):
            return False
        return all(walk(pc, c) for pc, c in zip(p, s.children))

    return out if walk(prefix, spec) else None
