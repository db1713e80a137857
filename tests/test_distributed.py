"""aiograd.distributed on a real Dask cluster: a LocalCluster of 2 worker processes, started once
for the module (in about a second) and closed after it.

Skipped, with the reason, where ``distributed`` is not installed (``pip install
aiograd[distributed]``; the dev extra installs it), or where the cluster cannot start within
``AIOGRAD_TEST_CLUSTER_TIMEOUT`` seconds.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import aiograd as ag
import aiograd.nn.functional as F
from aiograd import nn
from aiograd.distributed import DataParallel

distributed = pytest.importorskip("distributed", reason="distributed is not installed (pip install aiograd[distributed])")

# One loop is enough: the cluster runs in its own processes, and each test's client is the
# test's own; the engine's tests cover the backends.
# A cluster of processes per module: seconds a test; one worker of a parallel run holds it.
pytestmark = [pytest.mark.aiograd(backends=["asyncio"]), pytest.mark.slow, pytest.mark.xdist_group("dask")]


#: How long the cluster may take to start its worker processes: generous, as a loaded machine can
#: take minutes to start Python processes. It bounds a hang; it is not a speed check.
CLUSTER_TIMEOUT = float(os.environ.get("AIOGRAD_TEST_CLUSTER_TIMEOUT", "600"))


@pytest.fixture(scope="module")
def cluster_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # Every port is picked by the system (the scheduler's HTTP server would take 8787 by
    # default), and the workers' scratch space is this module's own: parallel test processes
    # share neither. The tests count on both workers being up (a shard each).
    import dask

    with dask.config.set({"distributed.comm.timeouts.connect": f"{CLUSTER_TIMEOUT}s"}):
        try:
            cluster = distributed.LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0",
                silence_logs=True, local_directory=str(tmp_path_factory.mktemp("dask")),
            )
        except Exception as exc:  # noqa: BLE001 - any way of not starting: the reason is shown
            pytest.skip(f"a Dask LocalCluster could not start here: {type(exc).__name__}: {exc}")
        with cluster:
            try:
                cluster.wait_for_workers(2, timeout=CLUSTER_TIMEOUT)
            except TimeoutError as exc:
                pytest.skip(f"the Dask LocalCluster's workers did not start here: {exc}")
            yield cluster.scheduler_address


def make_model() -> nn.Module:
    ag.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 3))


def batch(n: int = 37) -> tuple[ag.Tensor, ag.Tensor]:
    rng = np.random.default_rng(1)
    return ag.tensor(rng.standard_normal((n, 8))), ag.tensor(rng.integers(0, 3, n))


async def one_process(model: nn.Module, x: ag.Tensor, y: ag.Tensor, reduction: str) -> tuple[float, list[Any]]:
    loss = F.cross_entropy(model(x), y, reduction=reduction)
    return loss.item(), list(await ag.grad(loss, list(model.parameters())))


@pytest.mark.parametrize("reduction", ["mean", "sum"])
async def test_the_gradients_are_one_processs(cluster_address: str, reduction: str) -> None:
    """37 rows in 2 uneven shards, each on a worker process: the summed gradients and the loss
    are those of the whole batch in this process, to float rounding."""
    model = make_model()
    x, y = batch()
    async with distributed.Client(cluster_address, asynchronous=True) as client:
        dp = DataParallel(client, model, lambda out, t: F.cross_entropy(out, t, reduction=reduction), reduction=reduction)
        loss, grads = await dp.grad(x, y)
    want_loss, want = await one_process(model, x, y, reduction)
    assert loss == pytest.approx(want_loss, rel=1e-12)
    for g, w in zip(grads, want, strict=True):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12, atol=1e-14)
    assert all(p.grad is None for p in model.parameters())  # grad() leaves .grad alone


async def test_training_steps_match_one_process_and_parameters_ship_when_changed(cluster_address: str) -> None:
    x, y = batch()
    model, reference = make_model(), make_model()
    opt = ag.optim.Adam(model.parameters(), lr=0.01)
    ref_opt = ag.optim.Adam(reference.parameters(), lr=0.01)
    async with distributed.Client(cluster_address, asynchronous=True) as client:
        dp = DataParallel(client, model, F.cross_entropy, shards=3)
        for _ in range(3):
            opt.zero_grad()
            loss = await dp.backward(x, y)
            opt.step()
            ref_opt.zero_grad()
            ref_loss = F.cross_entropy(reference(x), y)
            await ref_loss.backward()
            ref_opt.step()
            assert loss == pytest.approx(ref_loss.item(), rel=1e-12)
        await dp.grad(x, y)  # the last step changed the parameters: shipped again
        await dp.grad(x, y)  # unchanged since: nothing shipped
    for p, q in zip(model.parameters(), reference.parameters(), strict=True):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-10)
    # The model once; the parameters before each of the 3 steps' backward and after the last.
    assert (dp.model_shipments, dp.parameter_shipments) == (1, 4)


async def test_refresh_ships_parameters_changed_behind_the_version(cluster_address: str) -> None:
    model = make_model()
    x, y = batch(8)
    async with distributed.Client(cluster_address, asynchronous=True) as client:
        dp = DataParallel(client, model, F.cross_entropy)
        await dp.grad(x, y)
        first = next(iter(model.parameters()))
        first.detach().numpy()[...] = 0.0  # numpy's write: no version bump, so refresh() says so
        dp.refresh()
        loss, _ = await dp.grad(x, y)
    assert loss == pytest.approx(F.cross_entropy(model(x), y).item(), rel=1e-12)
    assert dp.parameter_shipments == 2


async def test_an_error_on_a_worker_keeps_its_type_and_message(cluster_address: str) -> None:
    def bad_loss(out: ag.Tensor, target: ag.Tensor) -> ag.Tensor:
        raise ValueError(f"bad target of {len(target)} rows")

    x, y = batch(4)
    async with distributed.Client(cluster_address, asynchronous=True) as client:
        dp = DataParallel(client, make_model(), bad_loss, shards=1)
        with pytest.raises(ValueError, match="^bad target of 4 rows$"):
            await dp.grad(x, y)
        loss, _ = await DataParallel(client, make_model(), F.cross_entropy).grad(x, y)  # still serves
    assert np.isfinite(loss)


async def test_bad_batches_and_models_are_refused(cluster_address: str) -> None:
    x, y = batch(6)
    async with distributed.Client(cluster_address, asynchronous=True) as client:
        dp = DataParallel(client, make_model(), F.cross_entropy)
        with pytest.raises(ValueError, match="^DataParallel: 6 inputs but 5 targets$"):
            await dp.grad(x, y[:5])
        with pytest.raises(ValueError, match=r"^DataParallel: inputs of different batch sizes \(6 and 5\)$"):
            await dp.grad([x, x[:5]], y)
        with pytest.raises(ValueError, match="^DataParallel: an empty batch$"):
            await dp.grad(x[:0], y[:0])
        with pytest.raises(ValueError, match="^reduction must be 'mean' or 'sum', got 'none'$"):
            DataParallel(client, make_model(), F.cross_entropy, reduction="none")
        bn = nn.Sequential(nn.Linear(8, 4), nn.BatchNorm1d(4))
        with pytest.raises(ValueError, match="^DataParallel: BatchNorm1d '1' in training mode normalises each shard"):
            DataParallel(client, bn, F.cross_entropy)
        bn.eval()
        DataParallel(client, bn, F.cross_entropy)  # running statistics: rows are independent


async def test_a_batch_scattered_once_serves_several_calls(cluster_address: str) -> None:
    model = make_model()
    x, y = batch()
    async with distributed.Client(cluster_address, asynchronous=True) as client:
        dp = DataParallel(client, model, F.cross_entropy)
        scattered = await dp.scatter(x, y)
        assert (scattered.rows, scattered.sizes, len(set(scattered.homes))) == (37, [18, 19], 2)  # a worker each
        calls = [await dp.grad(scattered), await dp.grad(scattered)]
        with pytest.raises(TypeError, match="^DataParallel: a scattered batch holds its targets; pass no target$"):
            await dp.grad(scattered, y)
    want_loss, want = await one_process(model, x, y, "mean")
    for loss, grads in calls:
        assert loss == pytest.approx(want_loss, rel=1e-12)
        for g, w in zip(grads, want, strict=True):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12, atol=1e-14)
