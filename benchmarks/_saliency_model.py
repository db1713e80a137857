"""bench_saliency.py's model and requests: the MLP's data, the hand-written numpy reference, and
one saliency request as aiograd, aiograd through ``serving.batch``, and torch compute it."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import aiograd  # noqa: E402
import aiograd.nn.functional as F  # noqa: E402

SIZES = (32, 128, 128, 1)


def make_data(args: argparse.Namespace) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The parameters (torch.nn.Linear's init) and the requests' inputs: the same in every process."""
    dtype = np.dtype(args.dtype).type
    rng = np.random.default_rng(0)
    params = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        bound = 1.0 / np.sqrt(fan_in)
        params.append(rng.uniform(-bound, bound, (fan_out, fan_in)).astype(dtype))
        params.append(rng.uniform(-bound, bound, fan_out).astype(dtype))
    xs = [rng.standard_normal((args.batch, SIZES[0])).astype(dtype) for _ in range(args.requests)]
    return params, xs


def numpy_saliency(params: list[np.ndarray], x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The reference, by hand: forward, then the backward of sum(out) with respect to x."""
    w1, b1, w2, b2, w3, b3 = params
    h1 = np.tanh(x @ w1.T + b1)
    h2 = np.tanh(h1 @ w2.T + b2)
    out = h2 @ w3.T + b3
    g = np.ones_like(out) @ w3
    g = (g * (1 - h2 * h2)) @ w2
    g = (g * (1 - h1 * h1)) @ w1
    return out, g


def minor_faults() -> int:
    """This process's minor page faults so far (0 where ``resource`` is missing): a batch's
    arrays that malloc took fresh from the OS fault their pages in as they are first written."""
    try:
        import resource
    except ImportError:  # not on Windows
        return 0
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def aiograd_request(params: list[np.ndarray], requires_grad: bool) -> Callable[[np.ndarray], Any]:
    """``request(batch)``: a coroutine returning the saliency (a numpy array)."""
    w1, b1, w2, b2, w3, b3 = (aiograd.tensor(p, requires_grad=requires_grad) for p in params)
    linear, grad = F.linear, aiograd.grad

    async def request(batch: np.ndarray) -> np.ndarray:
        x = aiograd.tensor(batch, requires_grad=True)
        h = linear(x, w1, b1).tanh()
        h = linear(h, w2, b2).tanh()
        (g,) = await grad(linear(h, w3, b3).sum(), x)
        return g.data

    return request


def aiograd_batched_request(params: list[np.ndarray], requires_grad: bool,
                            args: argparse.Namespace,
                            timeout_s: float | None = None) -> tuple[Any, Callable[..., Any]]:
    """``(request, body)``: ``request(batch)`` is one caller of a function batched with
    ``aiograd.serving.batch``, awaiting its own saliency (a numpy array); ``body(batches)`` is the
    undecorated function (one forward and one backward for all the items it is given: the same
    MLP as ``aiograd_request``'s, through ``serving.per_request_grad``)."""
    from aiograd import serving

    w1, b1, w2, b2, w3, b3 = (aiograd.tensor(p, requires_grad=requires_grad) for p in params)
    linear = F.linear

    def forward(x: Any) -> Any:
        h = linear(x, w1, b1).tanh()
        h = linear(h, w2, b2).tanh()
        return linear(h, w3, b3)

    async def saliencies(batches: list[np.ndarray]) -> list[np.ndarray]:
        return [r.grad.data for r in await serving.per_request_grad(forward, batches)]

    if timeout_s is None:
        timeout_s = args.batch_wait_ms / 1e3
    request = serving.batch(max_batch_size=args.max_batch_size,
                            batch_wait_timeout_s=timeout_s)(saliencies)
    return request, saliencies


async def aiograd_batch(key: str, request: Callable[[np.ndarray], Any], xs: list[np.ndarray],
                        done: list[float], start: float) -> list[np.ndarray]:
    """All requests once, by ``key``'s strategy; ``done[i]`` = request i's completion time - start."""
    perf_counter = time.perf_counter
    if key in ("ag_seq", "ag_seq_inline"):
        results = []
        for i, x in enumerate(xs):
            results.append(await request(x))
            done[i] = perf_counter() - start
        return results
    if key == "ag_coalesced":
        g = await request(np.concatenate(xs))
        results = np.split(g, len(xs))
        end = perf_counter() - start
        done[:] = [end] * len(xs)
        return results

    async def timed(i: int, x: np.ndarray) -> np.ndarray:
        g = await request(x)
        done[i] = perf_counter() - start
        return g

    return list(await asyncio.gather(*(timed(i, x) for i, x in enumerate(xs))))


def torch_request(params: list[np.ndarray], requires_grad: bool) -> Callable[[np.ndarray], np.ndarray]:
    import torch
    import torch.nn.functional as TF

    w1, b1, w2, b2, w3, b3 = (torch.tensor(p, requires_grad=requires_grad) for p in params)
    linear, grad = TF.linear, torch.autograd.grad

    def request(batch: np.ndarray) -> np.ndarray:
        x = torch.from_numpy(batch).requires_grad_()
        h = linear(x, w1, b1).tanh()
        h = linear(h, w2, b2).tanh()
        (g,) = grad(linear(h, w3, b3).sum(), x)
        return g.numpy()

    return request
