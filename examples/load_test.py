"""Load-test the saliency service: a sweep of concurrent ``POST /saliency`` clients, one table.

    python examples/load_test.py --spawn
    python examples/load_test.py --url http://127.0.0.1:8080 --concurrency 1,8,64,256 --json out.json

For each level of ``--concurrency`` (default 1, 8, 64 and 256 clients) it opens one HTTP/1.1
keep-alive connection per client, warms up at that level (not counted), then sends
``--requests`` requests of ``--rows`` random rows each (seeded), each client sending its next
request as soon as its answer came, and checks that every answer is a 200 with a saliency of the
right shape. It prints one row per level: requests, ok, errors by kind (``HTTP 503`` when the
server sheds load, ``HTTP 413``, ``bad response``, an exception's class name such as
``ConnectionResetError`` or ``TimeoutError`` past ``--timeout``), throughput (requests/s), latency
p50/p99/max (ms), the client's own CPU time per request, and from the server's ``GET /stats``
the most requests it had in its handler at once so far and, when the server batches, the mean
batch size over the level. ``--json FILE`` writes the reports. With ``--spawn`` it first starts
``serve_gradients.py`` in a subprocess on a free loopback port (and stops it after), so one
command shows the numbers; ``--server-arg`` passes arguments on. The exit status is 0 when every
request at every level got a right answer, else 1.

The requests per level default to ``max(500, 20 * clients)``: at least 500, so p99 rests on five
samples above it rather than on the single worst one, and 20 per client, so the ramps at the
level's start and end (clients still connecting, the last ones draining) are a small part of it;
a sweep of 1, 8, 64 and 256 clients is then 7,400 requests, a few seconds against the service.

The client is lean on purpose: on a small machine the load test and the server share the cores,
and a client that costs more CPU per request than the server measures itself. aiohttp's client
with ``response.json()`` costs about 230 us per request, more than a batching server; this one
writes prebuilt request bytes on a raw ``asyncio`` stream and reads the status line, the headers
and exactly ``Content-Length`` bytes (or the chunks of a chunked answer), decoding with orjson
(the "client us/req" column says what it cost). aiohttp's client only does ``/health`` and
``/stats``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import sys
import time
import urllib.parse
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

import aiohttp
import numpy as np
import orjson

SERVER = Path(__file__).resolve().parent / "serve_gradients.py"
LEVELS = (1, 8, 64, 256)


def default_requests(concurrency: int) -> int:
    """Requests measured at one level unless told (see the module's docstring for why)."""
    return max(500, 20 * concurrency)


@dataclasses.dataclass
class LoadReport:
    """One level of load: what was sent, what came back, how fast."""

    url: str
    requests: int
    concurrency: int
    rows: int
    ok: int
    errors: dict[str, int]  # "HTTP 503", "bad response", or an exception's class name
    elapsed_s: float
    throughput_rps: float  # completed requests (ok or not) per second
    p50_ms: float
    p99_ms: float
    max_ms: float
    warmup: int = 0  # requests sent before the measured ones, not counted
    client_cpu_us: float = float("nan")  # this process's CPU time per measured request
    # (the server's too where it runs in this process, as in the tests)
    server_max_in_flight: int | None = None  # from GET /stats, when the server has it
    batches: int | None = None  # batches the server ran during the level, when it batches
    batched_items: int | None = None  # requests in those batches
    mean_batch_size: float | None = None  # batched_items / batches

    def summary(self) -> str:
        errors = sum(self.errors.values())
        kinds = f" ({_error_kinds(self.errors)})" if self.errors else ""
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
        if self.mean_batch_size is not None:
            lines.append(f"server: {self.batches} batches, {self.mean_batch_size:.1f} requests "
                         "per batch on average")
        return "\n".join(lines)


def _error_kinds(errors: dict[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted(errors.items()))


def format_table(reports: Sequence[LoadReport]) -> str:
    """One row per level, columns aligned."""
    header = ["clients", "requests", "ok", "errors", "req/s", "p50 ms", "p99 ms", "max ms",
              "client us/req", "max in flight", "mean batch"]

    def dash(value: object, fmt: str = "") -> str:
        return "-" if value is None else format(value, fmt)

    rows = [header] + [[
        str(r.concurrency), str(r.requests), str(r.ok), _error_kinds(r.errors) or "0",
        f"{r.throughput_rps:.0f}", f"{r.p50_ms:.1f}", f"{r.p99_ms:.1f}", f"{r.max_ms:.1f}",
        f"{r.client_cpu_us:.0f}", dash(r.server_max_in_flight), dash(r.mean_batch_size, ".1f"),
    ] for r in reports]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    left = {header.index("errors")}
    return "\n".join(
        "  ".join(cell.ljust(w) if i in left else cell.rjust(w)
                  for i, (cell, w) in enumerate(zip(row, widths))).rstrip()
        for row in rows
    )


# ------------------------------------------------------------------------------ the lean client
class BadHTTPResponse(Exception):
    """An answer this client does not read (its message is the error's kind in the report)."""


class Connection:
    """One HTTP/1.1 keep-alive connection that sends prebuilt requests and reads the answers.

    It reads the status line and the headers up to the blank line, then ``Content-Length`` bytes,
    the chunks of a ``Transfer-Encoding: chunked`` answer, or, with ``Connection: close`` and no
    length, up to the end of the stream. After ``Connection: close`` (or an HTTP/1.0 answer) the
    next request opens a new connection; so does the next request after an error, since a
    connection whose answer was not read to its end is not usable."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self.opened = 0  # connections opened: 1 for a connection kept alive throughout

    async def open(self) -> None:
        if self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
            self.opened += 1

    @property
    def is_open(self) -> bool:
        return self._writer is not None

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()  # no wait_closed: nothing is left to flush
            self._reader = self._writer = None

    async def exchange(self, request: bytes) -> tuple[int, bytes]:
        """Send ``request`` (a whole HTTP request); return the answer's status and body."""
        if self._writer is None:
            await self.open()
        self._writer.write(request)  # one request in flight: the buffer holds at most that one
        reader = self._reader
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            status, length, chunked, close = _parse_head(head)
            if chunked:
                body = await _read_chunked(reader)
            elif length is not None:
                body = await reader.readexactly(length)
            elif close:
                body = await reader.read()
            else:
                raise BadHTTPResponse("bad response (no Content-Length)")
        except BaseException:
            self.close()
            raise
        if close:
            self.close()
        return status, body


def _parse_head(head: bytes) -> tuple[int, int | None, bool, bool]:
    """Status, Content-Length (None without one), chunked?, close after? of a response head."""
    lines = head.split(b"\r\n")
    status_line = lines[0]
    if not status_line.startswith(b"HTTP/1.") or not status_line[9:12].isdigit():
        raise BadHTTPResponse("bad response (status line)")
    close = status_line.startswith(b"HTTP/1.0")  # HTTP/1.0 closes unless asked not to
    length, chunked = None, False
    for line in lines[1:-2]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            if not value.strip().isdigit():
                raise BadHTTPResponse("bad response (Content-Length)")
            length = int(value)
        elif name == b"transfer-encoding":
            chunked = value.strip().lower().endswith(b"chunked")
        elif name == b"connection":
            value = value.lower()
            close = b"close" in value or (close and b"keep-alive" not in value)
    return int(status_line[9:12]), length, chunked, close


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts = []
    while True:
        size_line = await reader.readuntil(b"\r\n")
        try:
            size = int(size_line.split(b";", 1)[0], 16)
        except ValueError:
            raise BadHTTPResponse("bad response (chunk size)") from None
        if size == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":  # trailer fields, if any
                pass
            return b"".join(parts)
        chunk = await reader.readexactly(size + 2)
        if chunk[-2:] != b"\r\n":
            raise BadHTTPResponse("bad response (chunk end)")
        parts.append(chunk[:-2])


def _saliency_request(host: str, path: str, body: bytes) -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def _answer_checker(rows: int, features: int) -> Callable[[int, bytes], str | None]:
    """The error kind of an answer, or None for a 200 with a (rows, features) saliency."""

    def check(status: int, body: bytes) -> str | None:
        if status != 200:
            return f"HTTP {status}"
        try:
            answer = orjson.loads(body)
        except orjson.JSONDecodeError:
            return "bad response"
        saliency = answer.get("saliency") if isinstance(answer, dict) else None
        if not (isinstance(saliency, list) and len(saliency) == rows
                and all(isinstance(row, list) and len(row) == features for row in saliency)):
            return "bad response"
        return None

    return check


async def _drive(connections: list[Connection], requests: Sequence[bytes],
                 check: Callable[[int, bytes], str | None],
                 timeout_s: float) -> tuple[list[float], Counter[str]]:
    """Send ``requests``, one at a time per connection; latencies (s) and errors by kind."""
    latencies: list[float] = []
    errors: Counter[str] = Counter()
    next_request = iter(requests)  # the clients share one iterator: each request is sent once
    clock = time.perf_counter

    async def client(connection: Connection) -> None:
        for request in next_request:
            start = clock()
            try:
                async with asyncio.timeout(timeout_s):
                    status, body = await connection.exchange(request)
            except BadHTTPResponse as exc:
                kind = str(exc)
            except (OSError, EOFError, asyncio.LimitOverrunError) as exc:  # TimeoutError too
                connection.close()  # its state is unknown: the next request reconnects
                kind = type(exc).__name__
            else:
                kind = None
            latencies.append(clock() - start)
            if kind is None:
                kind = check(status, body)
            if kind is not None:
                errors[kind] += 1

    await asyncio.gather(*(client(c) for c in connections))
    return latencies, errors


async def _get_json(session: aiohttp.ClientSession, url: str) -> dict:
    async with session.get(url) as response:
        response.raise_for_status()
        return await response.json()


async def _server_counters(session: aiohttp.ClientSession, url: str) -> dict:
    """``max_in_flight`` (since the server started), ``pid`` and the batcher's ``items`` and
    ``batches`` from GET /stats, where present."""
    with contextlib.suppress(aiohttp.ClientError, TimeoutError, ValueError):
        stats = await _get_json(session, f"{url}/stats")
        server, batching = stats.get("server") or {}, stats.get("batching") or {}
        return {"max_in_flight": server.get("max_in_flight"), "pid": server.get("pid"),
                "items": batching.get("items"), "batches": batching.get("batches")}
    return {}


async def run_load(
    url: str,
    *,
    requests: int | None = None,
    concurrency: int = 64,
    rows: int = 8,
    seed: int = 0,
    timeout_s: float = 60.0,
    warmup: int | None = None,
) -> LoadReport:
    """One level of load against the service at ``url`` (its base, e.g. http://127.0.0.1:8080).

    ``concurrency`` clients, each on its own keep-alive connection, send ``warmup`` requests
    (default: two per client, at least 20; not counted), then ``requests`` (default
    ``default_requests(concurrency)``), each timed from its first byte sent to its last byte
    read, each failing with ``TimeoutError`` past ``timeout_s``."""
    url = url.rstrip("/")
    split = urllib.parse.urlsplit(url)
    if split.scheme != "http" or split.hostname is None:
        raise ValueError(f"expected an http:// URL, got {url!r}")
    port = split.port or 80
    if requests is None:
        requests = default_requests(concurrency)
    connections = [Connection(split.hostname, port) for _ in range(min(concurrency, requests))]
    if warmup is None:
        warmup = max(20, 2 * len(connections))
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        health = await _get_json(session, f"{url}/health")
        shape, classes = health["input_shape"], health["classes"]
        if len(shape) != 1:
            raise ValueError(f"the load test sends rows of numbers: the served model takes rows of "
                             f"shape {shape}")
        (features,) = shape
        rng = np.random.default_rng(seed)
        path = (split.path or "") + "/saliency"
        bodies = [
            _saliency_request(split.netloc, path,
                              orjson.dumps({"input": x.tolist(), "target": i % classes}))
            for i, x in enumerate(rng.standard_normal((requests, rows, features)))
        ]
        check = _answer_checker(rows, features)
        try:
            # Connect first, all at once: a burst of connects that overflows the server's
            # listen backlog waits for SYN retries (seconds), which no request should be timed by.
            with contextlib.suppress(OSError):  # a failed connect is retried, and counted, later
                async with asyncio.timeout(timeout_s):
                    await asyncio.gather(*(c.open() for c in connections))
            await _drive(connections, [bodies[i % requests] for i in range(warmup)], check,
                         timeout_s)
            before = await _server_counters(session, url)
            cpu, start = time.process_time(), time.perf_counter()
            latencies, errors = await _drive(connections, bodies, check, timeout_s)
            elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
            after = await _server_counters(session, url)
        finally:
            for connection in connections:
                connection.close()
    batches = items = mean_batch = None
    # Counters from two processes (a server with several workers, each answering /stats for
    # itself, says which with a pid) do not subtract.
    if (after.get("batches") is not None and before.get("batches") is not None
            and after.get("pid") == before.get("pid")):
        batches = after["batches"] - before["batches"]
        items = after["items"] - before["items"]
        mean_batch = items / batches if batches else None
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
        warmup=warmup,
        client_cpu_us=cpu / requests * 1e6 if requests else float("nan"),
        server_max_in_flight=after.get("max_in_flight"),
        batches=batches,
        batched_items=items,
        mean_batch_size=mean_batch,
    )


async def run_sweep(
    url: str,
    levels: Sequence[int] = LEVELS,
    *,
    requests: int | None = None,
    rows: int = 8,
    seed: int = 0,
    timeout_s: float = 60.0,
    on_report: Callable[[LoadReport], None] | None = None,
) -> list[LoadReport]:
    """``run_load`` at each concurrency in ``levels``, one after another (``requests`` at each,
    default ``default_requests(level)``); ``on_report`` sees each report as it is done."""
    reports = []
    for level in levels:
        report = await run_load(url, requests=requests, concurrency=level, rows=rows, seed=seed,
                                timeout_s=timeout_s)
        if on_report is not None:
            on_report(report)
        reports.append(report)
    return reports


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


def _levels(text: str) -> list[int]:
    try:
        levels = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a comma list of integers, got {text!r}") from None
    if not levels or min(levels) < 1:
        raise argparse.ArgumentTypeError(f"concurrency levels must be at least 1, got {text!r}")
    return levels


async def main(argv: list[str] | None = None) -> list[LoadReport]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080", help="the service's base URL")
    parser.add_argument("--spawn", action="store_true",
                        help="start serve_gradients.py on a free port and test that instead")
    parser.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                        help="with --spawn, an argument for serve_gradients.py "
                             "(e.g. --server-arg=--loop=asyncio); repeatable")
    parser.add_argument("--concurrency", type=_levels, default=list(LEVELS), metavar="N,N,...",
                        help="concurrent clients at each level (default: 1,8,64,256)")
    parser.add_argument("--requests", type=int, default=None,
                        help="requests per level (default: max(500, 20 * clients))")
    parser.add_argument("--rows", type=int, default=8, help="input rows per request")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=60.0, metavar="S",
                        help="per-request timeout in seconds")
    parser.add_argument("--json", metavar="FILE", help="also write the reports as JSON")
    args = parser.parse_args(argv)

    def progress(report: LoadReport) -> None:
        print(f"  {report.concurrency} clients: {report.throughput_rps:.0f} requests/s",
              file=sys.stderr, flush=True)

    load = dict(requests=args.requests, rows=args.rows, seed=args.seed, timeout_s=args.timeout,
                on_report=progress)
    if args.spawn:
        async with spawned_server(*args.server_arg) as url:
            reports = await run_sweep(url, args.concurrency, **load)
    else:
        url = args.url.rstrip("/")
        reports = await run_sweep(url, args.concurrency, **load)
    print(f"POST {url}/saliency, {args.rows} rows per request, each level after a warmup:")
    print(format_table(reports))
    if args.json:
        Path(args.json).write_text(json.dumps([dataclasses.asdict(r) for r in reports], indent=2)
                                   + "\n")
    return reports


if __name__ == "__main__":
    try:
        import uvloop
    except ImportError:
        reports = asyncio.run(main())
    else:
        reports = uvloop.run(main())
    sys.exit(0 if all(r.ok == r.requests for r in reports) else 1)
