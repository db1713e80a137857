"""``aiograd.utils.data.DataLoader`` with worker processes (``num_workers > 0``) against torch's
semantics: the same batches in the same order as without workers, ``get_worker_info`` sharding,
seeding, ``worker_init_fn``, errors re-raised with torch's text, torch's argument errors,
persistent workers, ``async for``, and clean shutdown (no child process left behind).

Datasets and functions live at the module's top level: workers start by forkserver (or spawn),
which pickles them."""

from __future__ import annotations

import gc
import multiprocessing
import os
import random
import re
import signal
from typing import Any

import anyio
import numpy as np
import pytest

import aiograd as ag
from aiograd.utils import data as D


def torch_data() -> Any:
    """torch.utils.data, imported only in the tests that compare with it: the workers import
    this module (to unpickle its datasets), and importing torch there would cost seconds."""
    return pytest.importorskip("torch").utils.data


pytestmark = pytest.mark.aiograd(backends=["asyncio"])


def plain(x: Any) -> Any:
    """A structure of aiograd tensors as comparable plain values."""
    if isinstance(x, ag.Tensor):
        return ("tensor", str(x.dtype), np.asarray(x.data).tolist())
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [plain(v) for v in x])
    return x


def no_children() -> bool:
    gc.collect()  # an iterator in a reference cycle (an exception's traceback) is freed here
    return multiprocessing.active_children() == []


class Squares(D.Dataset[Any]):
    """Map-style samples of several types: a tensor, an int, a string."""

    def __getitem__(self, i: int) -> Any:
        return {"x": ag.tensor([float(i), -float(i)]), "y": i * i, "name": f"s{i}"}

    def __len__(self) -> int:
        return 11


