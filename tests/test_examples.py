"""The examples run and learn: the README's demo (train_mlp.py), the CNN on the digits (whose
weights torch loads), the character-level transformer, and data-parallel training on a Dask
LocalCluster."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import torch

pytestmark = pytest.mark.slow  # each example trains a model in a process of its own

ROOT = Path(__file__).resolve().parent.parent
#: A bound on each example's run: generous (a loaded machine runs them many times slower than an
#: idle one); it stops a hang, it is not a speed check.
TIMEOUT = float(os.environ.get("AIOGRAD_TEST_EXAMPLE_TIMEOUT", "900"))
#: How long a Dask LocalCluster's worker processes may take to start and connect.
CLUSTER_TIMEOUT = float(os.environ.get("AIOGRAD_TEST_CLUSTER_TIMEOUT", "600"))


def test_train_mlp_example_reaches_high_accuracy():
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "train_mlp.py")],
        capture_output=True, text=True, timeout=TIMEOUT, check=True,
    )
    assert result.stdout.count("loss") == 40
    held_out = float(re.search(r"held-out accuracy ([\d.]+)%", result.stdout).group(1))
    assert held_out > 90.0, result.stdout


def test_train_cnn_example_learns_the_digits_and_torch_loads_its_weights(tmp_path):
    pytest.importorskip("sklearn")
    weights = tmp_path / "cnn.safetensors"
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "train_cnn.py"), "--epochs", "4", "--save", str(weights)],
        capture_output=True, text=True, timeout=TIMEOUT, check=True,
    )
    accuracies = [float(a) for a in re.findall(r"held-out accuracy ([\d.]+)%", result.stdout)]
    assert len(accuracies) == 4 and accuracies[-1] > 90.0, result.stdout
    if torch is None:
        return
    from safetensors.torch import load_file

    nn = torch.nn
    module = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Dropout(0.2), nn.Linear(32 * 2 * 2, 10),
    )
    module.load_state_dict(load_file(str(weights)))  # strict: every key and shape is torch's
    module.eval()
    spec = importlib.util.spec_from_file_location("_example_train_cnn", ROOT / "examples" / "train_cnn.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    _, _, x_test, y_test = example.load_digits(0)
    with torch.no_grad():
        predicted = module(torch.from_numpy(x_test)).argmax(1).numpy()
    # the same held-out accuracy as the example printed after its last epoch
    assert round(100 * float((predicted == y_test).mean()), 1) == accuracies[-1]


def test_train_transformer_example_lowers_its_loss_and_samples():
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "train_transformer.py"), "--steps", "40", "--every", "20",
         "--width", "32", "--heads", "2", "--context", "32", "--lr", "1e-2"],
        capture_output=True, text=True, timeout=TIMEOUT, check=True,
    )
    losses = [float(a) for a in re.findall(r"  loss ([\d.]+)  held-out", result.stdout)]
    assert len(losses) == 2 and losses[1] < losses[0] < 7.0, result.stdout
    assert re.search(r"sample: 'The engine .{80}'", result.stdout), result.stdout


def test_train_distributed_example_learns_and_matches_one_process():
    pytest.importorskip("distributed", reason="distributed is not installed (pip install aiograd[distributed])")
    # The example starts its own LocalCluster: its workers get the time a loaded machine needs
    # to connect (dask reads DASK_* variables as its configuration), and a cluster that cannot
    # start here skips the test, with the reason, rather than failing it.
    env = {**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": f"{CLUSTER_TIMEOUT}s"}
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "train_distributed.py"), "--epochs", "3"],
        capture_output=True, text=True, timeout=TIMEOUT, env=env,
    )
    if result.returncode and re.search(r"(Cluster|Nanny|Worker) failed to start|WorkerStartTimeoutError", result.stderr):
        pytest.skip("the example's Dask LocalCluster could not start here:\n" + result.stderr[-2000:])
    assert result.returncode == 0, result.stderr
    losses = [float(v) for v in re.findall(r"epoch +\d+ +loss ([\d.]+)", result.stdout)]
    assert len(losses) == 3 and losses[-1] < losses[0], result.stdout
    assert "model shipped 1x, parameters 36x" in result.stdout  # once per step's changed parameters
    diff = float(re.search(r"largest difference from one process's gradients: (\S+)", result.stdout).group(1))
    assert diff < 1e-12, result.stdout
