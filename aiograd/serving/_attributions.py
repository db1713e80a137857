"""Gradient attributions of a classifier, batched for a service: ``attribute``.

Four methods, each as Captum (0.9) defines it, for a model mapping ``(N, *input_shape)`` to
``(N, classes)`` whose rows are independent (``per_request_grad``'s condition):

- ``saliency``: the gradient of ``output[n, target[n]]`` with respect to ``x[n]`` (Captum's
  ``Saliency``; with ``abs`` its absolute value: Captum's default is ``abs=True``, this one's is
  the signed gradient).
- ``input_x_gradient``: ``x * gradient`` (Captum's ``InputXGradient``).
- ``integrated_gradients``: ``(x - baseline) * sum_i w_i * gradient(baseline + alpha_i (x -
  baseline))``, with Captum's quadrature (``approximation_methods``): ``gausslegendre`` is
  numpy's ``leggauss`` mapped to ``[0, 1]``; the Riemann rules have weights ``1/steps`` at
  ``linspace`` points, and ``riemann_trapezoid`` halves the two end weights of ``1/steps``
  while its points are ``1/(steps - 1)`` apart, so its weights sum to ``(steps - 1)/steps``:
  Captum's rule, kept so results agree with it (its attributions fall short of
  ``F(x) - F(baseline)`` by about ``1/steps``, which ``delta`` shows). Every Riemann rule needs
  ``steps >= 2``, as in Captum. ``delta`` is Captum's convergence delta, per row:
  ``attributions[n].sum() - (F(x)[n, t] - F(baseline)[n, t])``.
- ``smoothgrad``: Captum's ``NoiseTunnel`` over ``Saliency``: ``g_k`` is the saliency (absolute
  with ``abs``) at ``x + eps_k``, ``eps_k ~ N(0, stdev^2)`` (``stdev`` is absolute, as Captum's
  ``stdevs``), for the target of ``x``; ``smoothgrad`` is ``mean_k g_k``, ``smoothgrad_sq``
  ``mean_k g_k**2`` and ``vargrad`` ``mean_k g_k**2 - (mean_k g_k)**2``, Captum's formula: the
  population variance (divided by ``samples``), computed from the two means, so where the
  variance is nearly zero it can come out a rounding below zero, as Captum's does. The noise is
  ``numpy.random.default_rng(seed).normal(0.0, stdev, (samples, *x.shape))`` (sample ``k`` is
  ``[k]``), so a result is reproducible from its reported ``seed``.

A target left out is each row's predicted class: the argmax of the model's output at ``x``
(for integrated gradients and smoothgrad too, never at the interpolated or noisy points).

What Captum does differently, on purpose: Captum rounds the quadrature weights to float32
(``torch.tensor(step_sizes).float()``), makes the Riemann points with ``torch.linspace`` in
torch's default dtype (float32 unless changed) and draws its noise in that dtype too; here
weights, points and noise are float64 (then the model's dtype), so a float64 model's
attributions are float64-accurate. They agree with Captum's to float32 rounding of those
weights, and to float64 rounding with Captum's weights kept in float64 (the tests do both).

Batching: ``attribute`` serves many requests, mixing methods, with at most one forward without
a graph (the outputs at ``x`` that integrated gradients and smoothgrad need, and the outputs
at their baselines for ``delta``) and one ``per_request_grad`` over every request's expanded
rows (the points of the integral, the noisy copies), the quadrature weights folded into the
``grad_output`` (``w_i`` times the target's one-hot) so that one backward gives each weighted
sum. ``expanded_rows`` says how many rows a request costs, for a service to bound.
"""

from __future__ import annotations

import math
import numbers
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._api._factories import as_tensor as _as_tensor
from .._base._grad_mode import no_grad as _no_grad
from .._core._tensor import Tensor
from .._devices._device import CPU
from ..nn.modules.module import Module
from ._requests import batch_coupled_modules, per_request_grad

__all__ = [
    "IG_RULES",
    "METHODS",
    "NOISE_TYPES",
    "Attribution",
    "AttributionRequest",
    "attribute",
    "check_request",
    "expanded_rows",
]

METHODS = ("saliency", "input_x_gradient", "integrated_gradients", "smoothgrad")
IG_RULES = ("gausslegendre", "riemann_left", "riemann_right", "riemann_middle", "riemann_trapezoid")
NOISE_TYPES = ("smoothgrad", "smoothgrad_sq", "vargrad")

