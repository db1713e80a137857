"""aiograd's import structure: no import cycle, and no module importing from a layer above its own.

The import graph is read from the source with ``ast``, not by importing: every ``import`` and
``from ... import`` anywhere in a module counts (module level and inside functions, relative and
absolute), except those under ``if TYPE_CHECKING:``, which never run. ``from package import name``
is an edge to the submodule ``package.name`` when there is one, else to ``package``.

The layers are the ones stated in ``aiograd/__init__.py``'s docstring, bottom up, each private one
a package; a module may import from its own layer and the layers below, at run time and for type
checkers alike (a type-only import may form a cycle inside a layer: a Tensor's ``grad_fn`` is a
Node, a Node's ``apply`` takes Tensors). Inside the graph core the run-time order is fixed too
(``CORE_ORDER``): each module imports only modules before it. No module assigns another's globals.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = "aiograd"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE

#: Bottom up. A name covers the module of that name and, for a package, everything inside it:
#: each private layer is one package (``aiograd/_base``, ``_devices``, ``_core``, ``_ops``,
#: ``_engine``, ``_api``), and the public modules sit in the layer they belong to.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("_base",)),
    ("devices", ("_devices",)),
    ("graph core", ("_core",)),
    ("ops", ("_ops", "function", "nn")),
    ("executors", ("executors",)),
    ("engine", ("_engine",)),
    (
        "API",
        (
            "_api",  # backward/grad, checkpointing, factories, the Tensor methods' binding, trio
            "", "func", "functional", "sync", "testing", "utils", "graph", "cuda", "linalg",  # "": the package's own __init__
            "optim",  # aiograd.optim (optimizers, lr_scheduler)
            "serving",  # aiograd.serving (dynamic batching, the HTTP service)
            "pytest_plugin",  # aiograd.pytest_plugin (the pytest11 entry point)
            "viz",  # aiograd.viz (the backward graph as Graphviz DOT)
            "distributed",  # aiograd.distributed (data-parallel gradients on Dask)
            "distributions",  # aiograd.distributions (torch.distributions)
            "profiler",  # aiograd.profiler (traces, progress)
            "accelerator", "backends", "amp", "autograd", "jit", "special",  # torch's namespaces that training scripts touch
        ),
    ),
)

#: The graph core's modules in their run-time import order (see the last tests); a package here
#: (``_tensor_api``) stands for its modules too.
CORE_ORDER: tuple[str, ...] = ("_types", "_format_numbers", "_format", "_tensor_api", "_anomaly", "_tensor", "_saved", "_node", "_hooks", "_views", "_graph")


# ------------------------------------------------------------------------------ the import graph
def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _run_time_imports(tree: ast.AST, type_only: bool = False) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement that can run: all of them but those under ``if TYPE_CHECKING:``
    (an ``else:`` branch of such an ``if`` does run); with ``type_only``, those too."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test) and not type_only:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute name of the module a ``from ... import`` reads from."""
    if not node.level:
        return node.module or ""
    package = importer.split(".") if is_package else importer.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph(type_only: bool = False) -> dict[str, set[str]]:
    """Module -> the modules of this package it imports at run time (with ``type_only``: or
    for type checkers, under ``if TYPE_CHECKING:``)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges: set[str] = set()
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in _run_time_imports(tree, type_only):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                source = _resolve(name, path.name == "__init__.py", node)
                targets = [
                    f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                    for alias in node.names
                ]
            edges.update(t for t in targets if t in modules and t != name)
        graph[name] = edges
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (as a path a -> b -> ... -> a) per strongly connected component that has one."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def connect(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return [_a_cycle_in(graph, component) for component in components]


def _a_cycle_in(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest cycle through the component's first module (breadth first)."""
    start = min(component)
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(graph[v] & component):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [*reversed(path), start]
                if w not in parents:
                    parents[w] = v
                    following.append(w)
        frontier = following
    raise AssertionError("a strongly connected component always holds a cycle")


def layer_of(module: str) -> int:
    """The position of ``module``'s layer in LAYERS (KeyError if no layer names it)."""
    rest = module[len(PACKAGE) + 1 :] if module != PACKAGE else ""
    best: tuple[int, int] | None = None  # (length of the matching name, layer)
    for i, (_, names) in enumerate(LAYERS):
        for n in names:
            if rest == n or (n and rest.startswith(n + ".")):
                if best is None or len(n) > best[0]:
                    best = (len(n), i)
    if best is None:
        raise KeyError(module)
    return best[1]


# ------------------------------------------------------------------------------ the tests
def test_the_graph_is_read_from_the_source() -> None:
    graph = import_graph()
    # Module level, relative; a submodule through ``from . import``; a package's own __init__.
    assert "aiograd._core._tensor" in graph["aiograd._ops._util"]
    assert "aiograd.executors._base" in graph["aiograd.executors"]
    assert "aiograd.nn.functional" in graph["aiograd.nn"]
    # Only run-time imports: ``_format`` imports ``_tensor`` under TYPE_CHECKING only.
    assert "aiograd._core._tensor" not in graph["aiograd._core._format"]


