"""torch.nn.functional's ``ctc_loss``: the connectionist temporal classification loss, as ATen's
CPU kernels compute it (LossCTC.cpp).

The forward is the log-space alpha recursion (``ctc_loss_cpu_template``), one node per call,
``CtcLossBackward0``, whose gradient is ATen's ``ctc_loss_backward_cpu_template``: the beta
recursion, ``alpha * beta`` collected per label, ``exp(lp) - exp(log(sum alpha*beta) + nll - lp)``
times the output's gradient. The reduction around it is composed of aiograd ops, as ATen's
``ctc_loss``: ``where`` for ``zero_infinity``, ``'mean'`` the mean of the losses divided by the
target lengths (at least 1), ``'sum'`` their sum.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .._ops._registry import backward, op
from .._ops._util import Tensor, attach, edge_of, like, needs_grad, not_tensor
from .._ops.elementwise import where
from .._ops.reduction import MeanBackward0, SumBackward0

__all__ = ["ctc_loss"]

_C = "ctc_loss_allocate_outputs"
_NEGINF = -np.inf


def _lengths(value: Any, name: str) -> list[int]:
    if isinstance(value, Tensor):
        if value.data.dtype.kind not in "iu":
            raise RuntimeError(f"{name} must be integral")
        return [int(v) for v in np.asarray(value.data).reshape(-1)]
    return [int(v) for v in np.asarray(value).reshape(-1)]


def _target_primes(tg: Any, blank: int) -> Any:
    """The extended target ``l'``: blank, l1, blank, l2, ..., blank."""
    primes = np.full(2 * len(tg) + 1, blank, dtype=np.int64)
    primes[1::2] = tg
    return primes


def _logsumexp3(a: Any, b: Any, c: Any) -> Any:
    """ATen's ``log(exp(a-m) + exp(b-m) + exp(c-m)) + m`` (``m`` 0 where all are -inf)."""
    m = np.maximum(np.maximum(a, b), c)
    m = np.where(m == _NEGINF, 0.0, m)
    return np.log(np.exp(a - m) + np.exp(b - m) + np.exp(c - m)) + m


def _alpha(lp: Any, primes: Any, input_length: int) -> Any:
    """``log_alpha`` ``(T, S)`` of one sample (``lp``: its ``(T, C)`` log-probabilities)."""
    s_len = len(primes)
    alpha = np.full((lp.shape[0], s_len), _NEGINF, dtype=lp.dtype)
    alpha[0, 0] = lp[0, primes[0]]
    if s_len > 1:
        alpha[0, 1] = lp[0, primes[1]]
    skip = np.zeros(s_len, dtype=bool)
    skip[2:] = primes[2:] != primes[:-2]
    neg = np.full(1, _NEGINF, dtype=lp.dtype)
    for t in range(1, input_length):
        prev = alpha[t - 1]
        la2 = np.concatenate([neg, prev[:-1]])
        la3 = np.where(skip, np.concatenate([neg, neg, prev[:-2]])[:s_len], _NEGINF)
        alpha[t] = _logsumexp3(prev, la2, la3) + lp[t, primes]
    return alpha


def _nll(alpha: Any, input_length: int, target_length: int) -> float:
    if input_length == 0:
        return 0.0 if target_length == 0 else np.inf
    last = alpha[input_length - 1]
    if target_length == 0:
        return -float(last[0])
    l1, l2 = last[2 * target_length], last[2 * target_length - 1]
    m = max(l1, l2)
    m = 0.0 if m == _NEGINF else m
    return -float(np.log(np.exp(l1 - m) + np.exp(l2 - m)) + m)


