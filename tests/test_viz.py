"""aiograd.viz: the backward graph as DOT text, checked against the graph it draws.

The DOT is parsed back (every line must be one statement of the forms ``to_dot`` writes, so a
broken quote fails the parse) and compared with the live graph: node names, edges in
``next_functions`` order, leaves and their names, saved tensors, and for ``inputs=`` the nodes
that the engine really runs under ``grad()`` (seen by pre-hooks on every node).
"""

from __future__ import annotations

import re
import shutil
import sys
from collections import deque
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag
from aiograd import nn, viz
from aiograd.function import Function
from aiograd.graph import saved_tensors_hooks

_NODE = re.compile(r'(n\d+) \[label="((?:[^"\\]|\\.)*)"(.*)\]')
_EDGE = re.compile(r"(n\d+) -> (n\d+)(?: \[(.*)\])?")
_HEADER = 4  # digraph line, graph, node and edge defaults


def _lines(label: str) -> list[str]:
    """A DOT label's text, line by line (Graphviz's escapes undone)."""
    lines, current, i = [], "", 0
    while i < len(label):
        if label[i] == "\\":
            escaped, i = label[i + 1], i + 2
            if escaped in "nlr":
                lines.append(current.replace("&amp;", "&"))
                current = ""
            else:
                current += escaped
        else:
            current, i = current + label[i], i + 1
    lines.append(current.replace("&amp;", "&"))
    return [line for line in lines if line]


class Dot:
    """A parsed ``to_dot`` text: its nodes (id -> label lines, attributes) and edges."""

    def __init__(self, text: str) -> None:
        body = text.splitlines()
        assert body[-1] == "}" and text.endswith("}\n")
        self.nodes: dict[str, tuple[list[str], str]] = {}
        self.edges: list[tuple[str, str, str]] = []
        for line in body[_HEADER:-1]:
            assert line.startswith("\t"), line
            statement = line[1:]
            if (m := _NODE.fullmatch(statement)) is not None:
                self.nodes[m[1]] = (_lines(m[2]), m[3])
            elif (m := _EDGE.fullmatch(statement)) is not None:
                self.edges.append((m[1], m[2], m[3] or ""))
            else:
                assert statement.startswith("label="), statement  # the legend

    def is_function(self, nid: str) -> bool:
        attrs = self.nodes[nid][1]
        return "fillcolor" not in attrs or "dashed" in attrs

    def into(self, head: str, functions_only: bool = True) -> list[tuple[str, str]]:
        return [
            (t, a) for t, h, a in self.edges
            if h == head and (not functions_only or self.is_function(t))
        ]

    def boxes(self, color: str) -> list[str]:
        return [nid for nid, (_, attrs) in self.nodes.items() if f"fillcolor={color}" in attrs]

    def label(self, nid: str) -> list[str]:
        return self.nodes[nid][0]


def _match(dot: Dot, roots: list[ag.Tensor]) -> dict[Any, str]:
    """Map each graph node reachable from ``roots`` to its DOT id, checking on the way that the
    DOT has exactly the graph's nodes, names and edges (in ``next_functions`` order)."""
    ids: dict[Any, str] = {}
    root_boxes = dot.boxes("darkolivegreen1")
    assert len(root_boxes) == len(roots)
    queue: deque[Any] = deque()
    for box, root in zip(root_boxes, roots):
        [(fid, _)] = dot.into(box)
        assert ids.setdefault(root.grad_fn, fid) == fid
        queue.append(root.grad_fn)
    seen = set()
    while queue:
        node = queue.popleft()
        if node in seen:
            continue
        seen.add(node)
        nid = ids[node]
        assert dot.label(nid)[0] == node.name()
        children = [(c, nr) for c, nr in node.next_functions if c is not None]
        got = dot.into(nid)
        assert len(got) == len(children), (node.name(), got)
        for (child, nr), (cid, attrs) in zip(children, got):
            assert ids.setdefault(child, cid) == cid
            assert (f'taillabel="{nr}"' in attrs) == (child.num_inputs > 1), attrs
            queue.append(child)
    assert sorted(ids.values()) == sorted(n for n in dot.nodes if dot.is_function(n))  # nothing else
    assert len(set(ids.values())) == len(ids)
    return ids


