"""DaskExecutor on a real cluster: a LocalCluster of 2 worker processes (1 thread each), started
once for the module and closed after it, whose scheduler gives a node up after its second
worker death (``allowed-failures`` 1: one retry).

Misbehaving workers come from tests/dask_sabotage.py, a worker plugin. Skipped, with the reason,
where ``distributed`` is not installed (``pip install aiograd[distributed]``), or where the
cluster cannot start (or get its workers back) within ``AIOGRAD_TEST_CLUSTER_TIMEOUT`` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import entering

import aiograd as ag
from aiograd.executors import DaskExecutor, ThreadExecutor

distributed = pytest.importorskip("distributed", reason="distributed is not installed (pip install aiograd[distributed])")
dask = pytest.importorskip("dask")

from dask_sabotage import RELEASE, STARTED, Sabotage, SabotagedOnTheWorker  # noqa: E402 - needs distributed

# The cluster runs in its own processes; the engine's tests cover the backends.
once = pytest.mark.aiograd(backends=["asyncio"])
# A cluster of processes per module: seconds a test; one worker of a parallel run holds it.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("dask")]

#: How long the cluster may take to start its worker processes, or to get back one that a test
#: killed: generous, as a loaded machine can take minutes to start Python processes. It bounds a
#: hang; it is not a speed check.
CLUSTER_TIMEOUT = float(os.environ.get("AIOGRAD_TEST_CLUSTER_TIMEOUT", "600"))
WORKERS = 2


@pytest.fixture(scope="module")
def cluster_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # Every port is picked by the system (the scheduler's HTTP server would take 8787 by
    # default), and the workers' scratch space is this module's own: parallel test processes
    # share neither.
    with dask.config.set({
        "distributed.scheduler.allowed-failures": 1,
        "distributed.comm.timeouts.connect": f"{CLUSTER_TIMEOUT}s",
    }):
        try:
            cluster = distributed.LocalCluster(
                n_workers=WORKERS, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0",
                silence_logs=True, local_directory=str(tmp_path_factory.mktemp("dask")),
            )
        except Exception as exc:  # noqa: BLE001 - any way of not starting: the reason is shown
            pytest.skip(f"a Dask LocalCluster could not start here: {type(exc).__name__}: {exc}")
        with cluster:
            try:
                cluster.wait_for_workers(WORKERS, timeout=CLUSTER_TIMEOUT)
            except TimeoutError as exc:
                pytest.skip(f"the Dask LocalCluster's workers did not start here: {exc}")
            yield cluster.scheduler_address


async def all_workers(client: Any) -> None:
    """Wait until the cluster has all its workers (a test may have killed one: its nanny starts
    another); skips the test, with the reason, if they do not come within CLUSTER_TIMEOUT."""
    try:
        await client.wait_for_workers(WORKERS, timeout=CLUSTER_TIMEOUT)
    except TimeoutError as exc:
        pytest.skip(f"the Dask LocalCluster did not get its workers back: {exc}")


@contextlib.asynccontextmanager
async def connected(cluster_address: str) -> AsyncIterator[Any]:
    """An asynchronous client of the module's cluster, on the test's loop (see ``with_client``)."""
    async with distributed.Client(cluster_address, asynchronous=True) as client:
        await all_workers(client)  # after a test that killed one
        yield client
        with contextlib.suppress(TimeoutError):  # if not, the next test's setup says so
            await client.wait_for_workers(WORKERS, timeout=CLUSTER_TIMEOUT)


#: The test gets ``client``, connected around it.
with_client = entering("client", connected)


@contextlib.asynccontextmanager
async def sabotage(client: Any, mode: str, markers: Path, times: int = 1) -> AsyncIterator[None]:
    """Shipped nodes misbehave on the workers (``mode``, see dask_sabotage.py) while inside."""
    await client.register_plugin(Sabotage(mode, str(markers), times))
    try:
        yield
    finally:
        await client.unregister_worker_plugin(Sabotage.name)


def shipping(client: Any) -> DaskExecutor:
    """A DaskExecutor that ships every node it can, used by this loop's engine for all."""
    executor = DaskExecutor(client, ship_threshold=0, ns_per_byte=0)
    ship_everything(executor)
    return executor


def ship_everything(executor: DaskExecutor) -> ag.Engine:
    """Every node with a cost goes to ``executor``, which ships every node it can."""
    engine = ag.get_engine()
    engine.executors["cpu"] = executor
    engine.offload_threshold = engine.stall_threshold = 1e-9
    return engine


def wide(w: ag.Tensor, x: ag.Tensor, branches: int = 8) -> ag.Tensor:
    """``branches`` independent matmul-tanh branches summed: they can run side by side."""
    return sum((x.mm(w * (i + 1)).tanh().sum() for i in range(branches)), ag.tensor(0.0))


