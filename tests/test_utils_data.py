"""``aiograd.utils.data`` against ``torch.utils.data``: collation (types, dtypes, values),
samplers, datasets, ``random_split``, the ``DataLoader``'s batches, lengths and errors, and
``async for``, which loads the next batch in a thread while the caller trains.

Shuffled batches are torch's for the same seed (checked here through the loader; the samplers
one by one in tests/test_random_torch_stream.py); other tests check the orders' properties and
their reproducibility."""

from __future__ import annotations

import collections
import re
import threading
from typing import Any

import numpy as np
import pytest

import aiograd as ag
from aiograd.utils import data as D

torch = pytest.importorskip("torch")
TD = torch.utils.data

pytestmark = pytest.mark.aiograd(backends=["asyncio", "uvloop", "trio"])  # the public API: trio too


# ------------------------------------------------------------------------------ helpers
def plain(x: Any) -> Any:
    """A structure of aiograd or torch tensors as comparable plain values: a tensor becomes
    (its dtype's name, its values as nested lists); containers keep their type's name."""
    if isinstance(x, ag.Tensor):
        return ("tensor", str(x.dtype).removeprefix("aiograd.").removeprefix("torch."), np.asarray(x.data).tolist())
    if isinstance(x, torch.Tensor):
        return ("tensor", str(x.dtype).removeprefix("torch."), x.numpy().tolist())
    if isinstance(x, dict):
        return ("dict", {k: plain(v) for k, v in x.items()})
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__name__, [plain(v) for v in x])
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [plain(v) for v in x])
    return x


def to_torch(x: Any) -> Any:
    """The same sample with torch tensors in place of aiograd ones."""
    if isinstance(x, ag.Tensor):
        return torch.from_numpy(np.array(x.data))
    if isinstance(x, dict):
        return {k: to_torch(v) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(to_torch(v) for v in x))
    if isinstance(x, (list, tuple)):
        return type(x)(to_torch(v) for v in x)
    return x


def same_error(ours: Any, theirs: Any) -> None:
    """``ours()`` raises torch's error for ``theirs()``: type and message."""
    with pytest.raises(Exception) as expected:
        theirs()
    with pytest.raises(expected.type, match=f"^{re.escape(str(expected.value))}$"):
        ours()


Point = collections.namedtuple("Point", ["x", "y"])

SAMPLES = {
    "ints": [0, 1, 2, 3],
    "bools": [True, False],
    "floats": [0.5, 1.25],  # float64, whatever the default dtype, as torch's
    "strings": ["a", "b"],
    "bytes": [b"a", b"b"],
    "tensors": [ag.tensor([1.0, 2.0]), ag.tensor([3.0, 4.0])],
    "int tensors": [ag.tensor([1, 2], dtype=ag.int32), ag.tensor([3, 4], dtype=ag.int32)],
    "arrays": [np.ones((2, 2), np.float32), np.zeros((2, 2), np.float32)],
    "numpy scalars": [np.float32(1.5), np.float32(2.5)],
    "numpy ints": [np.int16(1), np.int16(2)],
    "tuples": [(0, 1.0), (2, 3.0)],
    "lists": [[0, 1], [2, 3]],
    "dicts": [{"A": 0, "B": np.ones(2)}, {"A": 100, "B": np.zeros(2)}],
    "namedtuples": [Point(0, 0.5), Point(1, 1.5)],
    "nested": [({"x": [1, 2]}, "s"), ({"x": [3, 4]}, "t")],
}


# ------------------------------------------------------------------------------ collation
@pytest.mark.real_default_dtype
@pytest.mark.parametrize("name", list(SAMPLES))
def test_default_collate_as_torch(name: str) -> None:
    batch = SAMPLES[name]
    assert plain(D.default_collate(batch)) == plain(TD.default_collate(to_torch(batch)))


@pytest.mark.parametrize("value", [np.arange(3), np.float64(2.0), 3, (np.ones(2), "a"), {"k": np.zeros(1)}, Point(np.int64(1), 2)])
def test_default_convert_as_torch(value: Any) -> None:
    assert plain(D.default_convert(value)) == plain(TD.default_convert(value))