#: Bits of a seed drawn when a request gives none: a number any JSON client reads exactly (a
#: double holds integers up to 2**53), so the reported seed reproduces the result.
_SEED_BITS = 53


@dataclass(frozen=True, eq=False)
class AttributionRequest:
    """One request's attribution: ``method`` (one of ``METHODS``) of the model at ``x`` (rows of
    inputs, cast to the model's dtype), for ``target`` (int64, one class per row; None: each
    row's predicted class at ``x``). The other fields belong to the methods that name them;
    the defaults are Captum's, except ``abs`` (Captum's ``Saliency`` defaults to True).

    ``eq=False``: the fields are arrays, whose ``==`` is element-wise, so two requests compare
    (and hash) by identity."""

    method: str
    x: np.ndarray
    target: np.ndarray | None = None
    abs: bool = False                  # saliency, smoothgrad: |gradient| (Captum Saliency's abs)
    steps: int = 50                    # integrated_gradients: Captum's n_steps
    rule: str = "gausslegendre"        # integrated_gradients: Captum's method
    baseline: np.ndarray | None = None  # integrated_gradients: broadcast to x; None: zeros
    samples: int = 5                   # smoothgrad: Captum NoiseTunnel's nt_samples
    stdev: float = 1.0                 # smoothgrad: the noise's standard deviation (stdevs)
    noise_type: str = "smoothgrad"     # smoothgrad: NoiseTunnel's nt_type
    seed: int | None = None            # smoothgrad: default_rng(seed); None: drawn, reported


@dataclass(frozen=True, eq=False)
class Attribution:
    """One request's result, arrays in the model's dtype (``predicted`` and ``target`` int64):
    the model's ``output`` at ``x`` (rows, classes), its ``predicted`` class per row, the
    ``target`` used per row, the ``attributions`` (shaped as ``x``), Captum's convergence
    ``delta`` per row for integrated gradients (else None) and the noise's ``seed`` for
    smoothgrad (else None)."""

    output: np.ndarray
    predicted: np.ndarray
    target: np.ndarray
    attributions: np.ndarray
    delta: np.ndarray | None
    seed: int | None


def expanded_rows(request: AttributionRequest) -> int:
    """Rows the request adds to a batch, for a service to bound (after ``check_request``):
    its rows for saliency and input_x_gradient; for integrated gradients ``rows * steps`` in
    the backward plus ``2 * rows`` in the forward without a graph (``x`` and the baseline); for
    smoothgrad ``rows * samples`` in the backward plus ``rows`` in that forward (``x``)."""
    shape = np.shape(request.x)
    rows = int(shape[0]) if shape else 1
    if request.method == "integrated_gradients":
        return rows * (int(request.steps) + 2)
    if request.method == "smoothgrad":
        return rows * (int(request.samples) + 1)
    return rows


def _is_int(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))


