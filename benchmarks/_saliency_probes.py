"""bench_saliency.py's probes: where one request's time goes (timing probes, cProfile), the
batched path against coalescing by hand, and the latency of a lone request through the batcher."""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _saliency_model import (
    aiograd_batch,
    aiograd_batched_request,
    aiograd_request,
    make_data,
    minor_faults,
)
from _timing import Timer

import aiograd
import aiograd.nn.functional as F


def median_per_request(fn: Callable[[], Any], n: int, repeats: int = 30) -> float:
    """Median over ``repeats`` timed calls of ``fn`` (which handles ``n`` requests), in us per request."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeats):
        with Timer() as t:
            fn()
        times.append(t.seconds)
    return statistics.median(times) / n * 1e6


def breakdown_aiograd(args: argparse.Namespace) -> dict[str, float]:
    """Where one request's time goes, by timing probes on the same requests (us per request)."""
    params, xs = make_data(args)
    n = len(xs)
    w1, b1, w2, b2, w3, b3 = params
    probes: dict[str, float] = {}

    # numpy by hand: the kernels' floor
    saved: list[tuple[np.ndarray, np.ndarray]] = []

    def np_forward() -> None:
        saved.clear()
        for x in xs:
            h1 = np.tanh(x @ w1.T + b1)
            h2 = np.tanh(h1 @ w2.T + b2)
            (h2 @ w3.T + b3).sum()
            saved.append((h1, h2))

    def np_backward() -> None:
        for h1, h2 in saved:
            g = np.ones((len(h2), 1), h2.dtype) @ w3
            g = (g * (1 - h2 * h2)) @ w2
            (g * (1 - h1 * h1)) @ w1

    probes["numpy forward"] = median_per_request(np_forward, n)
    np_forward()
    probes["numpy backward"] = median_per_request(np_backward, n)

    async def main() -> None:
        engine = aiograd.get_engine()
        if args.nodes_per_turn is not None and hasattr(engine, "nodes_per_turn"):
            engine.nodes_per_turn = args.nodes_per_turn or None
        tw = [aiograd.tensor(p, requires_grad=args.params_grad) for p in params]
        ta, tb, tc, td, te, tf = tw
        linear = F.linear

        def forward(x: Any) -> Any:
            return linear(linear(linear(x, ta, tb).tanh(), tc, td).tanh(), te, tf).sum()

        def fwd_nograd() -> None:
            with aiograd.no_grad():
                for x in xs:
                    forward(aiograd.tensor(x))

        roots: list[tuple[Any, Any]] = []

        def fwd_record() -> None:
            roots.clear()
            for x in xs:
                xt = aiograd.tensor(x, requires_grad=True)
                roots.append((forward(xt), xt))

        probes["aiograd forward, no_grad"] = median_per_request(fwd_nograd, n)
        probes["aiograd forward, recording"] = median_per_request(fwd_record, n)

        async def grads() -> None:
            for out, xt in roots:
                await aiograd.grad(out, xt)

        async def timed_grads(record: Callable[[], None], repeats: int = 30) -> float:
            times = []
            for r in range(3 + repeats):
                record()
                with Timer() as t:
                    await grads()
                if r >= 3:
                    times.append(t.seconds)
            return statistics.median(times) / n * 1e6

        def record_sum() -> None:
            roots.clear()
            for x in xs:
                xt = aiograd.tensor(x, requires_grad=True)
                roots.append((xt.sum(), xt))

        before = engine.statistics().nodes_executed
        fwd_record()
        await grads()
        probes["nodes per request"] = (engine.statistics().nodes_executed - before) / n
        probes["aiograd grad()"] = await timed_grads(fwd_record)
        fixed = await timed_grads(record_sum)

        # Time inside node.apply (the nodes' math: aiograd's wrappers and numpy), with a timing
        # wrapper on each node class of the graph; its own cost is measured and taken off.
        fwd_record()
        kinds, stack = set(), [roots[0][0].grad_fn]
        while stack:
            node = stack.pop()
            kinds.add(type(node))
            stack.extend(e[0] for e in node.next_edges if e is not None)
        spent = [0.0, 0]
        perf_counter = time.perf_counter
        originals = {cls: cls.__dict__.get("apply") for cls in kinds}

        def timed_apply(original: Callable[..., Any]) -> Callable[..., Any]:
            def apply(self: Any, buffer: Any) -> Any:
                t0 = perf_counter()
                try:
                    return original(self, buffer)
                finally:
                    spent[0] += perf_counter() - t0
                    spent[1] += 1
            return apply

        for cls in kinds:
            cls.apply = timed_apply(cls.apply)
        applied: list[float] = []  # per batch of n requests
        try:
            for r in range(33):
                fwd_record()
                spent[:] = [0.0, 0]
                with Timer():
                    await grads()
                if r >= 3:
                    applied.append(spent[0])
                calls = spent[1]
        finally:
            for cls, original in originals.items():
                if original is None:
                    del cls.apply
                else:
                    cls.apply = original

        # the probe's own cost (two perf_counter calls and the wrapper frame), taken off per call
        def noop(self: Any, buffer: Any) -> None:
            return None

        probe = timed_apply(noop)
        spent[:] = [0.0, 0]
        for _ in range(100 * calls):
            probe(None, None)
        overhead = spent[0] / spent[1]
        probes["  node apply (math + op wrappers)"] = (
            (statistics.median(applied) - overhead * calls) / n * 1e6
        )
        probes["  engine and grad() bookkeeping"] = (
            probes["aiograd grad()"] - probes["  node apply (math + op wrappers)"]
        )
        probes["    a whole grad() of x.sum() (1 node)"] = fixed

        async def noop_request() -> None:
            return None

        async def gather_noops() -> None:
            await asyncio.gather(*(noop_request() for _ in range(n)))

        async def await_noops() -> None:
            for _ in range(n):
                await noop_request()

        gather_times, await_times = [], []
        for _ in range(33):
            with Timer() as t:
                await gather_noops()
            gather_times.append(t.seconds)
            with Timer() as t:
                await await_noops()
            await_times.append(t.seconds)
        probes["asyncio.gather, per coroutine"] = (
            statistics.median(gather_times[3:]) - statistics.median(await_times[3:])
        ) / n * 1e6

    aiograd.run(main())
    return probes