def _grad_coef(lp: Any, primes: Any, alpha: Any, nll: float, input_length: int, target_length: int) -> Any:
    """``exp(lp) - exp(log(sum_s alpha*beta) + nll - lp)`` of one sample (``(T, C)``, zero past
    its input length): ATen's backward before the output's gradient multiplies it."""
    t_max, n_labels = lp.shape
    s_len = 2 * target_length + 1
    lcab = np.full((t_max, n_labels), _NEGINF, dtype=lp.dtype)
    if input_length > 0:
        beta = np.full((t_max, s_len), _NEGINF, dtype=lp.dtype)
        t = input_length - 1
        beta[t, s_len - 1] = lp[t, primes[s_len - 1]]
        lcab[t, primes[s_len - 1]] = alpha[t, s_len - 1] + beta[t, s_len - 1]
        if target_length > 0:
            beta[t, s_len - 2] = lp[t, primes[s_len - 2]]
            lcab[t, primes[s_len - 2]] = alpha[t, s_len - 2] + beta[t, s_len - 2]
        skip = np.zeros(s_len, dtype=bool)
        skip[: s_len - 2] = primes[2:] != primes[: s_len - 2]
        neg = np.full(2, _NEGINF, dtype=lp.dtype)
        for t in range(input_length - 2, -1, -1):
            nxt = beta[t + 1]
            lb2 = np.concatenate([nxt[1:], neg[:1]])
            lb3 = np.where(skip, np.concatenate([nxt[2:], neg])[:s_len], _NEGINF)
            beta[t] = _logsumexp3(nxt, lb2, lb3) + lp[t, primes]
            ab = alpha[t, :s_len] + beta[t]
            # collected[t, l'[s]] log+= alpha + beta, s descending as ATen's loop
            for s in range(s_len - 1, -1, -1):
                c = primes[s]
                cur = lcab[t, c]
                if cur == _NEGINF:
                    lcab[t, c] = ab[s]
                else:
                    mx = max(cur, ab[s])
                    lcab[t, c] = np.log(np.exp(cur - mx) + np.exp(ab[s] - mx)) + mx
    with np.errstate(all="ignore"):
        coef = np.exp(lp) - np.exp(lcab + nll - lp)
    coef[input_length:] = 0.0
    return coef


@backward(name="CtcLossBackward0")
def _CtcLossBackward0(self: Any, grads: list[Any]) -> tuple[Any]:
    """``coef * grad_out[b]`` for each sample ``b`` (``coef`` computed by ``_grad_coef`` when the
    node first runs)."""
    if self.coef is None:
        self.coef = self.compute_coef()
    g = grads[0]
    return (like(self.coef, g) * g.reshape(1, -1, 1),)


def _compute_coef(lp_all: Any, samples: list[Any], nll: Any, zero_infinity: bool, input_lengths: list[int],
                  target_lengths: list[int]) -> Any:
    """Every sample's ``_grad_coef`` in one ``(T, N, C)`` array (zeros for a sample whose
    infinite loss ``zero_infinity`` zeroes)."""
    coef = np.zeros(lp_all.shape, dtype=lp_all.dtype)
    with np.errstate(all="ignore"):
        for b, (lp, primes, alpha) in enumerate(samples):
            if zero_infinity and nll[b] == np.inf:
                continue
            coef[:, b, :] = _grad_coef(lp, primes, alpha, float(nll[b]), input_lengths[b], target_lengths[b])
    return coef


def _targets_of(targets: Tensor, target_lengths: list[int], batch: int) -> list[Any]:
    tg = np.asarray(targets.data)
    out = []
    if tg.ndim == 1:
        pos = 0
        for n in target_lengths:
            if n < 0:
                raise RuntimeError(
                    f"Expected target_lengths to have value at least 0, but got value {n} "
                    f"(while checking arguments for {_C})"
                )
            out.append(tg[pos : pos + n])
            pos += n
        if tg.shape[0] != pos:
            raise RuntimeError(
                f"Expected tensor to have size {pos} at dimension 0, but got size {tg.shape[0]} for "
                f"argument #2 'targets' (while checking arguments for {_C})"
            )
        return out
    for n in target_lengths:
        if n < 0:
            raise RuntimeError(
                f"Expected target_lengths to have value at least 0, but got value {n} "
                f"(while checking arguments for {_C})"
            )
    if tg.shape[0] != batch:
        raise RuntimeError(
            f"Expected tensor to have size {batch} at dimension 0, but got size {tg.shape[0]} for "
            f"argument #2 'targets' (while checking arguments for {_C})"
        )
    longest = max(target_lengths, default=0)
    if tg.shape[1] < longest:
        raise RuntimeError(
            f"Expected tensor to have size at least {longest} at dimension 1, but got size "
            f"{tg.shape[1]} for argument #2 'targets' (while checking arguments for {_C})"
        )
    return [tg[b, :n] for b, n in enumerate(target_lengths)]