def _leaves(n: int, seed: int = 0) -> list[ag.Tensor]:
    rng = np.random.default_rng(seed)
    return [ag.tensor(rng.standard_normal(4), requires_grad=True) for _ in range(n)]


def test_a_small_graph_draws_exactly():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    w = ag.tensor([3.0, 4.0], requires_grad=True)
    loss = (x * w).sum()
    assert viz.to_dot({"loss": loss}, params={"x": x, "w": w}) == (
        'digraph "aiograd" {\n'
        '\tgraph [size="12,12"]\n'
        "\tnode [align=left fontname=monospace fontsize=10 height=0.2 ranksep=0.1 shape=box style=filled]\n"
        "\tedge [fontname=monospace fontsize=8]\n"
        '\tn0 [label="loss\\n() float64 = 11" fillcolor=darkolivegreen1]\n'
        "\tn1 -> n0\n"
        '\tn1 [label="SumBackward0"]\n'
        "\tn2 -> n1\n"
        '\tn2 [label="MulBackward0"]\n'
        '\tn3 [label="x\\n(2,) float64" fillcolor=lightblue]\n'
        '\tn3 -> n2 [label="a" dir=none color=orange]\n'
        '\tn4 [label="w\\n(2,) float64" fillcolor=lightblue]\n'
        '\tn4 -> n2 [label="b" dir=none color=orange]\n'
        "\tn5 -> n2\n"
        "\tn6 -> n2\n"
        '\tn5 [label="AccumulateGrad"]\n'
        "\tn3 -> n5\n"
        '\tn6 [label="AccumulateGrad"]\n'
        "\tn4 -> n6\n"
        "}\n"
    )


def _random_graph(seed: int) -> tuple[ag.Tensor, list[ag.Tensor]]:
    """A seeded random graph over three leaves: unary and binary ops on earlier results
    (intermediates and leaves reused), and splits joined again (multi-output nodes)."""
    rng = np.random.default_rng(seed)
    leaves = _leaves(3, seed)
    pool = list(leaves)
    unary = [lambda t: t.exp(), lambda t: t.sin(), lambda t: t * 2.0, lambda t: t.tanh()]
    binary = [lambda a, b: a * b, lambda a, b: a + b, lambda a, b: a - b]
    for _ in range(14):
        pick = [pool[int(i)] for i in rng.integers(len(pool), size=2)]
        kind = rng.integers(3)
        if kind == 0:
            pool.append(unary[rng.integers(len(unary))](pick[0]))
        elif kind == 1:
            pool.append(binary[rng.integers(len(binary))](*pick))
        else:
            a, b = pick[0].split(2)
            pool.append(ag.cat([b * 1.5, a]))
    return (pool[-1] * pool[-2] + pool[-3]).sum(), leaves


def test_the_dot_has_the_graphs_nodes_and_edges():
    for seed in range(3):
        root, leaves = _random_graph(seed)
        params = {f"leaf{i}": t for i, t in enumerate(leaves)}
        for show_saved in (False, True):
            dot = Dot(viz.to_dot(root, params=params, show_saved=show_saved))
            ids = _match(dot, [root])
            # Each leaf's box (named) feeds its AccumulateGrad, and only it.
            for name, leaf in params.items():
                acc = ids.get(leaf._accumulator)
                if acc is None:
                    continue  # this graph does not use the leaf
                [(box, _)] = dot.into(acc, functions_only=False)
                assert dot.label(box) == [name, "(4,) float64"]
            saved = [e for e in dot.edges if "dir=none" in e[2]]
            assert bool(saved) == show_saved