def breakdown_torch(args: argparse.Namespace) -> dict[str, float]:
    import torch
    import torch.nn.functional as TF

    torch.set_num_threads(args.torch_threads)
    params, xs = make_data(args)
    n = len(xs)
    tw = [torch.tensor(p, requires_grad=args.params_grad) for p in params]
    ta, tb, tc, td, te, tf = tw
    linear = TF.linear
    tx = [torch.from_numpy(x) for x in xs]

    def forward(x: Any) -> Any:
        return linear(linear(linear(x, ta, tb).tanh(), tc, td).tanh(), te, tf).sum()

    def fwd_nograd() -> None:
        with torch.no_grad():
            for x in tx:
                forward(x)

    roots: list[tuple[Any, Any]] = []

    def fwd_record() -> None:
        roots.clear()
        for x in tx:
            xt = x.detach().requires_grad_()
            roots.append((forward(xt), xt))

    probes = {
        "torch forward, no_grad": median_per_request(fwd_nograd, n),
        "torch forward, recording": median_per_request(fwd_record, n),
    }

    def record_sum() -> None:
        roots.clear()
        for x in tx:
            xt = x.detach().requires_grad_()
            roots.append((xt.sum(), xt))

    for name, record in (("torch grad()", fwd_record),
                         ("  a whole torch grad() of x.sum() (1 node)", record_sum)):
        times = []
        for r in range(33):
            record()
            with Timer() as t:
                for out, xt in roots:
                    torch.autograd.grad(out, xt)
            if r >= 3:
                times.append(t.seconds)
        probes[name] = statistics.median(times) / n * 1e6
    return probes


