"""Load-test the saliency service: many concurrent ``POST /saliency`` requests, then a summary.

    python examples/load_test.py --spawn
    python examples/load_test.py --url http://127.0.0.1:8080 --requests 200 --concurrency 64

Sends ``--requests`` requests of ``--rows`` random rows each (seeded) from ``--concurrency``
concurrent workers over aiohttp's client, checks that every answer has the right shape, and
prints throughput (requests/s), p50/p99 latency (ms) and the errors by kind. With ``--spawn`` it
first starts ``serve_gradients.py`` in a subprocess on a free loopback port (and stops it after),
so one command shows the numbers; the server then has a process, and a core, of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import numpy as np

SERVER = Path(__file__).resolve().parent / "serve_gradients.py"


@dataclasses.dataclass
class LoadReport:
    url: str
    requests: int
    concurrency: int
    rows: int
    ok: int
    errors: dict[str, int]  # "HTTP 422", "bad response", or an exception's class name
    elapsed_s: float
    throughput_rps: float  # completed requests (ok or not) per second
    p50_ms: float
    p99_ms: float
    max_ms: float
    server_max_in_flight: int | None = None  # from GET /stats, when the server has it

    def summary(self) -> str:
        errors = sum(self.errors.values())
        kinds = ", ".join(f"{k}: {v}" for k, v in sorted(self.errors.items()))
        kinds = f" ({kinds})" if kinds else ""
        lines = [
            f"POST {self.url}/saliency: {self.requests} requests of {self.rows} rows, "
            f"{self.concurrency} concurrent",
            f"{self.ok} ok, {errors} errors{kinds} in {self.elapsed_s:.2f} s: "
            f"{self.throughput_rps:.0f} requests/s, latency p50 {self.p50_ms:.1f} ms, "
            f"p99 {self.p99_ms:.1f} ms",
        ]
        if self.server_max_in_flight is not None:
            n = self.server_max_in_flight
            lines.append(f"server: at most {n} request{'s' if n != 1 else ''} in its handler "
                         "at a time (GET /stats)")
        return "\n".join(lines)


async def run_load(
    url: str,
    *,
    requests: int = 200,
    concurrency: int = 64,
    rows: int = 8,
    seed: int = 0,
    timeout_s: float = 60.0,
) -> LoadReport:
    """Send the requests against the service at ``url`` (its base, e.g. http://127.0.0.1:8080)."""
    url = url.rstrip("/")
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
        async with session.get(f"{url}/health") as response:
            response.raise_for_status()
            health = await response.json()
        features, classes = health["features"], health["classes"]
        rng = np.random.default_rng(seed)
        bodies = [
            json.dumps({"input": x.tolist(), "target": i % classes})
            for i, x in enumerate(rng.standard_normal((requests, rows, features)))
        ]
        latencies: list[float] = []
        errors: Counter[str] = Counter()
        next_request = iter(range(requests))

        async def one(body: str) -> None:
            start = time.perf_counter()
            try:
                async with session.post(f"{url}/saliency", data=body,
                                        headers={"Content-Type": "application/json"}) as response:
                    result = await response.json(content_type=None)
                    if response.status != 200:
                        errors[f"HTTP {response.status}"] += 1
                    elif np.shape(result.get("saliency")) != (rows, features):
                        errors["bad response"] += 1
            except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
                errors[type(exc).__name__] += 1
            latencies.append(time.perf_counter() - start)

        async def worker() -> None:
            for i in next_request:  # the workers share one iterator: each request is sent once
                await one(bodies[i])

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(min(concurrency, requests))))
        elapsed = time.perf_counter() - start
        max_in_flight = None
        with contextlib.suppress(aiohttp.ClientError, ValueError, KeyError):
            async with session.get(f"{url}/stats") as response:
                max_in_flight = (await response.json())["server"]["max_in_flight"]
    lat_ms = np.asarray(latencies) * 1e3
    p50, p99 = np.percentile(lat_ms, [50, 99]) if len(lat_ms) else (float("nan"),) * 2
    return LoadReport(
        url=url,
        requests=requests,
        concurrency=concurrency,
        rows=rows,
        ok=requests - sum(errors.values()),
        errors=dict(errors),
        elapsed_s=elapsed,
        throughput_rps=requests / elapsed if elapsed else float("nan"),
        p50_ms=float(p50),
        p99_ms=float(p99),
        max_ms=float(lat_ms.max()) if len(lat_ms) else float("nan"),
        server_max_in_flight=max_in_flight,
    )


@contextlib.asynccontextmanager
async def spawned_server(*extra_args: str, startup_timeout_s: float = 60.0) -> AsyncIterator[str]:
    """Run ``serve_gradients.py --port 0`` in a subprocess; yield its URL; stop it (SIGTERM)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(SERVER), "--host", "127.0.0.1", "--port", "0", *extra_args,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(startup_timeout_s):
            line = ""
            while not line.startswith("serving on "):
                line = (await proc.stdout.readline()).decode()
                if not line:
                    raise RuntimeError(f"{SERVER.name} exited (status {await proc.wait()}) "
                                       "before it served")
        yield line.split()[2]
    finally:
        if proc.returncode is None:
            proc.terminate()
            try:
                async with asyncio.timeout(10):
                    await proc.communicate()
            except TimeoutError:
                proc.kill()
                await proc.wait()
    if proc.returncode != 0:  # it handles SIGTERM by stopping cleanly
        raise RuntimeError(f"{SERVER.name} exited with status {proc.returncode}")


async def main(argv: list[str] | None = None) -> LoadReport:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080", help="the service's base URL")
    parser.add_argument("--spawn", action="store_true",
                        help="start serve_gradients.py on a free port and test that instead")
    parser.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                        help="with --spawn, an argument for serve_gradients.py "
                             "(e.g. --server-arg=--loop=asyncio); repeatable")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rows", type=int, default=8, help="input rows per request")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    load = dict(requests=args.requests, concurrency=args.concurrency, rows=args.rows,
                seed=args.seed)
    if args.spawn:
        async with spawned_server(*args.server_arg) as url:
            report = await run_load(url, **load)
    else:
        report = await run_load(args.url, **load)
    print(report.summary())
    return report


if __name__ == "__main__":
    try:
        import uvloop
    except ImportError:
        report = asyncio.run(main())
    else:
        report = uvloop.run(main())
    sys.exit(0 if report.ok == report.requests else 1)