def _ctc_forward(log_probs: Tensor, targets: Tensor, input_lengths: list[int], target_lengths: list[int],
                 blank: int, zero_infinity: bool) -> Tensor:
    """ATen's ``_ctc_loss``: the ``(B,)`` negative log-likelihoods of ``(T, B, C)`` log_probs."""
    lp_all = np.asarray(log_probs.data)
    t_max, batch, n_labels = lp_all.shape
    if not 0 <= blank < n_labels:
        raise RuntimeError("blank must be in label range")
    if len(input_lengths) != batch:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(target_lengths) != batch:
        raise RuntimeError("target_lengths must be of size batch_size")
    tgs = _targets_of(targets, target_lengths, batch)
    for n in input_lengths:
        if n < 0:
            raise RuntimeError(
                f"Expected input_lengths to have value at least 0, but got value {n} (while checking arguments for {_C})"
            )
        if n > t_max:
            raise RuntimeError(
                f"Expected input_lengths to have value at most {t_max}, but got value {n} "
                f"(while checking arguments for {_C})"
            )
    nll = np.empty(batch, dtype=lp_all.dtype)
    samples = []
    with np.errstate(all="ignore"):
        for b in range(batch):
            lp, primes = lp_all[:, b, :], _target_primes(tgs[b].astype(np.int64), blank)
            alpha = _alpha(lp, primes, input_lengths[b]) if input_lengths[b] > 0 else None
            nll[b] = _nll(alpha, input_lengths[b], target_lengths[b])
            samples.append((lp, primes, alpha))
    out = like(nll, log_probs)
    if needs_grad(log_probs):
        node: Any = attach(_CtcLossBackward0((edge_of(log_probs),)), out)
        node.coef = None

        # (a partial of a module-level function, not a closure: a node shipped to another
        # process, a Dask worker's, is pickled with what it holds)
        node.compute_coef = functools.partial(
            _compute_coef, lp_all, samples, nll, zero_infinity, input_lengths, target_lengths)
    return out


@op(_CtcLossBackward0, MeanBackward0, SumBackward0, family="losses")
def ctc_loss(
    log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any, blank: int = 0,
    reduction: str = "mean", zero_infinity: bool = False,
) -> Tensor:
    """The CTC loss of ``log_probs`` ``(T, N, C)`` (or ``(T, C)``, unbatched) for ``targets``
    (padded ``(N, S)`` or the concatenated ``(sum(target_lengths),)``), with the lengths as
    tensors or sequences of ints; ``'mean'`` divides each loss by its target length first."""
    if not isinstance(log_probs, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("ctc_loss", log_probs)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    il = _lengths(input_lengths, "input_lengths")
    tl = _lengths(target_lengths, "target_lengths")
    batched = log_probs.data.ndim == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    if lp.data.ndim != 3:
        raise RuntimeError(f"log_probs must be 3-D (batch_size, input length, num labels), but got: {log_probs.ndim}-D")
    if not isinstance(targets, Tensor):
        raise not_tensor("ctc_loss", targets, 1, "targets")
    res = _ctc_forward(lp, targets, il, tl, blank, zero_infinity)
    if zero_infinity:
        res = where(like(res.data == np.inf, res), 0.0, res)
    if reduction == "mean":
        lengths = like(np.maximum(np.asarray(tl, dtype=res.data.dtype), 1), res)
        return (res / lengths).mean()  # type: ignore[no-any-return]
    if reduction == "sum":
        return res.sum()  # type: ignore[no-any-return]
    return res if batched else res.squeeze(0)