def weights(seed: int = 0) -> tuple[ag.Tensor, ag.Tensor]:
    rng = np.random.default_rng(seed)
    w = ag.tensor(rng.standard_normal((64, 64)) / 8, requires_grad=True)
    x = ag.tensor(rng.standard_normal((32, 64)))
    return w, x


BIG = 600  # (a float64 product of 600 x 600 x 600: 6.5 ms by the engine's estimate)


def big() -> tuple[ag.Tensor, ag.Tensor]:
    """Big enough for an engine with the default thresholds (aiograd.sync's) to offload the
    weight's matrix product alone: over the 5 ms stall bound, by its estimate."""
    rng = np.random.default_rng(0)
    return ag.tensor(rng.standard_normal((BIG, BIG)) / 20, requires_grad=True), ag.tensor(rng.standard_normal((BIG, BIG)))


async def reference(w: ag.Tensor, x: ag.Tensor) -> np.ndarray:
    engine = ag.get_engine()
    saved = dict(engine.executors), engine.offload_threshold
    engine.executors.clear()
    engine.offload_threshold = None
    try:
        (g,) = await ag.grad(wide(w, x), [w])
    finally:
        engine.executors.update(saved[0])
        engine.offload_threshold = saved[1]
    return g.numpy()


@once
@with_client
async def test_nodes_run_on_the_workers_and_give_one_processs_gradients(client: Any) -> None:
    executor = DaskExecutor(client, ship_threshold=0, ns_per_byte=0)
    engine = ship_everything(executor)
    w, x = weights()
    (g,) = await ag.grad(wide(w, x), [w])
    np.testing.assert_allclose(g.numpy(), await reference(w, x), rtol=1e-13, atol=1e-15)
    # 8 x (mm, tanh, sum, mul) and the 7 adds of the sum, plus the sum's start: all on the cluster.
    assert executor.nodes_shipped >= 32 and executor.nodes_kept == 0
    assert engine.statistics().nodes_in_flight == 0
    # They ran in the worker processes, as Dask tasks named after the nodes.
    prefixes = await client.run_on_scheduler(_task_prefixes)
    assert {"MmBackward0", "TanhBackward0", "SumBackward0", "MulBackward0"} <= set(prefixes)
    executor.close()
    # Two tasks per thread of the cluster, as the scheduler counts them, plus the local pool's.
    # Read by a new executor just after the client's view of the scheduler was refreshed with
    # every worker (wait_for_workers does that), before the client's periodic refresh can
    # replace it: see the next test.
    threads = sum((await client.nthreads()).values())
    await client.wait_for_workers(WORKERS, timeout=CLUSTER_TIMEOUT)
    fresh = DaskExecutor(client)
    assert fresh.capacity == 2 * threads + fresh.local.capacity
    fresh.close()


@once
@with_client
async def test_the_capacity_counts_the_clusters_threads_after_the_clients_view_refreshes(client: Any) -> None:
    threads = sum((await client.nthreads()).values())
    interval = dask.utils.parse_timedelta(dask.config.get("distributed.client.scheduler-info-interval"))
    refreshed = client.scheduler_info()
    deadline = time.monotonic() + 10 * interval + 30  # bounds a wait for a periodic refresh
    while client.scheduler_info() is refreshed and time.monotonic() < deadline:
        await asyncio.sleep(interval / 10)
    executor = DaskExecutor(client)
    assert executor.capacity == 2 * threads + executor.local.capacity
    executor.close()


@once
@with_client
async def test_a_profile_records_shipped_nodes(client: Any, tmp_path: Path) -> None:
    """A shipped node shows in a profile as offloaded to the DaskExecutor (one span from its
    submission to its result: its run on the worker is the cluster's to trace)."""
    executor = DaskExecutor(client, ship_threshold=0, ns_per_byte=0)
    ship_everything(executor)
    w, x = weights()
    with ag.profiler.profile() as prof:
        await ag.grad(x.mm(w).sum(), [w])
    (mm,) = [e for e in prof.events() if e.name == "MmBackward0"]
    assert mm.offload is not None and mm.offload.executor.startswith("DaskExecutor(")
    prof.export_chrome_trace(tmp_path / "trace.json")
    assert "MmBackward0" in (tmp_path / "trace.json").read_text()
    executor.close()


@once
@with_client
async def test_concurrent_backward_calls_share_the_cluster_and_each_gets_its_own_gradients(client: Any) -> None:
    """Eight backward calls in flight on one loop, their nodes interleaved on the workers: each
    call's gradients are its own (as one at a time), and nothing is left in flight."""
    shipping(client)
    rng = np.random.default_rng(3)
    w = ag.tensor(rng.standard_normal((64, 64)) / 8, requires_grad=True)
    xs = [ag.tensor(rng.standard_normal((32, 64))) for _ in range(8)]
    got = await asyncio.gather(*(ag.grad(x.mm(w).tanh().sum(), [w]) for x in xs))
    for (g,), x in zip(got, xs, strict=True):
        want = x.numpy().T @ (1 - np.tanh(x.numpy() @ w.detach().numpy()) ** 2)
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-12, atol=1e-14)
    stats = ag.get_engine().statistics()
    assert stats.graph_tasks_in_flight == 0 and stats.nodes_in_flight == 0


