"""``torch.backends.cpu``: the CPU's vector capability, as torch names it."""

from __future__ import annotations

import numpy as np

__all__ = ["get_cpu_capability"]


def _features() -> dict[str, bool]:
    core = getattr(np, "_core", None) or np.core  # numpy 2 / numpy 1
    return dict(getattr(core._multiarray_umath, "__cpu_features__", {}))


def get_cpu_capability() -> str:
    """The widest vector instruction set this CPU has, with torch's names: ``"AVX512"``,
    ``"AVX2"`` or ``"DEFAULT"`` on x86 (as numpy detects it; numpy's kernels pick their own)."""
    features = _features()
    if all(features.get(f, False) for f in ("AVX512F", "AVX512BW", "AVX512VL", "AVX512DQ")):
        return "AVX512"
    if features.get("AVX2", False):
        return "AVX2"
    return "DEFAULT"
