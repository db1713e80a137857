"""The README and the guides stay true: every ``python`` block runs, and a ``print(...)  # out``
line prints exactly ``out``; and the docs site (``mkdocs.yml``) stays whole: every page in the
nav, links and anchors between pages resolve, the ``aiograd.*`` names and pip extras the pages
mention exist, and every public name has an entry in the API reference (docs/reference/)."""

from __future__ import annotations

import contextlib
import importlib
import io
import re
import sys
import tomllib
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)
EXPECTED = re.compile(r"^\s*print\(.*\)\s+#\s(.+)$")


def _blocks() -> list[tuple[str, str]]:
    found = []
    for path in DOCS:
        for i, block in enumerate(BLOCK.findall(path.read_text())):
            found.append((f"{path.name}[{i}]", block))
    return found


@pytest.mark.real_default_dtype  # (as a reader runs them: float32, torch's default)
@pytest.mark.parametrize("block", [b for _, b in _blocks()], ids=[n for n, _ in _blocks()])
def test_doc_block_runs_and_prints_what_it_says(block: str) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "<doc>", "exec"), {"__name__": "__doc_block__"})
    # The output is what the comment says up to a run of spaces (an explanation may follow).
    expected = [
        re.split(r"\s{2,}", m.group(1).strip())[0]
        for line in block.splitlines()
        if (m := EXPECTED.match(line))
    ]
    printed = [line.strip() for line in out.getvalue().splitlines()]
    # Each annotated print must appear, in order (unannotated prints may come between them).
    it = iter(printed)
    for want in expected:
        assert any(got == want for got in it), f"expected output {want!r} in {printed}"


# ---------------------------------------------------------------------------- the docs site
# `mkdocs build --strict` (CI, .ci/run) checks the site as a whole; these check the same
# promises cheaply, without mkdocs, so that a plain `pytest` catches a page left out of the nav,
# a broken link or a name that no longer exists.
SITE_PAGES = sorted((ROOT / "docs").rglob("*.md"))
LINK = re.compile(r"\]\(([^)\s]+)\)")
NAME = re.compile(r"(?<![\w./])aiograd(?:\.[A-Za-z_]\w*)+")
#: Names in quoted messages, not attributes: PyTorch's type names as aiograd's hook errors
#: spell them ("the type of value (was aiograd.DoubleTensor got aiograd.FloatTensor)"), and
#: loggers' names.
MESSAGE_NAMES = {"aiograd.DoubleTensor", "aiograd.FloatTensor", "aiograd.serving.access"}


def _nav_pages() -> list[str]:
    text = (ROOT / "mkdocs.yml").read_text()
    nav = text[text.index("\nnav:") :]
    return re.findall(r"^\s*- (?:[^:\n]+: )?([\w/.-]+\.md)\s*$", nav, re.M)


def test_every_docs_page_is_in_the_nav_once() -> None:
    nav = _nav_pages()
    pages = [p.relative_to(ROOT / "docs").as_posix() for p in SITE_PAGES]
    assert sorted(nav) == pages, {"not in the nav": set(pages) - set(nav), "no such page": set(nav) - set(pages)}