def test_collate_errors_as_torch() -> None:
    same_error(lambda: D.default_collate([[1, 2], [3]]), lambda: TD.default_collate([[1, 2], [3]]))
    same_error(lambda: D.default_collate([object()]), lambda: TD.default_collate([object()]))
    strings = [np.array(["a"]), np.array(["b"])]
    same_error(lambda: D.default_collate(strings), lambda: TD.default_collate(strings))


def test_default_collate_fn_map_is_extensible() -> None:
    class Box:
        pass

    def collate_box(batch: Any, *, collate_fn_map: Any = None) -> str:
        return f"{len(batch)} boxes"

    assert D.collate([Box(), Box()], collate_fn_map={**D.default_collate_fn_map, Box: collate_box}) == "2 boxes"


# ------------------------------------------------------------------------------ samplers
@pytest.mark.parametrize("batch_size", [1, 3, 4, 10])
@pytest.mark.parametrize("drop_last", [False, True])
def test_batch_sampler_as_torch(batch_size: int, drop_last: bool) -> None:
    ours = D.BatchSampler(D.SequentialSampler(range(10)), batch_size, drop_last)
    theirs = TD.BatchSampler(TD.SequentialSampler(range(10)), batch_size, drop_last)
    assert list(ours) == list(theirs)
    assert len(ours) == len(theirs)


@pytest.mark.parametrize(
    "make",
    [
        lambda M: M.RandomSampler(range(3), replacement=1),
        lambda M: M.RandomSampler(range(3), num_samples=0),
        lambda M: M.RandomSampler([], num_samples=None),
        lambda M: M.BatchSampler(range(3), 0, False),
        lambda M: M.BatchSampler(range(3), True, False),
        lambda M: M.BatchSampler(range(3), 2, None),
        lambda M: M.WeightedRandomSampler([1.0], 0),
        lambda M: M.WeightedRandomSampler([1.0], 1, replacement=0),
        lambda M: M.WeightedRandomSampler([[1.0]], 1),
    ],
)
def test_sampler_errors_as_torch(make: Any) -> None:
    same_error(lambda: make(D), lambda: make(TD))


def test_random_sampler_orders() -> None:
    ag.manual_seed(0)
    first = list(D.RandomSampler(range(20)))
    again = list(D.RandomSampler(range(20)))
    ag.manual_seed(0)
    assert list(D.RandomSampler(range(20))) == first  # manual_seed fixes the order
    assert sorted(first) == list(range(20)) and first != again  # a permutation, new each epoch
    longer = list(D.RandomSampler(range(4), num_samples=10))
    assert len(longer) == 10 and sorted(longer[:8]) == [0, 0, 1, 1, 2, 2, 3, 3]
    drawn = list(D.RandomSampler(range(3), replacement=True, num_samples=50))
    assert len(drawn) == 50 and set(drawn) == {0, 1, 2}


class _HasRng:
    """Stands for ``aiograd.Generator``: anything holding a numpy Generator as ``_rng``."""

    def __init__(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)


@pytest.mark.parametrize("make_generator", [np.random.default_rng, _HasRng])
def test_samplers_take_a_generator(make_generator: Any) -> None:
    ours = [list(D.RandomSampler(range(10), generator=make_generator(3))) for _ in range(2)]
    subset = [list(D.SubsetRandomSampler([5, 6, 7, 8], generator=make_generator(3))) for _ in range(2)]
    assert ours[0] == ours[1] and sorted(ours[0]) == list(range(10))
    assert subset[0] == subset[1] and sorted(subset[0]) == [5, 6, 7, 8]
    with pytest.raises(TypeError, match="generator must be an aiograd.Generator or a numpy.random.Generator, but got int"):
        list(D.RandomSampler(range(3), generator=3))


def test_weighted_random_sampler() -> None:
    drawn = list(D.WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 40, generator=np.random.default_rng(0)))
    assert len(drawn) == 40 and set(drawn) == {1, 3}
    once = list(D.WeightedRandomSampler([1.0, 1.0, 1.0], 3, replacement=False))
    assert sorted(once) == [0, 1, 2]