class Sharded(D.IterableDataset[int]):
    """0..n-1, each worker yielding its share (torch's docs' example); the main process all."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self) -> Any:
        info = D.get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


class Unsharded(D.IterableDataset[int]):
    """Every worker yields the whole stream (the duplication torch's docs warn about)."""

    def __iter__(self) -> Any:
        return iter(range(3))


class Seeds(D.Dataset[Any]):
    """Each sample: the worker's id and seed, and draws from python, numpy and aiograd."""

    def __getitem__(self, i: int) -> Any:
        info = D.get_worker_info()
        assert info is not None and info.dataset is self  # the worker's copy
        return [
            info.id,
            info.seed,
            random.random(),
            float(np.random.rand()),
            float(ag.rand(()).item()),
        ]

    def __len__(self) -> int:
        return 4


class Failing(D.Dataset[int]):
    def __init__(self, error: type[Exception]) -> None:
        self.error = error

    def __getitem__(self, i: int) -> int:
        if i == 3:
            raise self.error("bad sample 3")
        return i

    def __len__(self) -> int:
        return 6


class Pids(D.Dataset[int]):
    def __getitem__(self, i: int) -> int:
        return os.getpid()

    def __len__(self) -> int:
        return 4


class Killer(D.Dataset[int]):
    """Sample 2 kills its worker."""

    def __getitem__(self, i: int) -> int:
        if i == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        return i

    def __len__(self) -> int:
        return 4


def record_init(worker_id: int) -> None:
    info = D.get_worker_info()
    assert info is not None
    info.dataset.inits = [worker_id, info.id, info.num_workers]


class InitRecords(D.Dataset[Any]):
    inits: list[int] = []

    def __getitem__(self, i: int) -> Any:
        return list(self.inits)

    def __len__(self) -> int:
        return 4


# ------------------------------------------------------------------------------ batches
@pytest.mark.parametrize(
    "kwargs",
    [
        dict(batch_size=3),
        dict(batch_size=3, drop_last=True, prefetch_factor=1),
        dict(batch_size=None),
        dict(batch_sampler=[[0, 5], [2], [1, 3, 4], [10]]),
    ],
)
def test_same_batches_in_the_same_order_as_without_workers(kwargs: dict[str, Any]) -> None:
    expected = [
        plain(b)
        for b in D.DataLoader(
            Squares(), **{k: v for k, v in kwargs.items() if k != "prefetch_factor"}
        )
    ]
    assert [plain(b) for b in D.DataLoader(Squares(), num_workers=2, **kwargs)] == expected
    assert no_children()


def test_shuffled_orders_follow_the_seed_with_or_without_workers() -> None:
    ag.manual_seed(5)
    without = [plain(b) for b in D.DataLoader(Squares(), batch_size=2, shuffle=True)]
    ag.manual_seed(5)
    with_workers = [
        plain(b) for b in D.DataLoader(Squares(), batch_size=2, shuffle=True, num_workers=2)
    ]
    assert with_workers == without
    assert sorted(v for b in without for v in b["y"][2]) == [i * i for i in range(11)]


def test_out_of_order_results_are_reordered() -> None:
    # worker 0 gets the batches 0, 2, 4, ...; with in_order=False torch hands out whatever arrives
    loader = D.DataLoader(Squares(), batch_size=1, num_workers=2, prefetch_factor=4)
    assert [int(b["y"].item()) for b in loader] == [i * i for i in range(11)]


def test_iterable_dataset_sharding_with_get_worker_info() -> None:
    assert D.get_worker_info() is None
    got = [b.tolist() for b in D.DataLoader(Sharded(7), batch_size=2, num_workers=2)]
    assert got == [[0, 2], [1, 3], [4, 6], [5]]  # the workers' batches in turn, as torch's
    TD = torch_data()

    class TorchSharded(TD.IterableDataset):  # type: ignore[misc,name-defined]
        def __iter__(self) -> Any:
            info = TD.get_worker_info()
            return iter(range(info.id, 7, info.num_workers))

    theirs = [
        b.tolist()
        for b in TD.DataLoader(
            TorchSharded(), batch_size=2, num_workers=2, multiprocessing_context="fork"
        )
    ]
    assert got == theirs
    # without sharding each worker yields everything; a worker that ends stops being asked
    assert [b.tolist() for b in D.DataLoader(Unsharded(), batch_size=2, num_workers=2)] == [
        [0, 1],
        [0, 1],
        [2],
        [2],
    ]
    assert no_children()


# ------------------------------------------------------------------------------ seeding, init
def test_worker_seeds_are_distinct_and_reproducible() -> None:
    def run() -> list[list[float]]:
        ag.manual_seed(7)
        return [
            b
            for batch in D.DataLoader(Seeds(), batch_size=1, num_workers=2, collate_fn=list)
            for b in batch
        ]

    rows = run()
    assert [r[0] for r in rows] == [0, 1, 0, 1]
    seed0 = rows[0][1]
    assert rows[1][1] == seed0 + 1  # base_seed + worker id
    ag.manual_seed(7)
    assert seed0 == int(ag.empty((), dtype=ag.int64).random_().item())  # torch's draw of base_seed
    assert len({tuple(r[2:]) for r in rows}) == 4  # the workers' streams differ
    random.seed(seed0)
    assert rows[0][2] == random.random()  # worker 0's python random, seeded base_seed + 0
    assert run() == rows
    g = ag.Generator()
    g.manual_seed(7)
    got = [
        b
        for batch in D.DataLoader(
            Seeds(), batch_size=1, num_workers=2, collate_fn=list, generator=g
        )
        for b in batch
    ]
    assert got[0][1] == seed0  # the loader's generator, not the default one, draws base_seed


def test_worker_init_fn_is_called_with_each_id() -> None:
    loader = D.DataLoader(InitRecords(), batch_size=None, num_workers=2, worker_init_fn=record_init)
    assert list(loader) == [[0, 0, 2], [1, 1, 2], [0, 0, 2], [1, 1, 2]]


# ------------------------------------------------------------------------------ errors
@pytest.mark.parametrize("error", [ValueError, KeyError])
def test_worker_errors_are_reraised_with_torch_text(error: type[Exception]) -> None:
    it = iter(D.DataLoader(Failing(error), batch_size=2, num_workers=2))
    assert next(it).tolist() == [0, 1]
    with pytest.raises(error) as caught:
        next(it)
    text = str(caught.value) if error is not KeyError else caught.value.args[0]
    assert text.startswith(
        f"Caught {error.__name__} in DataLoader worker process 1.\nOriginal Traceback (most recent call last):\n"
    )
    assert "bad sample 3" in text and 'raise self.error("bad sample 3")' in text
    assert next(it).tolist() == [4, 5]  # as torch's: the iterator goes on
    del it, caught
    assert no_children()


def test_a_killed_worker_raises_instead_of_hanging() -> None:
    it = iter(D.DataLoader(Killer(), batch_size=1, num_workers=2))
    with pytest.raises(
        RuntimeError, match=r"^DataLoader worker \(pid\(s\) \d+\) exited unexpectedly$"
    ):
        list(it)
    del it
    assert no_children()


def test_timeout_message() -> None:
    # a worker_init_fn error is reported with the first task; here it is an AssertionError
    with pytest.raises(ValueError, match="Caught ValueError in DataLoader worker process 0"):
        next(iter(D.DataLoader(Squares(), num_workers=1, worker_init_fn=raise_value_error)))
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0\.05 seconds$"):
        list(D.DataLoader(Squares(), num_workers=1, timeout=0.05, worker_init_fn=block_forever))
    assert no_children()


def raise_value_error(worker_id: int) -> None:
    raise ValueError("no init")


def block_forever(worker_id: int) -> None:
    import threading

    threading.Event().wait()  # the worker is terminated at shutdown


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(num_workers=0, prefetch_factor=2),
        dict(num_workers=2, prefetch_factor=-1),
        dict(num_workers=0, persistent_workers=True),
        dict(num_workers=0, multiprocessing_context="spawn"),
        dict(num_workers=2, multiprocessing_context="nonsense"),
        dict(num_workers=2, multiprocessing_context=3),
        dict(num_workers=-1),
        dict(num_workers=1, timeout=-1),
    ],
)
def test_argument_errors_as_torch(kwargs: dict[str, Any]) -> None:
    TD = torch_data()
    with pytest.raises(Exception) as expected:
        TD.DataLoader(range(4), **kwargs)
    with pytest.raises(expected.type, match=f"^{re.escape(str(expected.value))}$"):
        D.DataLoader(range(4), **kwargs)