def cprofile_aiograd(args: argparse.Namespace) -> str:
    """cProfile's top functions (by own time) over 20 concurrent batches."""
    import cProfile
    import io
    import pstats

    params, xs = make_data(args)

    async def main() -> None:
        request = aiograd_request(params, args.params_grad)
        done = [0.0] * len(xs)
        await aiograd_batch("ag_gather", request, xs, done, 0.0)
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(20):
            await aiograd_batch("ag_gather", request, xs, done, 0.0)
        profiler.disable()
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("tottime").print_stats(25)
        text.append(out.getvalue())

    text: list[str] = []
    aiograd.run(main())
    return text[0]


#: The batcher's timeout in the low-load latency measurement: long next to a request (~0.3 ms),
#: so a request that waited for it would show.
LATENCY_TIMEOUT_S = 0.005


def latency_aiograd(args: argparse.Namespace) -> dict[str, Any]:
    """Latency at low load: requests one at a time (each caller alone, the batcher idle when it
    calls) through ``serving.batch(batch_wait_timeout_s=LATENCY_TIMEOUT_S)``, against the same
    body called directly and ``aiograd_request``, interleaved; then pairs of callers whose second
    calls in the loop turn after the first's batch was dispatched (before it ran)."""
    import gc

    params, xs = make_data(args)
    n = args.latency_requests
    perf_counter = time.perf_counter

    async def main() -> dict[str, Any]:
        request, body = aiograd_batched_request(params, args.params_grad, args,
                                                timeout_s=LATENCY_TIMEOUT_S)
        plain = aiograd_request(params, args.params_grad)

        async def direct(x: np.ndarray) -> np.ndarray:
            return (await body([x]))[0]

        ways = {"batcher": request, "direct": direct, "request": plain}
        for i in range(30):  # warmup
            for f in ways.values():
                await f(xs[i % len(xs)])
        lone: dict[str, list[float]] = {k: [] for k in ways}
        before = request.statistics()
        gc.collect()
        gc.disable()
        try:
            for i in range(n):
                x = xs[i % len(xs)]
                for k, f in ways.items():
                    t0 = perf_counter()
                    await f(x)
                    lone[k].append(perf_counter() - t0)
        finally:
            gc.enable()
        after = request.statistics()

        async def timed(x: np.ndarray) -> float:
            t0 = perf_counter()
            await request(x)
            return perf_counter() - t0

        pairs = max(n // 5, 1)
        firsts, seconds = [], []
        gc.collect()
        gc.disable()
        try:
            for i in range(pairs):
                first = asyncio.ensure_future(timed(xs[i % len(xs)]))
                await asyncio.sleep(0)  # the first calls and finds the batcher idle
                # This call runs in the turn after, behind the first's dispatch: not idle.
                second = asyncio.ensure_future(timed(xs[(i + 1) % len(xs)]))
                firsts.append(await first)
                seconds.append(await second)
        finally:
            gc.enable()
        end = request.statistics()

        def summary(times: list[float]) -> dict[str, float]:
            return {"p50_us": float(np.percentile(times, 50)) * 1e6,
                    "p99_us": float(np.percentile(times, 99)) * 1e6}

        return {
            "requests": n,
            "timeout_us": LATENCY_TIMEOUT_S * 1e6,
            "lone": {k: summary(v) for k, v in lone.items()},
            "lone_batches": after.batches - before.batches,
            "lone_mean_queue_wait_us": (
                (after.mean_queue_wait_s * after.items - before.mean_queue_wait_s * before.items)
                / max(after.items - before.items, 1) * 1e6
            ),
            "pairs": pairs,
            "pair_first": summary(firsts),
            "pair_second": summary(seconds),
            "pair_batches": (end.batches - after.batches) / pairs,
        }

    return aiograd.run(main())


def batch_overhead(args: argparse.Namespace, repeats: int = 50) -> dict[str, tuple[float, float]]:
    """What the batched path adds to coalescing by hand, by probes in one process (us per batch
    of all requests, median of ``repeats``, interleaved): ``ag_coalesced``'s batch, the batched
    body (``per_request_grad``) called directly with all inputs, ``ag_batched``'s batch, and
    its callers' own cost: ``asyncio.gather`` of no-op coroutines, and of callers through a
    batcher whose function returns its items."""
    from aiograd import serving

    params, xs = make_data(args)

    async def main() -> dict[str, tuple[float, float]]:
        request, body = aiograd_batched_request(params, args.params_grad, args)
        plain = aiograd_request(params, args.params_grad)

        @serving.batch(max_batch_size=args.max_batch_size,
                       batch_wait_timeout_s=args.batch_wait_ms / 1e3)
        async def echo(items: list[Any]) -> list[Any]:
            return items

        async def noop(x: np.ndarray) -> np.ndarray:
            return x

        async def coalesced() -> Any:
            return np.split(await plain(np.concatenate(xs)), len(xs))

        async def gather(f: Callable[[np.ndarray], Any]) -> Any:
            return await asyncio.gather(*(f(x) for x in xs))

        probes: dict[str, Callable[[], Any]] = {
            "coalesced by hand (ag_coalesced)": coalesced,
            "the body called directly with all inputs": lambda: body(xs),
            "callers through serving.batch (ag_batched)": lambda: gather(request),
            "  gather of no-op coroutines": lambda: gather(noop),
            "  gather of callers of a batcher that returns its items": lambda: gather(echo),
        }
        times: dict[str, list[float]] = {k: [] for k in probes}
        faults: dict[str, list[int]] = {k: [] for k in probes}
        for r in range(5 + repeats):
            for name, f in probes.items():
                faults_before = minor_faults()
                with Timer() as t:
                    await f()
                if r >= 5:
                    times[name].append(t.seconds)
                    faults[name].append(minor_faults() - faults_before)
        return {name: (statistics.median(v) * 1e6, statistics.median(faults[name]))
                for name, v in times.items()}

    return aiograd.run(main())


def print_latency(out: dict[str, Any]) -> None:
    lone, timeout = out["lone"], out["timeout_us"]
    b, d, r = lone["batcher"], lone["direct"], lone["request"]
    print(f"latency at low load: {out['requests']} requests one at a time, each alone (its caller "
          f"awaits it before the next calls), interleaved; the batcher's timeout "
          f"{timeout / 1e3:g} ms:")
    print(f"  a lone request through the batcher: {b['p50_us']:.0f} us median, {b['p99_us']:.0f} us "
          f"p99 ({out['lone_batches']} batches; mean queue wait {out['lone_mean_queue_wait_us']:.0f}"
          f" us)")
    print(f"  the same body called directly: {d['p50_us']:.0f} us median, {d['p99_us']:.0f} us p99; "
          f"aiograd_request (no per_request_grad): {r['p50_us']:.0f} us median, {r['p99_us']:.0f} us "
          f"p99")
    extra = b["p50_us"] - d["p50_us"]
    held = b["p50_us"] >= timeout
    print(f"  the batcher adds {extra:.0f} us at the median "
          f"({'** the lone request waited the timeout **' if held else 'not the timeout'}); the "
          "policy: a call that finds the batcher idle is dispatched on the next loop turn, not "
          "after the timeout")
    f, s = out["pair_first"], out["pair_second"]
    print(f"  two callers in consecutive loop turns ({out['pairs']} pairs; the second calls after "
          f"the first's batch is dispatched): first {f['p50_us']:.0f} us median, second "
          f"{s['p50_us']:.0f} us median, {s['p99_us']:.0f} us p99, {out['pair_batches']:g} batches "
          "per pair")
    if s["p50_us"] >= 0.9 * timeout:
        print("  the second finds a batch in flight, so it is not dispatched at once: it waits for "
              f"the timeout ({timeout / 1e3:g} ms from its call), not just for the first's batch")
    else:
        print("  the second waits for the first's batch, then goes at once (not the timeout)")
