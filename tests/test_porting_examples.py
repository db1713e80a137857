"""The porting examples (examples/porting/): each torch script and its aiograd port differ only
in their imports (aiograd under torch's name) and in ``async``/``await``, and after the same
seed they compute the same numbers: every training step's loss (and the final test loss) in
float64, through shuffled DataLoaders, dropout, Adam with StepLR or ReduceLROnPlateau, gradient
clipping, saving and loading state dicts and a checkpoint resumed mid-run."""

from __future__ import annotations

import asyncio
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

pytest.importorskip("sklearn")
torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.slow, pytest.mark.real_default_dtype]

PORTING = Path(__file__).resolve().parents[1] / "examples" / "porting"
PAIRS = [("mlp_digits_torch.py", "mlp_digits.py", ["--epochs", "3"]),
         ("cnn_digits_torch.py", "cnn_digits.py", ["--epochs", "4", "--resume-at", "2"])]


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"porting_{name.removesuffix('.py')}", PORTING / name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _code_lines(path: Path) -> tuple[list[str], list[str]]:
    """The script's import lines (sorted) and its other lines, without the module docstring, with
    aiograd's spelling of the imports and the ``async``/``await`` taken out."""
    text = path.read_text()
    text = text[text.index('"""', 3) + 3 :]
    imports, body = [], []
    for line in text.splitlines():
        line = line.replace("await ", "").replace("async def ", "def ").replace("asyncio.run(main())", "main()")
        if line.startswith(("import ", "from ")):
            if line != "import asyncio":
                imports.append(re.sub(r"\baiograd\b(?! as torch)", "torch", line).replace("import aiograd as torch", "import torch"))
        elif line.strip():
            body.append(line)
    return sorted(imports), body


@pytest.mark.parametrize("torch_script, port, _", PAIRS, ids=[p[1] for p in PAIRS])
def test_the_port_changes_only_imports_and_awaits(torch_script: str, port: str, _: list[str]) -> None:
    theirs, ours = _code_lines(PORTING / torch_script), _code_lines(PORTING / port)
    assert ours[0] == theirs[0]
    assert ours[1] == theirs[1]
    assert "await loss.backward()" in (PORTING / port).read_text()


@pytest.mark.parametrize("torch_script, port, argv", PAIRS, ids=[p[1] for p in PAIRS])
def test_the_port_computes_torchs_losses_step_by_step(torch_script: str, port: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    import aiograd

    try:
        theirs = _load(torch_script).main([*argv, "--double"])
        # (a fresh loop: this test is synchronous, as a script's ``asyncio.run`` is)
        ours = asyncio.run(_load(port).main([*argv, "--double"]))
    finally:
        torch.set_default_dtype(torch.float32)
        aiograd.set_default_dtype(aiograd.float32)
        sys.modules.pop("porting_" + port.removesuffix(".py"), None)
    assert len(ours) == len(theirs) > 20
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)
    out = capsys.readouterr().out.splitlines()
    half = len(out) // 2
    strip = [re.sub(r"/tmp\S*", "PATH", line) for line in out]
    assert strip[:half] == strip[half:]  # the same report, line for line
