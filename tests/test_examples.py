"""The demo the README points to runs and learns."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_train_mlp_example_reaches_high_accuracy():
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "train_mlp.py")],
        capture_output=True, text=True, timeout=120, check=True,
    )
    assert result.stdout.count("loss") == 40
    held_out = float(re.search(r"held-out accuracy ([\d.]+)%", result.stdout).group(1))
    assert held_out > 90.0, result.stdout
