"""The suite's own hygiene: every test checks something.

A test (a ``test*`` function of a ``tests/test_*.py`` module, or a ``test*`` method of a ``Test*``
class there) must contain at least one check:

- an ``assert`` statement;
- a call that fails when something is wrong: ``pytest.raises``, ``pytest.warns``,
  ``pytest.fail``, ``pytest.deprecated_call``, any function named ``assert...`` (numpy's
  ``assert_allclose``, pytester's ``assert_outcomes``, the suite's own), or a checker that raises
  on a mismatch (``gradcheck``, ``gradgradcheck``, ``check_rows_independent``);
- a reference to a function of ``tests/`` that checks, by these rules (a helper it calls, or a
  checker it passes to a helper), followed through helpers that use helpers.

A test that only shows that something does not raise says so in its name
(``..._does_not_raise``, ``..._no_warning``) and checks a result as well.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

#: Calls that check, by the name called (``pytest.raises(...)`` and ``raises(...)`` alike).
CHECKING_CALLS = frozenset({
    "raises", "warns", "fail", "deprecated_call", "gradcheck", "gradgradcheck", "check_rows_independent",
})

def _named(node: ast.AST) -> tuple[str | None, str | None]:
    """(base, name) of a name (``f``: ``(None, "f")``) or an attribute (``m.f``: ``("m", "f")``;
    a base that is not a plain name: ``"?"``); (None, None) for anything else."""
    if isinstance(node, ast.Name):
        return None, node.id
    if isinstance(node, ast.Attribute):
        return (node.value.id if isinstance(node.value, ast.Name) else "?"), node.attr
    return None, None


def _checks_directly(function: ast.AST) -> bool:
    for node in ast.walk(function):
        if isinstance(node, ast.Assert):
            return True
        if isinstance(node, ast.Call):
            _, name = _named(node.func)
            if name is not None and (name.startswith("assert") or name in CHECKING_CALLS):
                return True
    return False


class Suite:
    """The modules of a tests directory (module name -> source, or its parsed tree), and which
    of their functions check, by the rules above."""

    def __init__(self, sources: dict[str, str | ast.Module]) -> None:
        self.trees = {
            name: source if isinstance(source, ast.Module) else ast.parse(source, f"{name}.py")
            for name, source in sources.items()
        }
        self.functions: dict[str, dict[str, list[ast.AST]]] = {}
        self.imported_names: dict[str, dict[str, tuple[str, str]]] = {}
        self.imported_modules: dict[str, dict[str, str]] = {}
        for module, tree in self.trees.items():
            functions: dict[str, list[ast.AST]] = {}
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    functions.setdefault(node.name, []).append(node)
            self.functions[module] = functions
            names, modules = {}, {}
            for node in tree.body:
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in self.trees:
                    for alias in node.names:
                        names[alias.asname or alias.name] = (node.module, alias.name)
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        if alias.name in self.trees:
                            modules[alias.asname or alias.name] = alias.name
            self.imported_names[module], self.imported_modules[module] = names, modules
        self.checking = self._checking_functions()

    def _resolve(self, module: str, node: ast.AST) -> tuple[str, str] | None:
        """The function of the suite that a name or attribute in ``module`` refers to, if any."""
        base, name = _named(node)
        if name is None:
            return None
        if base is None:
            if name in self.functions[module]:
                return module, name
            return self.imported_names[module].get(name)
        if base in ("self", "cls"):
            return (module, name) if name in self.functions[module] else None
        target = self.imported_modules[module].get(base)
        return (target, name) if target is not None else None

    def _references(self, module: str, function: ast.AST) -> set[tuple[str, str]]:
        """The suite's functions that ``function`` (in ``module``) names."""
        found = (self._resolve(module, node) for node in ast.walk(function) if isinstance(node, (ast.Name, ast.Attribute)))
        return {target for target in found if target is not None}

    def _checking_functions(self) -> set[tuple[str, str]]:
        checking: set[tuple[str, str]] = set()
        users: dict[tuple[str, str], set[tuple[str, str]]] = {}  # function -> the functions naming it
        for module, functions in self.functions.items():
            for name, defs in functions.items():
                if any(_checks_directly(d) for d in defs):
                    checking.add((module, name))
                for d in defs:
                    for target in self._references(module, d):
                        users.setdefault(target, set()).add((module, name))
        todo = list(checking)
        while todo:  # the functions that use checking ones check too
            for user in users.get(todo.pop(), ()):
                if user not in checking:
                    checking.add(user)
                    todo.append(user)
        return checking

    def tests(self) -> Iterable[tuple[str, ast.AST]]:
        """(test id, function) of every test: ``module.py::name`` or ``module.py::Class::name``."""
        for module, tree in self.trees.items():
            if not module.startswith("test_"):
                continue
            for node in tree.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                    yield f"{module}.py::{node.name}", node
                elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                    for item in node.body:
                        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name.startswith("test"):
                            yield f"{module}.py::{node.name}::{item.name}", item

    def checks(self, test_id: str, function: ast.AST) -> bool:
        module = test_id.split(".py::", 1)[0]
        return _checks_directly(function) or bool(self._references(module, function) & self.checking)

    def unchecked(self) -> list[str]:
        return [test_id for test_id, function in self.tests() if not self.checks(test_id, function)]