# ------------------------------------------------------------------------------ datasets
def test_tensor_dataset() -> None:
    x, y = ag.arange(12.0).reshape(6, 2), ag.arange(6)
    ds = D.TensorDataset(x, y)
    assert len(ds) == 6 and plain(ds[2]) == plain(TD.TensorDataset(to_torch(x), to_torch(y))[2])
    same_error(lambda: D.TensorDataset(x, ag.arange(5)), lambda: TD.TensorDataset(to_torch(x), torch.arange(5)))


def test_concat_chain_and_subset() -> None:
    class Squares(D.Dataset[int]):
        def __init__(self, n: int) -> None:
            self.n = n

        def __getitem__(self, i: int) -> int:
            return i * i

        def __len__(self) -> int:
            return self.n

    both = Squares(3) + Squares(2)
    assert isinstance(both, D.ConcatDataset) and both.cumulative_sizes == [3, 5]
    assert [both[i] for i in range(-5, 5)] == [0, 1, 4, 0, 1] * 2
    same_error(lambda: both[-6], lambda: TD.ConcatDataset([[0, 1, 4], [0, 1]])[-6])
    same_error(lambda: D.ConcatDataset([]), lambda: TD.ConcatDataset([]))

    class Stream(D.IterableDataset[int]):
        def __iter__(self) -> Any:
            return iter([1, 2])

    same_error(lambda: D.ConcatDataset([Stream()]), lambda: TD.ConcatDataset([TD.ChainDataset([])]))
    assert list(Stream() + Stream()) == [1, 2, 1, 2]
    sub = D.Subset(Squares(5), [4, 0])
    assert len(sub) == 2 and [sub[0], sub[1]] == [16, 0] and sub.__getitems__([1, 0]) == [0, 16]
    with pytest.raises(NotImplementedError, match="Sub overrides __getitem__ but not __getitems__"):

        class Sub(D.Subset[int]):
            def __getitem__(self, idx: Any) -> Any:
                return 0

        Sub(Squares(2), [0])
    with pytest.raises(NotImplementedError, match="Subclasses of Dataset should implement __getitem__."):
        D.Dataset()[0]


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.7], [0.5, 0.5], [0.33, 0.33, 0.34], [1 / 3] * 3])
def test_random_split_lengths_as_torch(lengths: list[Any]) -> None:
    ours = D.random_split(range(10), lengths, generator=np.random.default_rng(0))
    theirs = TD.random_split(range(10), lengths, generator=torch.Generator().manual_seed(0))
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    assert sorted(i for s in ours for i in s.indices) == list(range(10))


def test_random_split_reproducible_and_errors() -> None:
    ag.manual_seed(1)
    first = [s.indices for s in D.random_split(range(10), [5, 5])]
    ag.manual_seed(1)
    assert [s.indices for s in D.random_split(range(10), [5, 5])] == first
    same_error(lambda: D.random_split(range(10), [3, 3]), lambda: TD.random_split(range(10), [3, 3]))
    same_error(lambda: D.random_split(range(10), [1.5, -0.5]), lambda: TD.random_split(range(10), [1.5, -0.5]))
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        D.random_split(range(1), [0.5, 0.5])


# ------------------------------------------------------------------------------ DataLoader
class Records(D.Dataset[dict[str, Any]]):
    """Dict samples: a numpy array, an int, a string."""

    def __getitem__(self, i: int) -> dict[str, Any]:
        return {"x": np.full(2, i, np.float32), "label": i % 3, "name": f"r{i}"}

    def __len__(self) -> int:
        return 7


class Counting(D.IterableDataset[int]):
    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self) -> Any:
        return iter(range(self.n))

    def __len__(self) -> int:
        return self.n


LOADERS = {
    "tensors": (lambda: (ag.arange(14.0).reshape(7, 2), ag.arange(7)), dict(batch_size=3)),
    "tensors drop_last": (lambda: (ag.arange(14.0).reshape(7, 2), ag.arange(7)), dict(batch_size=3, drop_last=True)),
    "no batching": (lambda: (ag.arange(4.0), ag.arange(4)), dict(batch_size=None)),
    "batch sampler": (lambda: (ag.arange(6.0),), dict(batch_sampler=[[0, 5], [2], [1, 3, 4]])),
    "sampler": (lambda: (ag.arange(6.0),), dict(sampler=[5, 4, 3], batch_size=2)),
}