def test_saved_tensors_numbers_freed_modified_and_hooked():
    x = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.exp()
    z = (y * 3.0).sum()
    dot = Dot(viz.to_dot(z, params={"x": x}))
    ids = _match(dot, [z])
    mul, exp = z.grad_fn.next_functions[0][0], y.grad_fn
    assert dot.label(ids[mul]) == ["MulBackward0", "b = 3.0"]  # a number, by value
    [(box, attrs)] = dot.into(ids[exp], functions_only=False)[:1]
    assert dot.label(box) == ["(3,) float64"] and 'label="result"' in attrs  # its output
    assert "fillcolor=orange" in dot.nodes[box][1]
    # A backward without retain_graph frees them: listed as freed, nothing raises.
    ag.sync.backward(z)
    dot = Dot(viz.to_dot(z))
    assert dot.label(_match(dot, [z])[exp]) == ["ExpBackward0", "result: freed"]

    # Modified in place after it was saved (an intermediate, and a leaf under no_grad, as an
    # optimizer step before the backward does): the backward would fail; a red edge says so.
    c = x.clone()
    s = (c.sin() * x).sum()
    c.mul_(2.0)
    with ag.no_grad():
        x.add_(1.0)
    dot = Dot(viz.to_dot(s, params={"x": x}))
    ids = _match(dot, [s])
    sin, mul = s.grad_fn.next_functions[0][0].next_functions[0][0], s.grad_fn.next_functions[0][0]
    [(box, attrs)] = [e for e in dot.into(ids[sin], functions_only=False) if "dir=none" in e[1]]
    assert dot.label(box) == ["(3,) float64"] and "fillcolor=orange" in dot.nodes[box][1]
    assert 'label="x: modified in place, version 1, saved at 0"' in attrs and "color=red" in attrs
    saved_by_mul = [(dot.label(t), a) for t, a in dot.into(ids[mul], functions_only=False) if "dir=none" in a]
    assert saved_by_mul == [
        (["(3,) float64"], 'label="a" dir=none color=orange'),
        (["x", "(3,) float64"], 'label="b: modified in place, version 1, saved at 0" dir=none color=red fontcolor=red'),
    ]

    # Packed by saved-tensor hooks: drawn from what the pack hook returned, never unpacked.
    unpacked = []
    with saved_tensors_hooks(lambda t: t.detach(), lambda t: unpacked.append(t) or t):
        h = (x * 1.0).cos()
    dot = Dot(viz.to_dot(h))
    [(box, _)] = dot.into(_match(dot, [h])[h.grad_fn], functions_only=False)[:1]
    assert dot.label(box) == ["packed by hooks", "(3,) float64"] and unpacked == []

    # A custom Function's save_for_backward, then freed.
    class Double(Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    d = Double.apply(x).sum()
    dot = Dot(viz.to_dot(d, params={"x": x}))
    node = d.grad_fn.next_functions[0][0]
    saved = [(t, a) for t, a in dot.into(_match(dot, [d])[node], functions_only=False) if "dir=none" in a]
    assert [(dot.label(t), 'label="saved_tensors[0]"' in a) for t, a in saved] == [(["x", "(3,) float64"], True)]
    ag.sync.backward(d)
    dot = Dot(viz.to_dot(d))
    assert dot.label(_match(dot, [d])[node]) == ["DoubleBackward", "saved_tensors: freed"]


def test_hooks_retain_grad_views_and_attributes_are_drawn():
    (x,) = _leaves(1)
    y = x.exp()
    y.retain_grad()
    y.grad_fn.register_prehook(lambda grads: None)
    y.grad_fn.register_hook(lambda grads_in, grads_out: None)
    v = (y * 2.0)[1:]  # a view: its base is drawn too
    dot = Dot(viz.to_dot(v, show_attrs=True, max_attr_chars=8))
    ids = _match(dot, [v])
    assert dot.label(ids[y.grad_fn]) == [
        "ExpBackward0", "------------", "hooks: pre 1, post 1, retains_grad 1"
    ]
    mul = v.grad_fn.next_functions[0][0]
    assert dot.label(ids[mul]) == ["MulBackward0", "b = 2.0", "------------", "a_shape: (4,)", "b_shape: ()"]
    # values cut to max_attr_chars
    assert dot.label(ids[v.grad_fn])[2:] == ["shape: (4,)", "index: ((slice(..."]
    [base] = dot.boxes("darkolivegreen3")
    assert dot.label(base) == ["(4,) float64"]
    [root] = dot.boxes("darkolivegreen1")
    assert (base, root, "style=dotted") in dot.edges


def test_inputs_marks_what_grad_would_not_run():
    x, w, b = _leaves(3)
    h = x * w
    s = w.sin()
    out1 = (h.exp() + s).sum()
    out2 = (s * b).mean()
    roots = [out1, out2]
    nodes = list(_match(Dot(viz.to_dot(roots)), roots))
    ran: list[Any] = []
    for node in nodes:
        node.register_prehook(lambda grads, node=node: ran.append(node))
    # Several roots (the engine starts from a GraphRoot) and one (from the root's own node);
    # ``b`` is not in out1's graph at all: nothing runs.
    cases = [(roots, [x]), (roots, [w]), (roots, [h]), (roots, [s, b]), (roots, [b, x]),
             (roots, [h, w]), ([out1], [w]), ([out1], [b])]
    for outputs, inputs in cases:
        ran.clear()
        ag.sync.grad(outputs, inputs, retain_graph=True, allow_unused=True)
        dot = Dot(viz.to_dot(outputs, inputs=inputs))
        ids = _match(dot, outputs)
        drawn_running = {n for n in ids if "dashed" not in dot.nodes[ids[n]][1]}
        assert drawn_running == set(ran), [n.name() for n in ran]
        captured = {n for n in ids if "peripheries=2" in dot.nodes[ids[n]][1]}
        assert captured == {t.grad_fn or t._accumulator for t in inputs} & set(ids)
        assert "dashed grey: not run by grad(roots, inputs)" in viz.to_dot(outputs, inputs=inputs)
    assert ran == []  # the last case
    # Without inputs nothing is dashed: a backward runs every node.
    assert "dashed" not in viz.to_dot(roots)


def test_an_mlp_draws_with_its_parameter_names():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    loss = model(ag.randn(5, 3)).pow(2).sum()
    dot = Dot(viz.to_dot(loss, params=model.named_parameters()))
    ids = _match(dot, [loss])
    for name, p in model.named_parameters():
        [box] = [n for n in dot.boxes("lightblue") if dot.label(n)[0] == name]
        assert dot.label(box) == [name, f"{tuple(p.shape)} {p.dtype}"]
        assert (box, ids[p._accumulator], "") in dot.edges


def test_labels_and_names_are_escaped():
    name = 'w "q" \\N <b>&amp;\nnext'
    w = ag.tensor([1.0], requires_grad=True)
    text = viz.to_dot(w * 2.0, params={name: w}, graph_name='my "graph"')
    assert text.startswith('digraph "my \\"graph\\"" {\n')
    assert '[label="w \\"q\\" \\\\N <b>&amp;amp;\\nnext\\n(1,) float64" fillcolor=lightblue]' in text
    dot = Dot(text)  # every line parses: no quote left open
    [box] = dot.boxes("lightblue")
    assert dot.label(box) == ['w "q" \\N <b>&amp;', "next", "(1,) float64"]


def test_errors_name_the_problem():
    with pytest.raises(TypeError, match=r"^to_dot: roots\[1\] is a float, not a Tensor$"):
        viz.to_dot([ag.tensor([1.0], requires_grad=True), 1.0])
    with pytest.raises(TypeError, match="to_dot expects a Tensor, a sequence of Tensors or a mapping"):
        viz.to_dot(3)
    with pytest.raises(ValueError, match="^to_dot got no roots"):
        viz.to_dot([])
    with pytest.raises(ValueError) as info:
        viz.to_dot({"loss": ag.ones(2) * 3})
    assert str(info.value) == (
        "to_dot: roots['loss'] does not require grad and has no grad_fn, so there is no backward "
        "graph to draw (was it computed under no_grad, or from tensors none of which requires grad?)"
    )
    # inputs: grad()'s own errors, as grad() raises them.
    x = ag.tensor([1.0], requires_grad=True)
    constant = ag.ones(1)
    with pytest.raises(RuntimeError) as ours:
        viz.to_dot(x * 2, inputs=[constant])
    with pytest.raises(RuntimeError) as grads:
        ag.sync.grad(x * 2, [constant])
    assert str(ours.value) == str(grads.value) == "One of the differentiated Tensors does not require grad"


def test_to_graphviz_wraps_the_dot_text(monkeypatch):
    import graphviz  # the dev extra installs it (the viz extra for users)
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    source = viz.to_graphviz(y, params={"x": x}, inputs=[x])
    assert isinstance(source, graphviz.Source)
    assert source.source == viz.to_dot(y, params={"x": x}, inputs=[x])
    monkeypatch.setitem(sys.modules, "graphviz", None)  # as if it were not installed
    with pytest.raises(ImportError, match=r"pip install aiograd\[viz\]"):
        viz.to_graphviz(y)


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot program is not installed")
def test_to_graphviz_renders(tmp_path):
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    path = viz.to_graphviz((x * x).sum()).render(tmp_path / "graph", format="svg")
    assert "MulBackward0" in open(path).read()


@requires_torch
def test_node_names_and_order_are_torchs():
    def expression(x, w, m):
        a = (x * w).exp() + x.sin() / 2.0
        b = (m @ a.unsqueeze(1)).relu().transpose(0, 1)
        p, q, r = b.split(1, 1)
        return (p.tanh() * q - a[:2].reshape(2, 1).pow(2) + r).mean()

    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(3), rng.standard_normal(3), rng.standard_normal((3, 3))]
    ours = expression(*(ag.tensor(a, requires_grad=True) for a in arrays))
    theirs = expression(*(torch.tensor(a, requires_grad=True) for a in arrays))
    dot = Dot(viz.to_dot(ours, show_saved=False))
    drawn = [dot.label(n)[0] for n in dot.nodes if dot.is_function(n)]
    # torch's graph, walked as to_dot walks: depth first, next_functions in order.
    names, seen, stack = [], set(), [theirs.grad_fn]
    while stack:
        fn = stack.pop()
        if fn in seen:
            continue
        seen.add(fn)
        names.append(type(fn).__name__)
        stack.extend(reversed([c for c, _ in fn.next_functions if c is not None]))
    assert drawn == names