def test_defaults_as_torch() -> None:
    TD = torch_data()
    for kwargs in (
        dict(num_workers=2),
        dict(num_workers=0),
        dict(num_workers=2, prefetch_factor=3),
    ):
        ours, theirs = D.DataLoader(range(4), **kwargs), TD.DataLoader(range(4), **kwargs)
        assert ours.prefetch_factor == theirs.prefetch_factor
    ctx = D.DataLoader(
        range(4), num_workers=1, multiprocessing_context="spawn"
    ).multiprocessing_context
    assert ctx.get_start_method() == "spawn"
    assert [
        b.tolist()
        for b in D.DataLoader(range(4), batch_size=2, num_workers=1, multiprocessing_context=ctx)
    ] == [[0, 1], [2, 3]]


# ------------------------------------------------------------------------------ lifetime
def test_early_break_and_exhaustion_leave_no_process() -> None:
    loader = D.DataLoader(Squares(), batch_size=2, num_workers=2)
    for _ in loader:
        assert len(multiprocessing.active_children()) == 2
        break
    assert no_children()
    it = iter(loader)
    next(it)
    it._shutdown_workers()  # what exhaustion does
    assert no_children()
    assert len(list(loader)) == 6
    assert no_children()


def test_persistent_workers_are_reused_across_epochs() -> None:
    loader = D.DataLoader(Pids(), batch_size=None, num_workers=2, persistent_workers=True)
    first = list(loader)
    children = {p.pid for p in multiprocessing.active_children()}
    assert set(first) == children and len(children) == 2
    for _ in loader:  # an epoch broken off early: the next one still starts afresh
        break
    assert list(loader) == first
    assert {p.pid for p in multiprocessing.active_children()} == children
    sharded = D.DataLoader(Sharded(5), batch_size=2, num_workers=2, persistent_workers=True)
    assert [b.tolist() for b in sharded] == [[0, 2], [1, 3], [4]]
    assert [b.tolist() for b in sharded] == [[0, 2], [1, 3], [4]]
    del loader, sharded
    assert no_children()


async def test_async_for_with_workers() -> None:
    loader = D.DataLoader(Squares(), batch_size=3, num_workers=2)
    assert [plain(b) async for b in loader] == [
        plain(b) for b in D.DataLoader(Squares(), batch_size=3)
    ]
    assert no_children()
    ticks = 0
    async with anyio.create_task_group() as tg:

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await anyio.sleep(0)

        tg.start_soon(tick)
        async for _ in D.DataLoader(Squares(), batch_size=3, num_workers=2):
            pass
        tg.cancel_scope.cancel()
    assert ticks > 0  # the loop ran while the batches were awaited


async def test_cancelled_async_for_leaves_no_process() -> None:
    with anyio.move_on_after(0.5):
        async for _ in D.DataLoader(
            Squares(), batch_size=1, num_workers=1, worker_init_fn=block_forever
        ):
            pass
    assert no_children()
    with pytest.raises(ValueError, match="Caught ValueError in DataLoader worker process 1"):
        async for _ in D.DataLoader(Failing(ValueError), batch_size=2, num_workers=2):
            pass
    assert no_children()