def _one_of(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")


def check_request(request: AttributionRequest, *, classes: int | None = None) -> None:
    """Raise a ``ValueError`` naming the field if ``request`` is not one ``attribute`` can
    serve: an unknown ``method``, ``rule`` or ``noise_type``; ``x`` not real numbers with rows
    (at least one dimension) or not finite; ``target`` not integers of shape ``(rows,)``, below
    0, or (given ``classes``, the model's) not below ``classes``; ``abs`` not a bool; ``steps``
    below 1 (below 2 for the Riemann rules, as Captum); ``samples`` below 1; ``stdev`` below 0
    or not finite; ``baseline`` not broadcastable to ``x``'s shape or not finite; ``seed``
    neither None nor an integer >= 0. Every field is checked, whatever the method.

    ``attribute`` calls it for every request before any computation; a service calls it per
    request first (with ``classes``), so a bad request fails alone and never its batch."""
    _one_of("method", request.method, METHODS)
    _one_of("rule", request.rule, IG_RULES)
    _one_of("noise_type", request.noise_type, NOISE_TYPES)
    x = np.asarray(request.x)
    if x.dtype.kind not in "iuf" or x.ndim == 0:
        raise ValueError(f"x must be an array of real numbers with rows first (rows, "
                         f"*input_shape); got dtype {x.dtype} and shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("x must be finite (no NaN or infinity)")
    rows = x.shape[0]
    if request.target is not None:
        target = np.asarray(request.target)
        if target.dtype.kind not in "iu":
            raise ValueError(f"target must be integers (one class per row); got dtype {target.dtype}")
        if target.shape != (rows,):
            raise ValueError(f"target must have shape (rows,) = ({rows},), one class per row of "
                             f"x; got shape {target.shape}")
        if rows and target.min() < 0:
            raise ValueError(f"target must be class indices >= 0; got {target.min()}")
        if classes is not None and rows and target.max() >= classes:
            raise ValueError(f"target must be class indices < {classes} (the model's classes); "
                             f"got {target.max()}")
    if not isinstance(request.abs, (bool, np.bool_)):
        raise ValueError(f"abs must be a bool; got {request.abs!r}")
    least = 2 if request.rule.startswith("riemann") else 1
    if not _is_int(request.steps) or request.steps < least:
        why = f" for rule {request.rule} (as Captum)" if least == 2 else ""
        raise ValueError(f"steps must be an integer >= {least}{why}; got {request.steps!r}")
    if not _is_int(request.samples) or request.samples < 1:
        raise ValueError(f"samples must be an integer >= 1; got {request.samples!r}")
    stdev = request.stdev
    if (not isinstance(stdev, numbers.Real) or isinstance(stdev, (bool, np.bool_))
            or not math.isfinite(stdev) or stdev < 0):
        raise ValueError(f"stdev must be a finite number >= 0; got {stdev!r}")
    if request.baseline is not None:
        baseline = np.asarray(request.baseline)
        if baseline.dtype.kind not in "iuf":
            raise ValueError(f"baseline must be real numbers; got dtype {baseline.dtype}")
        try:
            broadcast = np.broadcast_shapes(baseline.shape, x.shape)
        except ValueError:
            broadcast = None
        if broadcast != x.shape:
            raise ValueError(f"baseline of shape {baseline.shape} does not broadcast to x's "
                             f"shape {x.shape}")
        if not np.isfinite(baseline).all():
            raise ValueError("baseline must be finite (no NaN or infinity)")
    if request.seed is not None and (not _is_int(request.seed) or request.seed < 0):
        raise ValueError(f"seed must be None or an integer >= 0; got {request.seed!r}")


def _model_dtype(model: Callable[[Tensor], Tensor], dtype: Any,
                 requests: Sequence[AttributionRequest]) -> np.dtype:
    """``dtype`` if given; else the dtype of the model's first floating point parameter (a
    module's or a bound method's module's); else the inputs' own (float64 for integers)."""
    if dtype is not None:
        given: np.dtype = np.dtype(dtype)
        return given
    owner = model if isinstance(model, Module) else getattr(model, "__self__", None)
    if isinstance(owner, Module):
        for p in owner.parameters():
            found: np.dtype = np.dtype(p.dtype)
            if found.kind == "f":
                return found
    floats = [np.asarray(r.x).dtype for r in requests if np.asarray(r.x).dtype.kind == "f"]
    return np.dtype(np.result_type(*floats)) if floats else np.dtype(np.float64)


def _quadrature(rule: str, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Captum's ``approximation_parameters(rule)``: the weights (its step sizes) and the points
    (its alphas) in ``[0, 1]``, in float64."""
    n = steps
    if rule == "gausslegendre":
        nodes, weights = np.polynomial.legendre.leggauss(n)
        return 0.5 * weights, 0.5 * (1 + nodes)
    weights = np.full(n, 1 / n)
    if rule == "riemann_trapezoid":
        weights[0] /= 2
        weights[-1] /= 2
        return weights, np.linspace(0, 1, n)
    if rule == "riemann_left":
        return weights, np.linspace(0, 1 - 1 / n, n)
    if rule == "riemann_middle":
        return weights, np.linspace(1 / (2 * n), 1 - 1 / (2 * n), n)
    assert rule == "riemann_right"
    return weights, np.linspace(1 / n, 1, n)


def _numpy(t: Tensor) -> np.ndarray:
    # (a CPU tensor without grad is its own array: no detached copies made per request)
    if t._device is CPU and not t.requires_grad:
        return t.numpy()
    return t.numpy(force=True)


class _Plan:
    """One request in a batch: its input in the model's dtype, what it adds to the forward
    without a graph, and (once the targets are known) its expanded rows and their seed."""

    __slots__ = ("alphas", "baseline", "checked", "fb", "fx", "noise", "request", "seed", "target",
                 "weights", "x")

    def __init__(self, request: AttributionRequest, dt: np.dtype, checked: bool) -> None:
        self.request = request
        self.checked = checked  # its target was checked against the model's classes already
        self.x = np.asarray(request.x, dtype=dt)
        self.target: np.ndarray | None = (
            None if request.target is None else np.asarray(request.target, dtype=np.int64))
        self.fx: np.ndarray | None = None  # the output at x, from the forward without a graph
        self.fb: np.ndarray | None = None  # the output at the baseline (integrated gradients)
        self.baseline: np.ndarray | None = None
        self.weights: np.ndarray | None = None  # integrated gradients: Captum's step sizes
        self.alphas: np.ndarray | None = None   # and its points
        self.noise: np.ndarray | None = None    # smoothgrad: (samples, *x.shape)
        self.seed: int | None = None
        if request.method == "integrated_gradients":
            b = 0.0 if request.baseline is None else np.asarray(request.baseline, dtype=dt)
            self.baseline = np.broadcast_to(np.asarray(b, dtype=dt), self.x.shape)
            weights, alphas = _quadrature(request.rule, int(request.steps))
            self.weights, self.alphas = weights.astype(dt), alphas.astype(dt)
        elif request.method == "smoothgrad":
            self.seed = (secrets.randbits(_SEED_BITS) if request.seed is None
                         else int(request.seed))
            noise = np.random.default_rng(self.seed).normal(
                0.0, float(request.stdev), (int(request.samples), *self.x.shape))
            self.noise = noise.astype(dt, copy=False)

    def forward_rows(self) -> list[np.ndarray]:
        """What this request needs from the forward without a graph."""
        if self.request.method == "integrated_gradients":
            assert self.baseline is not None
            return [self.x, np.ascontiguousarray(self.baseline)]
        if self.request.method == "smoothgrad":
            return [self.x]
        return []

    def expanded(self) -> np.ndarray:
        """The rows of the backward: x itself, the points of the integral (point-major, as
        Captum's ``cat`` over alphas), or the noisy copies (sample-major)."""
        method = self.request.method
        if method == "integrated_gradients":
            assert self.alphas is not None and self.baseline is not None
            shape = (-1,) + (1,) * self.x.ndim
            points: np.ndarray = self.baseline + self.alphas.reshape(shape) * (self.x - self.baseline)
            return points.reshape(-1, *self.x.shape[1:])
        if method == "smoothgrad":
            assert self.noise is not None
            noisy: np.ndarray = self.x + self.noise
            return noisy.reshape(-1, *self.x.shape[1:])
        return self.x

    def grad_output(self, i: int) -> Callable[[Tensor], np.ndarray]:
        """The seed of the backward as a function of this request's output rows: the one-hot of
        the targets (the predicted class at x where none was given), times the quadrature
        weight of each point for integrated gradients, repeated per point or noise sample."""

        def seed(out: Tensor) -> np.ndarray:
            if out.ndim != 2:
                raise ValueError(f"attribute: the model's output must have shape (rows, classes); "
                                 f"got {tuple(out.shape)}")
            classes = out.shape[1]
            if self.target is None:  # saliency and input_x_gradient: their rows are x
                self.fx = _numpy(out)
                self.target = self.fx.argmax(axis=1).astype(np.int64)
            if not self.checked and self.target.size and self.target.max() >= classes:
                raise ValueError(f"attribute: request {i}'s target {self.target.max()} is not "
                                 f"a class of the model's {classes}")
            rows = self.x.shape[0]
            hot = np.zeros((rows, classes), dtype=out.dtype)
            hot[np.arange(rows), self.target] = 1
            if self.request.method == "integrated_gradients":
                assert self.weights is not None
                return (self.weights[:, None, None] * hot).reshape(-1, classes)
            if self.request.method == "smoothgrad":
                return np.tile(hot, (int(self.request.samples), 1))
            return hot

        return seed

    def result(self, output: np.ndarray, grad: np.ndarray) -> Attribution:
        """This request's ``Attribution`` from its rows' output and gradient in the backward."""
        r = self.request
        rows, shape = self.x.shape[0], self.x.shape[1:]
        fx = output if self.fx is None else self.fx
        assert self.target is not None
        delta = None
        if r.method == "saliency":
            attributions = np.abs(grad) if r.abs else grad
        elif r.method == "input_x_gradient":
            attributions = self.x * grad
        elif r.method == "integrated_gradients":
            assert self.baseline is not None and self.fb is not None
            # the weights are in the seed: the sum over the points is the integral
            total = grad.reshape(int(r.steps), rows, *shape).sum(axis=0)
            attributions = total * (self.x - self.baseline)
            picked = np.arange(rows), self.target
            delta = attributions.reshape(rows, -1).sum(axis=1) - (fx[picked] - self.fb[picked])
        else:
            g = grad.reshape(int(r.samples), rows, *shape)
            if r.abs:
                g = np.abs(g)
            mean = g.sum(axis=0) / int(r.samples)
            if r.noise_type == "smoothgrad":
                attributions = mean
            else:
                mean_sq = (g * g).sum(axis=0) / int(r.samples)
                attributions = mean_sq if r.noise_type == "smoothgrad_sq" else mean_sq - mean * mean
        return Attribution(
            output=fx,
            predicted=fx.argmax(axis=1).astype(np.int64),
            target=self.target,
            attributions=attributions,
            delta=delta,
            seed=self.seed,
        )


async def attribute(
    model: Callable[[Tensor], Tensor],
    requests: Sequence[AttributionRequest],
    *,
    dtype: Any = None,
    device: Any = None,
    check: bool = True,
) -> list[Attribution]:
    """Each request's ``Attribution`` (the module's docstring defines the methods, as Captum),
    for a ``model`` mapping ``(N, *input_shape)`` to ``(N, classes)`` with independent rows.

    One call serves a batch, methods mixed: at most one forward without a graph (for
    integrated gradients and smoothgrad requests: the outputs at ``x``, which give their
    outputs and predicted classes, and at integrated gradients' baselines, for ``delta``), then
    one ``per_request_grad`` (one forward and one backward) over all requests' expanded rows,
    whose ``grad_output`` selects each row's target (times its quadrature weight). Results
    equal each request's computed alone, up to float rounding (a batched product may round
    differently). ``dtype`` is the model's (by default its first floating point parameter's):
    inputs, noise and points are cast to it and results are in it; ``device``: where the
    batches are made. Gradients go to the inputs only, never to the model's parameters.

    With ``check`` (the default), ``check_request`` runs on every request first: a bad one
    raises its ``ValueError`` (with the request's index) before anything is computed; a caller
    that checked each request already, targets against the model's classes included (the HTTP
    service, as it parses them), passes False. With ``check``, a target the model has no class
    for (which ``check_request`` cannot see without ``classes``) fails the batch.
    """
    for i, request in enumerate(requests if check else ()):
        try:
            check_request(request)
        except ValueError as exc:
            raise ValueError(f"attribute: request {i}: {exc}") from None
    if not requests:
        return []
    owner = model if isinstance(model, Module) else getattr(model, "__self__", None)
    if isinstance(owner, Module):  # before the forward below: it would update running stats
        coupled = batch_coupled_modules(owner)
        if coupled:
            raise ValueError(f"attribute: {coupled[0]} normalises with the statistics of the "
                             "whole batch, so one request's attributions would depend on the "
                             "other requests: call the model's .eval()")
    dt = _model_dtype(model, dtype, requests)
    if dt.kind != "f":
        raise ValueError(f"attribute: the model's dtype must be floating point; got {dt}")
    # Unchecked here (check=False), the caller checked each target against the classes.
    plans = [_Plan(r, dt, not check) for r in requests]

    # The forward without a graph: outputs at x (integrated gradients, smoothgrad) and at the
    # baselines, all in one batch.
    pieces = [p.forward_rows() for p in plans]
    arrays = [a for piece in pieces for a in piece]
    if arrays:
        with _no_grad():
            out = model(_as_tensor(np.concatenate(arrays), dtype=dt, device=device))
        if not isinstance(out, Tensor):
            raise TypeError(f"attribute: the model must return a Tensor, got {type(out).__name__}")
        if out.ndim != 2 or out.shape[0] != sum(a.shape[0] for a in arrays):
            raise ValueError(f"attribute: the model's output must have shape (rows, classes) "
                             f"(one row per input row); got {tuple(out.shape)}")
        y = _numpy(out)
        start = 0
        for p, piece in zip(plans, pieces):
            if not piece:
                continue
            rows = p.x.shape[0]
            p.fx = y[start:start + rows]
            if len(piece) == 2:
                p.fb = y[start + rows:start + 2 * rows]
            start += rows * len(piece)
            if p.target is None:
                p.target = p.fx.argmax(axis=1).astype(np.int64)

    grads = await per_request_grad(
        model, [p.expanded() for p in plans], [p.grad_output(i) for i, p in enumerate(plans)],
        dtype=dt, device=device, check=False,  # batch_coupled_modules ran above
    )
    return [p.result(_numpy(o), _numpy(g)) for p, (o, g) in zip(plans, grads)]