def _slug(heading: str) -> str:
    """The anchor Python-Markdown's toc extension gives a heading (its default slugify)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = re.sub(r"[`*]", "", text).strip()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


@pytest.mark.parametrize("page", SITE_PAGES, ids=lambda p: p.relative_to(ROOT / "docs").as_posix())
def test_links_between_pages_resolve(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.is_file() and dest.is_relative_to(ROOT / "docs"), f"{target}: no such page in docs/"
        # Anchors made by mkdocstrings (an object's full name) exist only in the built site.
        if anchor and not anchor.startswith("aiograd."):
            assert anchor in _anchors(dest), f"{target}: no heading with that anchor"


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    obj: object = importlib.import_module(parts[0])
    for i, part in enumerate(parts[1:], 2):
        if hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            return False
    return True


def test_every_aiograd_name_in_the_docs_exists() -> None:
    missing = {
        name: path.name
        for path in [ROOT / "README.md", *SITE_PAGES]
        for name in NAME.findall(path.read_text())
        if name not in MESSAGE_NAMES and not _resolves(name)
    }
    assert not missing, missing


def test_repository_paths_in_the_docs_exist() -> None:
    """Paths the pages cite (``aiograd/_base/_cost.py``, ``_engine/offload.py``, ``tests/test_x.py``,
    ``benchmarks/...``) name files that are there."""
    cited = re.compile(r"\b((?:aiograd|tests|benchmarks|examples|_engine)/[\w/]+\.(?:py|md))\b")
    missing = {
        path: page.name
        for page in [ROOT / "README.md", *SITE_PAGES]
        for path in cited.findall(page.read_text())
        if not (ROOT / (f"aiograd/{path}" if path.startswith("_engine/") else path)).is_file()
    }
    assert not missing, missing


def test_extras_named_in_install_lines_exist() -> None:
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    named = {
        extra.strip()
        for path in [ROOT / "README.md", *SITE_PAGES]
        for group in re.findall(r"(?:aiograd|\.)\[([\w,-]+)\]", path.read_text())
        for extra in group.split(",")
    }
    assert named and named <= extras, named - extras


#: Public names the reference describes in prose, not with ``::: aiograd.name``: numpy's dtypes
#: (no docstrings of aiograd's), and the comparisons, whose ``__qualname__`` is numpy's ufunc name
#: (``equal``), which mkdocstrings cannot resolve.
PROSE_REFERENCE = {
    "float16", "half", "float32", "float64", "double", "int32", "int64", "uint8", "bool_",
    "float", "int", "bool", "long", "short", "int8", "int16",
    "eq", "ne", "lt", "le", "gt", "ge", "not_equal", "less", "less_equal", "greater", "greater_equal",
}


def test_every_public_name_has_a_reference_entry() -> None:
    """A public name of ``aiograd`` or a public module without a page in docs/reference/ would be
    missing from the API reference, silently: mkdocstrings renders only what a page names."""
    import aiograd

    reference = "\n".join(p.read_text() for p in sorted((ROOT / "docs" / "reference").rglob("*.md")))
    rendered = set(re.findall(r"^::: ([\w.]+)$", reference, re.M))
    mentioned = {word for span in re.findall(r"`([^`]+)`", reference) for word in re.findall(r"\w+", span)}
    for name in aiograd.__all__:
        value = getattr(aiograd, name)
        if isinstance(value, types.ModuleType):
            assert any(r == f"aiograd.{name}" or r.startswith(f"aiograd.{name}.") for r in rendered), name
        elif name in PROSE_REFERENCE:
            assert name in mentioned, name
        else:  # rendered as itself, or as a member of a rendered module (aiograd.function.Function)
            modules = [sys.modules.get(r) for r in rendered]
            assert f"aiograd.{name}" in rendered or any(getattr(m, name, None) is value for m in modules), name


@pytest.mark.aiograd(backends=["asyncio"])
async def test_the_notebook_advice_quotes_what_a_running_loop_gets() -> None:
    """Getting started tells notebook users (whose cells run on a running loop) to await, quoting
    what the blocking forms raise there: the quotes must stay the errors actually raised."""
    import asyncio

    import aiograd
    import aiograd.sync

    guide = " ".join((ROOT / "docs" / "getting-started.md").read_text().split())
    x = aiograd.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError) as blocking:
        aiograd.sync.backward((x * x).sum())
    main = asyncio.sleep(0)
    with pytest.raises(RuntimeError) as nested_run:
        asyncio.run(main)
    main.close()
    assert f"RuntimeError: {blocking.value}" in guide
    assert f"RuntimeError: {nested_run.value}" in guide
    assert x.grad is None


def test_the_graph_task_table_names_every_field() -> None:
    """docs/engine.md's table of a GraphTask's fields is the whole list (it once had 25 of 33)."""
    from aiograd._engine.graph_task import GraphTask

    text = (ROOT / "docs" / "engine.md").read_text()
    table = text[text.index("## GraphTask: one per call"):]
    table = table[:table.index("\n\n", table.index("| field | meaning |"))]
    named = set(re.findall(r"`(\w+)`", "\n".join(line.split(" | ")[0] for line in table.splitlines())))
    fields = {name for name in GraphTask.__slots__ if name != "__weakref__"}
    assert fields - named == set(), fields - named


def test_the_adding_an_op_page_quotes_the_code_as_it_is() -> None:
    """docs/adding-an-op.md shows logaddexp's record whole: the quoted block must be in
    aiograd/_ops/binary_math.py as it stands, its Tensor method bound, and the files the page
    names must exist."""
    import aiograd as ag
    from aiograd._ops._registry import OPS

    text = (ROOT / "docs" / "adding-an-op.md").read_text()
    block = text.split("```py\n", 1)[1].split("```", 1)[0]  # (py, not python: quoted, not run)
    assert block in (ROOT / "aiograd" / "_ops" / "binary_math.py").read_text()
    assert OPS["logaddexp"].node_names == ("LogaddexpBackward0",)
    assert OPS["logaddexp"].nodes[0].batched
    assert ag.Tensor.logaddexp is ag.logaddexp
    for path in re.findall(r"`((?:aiograd|tests|tools|docs)/[\w/.]+)`", text):
        assert (ROOT / path.rstrip("/")).exists(), path