@once
@with_client
async def test_the_weights_travel_once_while_their_version_holds(client: Any) -> None:
    executor = DaskExecutor(client, ship_threshold=0, ns_per_byte=0, cache_bytes=1024)
    ship_everything(executor)
    w, x = weights()
    w2 = (w * 1).detach().requires_grad_()  # a leaf saved by every mm of the graph below
    for _ in range(2):
        (g,) = await ag.grad(sum((x.mm(w2).tanh() * i).sum() for i in range(1, 4)), [w2])
    # x (saved by the mm for w2's gradient) went to the cluster once, for 6 nodes in 2 calls.
    assert executor.arrays_scattered == 1
    with ag.no_grad():
        x.mul_(2)  # a new version: sent again
    (g,) = await ag.grad(x.mm(w2).tanh().sum(), [w2])
    assert executor.arrays_scattered == 2
    want = (1 - np.tanh(x.numpy() @ w2.detach().numpy()) ** 2)
    np.testing.assert_allclose(g.numpy(), x.numpy().T @ want, rtol=1e-12)
    executor.close()


@once
@with_client
async def test_nodes_below_the_threshold_or_unable_to_travel_run_here(client: Any) -> None:
    executor = DaskExecutor(client)  # the default threshold: tens of milliseconds of work
    ship_everything(executor)
    w, x = weights()
    (g,) = await ag.grad(wide(w, x), [w])
    np.testing.assert_allclose(g.numpy(), await reference(w, x), rtol=1e-13, atol=1e-15)
    assert executor.nodes_shipped == 0 and executor.nodes_kept > 0
    # create_graph: every node stays (its gradients are graphs).
    executor.ship_threshold = executor.ns_per_byte = 0
    kept = executor.nodes_kept
    (g,) = await ag.grad(wide(w, x), [w], create_graph=True)
    assert g.grad_fn is not None and executor.nodes_shipped == 0 and executor.nodes_kept > kept
    executor.close()


@once
@with_client
async def test_a_node_ships_only_if_its_math_outweighs_the_bytes_it_moves(client: Any) -> None:
    """With no threshold but the bytes' cost: small and elementwise nodes (16 bytes moved per
    element for a nanosecond of math) stay; a weight gradient of (16, 2048) rows, 2 ms of math
    estimated for 0.5 MB of gradients in and out (the rows go once, kept on the cluster), ships."""
    executor = DaskExecutor(client, ship_threshold=0)
    ship_everything(executor)
    w, x = weights()
    await ag.grad(wide(w, x), [w])
    assert executor.nodes_shipped == 0 and executor.nodes_kept > 0
    rng = np.random.default_rng(0)
    x = ag.tensor(rng.standard_normal((16, 2048)))
    w = ag.tensor(rng.standard_normal((2048, 2048)) / 50, requires_grad=True)
    out = x.mm(w)
    kept = executor.nodes_kept
    (g,) = await ag.grad(out, [w], ag.ones(16, 2048))
    assert executor.nodes_shipped == 1 and executor.nodes_kept == kept
    np.testing.assert_allclose(g.numpy(), x.numpy().T @ np.ones((16, 2048)), rtol=1e-12, atol=1e-12)
    executor.close()


@once
@with_client
async def test_a_worker_error_fails_the_backward_with_its_type_and_message(client: Any, tmp_path: Path) -> None:
    async with sabotage(client, "raise", tmp_path):
        shipping(client)
        w, x = weights()
        with pytest.raises(SabotagedOnTheWorker, match="sabotaged on the worker") as info:
            await ag.grad(x.mm(w).sum(), [w])
        assert any(note.startswith("while running") for note in info.value.__notes__)
        # The engine is usable, and the next call (no claims left) is right.
        (g,) = await ag.grad(x.mm(w).sum(), [w])
        np.testing.assert_allclose(g.numpy(), x.numpy().T @ np.ones((32, 64)), rtol=1e-12)
        stats = ag.get_engine().statistics()
        assert stats.graph_tasks_in_flight == 0 and stats.nodes_in_flight == 0


@once
@with_client
async def test_a_node_whose_worker_died_is_retried_on_another(client: Any, tmp_path: Path) -> None:
    async with sabotage(client, "die", tmp_path, times=1):
        shipping(client)
        w, x = weights()
        (g,) = await ag.grad(x.mm(w).tanh().sum(), [w])
        want = x.numpy().T @ (1 - np.tanh(x.numpy() @ w.detach().numpy()) ** 2)
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-12)
        assert (tmp_path / "claim-0").exists()  # a worker did die


