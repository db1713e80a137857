"""Writes the package ``aiograd/_core/_tensor_api/``: Tensor's methods as type checkers see them,
generated from the functions that ``aiograd._api._tensor_methods`` binds onto ``Tensor``; and the
ops' re-exports in ``aiograd/__init__.py`` (between its markers), from the op registry (every op
of ``aiograd._ops`` that is ``top_level``, with its ``aliases``: see ``OpRule``).

    python3 tools/gen_tensor_api.py            # rewrite the package's files and the re-exports
    python3 tools/gen_tensor_api.py --check    # exit 1 if one is not current (or not generated)

mypy and pyright cannot follow the ``setattr`` calls that bind the ops, so ``Tensor`` derives from
``TensorMethods``, which declares them for the checkers only. Each bound name becomes one
declaration, read off the bound function: its parameters (the first renamed ``self``) with their
defaults and its own annotations as written, its overloads (``typing.get_overloads``), the first
sentence of its docstring (not for an operator whose function a named method has: ``__add__`` is
``add``); ``@property`` for a property, ``async def`` for a coroutine function or one annotated to
return ``Coroutine[Any, Any, T]`` (``backward``). ``__eq__`` and ``__ne__`` take an ``object``, as
``object``'s own do. One mixin class per module of functions, each in a module of the package
(``aiograd._ops.elementwise`` -> ``_elementwise.py``: the declarations together would outgrow the
project's 500 lines a module), and ``TensorMethods``, in its ``__init__``, derives from them all
(for the checkers; at run time it is an empty class, and the package imports none of its modules).
The whole package is generated: a module the generator no longer writes is deleted (``--check``
reports it).

The names an annotation uses are imported as the function's own module imports them, from the
graph core or below (``_core``, ``_devices``, ``_base``) or from outside aiograd, since the
generated modules sit in the graph core; a type alias defined in a layer above (``backward``'s
``GradientLike``, in ``_api``) is written out in place, and anything else from above is an error
that names the module to move it to (``aiograd/_core/_types.py``). A builtin that is also a
Tensor method (``bool``, ``float``) is spelled through an alias (``_bool``), since inside the
class those names mean the methods.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import importlib.util
import inspect
import os
import re
import sys
import textwrap
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "aiograd" / "_core" / "_tensor_api"
COMMAND = "python3 tools/gen_tensor_api.py"
#: The generated modules' own package, and the aiograd layers they may import from.
HOME = "aiograd._core._tensor_api"
IMPORTABLE_LAYERS = ("aiograd._base", "aiograd._devices", "aiograd._core")
LINE_LENGTH = 100
#: Methods that override ``object``'s (``__eq__``): they take any ``other``, as ``object``'s own do
#: (so ``t == None`` type-checks), and return a tensor, which the checkers must be told is meant.
OBJECT_OVERRIDES = {"__eq__", "__ne__"}
OVERRIDE_IGNORE = "  # type: ignore[override]  # pyright: ignore[reportIncompatibleMethodOverride]"

HEADER = '''"""Tensor's methods, operators and properties as type checkers see them. GENERATED: do not edit.

Written by ``python3 tools/gen_tensor_api.py`` from the functions that
``aiograd._api._tensor_methods`` binds onto ``Tensor`` with ``setattr``, which mypy and pyright
cannot follow; run it again after adding or changing a bound op (``tests/test_typing.py`` fails
while this package is not current). Each declaration is the bound function's signature (its first
parameter as ``self``), overloads and the first sentence of its docstring, in one class per module
of ops, each in a module of this package. ``Tensor`` derives from ``TensorMethods``, which derives
from those classes for the checkers only: at run time it is an empty class, so attribute lookups
and the hot paths are as before, and this package imports nothing at run time, its own modules
included.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