@pytest.mark.parametrize("name", list(LOADERS))
def test_loader_batches_as_torch(name: str) -> None:
    make, kwargs = LOADERS[name]
    tensors = make()
    ours = D.DataLoader(D.TensorDataset(*tensors), **kwargs)
    theirs = TD.DataLoader(TD.TensorDataset(*to_torch(tensors)), **kwargs)
    assert [plain(b) for b in ours] == [plain(b) for b in theirs]
    assert len(ours) == len(theirs)


@pytest.mark.real_default_dtype
@pytest.mark.parametrize(
    "dataset, kwargs",
    [(Records(), dict(batch_size=3)), (Counting(7), dict(batch_size=3)), (Counting(7), dict(batch_size=3, drop_last=True)), (Counting(3), dict(batch_size=None))],
)
def test_loader_datasets_as_torch(dataset: Any, kwargs: dict[str, Any]) -> None:
    theirs_dataset = dataset
    if isinstance(dataset, D.IterableDataset):  # a torch IterableDataset over the same stream
        theirs_dataset = type("T", (TD.IterableDataset,), {"__iter__": lambda s: iter(dataset), "__len__": lambda s: len(dataset)})()
    ours, theirs = D.DataLoader(dataset, **kwargs), TD.DataLoader(theirs_dataset, **kwargs)
    assert [plain(b) for b in ours] == [plain(b) for b in theirs]
    assert len(ours) == len(theirs)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(num_workers=-1),
        dict(timeout=-1),
        dict(prefetch_factor=2),
        dict(persistent_workers=True),
        dict(shuffle=True, sampler=[0, 1]),
        dict(batch_sampler=[[0]], batch_size=2),
        dict(batch_sampler=[[0]], drop_last=True),
        dict(batch_size=None, drop_last=True),
    ],
)
def test_loader_errors_as_torch(kwargs: dict[str, Any]) -> None:
    same_error(lambda: D.DataLoader(range(3), **kwargs), lambda: TD.DataLoader(range(3), **kwargs))


@pytest.mark.parametrize("kwargs", [dict(shuffle=True), dict(sampler=[0]), dict(batch_sampler=[[0]])])
def test_loader_iterable_dataset_errors_as_torch(kwargs: dict[str, Any]) -> None:
    class Theirs(TD.IterableDataset):
        def __iter__(self) -> Any:
            return iter([])

    with pytest.raises(ValueError) as theirs:
        TD.DataLoader(Theirs(), **kwargs)
    with pytest.raises(ValueError, match=f"^{re.escape(str(theirs.value))}$"):
        D.DataLoader(Counting(1), **kwargs)


def test_loader_refuses_late_settings() -> None:
    loader = D.DataLoader(range(3))
    same_error(lambda: setattr(loader, "batch_size", 2), lambda: setattr(TD.DataLoader(range(3)), "batch_size", 2))
    loader.collate_fn = D.default_convert  # not guarded, as in torch


@pytest.mark.parametrize("workers", [0, 2])
def test_shuffled_batches_are_torchs_for_the_same_seed(workers: int) -> None:
    # torch's draws, in torch's order: each epoch's iterator takes a base seed from the default
    # generator, then the sampler seeds a fresh generator from it and permutes with randperm
    x = np.arange(40, dtype=np.float32).reshape(20, 2)

    def epochs(lib: Any, data: Any, **kw: Any) -> list[list[float]]:
        lib.manual_seed(11)
        loader = data.DataLoader(data.TensorDataset(lib.tensor(x)), batch_size=6, shuffle=True, **kw)
        return [[float(v) for v in batch[0][:, 0]] for _ in range(2) for batch in loader]

    assert epochs(ag, D, num_workers=workers) == epochs(torch, TD)
    g, tg = ag.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    ours = [b.tolist() for b in D.DataLoader(range(10), batch_size=4, shuffle=True, generator=g, drop_last=True)]
    assert ours == [b.tolist() for b in TD.DataLoader(range(10), batch_size=4, shuffle=True, generator=tg, drop_last=True)]