@requires_torch
def test_inputs_marks_what_torchs_grad_would_not_run():
    def expression(x, w, b):
        h = x * w
        s = w.sin()
        return [(h.exp() + s).sum(), (s * b).mean()], {"x": x, "w": w, "b": b, "h": h, "s": s}

    def torch_nodes(roots):
        found, stack = [], [r.grad_fn for r in roots]
        while stack:
            fn = stack.pop()
            if fn not in found:
                found.append(fn)
                stack.extend(c for c, _ in fn.next_functions if c is not None)
        return found

    arrays = [np.arange(1.0, 5.0) * k for k in (1, 2, 3)]
    ours, our_tensors = expression(*(ag.tensor(a, requires_grad=True) for a in arrays))
    theirs, their_tensors = expression(*(torch.tensor(a, requires_grad=True) for a in arrays))
    ran: list[str] = []
    for fn in torch_nodes(theirs):
        fn.register_prehook(lambda grads, fn=fn: ran.append(type(fn).__name__))
    for names in (["x"], ["w"], ["h"], ["s", "b"], ["h", "w"]):
        ran.clear()
        torch.autograd.grad(theirs, [their_tensors[n] for n in names], retain_graph=True)
        dot = Dot(viz.to_dot(ours, inputs=[our_tensors[n] for n in names]))
        drawn = [dot.label(n)[0] for n in dot.nodes if "fillcolor" not in dot.nodes[n][1]]
        assert sorted(drawn) == sorted(ran), names