'''
#: The header of a module of declarations (one class), with the module of ops it declares.
MIXIN_HEADER = '''"""Tensor's methods bound from ``{module}``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

'''
RUNTIME_CLASS = '''
else:

    class TensorMethods:
        """The methods bound onto Tensor by ``_tensor_methods`` (declared above, for type checkers)."""

        __slots__ = ()


__all__ = ["TensorMethods"]
'''


# ----------------------------------------------------------------------------- the sources
class Module:
    """What a module's source binds at its top level (``if`` blocks included, so the imports under
    ``if TYPE_CHECKING:`` count): name -> import, type alias or definition."""

    def __init__(self, name: str, path: Path) -> None:
        self.name = name
        self.package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        self.bindings: dict[str, tuple[str, Any]] = {}
        self.twice: set[str] = set()  # names bound more than once: ambiguous in an annotation
        self._read(ast.parse(path.read_text()).body)

    def _bind(self, name: str, kind: str, value: Any) -> None:
        if name in self.bindings:
            self.twice.add(name)
        self.bindings[name] = (kind, value)

    def binding(self, name: str) -> tuple[str, Any]:
        """How the module binds ``name``: ("module", its name), ("from", (module, name)),
        ("alias", expression), ("defined", None), or ("builtin", None) where it does not."""
        if name in self.twice:
            raise ValueError(f"{self.name} binds {name!r} twice: which one an annotation means is unclear")
        return self.bindings.get(name, ("builtin", None))

    def _read(self, body: Iterable[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If):
                self._read(node.body)
                self._read(node.orelse)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    self._bind(a.asname or a.name.partition(".")[0], "module", a.name)
            elif isinstance(node, ast.ImportFrom):
                source = importlib.util.resolve_name("." * node.level + (node.module or ""), self.package)
                for a in node.names:
                    self._bind(a.asname or a.name, "from", (source, a.name))
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self._bind(node.targets[0].id, "alias", node.value)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                self._bind(node.target.id, "alias", node.value)
            elif isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                self._bind(node.name, "defined", None)


_MODULES: dict[str, Module] = {}


def module(name: str) -> Module:
    if name not in _MODULES:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None, name
        _MODULES[name] = Module(name, Path(spec.origin))
    return _MODULES[name]


def defining_module(fn: Callable[..., Any]) -> str:
    """The module whose source wrote ``fn`` (its annotations are that module's names): found by
    the code's file, as a function made by a factory (a unary op) names another module."""
    path = os.path.realpath(inspect.unwrap(fn).__code__.co_filename)
    for name, mod in list(sys.modules.items()):
        file = getattr(mod, "__file__", None)
        if file and os.path.realpath(file) == path:
            return name
    raise LookupError(f"no module was loaded from {path}")


def importable(source: str) -> bool:
    """Whether the generated module may import from ``source`` (the layers at and below its own)."""
    return source.partition(".")[0] != "aiograd" or source.startswith(IMPORTABLE_LAYERS)


# ----------------------------------------------------------------------------- annotations
class Names:
    """The names the declarations use, and the imports that define them."""

    def __init__(self, shadowed: set[str]) -> None:
        self.shadowed = shadowed  # Tensor member names: a builtin of the same name needs an alias
        self.imports: dict[str, tuple[str, str | None]] = {}  # local name -> (module, name or None)
        self.builtin_aliases: set[str] = set()

    def add_import(self, local: str, target: tuple[str, str | None]) -> None:
        known = self.imports.setdefault(local, target)
        if known != target:
            raise ValueError(f"{local!r} names both {known} and {target} in the annotations")

    def resolve(self, name: str, in_module: str) -> ast.expr:
        """The expression that spells ``name`` of ``in_module``'s source in the generated module."""
        kind, value = module(in_module).binding(name)
        if kind == "module":
            self.add_import(name, (value, None))
        elif kind == "from":
            source, original = value
            if not importable(source):  # a re-export (``_util.Tensor``) or an alias from above
                return self.resolve(original, source)
            self.add_import(name, (source, original))
        elif kind in ("alias", "defined") and importable(in_module):
            self.add_import(name, (in_module, name))
        elif kind == "alias":
            return self.rewrite(value, in_module)
        elif kind == "defined":
            raise ValueError(
                f"{in_module}.{name} is used in a Tensor method's annotation but the graph core cannot "
                "import it: move it to aiograd/_core/_types.py"
            )
        elif not hasattr(builtins, name):
            raise NameError(f"{name!r} is not defined in {in_module}")
        elif name in self.shadowed:
            self.builtin_aliases.add(name)
            return ast.Name(f"_{name}")
        return ast.Name(name)

    def rewrite(self, expr: ast.expr, in_module: str) -> ast.expr:
        """``expr`` (an annotation of ``in_module``) with each name spelled as ``resolve`` says."""
        names = self

        class Rewrite(ast.NodeTransformer):
            def visit_Name(self, node: ast.Name) -> ast.expr:
                return names.resolve(node.id, in_module)

            def visit_Constant(self, node: ast.Constant) -> ast.expr:
                if isinstance(node.value, str):  # a quoted forward reference
                    return names.annotation(node.value, in_module)
                return node

        return Rewrite().visit(ast.parse(ast.unparse(expr), mode="eval").body)  # (a copy)

    def annotation(self, text: Any, in_module: str) -> ast.expr:
        if not isinstance(text, str):
            raise TypeError(f"{in_module}: annotations must be strings (from __future__ import annotations)")
        return self.rewrite(ast.parse(text, mode="eval").body, in_module)


# ----------------------------------------------------------------------------- declarations
def _default(value: Any) -> str:
    text = repr(value)
    if ast.literal_eval(text) != value:
        raise ValueError(f"default {text} is not a literal")
    return text


def _awaited(returns: ast.expr | None) -> ast.expr | None:
    """``T`` of a ``Coroutine[Any, Any, T]`` return annotation, else None."""
    if (
        isinstance(returns, ast.Subscript)
        and ast.unparse(returns.value).rpartition(".")[2] == "Coroutine"
        and isinstance(returns.slice, ast.Tuple)
        and len(returns.slice.elts) == 3
    ):
        return returns.slice.elts[2]
    return None


def signature(name: str, fn: Callable[..., Any], names: Names) -> tuple[str, list[str], str, bool]:
    """``fn`` as method ``name``: (name, its parameters as source, the return annotation, async?)."""
    in_module = defining_module(fn)
    sig = inspect.signature(fn)
    params: list[str] = ["self"]
    rest = list(sig.parameters.values())[1:]
    for i, p in enumerate(rest):
        if p.kind is p.KEYWORD_ONLY and (i == 0 or rest[i - 1].kind not in (p.KEYWORD_ONLY, p.VAR_POSITIONAL)):
            params.append("*")
        text = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
        if name in OBJECT_OVERRIDES:
            text += ": object"
        elif p.annotation is not p.empty:
            text += ": " + ast.unparse(names.annotation(p.annotation, in_module))
        if p.default is not p.empty:
            text += " = " + _default(p.default)
        params.append(text)
        if p.kind is p.POSITIONAL_ONLY and (i + 1 == len(rest) or rest[i + 1].kind is not p.POSITIONAL_ONLY):
            params.append("/")
    if not isinstance(sig.return_annotation, str):
        raise TypeError(f"{in_module}.{fn.__qualname__} (Tensor.{name}) has no return annotation as a string")
    returns = ast.parse(sig.return_annotation, mode="eval").body
    awaited = _awaited(returns)
    is_async = inspect.iscoroutinefunction(fn) or awaited is not None
    return name, params, ast.unparse(names.rewrite(awaited or returns, in_module)), is_async


def _def_lines(
    name: str, params: list[str], returns: str, is_async: bool, body: str, comment: str, indent: str
) -> list[str]:
    """The ``def`` line (``body`` after its colon, then ``comment``), laid out as black would: on
    one line, else the parameters on one line of their own, else one parameter a line."""
    keyword = "async def" if is_async else "def"
    line = f"{indent}{keyword} {name}({', '.join(params)}) -> {returns}:{body}"
    if len(line) <= LINE_LENGTH:
        return [line + comment]
    inner = indent + "    "
    end = f"{indent}) -> {returns}:{body}{comment}"
    if len(inner) + len(", ".join(params)) <= LINE_LENGTH:
        return [f"{indent}{keyword} {name}(", inner + ", ".join(params), end]
    return [f"{indent}{keyword} {name}(", *(f"{inner}{p}," for p in params), end]


def summary(fn: Callable[..., Any]) -> str:
    """The first sentence of ``fn``'s docstring, on one line ("" if it has none)."""
    paragraph = " ".join((inspect.getdoc(fn) or "").split("\n\n")[0].split())
    end = re.search(r"[.!?](?=\s|$)", paragraph)
    return paragraph[: end.end()] if end else paragraph


def _docstring(text: str, indent: str) -> list[str]:
    if '"""' in text or "\\" in text:
        raise ValueError(f"docstring {text!r} needs quoting the generator does not do")
    lines = textwrap.wrap(f'"""{text}"""', LINE_LENGTH - len(indent), break_on_hyphens=False)
    return [indent + line for line in lines]


def declaration(
    name: str, fn: Callable[..., Any], kind: str, names: Names, indent: str, documented: bool = True
) -> list[str]:
    """The source lines declaring Tensor member ``name`` bound to ``fn`` (a method or a property),
    with the first sentence of ``fn``'s docstring where ``documented``."""
    out: list[str] = []
    comment = OVERRIDE_IGNORE if name in OBJECT_OVERRIDES else ""
    for overload in typing.get_overloads(fn):
        names.add_import("overload", ("typing", "overload"))
        out += [f"{indent}@overload", *_def_lines(*signature(name, overload, names), " ...", comment, indent)]
    if kind == "property":
        out.append(f"{indent}@property")
    doc = summary(fn) if documented else ""
    if not doc:
        return out + _def_lines(*signature(name, fn, names), " ...", comment, indent)
    return out + [
        *_def_lines(*signature(name, fn, names), "", comment, indent),
        *_docstring(doc, indent + "    "),
        f"{indent}    ...",
    ]


# ----------------------------------------------------------------------------- the package
def _mixin_name(module_name: str) -> str:
    """``ElementwiseMethods`` for ``aiograd._ops.elementwise``: a public name, as the package's
    ``__init__`` imports it (pyright's strict mode flags a private one used outside its module)."""
    return "".join(part.capitalize() for part in module_name.rpartition(".")[2].split("_")) + "Methods"


def _file_name(module_name: str) -> str:
    """The module of the package declaring ``module_name``'s ops: ``elementwise`` -> ``_elementwise.py``."""
    return "_" + module_name.rpartition(".")[2].lstrip("_") + ".py"


def _import_lines(names: Names) -> list[str]:
    """The imports, in the order and grouping of ruff's isort: standard library, third party,
    then this package's (relative, the farthest first); ``import x`` before ``from x import``."""
    if names.builtin_aliases:
        names.add_import("builtins", ("builtins", None))
        names.add_import("TypeAlias", ("typing", "TypeAlias"))
    plain: dict[str, set[str]] = {}
    froms: dict[str, set[str]] = {}
    for local, (source, original) in names.imports.items():
        if original is None:
            plain.setdefault(source, set()).add(source if local == source else f"{source} as {local}")
        else:
            froms.setdefault(source, set()).add(original if local == original else f"{original} as {local}")

    def section(source: str) -> int:
        top = source.partition(".")[0]
        return 2 if top == "aiograd" else 0 if top in sys.stdlib_module_names else 1

    def member_order(member: str) -> tuple[int, str]:  # isort's order-by-type
        return (0 if member.isupper() else 1 if member[0].isupper() else 2, member.lower())

    def relative(source: str) -> str:
        home = HOME.split(".")
        parts = source.split(".")
        shared = len(os.path.commonprefix([home, parts]))
        return "." * (len(home) - shared + 1) + ".".join(parts[shared:])

    groups: list[list[str]] = [[], [], []]
    for source in sorted(plain, key=str.lower):
        groups[section(source)] += [f"import {m}" for m in sorted(plain[source])]
    spelled = {s: relative(s) if section(s) == 2 else s for s in froms}
    for source in sorted(froms, key=lambda s: (-len(spelled[s]) + len(spelled[s].lstrip(".")), s.lower())):
        members = ", ".join(sorted(froms[source], key=member_order))
        groups[section(source)].append(f"from {spelled[source]} import {members}")
    return [line for group in groups if group for line in ("", *group)][1:]


def _class_line(name: str, bases: list[str]) -> list[str]:
    line = f"    class {name}({', '.join(bases)}):"
    if len(line) <= LINE_LENGTH:
        return [line]
    return [f"    class {name}(", *(f"        {b}," for b in bases), "    ):"]


def _type_checking_block(names: Names, body: list[str]) -> str:
    """``if TYPE_CHECKING:`` with the imports ``names`` needs, the builtins' aliases, then ``body``."""
    imports = _import_lines(names)  # (first: it adds the aliases' own imports)
    aliases = [
        "",
        "    # Also Tensor methods: inside the class these names mean the methods, so annotations",
        "    # spell the builtins through these aliases.",
        *(f"    _{b}: TypeAlias = builtins.{b}" for b in sorted(names.builtin_aliases)),
    ]
    lines = [
        "if TYPE_CHECKING:",
        *("    " + line if line else "" for line in imports),
        *(aliases if names.builtin_aliases else []),
        "",
        *body,
    ]
    return "\n".join(lines) + "\n"


def _mixin_module(module_name: str, declarations: list[str], names: Names) -> str:
    """The source of the module declaring the methods bound from ``module_name``."""
    body = [f"    class {_mixin_name(module_name)}:", f'        """Declared from ``{module_name}``."""', "", *declarations]
    return MIXIN_HEADER.format(module=module_name) + _type_checking_block(names, body)


def _package_init(module_names: list[str]) -> str:
    """The source of the package's ``__init__``: ``TensorMethods``, deriving from the mixins."""
    names = Names(shadowed=set())
    for module_name in module_names:
        mixin = _mixin_name(module_name)
        names.add_import(mixin, (f"{HOME}.{_file_name(module_name).removesuffix('.py')}", mixin))
    body = [
        *_class_line("TensorMethods", [_mixin_name(m) for m in module_names]),
        '        """Declarations (for type checkers only) of the methods bound onto Tensor by ``_tensor_methods``."""',
        "",
        "        __slots__ = ()",
    ]
    return HEADER + _type_checking_block(names, body) + RUNTIME_CLASS


def render() -> dict[str, str]:
    """The files of ``aiograd/_core/_tensor_api/`` for the functions bound onto Tensor now: file
    name -> source, ``__init__.py`` and one module per module of ops."""
    from aiograd._api._tensor_methods import BOUND_METHODS, BOUND_PROPERTIES

    members = [(n, f, "method") for n, f in BOUND_METHODS.items()]
    members += [(n, f, "property") for n, f in BOUND_PROPERTIES.items()]
    shadowed = {n for n, _, _ in members}
    # An operator bound to a named method's function (``__add__``, ``add``) goes undocumented:
    # its documentation is the method's.
    named = {id(fn) for n, fn, _ in members if not n.startswith("__")}
    declarations: dict[str, list[str]] = {}
    names: dict[str, Names] = {}  # per module: each imports what its own declarations use
    for name, fn, kind in members:
        documented = not (name.startswith("__") and id(fn) in named)
        module_names = names.setdefault(fn.__module__, Names(shadowed))
        declarations.setdefault(fn.__module__, []).extend(
            declaration(name, fn, kind, module_names, " " * 8, documented)
        )
    files = {_file_name(m): _mixin_module(m, body, names[m]) for m, body in declarations.items()}
    if len(files) != len(declarations):
        raise ValueError(f"two modules of ops share a file name: {sorted(declarations)}")
    return {"__init__.py": _package_init(list(declarations)), **files}


def stale(files: dict[str, str]) -> list[str]:
    """The package's files that are not ``files`` as rendered: changed, missing, or a module the
    generator no longer writes (one per module of ops that binds nothing now)."""
    written = {p.name: p.read_text() for p in TARGET.glob("*.py")}
    return sorted(name for name in files.keys() | written.keys() if written.get(name) != files.get(name))



# ------------------------------------------------------------------------------ re-exports
INIT = ROOT / "aiograd" / "__init__.py"
IMPORTS_MARK = ("# -- the ops, generated by tools/gen_tensor_api.py from the registry (do not edit) --\n",
                "# -- end of the generated imports --\n")
ALL_MARK = ("# -- the ops' names, generated by tools/gen_tensor_api.py (do not edit) --\n",
            "# -- end of the generated names --\n")


def render_exports() -> tuple[str, str]:
    """What ``aiograd/__init__.py`` holds between its two pairs of markers: an import of every
    registered op of ``aiograd._ops`` that is ``top_level`` (and of its aliases), from the module
    that defines it, and those names added to ``__all__``."""
    from aiograd._ops._registry import OPS

    by_module: dict[str, set[str]] = {}
    for name, rule in OPS.items():
        source = rule.forward.__module__
        if not rule.top_level or not source.startswith("aiograd._ops."):
            continue
        defined = importlib.import_module(source)
        for exported in (name, *rule.aliases):
            if getattr(defined, exported, None) is not rule.forward:
                raise SystemExit(f"{source}.{exported} is not op {name!r}'s forward: it cannot be re-exported")
            by_module.setdefault(source, set()).add(exported)
    imports: list[str] = []
    for source in sorted(by_module):
        names, relative = sorted(by_module[source], key=_natural), "." + source.removeprefix("aiograd.")
        line = f"from {relative} import {', '.join(names)}"
        # as ruff's isort writes it: one line if it fits, else one name a line
        imports += [line] if len(line) <= LINE_LENGTH else [
            f"from {relative} import (", *(f"    {n}," for n in names), ")"]
    every = sorted(n for names in by_module.values() for n in names)
    names_block, line = ["__all__ += ["], "   "
    for quoted in (f'"{n}"' for n in every):
        if len(line) + len(quoted) + 2 > LINE_LENGTH:
            names_block.append(line)
            line = "   "
        line += f" {quoted},"
    names_block += [line, "]"]
    # (the blank line: ruff's isort keeps the end marker, a comment, apart from the imports)
    return "\n".join(imports) + "\n\n", "\n".join(names_block) + "\n"


def _natural(name: str) -> list[Any]:
    """ruff's isort order of names: numbers by value (``log2`` before ``log10``)."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _between(text: str, marks: tuple[str, str]) -> tuple[int, int]:
    start = text.index(marks[0]) + len(marks[0])
    return start, text.index(marks[1], start)


def exports_written(text: str) -> str:
    """``aiograd/__init__.py``'s ``text`` with the generated parts as rendered now."""
    imports, names = render_exports()
    for marks, block in ((IMPORTS_MARK, imports), (ALL_MARK, names)):
        start, end = _between(text, marks)
        text = text[:start] + block + text[end:]
    return text

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a file is not current")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))  # this checkout's aiograd, whichever is installed
    files = render()
    out_of_date = stale(files)
    init_text = INIT.read_text()
    init_current = exports_written(init_text)
    if args.check:
        for name in out_of_date:
            path = TARGET / name
            problem = "is missing" if not path.exists() else "is not current" if name in files else "is stale (no longer generated)"
            print(f"{path.relative_to(ROOT)} {problem}: run {COMMAND}", file=sys.stderr)
        if init_current != init_text:
            print(f"the ops re-exported by {INIT.relative_to(ROOT)} are not current: run {COMMAND}", file=sys.stderr)
        return 1 if out_of_date or init_current != init_text else 0
    if init_current != init_text:
        INIT.write_text(init_current)
        print(f"wrote the re-exports of {INIT.relative_to(ROOT)}")
    TARGET.mkdir(exist_ok=True)
    for name in out_of_date:
        path = TARGET / name
        if name in files:
            path.write_text(files[name])
            print(f"wrote {path.relative_to(ROOT)} ({files[name].count(chr(10))} lines)")
        else:
            path.unlink()
            print(f"deleted {path.relative_to(ROOT)} (it declares nothing now)")
    if not out_of_date:
        print(f"{TARGET.relative_to(ROOT)}/ is current ({len(files)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