@once
@with_client
async def test_a_node_that_kills_every_worker_it_runs_on_fails_the_backward_clearly(client: Any, tmp_path: Path) -> None:
    async with sabotage(client, "die", tmp_path, times=2):
        shipping(client)
        w, x = weights()
        with pytest.raises(RuntimeError, match=r"could not run on the Dask cluster: every worker that ran it died \(2 tries") as info:
            await ag.grad(x.mm(w).sum(), [w])
        assert isinstance(info.value.__cause__, distributed.KilledWorker)
        assert str(info.value).split(" ")[0].endswith("Backward0")  # it names the node
    # The cluster's nannies bring the workers back; the engine works on.
    await all_workers(client)
    (g,) = await ag.grad(x.mm(w).sum(), [w])
    np.testing.assert_allclose(g.numpy(), x.numpy().T @ np.ones((32, 64)), rtol=1e-12)


@once
@with_client
async def test_cancelling_the_backward_cancels_the_dask_task(client: Any, tmp_path: Path) -> None:
    release = distributed.Event(RELEASE, client=client)
    shipping(client)
    w, x = weights()
    async with sabotage(client, "block", tmp_path):
        try:
            backward = asyncio.ensure_future(ag.grad(x.mm(w).sum(), [w]))
            # a node runs (blocked) on a worker
            assert await distributed.Event(STARTED, client=client).wait(timeout=CLUSTER_TIMEOUT)
            keys = [k for k in await client.run_on_scheduler(_task_keys) if "Backward0" in k]
            assert keys
            backward.cancel()
            with pytest.raises(asyncio.CancelledError):
                await backward

            # The scheduler forgets the task (cancelled: no client wants it), though its worker
            # thread is still blocked in it.
            async def forgotten() -> bool:
                return not set(keys) & set(await client.run_on_scheduler(_task_keys))

            deadline = time.monotonic() + 120  # polling the scheduler's state: bounds a hang
            while not await forgotten() and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert await forgotten()
            stats = ag.get_engine().statistics()
            assert stats.graph_tasks_in_flight == 0 and stats.nodes_in_flight == 0
        finally:
            await release.set()  # the blocked worker thread goes on (and its result is dropped)
    (g,) = await ag.grad(x.mm(w).sum(), [w])  # usable after
    np.testing.assert_allclose(g.numpy(), x.numpy().T @ np.ones((32, 64)), rtol=1e-12)


def _task_keys(dask_scheduler: Any) -> list[str]:
    return [str(k) for k in dask_scheduler.tasks]


def _task_prefixes(dask_scheduler: Any) -> list[str]:
    return list(dask_scheduler.task_prefixes)


@once
@with_client
async def test_a_client_of_another_running_loop_serves_a_backward_on_aiograd_sync(client: Any) -> None:
    """The client is this test's loop's; the backward runs on aiograd.sync's loop, from a thread
    while this loop runs: Dask serves it as a synchronous client there."""
    executor = DaskExecutor(client, ship_threshold=0, ns_per_byte=0)
    ag.set_executor("cpu", executor)
    try:
        w, x = big()
        (g,) = await asyncio.to_thread(ag.sync.grad, x.mm(w).sum(), [w])
    finally:
        ag.set_executor("cpu", None)
        executor.close()
    np.testing.assert_allclose(g.numpy(), x.numpy().T @ np.ones((BIG, BIG)), rtol=1e-12, atol=1e-12)
    assert executor.nodes_shipped == 1


def test_a_synchronous_client_serves_any_loop(cluster_address: str) -> None:
    """A synchronous client (its own thread): aiograd.sync's loop ships through it."""
    with distributed.Client(cluster_address) as client:
        try:
            client.wait_for_workers(WORKERS, timeout=CLUSTER_TIMEOUT)
        except TimeoutError as exc:
            pytest.skip(f"the Dask LocalCluster did not get its workers back: {exc}")
        executor = DaskExecutor(client, ship_threshold=0, ns_per_byte=0, local=ThreadExecutor(1))
        ag.set_executor("cpu", executor)
        try:
            w, x = big()
            (g,) = ag.sync.grad(x.mm(w).tanh().sum(), [w])
        finally:
            ag.set_executor("cpu", None)
            executor.close()
    want = x.numpy().T @ (1 - np.tanh(x.numpy() @ w.detach().numpy()) ** 2)
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-12, atol=1e-12)
    assert executor.nodes_shipped >= 1


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="ship_threshold must be >= 0, got -1"):
        DaskExecutor(object(), ship_threshold=-1)
    with pytest.raises(ValueError, match="local must run nodes in this process off the loop"):
        DaskExecutor(object(), local=ag.executors.InlineExecutor())