def test_cycle_finder_names_the_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert find_cycles(graph) == [["a", "b", "c", "a"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_function_level_and_type_checking_imports() -> None:
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from . import hidden\nelse:\n    from . import shown_else\n"
        "def f():\n    from .inner import x\n    import aiograd._core._node\n"
    )
    names = [
        (n.module if isinstance(n, ast.ImportFrom) else n.names[0].name, [a.name for a in n.names])
        for n in _run_time_imports(tree)
    ]
    assert names == [
        ("typing", ["TYPE_CHECKING"]), (None, ["shown_else"]), ("inner", ["x"]),
        ("aiograd._core._node", ["aiograd._core._node"]),
    ]


def test_every_module_has_a_layer() -> None:
    unplaced = [m for m in import_graph() if _layer_or_none(m) is None]
    assert not unplaced, f"modules in no layer (add them to LAYERS and the package docstring): {unplaced}"


def _layer_or_none(module: str) -> int | None:
    try:
        return layer_of(module)
    except KeyError:
        return None


def test_no_import_cycle() -> None:
    cycles = find_cycles(import_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


@pytest.mark.parametrize("type_only", [False, True], ids=["run time", "type checking too"])
def test_no_module_imports_from_a_layer_above(type_only: bool) -> None:
    graph = import_graph(type_only)
    upward = sorted(
        (importer, imported)
        for importer, imported_set in graph.items()
        for imported in imported_set
        if layer_of(imported) > layer_of(importer)
    )
    assert not upward, "imports from a layer above:\n" + "\n".join(
        f"{a} ({LAYERS[layer_of(a)][0]}) imports {b} ({LAYERS[layer_of(b)][0]})" for a, b in upward
    )


def core_entry(module: str) -> str:
    """``module``'s name in CORE_ORDER: its name in the graph core, or for a module inside a
    package that CORE_ORDER lists, that package's (one CORE_ORDER lacks keeps its own)."""
    name = module.removeprefix(f"{PACKAGE}._core.")
    package = name.partition(".")[0]
    return package if package in CORE_ORDER else name


def test_the_graph_core_imports_in_its_order() -> None:
    """Inside the graph core, a module imports at run time only the ones before it in CORE_ORDER."""
    graph = import_graph()
    core = {m: core_entry(m) for m in graph if m.startswith(f"{PACKAGE}._core.")}
    assert sorted(set(core.values())) == sorted(CORE_ORDER), "CORE_ORDER lists every graph-core module"
    assert core_entry(f"{PACKAGE}._core._tensor_api._elementwise") == "_tensor_api"
    position = {entry: i for i, entry in enumerate(CORE_ORDER)}
    backwards = sorted(
        (a, b)
        for a in core
        for b in graph[a]
        if b in core and position[core[b]] > position[core[a]]
    )
    assert not backwards, f"graph-core modules importing ones after them in {CORE_ORDER}: {backwards}"


def test_private_modules_sit_in_their_layer_package() -> None:
    """The folders show the layers: no private module lies flat in ``aiograd/``, and each layer
    package's docstring says what it may import."""
    flat = sorted(p.name for p in ROOT.glob("_*.py") if p.name != "__init__.py")
    assert not flat, f"private modules outside a layer package: {flat}"
    for package in ("_base", "_devices", "_core", "_ops", "_engine", "_api"):
        doc = ast.get_docstring(ast.parse((ROOT / package / "__init__.py").read_text()))
        assert doc and "import" in doc, f"aiograd/{package}/__init__.py says nothing of what it may import"


def _globals_set_elsewhere(path: Path) -> list[str]:
    """``module.name = ...`` (or ``+=``, or ``setattr(module, ...)``) in ``path`` where ``module``
    is one of aiograd's modules bound by an import in that file."""
    tree = ast.parse(path.read_text())
    modules = set(_modules())
    imported: set[str] = set()
    name = _module_name(path)
    for node in _run_time_imports(tree):
        if isinstance(node, ast.ImportFrom):
            source = _resolve(name, path.name == "__init__.py", node)
            imported.update(a.asname or a.name for a in node.names if f"{source}.{a.name}" in modules)
        else:
            imported.update(a.asname or a.name for a in node.names if a.name in modules and a.asname)
    found = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" and node.args:
            targets = [ast.Attribute(value=node.args[0], attr="?")]
        for t in targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in imported:
                found.append(f"{name}:{node.lineno} sets {t.value.id}.{t.attr}")
    return found


def test_no_module_sets_another_modules_globals() -> None:
    found = [hit for path in sorted(ROOT.rglob("*.py")) for hit in _globals_set_elsewhere(path)]
    assert not found, "modules setting another module's globals:\n" + "\n".join(found)