@functools.cache
def _parsed() -> dict[str, ast.Module]:
    """tests/*.py, parsed (once: the trees are only read)."""
    return {path.stem: ast.parse(path.read_text(encoding="utf-8"), path.name) for path in sorted(TESTS.glob("*.py"))}


@pytest.fixture(scope="module")
def suite() -> Suite:
    return Suite(dict(_parsed()))


def test_every_test_checks_something(suite: Suite) -> None:
    unchecked = suite.unchecked()
    assert not unchecked, (
        "these tests check nothing (no assert, no pytest.raises/warns/fail, no helper that checks); "
        "a test that shows something does not raise says so in its name and checks a result too:\n"
        + "\n".join(unchecked)
    )


def test_the_scan_sees_tests_that_check_nothing() -> None:
    """The rules, on a small suite of their own: what counts as a check, and what does not."""
    helpers = '''
def compare(a, b):
    assert a == b

def via_compare(a):
    compare(a, a)

def run(fn, checker=None):
    fn()
'''
    tests = '''
import pytest
import helpers
from helpers import via_compare

def test_empty():
    pass

async def test_runs_only():
    x = 1 + 1
    await something(x)

def test_asserts():
    assert True

def test_raises():
    with pytest.raises(ValueError):
        int("x")

def test_numpy():
    np.testing.assert_allclose(1, 1)

def test_helper():
    helpers.compare(1, 1)

def test_helper_of_a_helper():
    via_compare(1)

def test_passes_a_checker():
    helpers.run(lambda: None, checker=helpers.compare)

def test_nested_check():
    def hook(g):
        assert g is not None
    register(hook)

def test_gradcheck():
    gradcheck(f, (x,))

def test_calls_a_helper_that_checks_nothing():
    helpers.run(lambda: None)

class TestThings:
    def check(self):
        assert True

    def test_method_via_self(self):
        self.check()

    def test_method_empty(self):
        pass
'''
    suite = Suite({"helpers": helpers, "test_sample": tests})
    assert suite.unchecked() == [
        "test_sample.py::test_empty",
        "test_sample.py::test_runs_only",
        "test_sample.py::test_calls_a_helper_that_checks_nothing",
        "test_sample.py::TestThings::test_method_empty",
    ]


def test_a_new_empty_test_in_the_suite_would_fail_it() -> None:
    with_new = Suite({**_parsed(), "test_new": "from helpers import rng\n\ndef test_new_feature():\n    rng(0)\n"})
    assert with_new.unchecked() == ["test_new.py::test_new_feature"]
