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
  fail) joined by a red edge that says so, one saved through saved-tensor hooks as ``packed``;
- with ``inputs``, what ``grad(roots, inputs)`` would do: nodes it would not run dashed and grey
  (as the engine decides it: its own ``init_to_execute``), nodes whose incoming gradient it
  returns with a double outline (they need not run themselves: a leaf's AccumulateGrad does
  not, ``.grad`` is not touched), and a legend under the graph.

Node ids (``n0``, ``n1``, ...) follow the walk's order, so the text is the same for the same
graph on every run. Nothing is computed: no node runs, no saved tensor is unpacked (so no hook
and no in-place check fires), and hooks, ``retain_grad`` and freed graphs are fine to draw.
"""

from ._dot import to_dot, to_graphviz

__all__ = ["to_dot", "to_graphviz"]

# Public under the package's name (help() and reprs say aiograd.viz.to_dot).
for _public in (to_dot, to_graphviz):
    _public.__module__ = __name__
del _public
