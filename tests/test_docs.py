"""The README and the guides stay true: every ``python`` block runs, and a ``print(...)  # out``
line prints exactly ``out``."""

from __future__ import annotations

import contextlib
import io
import re
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
