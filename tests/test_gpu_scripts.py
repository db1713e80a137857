"""The GPU check's scripts stay runnable where CI runs (no GPU): issue 32's ``gpu_check.sh`` is
run as is on a GPU machine that may be lent for minutes, so a script broken since it was written
would waste them."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import aiograd as ag

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False)


def test_gpu_check_is_valid_bash_and_names_every_script_it_runs() -> None:
    done = run("bash", "-n", "benchmarks/gpu_check.sh")
    assert done.returncode == 0, done.stderr
    with open(os.path.join(ROOT, "benchmarks", "gpu_check.sh")) as f:
        script = f.read()
    for path in ("benchmarks/bench_cuda.py", "benchmarks/bench_cuda_models.py", "tests/test_cuda.py"):
        assert path in script and os.path.exists(os.path.join(ROOT, path)), path


@pytest.mark.slow
def test_the_gpu_models_benchmark_runs_its_checks_on_the_cpu() -> None:
    """``--dry-run``: the same code on the CPU with small sizes, torch (the oracle) beside it."""
    pytest.importorskip("torch")
    done = run(sys.executable, "benchmarks/bench_cuda_models.py", "--dry-run", "--repeats", "1", "--warmup", "0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "checks passed: ResNet-18's first loss and the saliencies agree with torch's" in done.stdout
    assert "ResNet-18 training step" in done.stdout and "saliency requests" in done.stdout


@pytest.mark.skipif(ag.cuda.is_available(), reason="a GPU is here: the benchmarks run (gpu_check.sh)")
def test_without_a_gpu_the_gpu_benchmarks_say_they_skipped() -> None:
    for script in ("benchmarks/bench_cuda.py", "benchmarks/bench_cuda_models.py"):
        done = run(sys.executable, script, "--repeats", "1")
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("skipped: no CUDA GPU"), done.stdout