def test_shuffle_is_reproducible_and_covers_the_dataset() -> None:
    loader = D.DataLoader(range(10), batch_size=4, shuffle=True)
    ag.manual_seed(5)
    epoch1, epoch2 = [b.tolist() for b in loader], [b.tolist() for b in loader]
    ag.manual_seed(5)
    assert [b.tolist() for b in loader] == epoch1
    assert epoch1 != epoch2 and sorted(sum(epoch1, [])) == list(range(10))
    seeded = [[b.tolist() for b in D.DataLoader(range(10), batch_size=4, shuffle=True, generator=np.random.default_rng(2))] for _ in range(2)]
    assert seeded[0] == seeded[1]


# ------------------------------------------------------------------------------ async for
async def test_async_for_yields_the_same_batches() -> None:
    loader = D.DataLoader(Records(), batch_size=3, shuffle=True)
    ag.manual_seed(7)
    synced = [plain(b) for b in loader]
    ag.manual_seed(7)
    assert [plain(b) async for b in loader] == synced
    assert [plain(b) async for b in D.DataLoader(Counting(5), batch_size=2)] == [plain(b) for b in D.DataLoader(Counting(5), batch_size=2)]


class Watched(D.Dataset[int]):
    """Records the thread of each ``__getitem__`` and signals when ``wanted`` is asked for."""

    def __init__(self, n: int, wanted: int) -> None:
        self.n, self.wanted, self.threads, self.asked = n, wanted, set(), threading.Event()

    def __getitem__(self, i: int) -> int:
        self.threads.add(threading.get_ident())
        if i == self.wanted:
            self.asked.set()
        return i

    def __len__(self) -> int:
        return self.n


async def test_async_for_prepares_the_next_batch_in_a_thread() -> None:
    dataset = Watched(4, wanted=2)
    async for batch in D.DataLoader(dataset, batch_size=2):
        if batch.tolist() == [0, 1]:
            # while the caller holds batch 0 (here: blocks, as a long step would), batch 1 loads
            assert dataset.asked.wait(timeout=10)
    assert threading.get_ident() not in dataset.threads


async def test_async_for_raises_the_dataset_error_and_can_stop_early() -> None:
    class Broken(D.Dataset[int]):
        def __getitem__(self, i: int) -> int:
            if i == 3:
                raise KeyError("sample 3")
            return i

        def __len__(self) -> int:
            return 6

    seen = []
    with pytest.raises(KeyError, match="sample 3"):
        async for batch in D.DataLoader(Broken(), batch_size=2):
            seen.append(batch.tolist())
    assert seen == [[0, 1]]
    it = aiter(D.DataLoader(range(6), batch_size=2))
    assert (await anext(it)).tolist() == [0, 1]
    await it.aclose()
    with pytest.raises(StopAsyncIteration):
        await anext(it)


async def test_a_torch_training_loop_ports() -> None:
    """The same model, data and SGD steps: the same losses as torch's loop, batch by batch."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((10, 3)), rng.standard_normal((10, 1))
    w0 = rng.standard_normal((1, 3))

    model, tmodel = ag.nn.Linear(3, 1), torch.nn.Linear(3, 1).double()
    with torch.no_grad():
        tmodel.weight.copy_(torch.from_numpy(w0))
        tmodel.bias.zero_()
    model.weight.data[...] = w0
    model.bias.data[...] = 0
    opt, topt = ag.optim.SGD(model.parameters(), lr=0.1), torch.optim.SGD(tmodel.parameters(), lr=0.1)
    losses, tlosses = [], []
    async for xb, yb in D.DataLoader(D.TensorDataset(ag.tensor(x), ag.tensor(y)), batch_size=4):
        loss = ag.nn.functional.mse_loss(model(xb), yb)
        opt.zero_grad()
        await loss.backward()
        opt.step()
        losses.append(loss.item())
    for xb, yb in TD.DataLoader(TD.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)), batch_size=4):
        loss = torch.nn.functional.mse_loss(tmodel(xb), yb)
        topt.zero_grad()
        loss.backward()
        topt.step()
        tlosses.append(loss.item())
    np.testing.assert_allclose(losses, tlosses, rtol=1e-12)
