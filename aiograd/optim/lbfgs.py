"""L-BFGS, ``torch.optim.LBFGS``: a limited-memory quasi-Newton method, with PyTorch's
two-loop recursion, stopping rules and strong-Wolfe line search, step for step.

It calls its closure several times per step, and in aiograd a closure that computes gradients
awaits ``loss.backward()``: so ``step`` is a coroutine, ``loss = await optimizer.step(closure)``
(the closure plain or ``async def``), where PyTorch's script has ``optimizer.step(closure)``.
The arithmetic runs on one flat array of all the parameters' gradients on their device.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

from .._base._grad_mode import enable_grad
from .._core._tensor import Tensor
from .optimizer import Optimizer, tensor_on, write

__all__ = ["LBFGS"]


def _cubic_interpolate(
    x1: float, f1: float, g1: float, x2: float, f2: float, g2: float, bounds: tuple[float, float] | None = None
) -> float:
    """The minimiser of the cubic through two points with their slopes, clamped to ``bounds``
    (PyTorch's, after minFunc's ``polyinterp``)."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square >= 0:
        d2 = math.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


async def _strong_wolfe(
    obj_func: Callable[[float], Any], t: float, d: Any, f: float, g: Any, gtd: float,
    c1: float = 1e-4, c2: float = 0.9, tolerance_change: float = 1e-9, max_ls: int = 25,
) -> tuple[float, Any, float, int]:
    """PyTorch's ``_strong_wolfe`` (bracketing, then zoom); ``await obj_func(t)`` evaluates the
    loss and flat gradient at ``x + t * d``. Returns the loss, gradient, step and evaluations."""
    d_norm = float(abs(d).max())
    g = g.copy()
    f_new, g_new = await obj_func(t)
    ls_func_evals = 1
    gtd_new = float(g_new.dot(d))
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done = False
    ls_iter = 0
    bracket: list[float] = []
    bracket_f: list[float] = []
    bracket_g: list[Any] = []
    bracket_gtd: list[float] = []
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f, bracket_g = [t_prev, t], [f_prev, f_new], [g_prev, g_new.copy()]
            bracket_gtd = [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f, bracket_g = [t_prev, t], [f_prev, f_new], [g_prev, g_new.copy()]
            bracket_gtd = [gtd_prev, gtd_new]
            break
        # interpolate
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.copy(), gtd_new
        f_new, g_new = await obj_func(t)
        ls_func_evals += 1
        gtd_new = float(g_new.dot(d))
        ls_iter += 1
    if ls_iter == max_ls:  # reached the maximum number of iterations
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    # zoom phase: a point satisfying the conditions, or a bracket too small to go on
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        # Too close to a bound with no progress the last time: move away from it by ``eps``.
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - eps if abs(t - max(bracket)) < abs(t - min(bracket)) else min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = await obj_func(t)
        ls_func_evals += 1
        gtd_new = float(g_new.dot(d))
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = g_new.copy(), gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                bracket_g[high_pos], bracket_gtd[high_pos] = bracket_g[low_pos], bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = g_new.copy(), gtd_new
    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals


def _array(value: Any) -> Any:
    """A state value as an array (saved as a tensor, or loaded from PyTorch's)."""
    return value.data if isinstance(value, Tensor) else value


def _number(value: Any) -> Any:
    """A state scalar (PyTorch saves some as 0-dim tensors) as a Python float."""
    return float(value.data) if isinstance(value, Tensor) else value


async def _call(closure: Callable[[], Any]) -> float:
    """The closure's loss, called under ``enable_grad`` and awaited if it is awaitable."""
    with enable_grad():
        loss = closure()
        if inspect.isawaitable(loss):
            loss = await loss
    return loss


class LBFGS(Optimizer):
    """L-BFGS (after minFunc), as ``torch.optim.LBFGS``: one group only; each
    ``await step(closure)`` runs up to ``max_iter`` iterations (``max_eval`` closure calls),
    with a fixed step ``lr`` or ``line_search_fn="strong_wolfe"``. The state (under the first
    parameter, PyTorch's keys) holds the last direction ``d``, step ``t``, the ``history_size``
    curvature pairs ``old_dirs``/``old_stps`` with ``ro``, ``H_diag``, ``prev_flat_grad``,
    ``prev_loss``, ``al``, ``func_evals`` and ``n_iter``; the scalars are Python floats."""

    def __init__(
        self,
        params: Any,
        lr: float = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {
            "lr": lr, "max_iter": max_iter, "max_eval": max_eval, "tolerance_grad": tolerance_grad,
            "tolerance_change": tolerance_change, "history_size": history_size,
            "line_search_fn": line_search_fn,
        }
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params: list[Tensor] = self.param_groups[0]["params"]

    # ----------------------------------------------------------------------------- flat views
    def _gather_flat_grad(self) -> Any:
        xp = self._params[0]._device.xp
        return xp.concatenate([
            xp.zeros(p.data.size, dtype=p.data.dtype) if p._grad is None else p._grad.data.reshape(-1)
            for p in self._params
        ])

    def _add_grad(self, step_size: float, update: Any) -> None:
        offset = 0
        for p in self._params:
            numel = p.data.size
            p.data += step_size * update[offset:offset + numel].reshape(p.data.shape)
            write(p)
            offset += numel

    def _set_param(self, params_data: list[Any]) -> None:
        for p, pdata in zip(self._params, params_data):
            p.data[...] = pdata
            write(p)

    async def _directional_evaluate(self, closure: Callable[[], Any], x: list[Any], t: float, d: Any) -> tuple[float, Any]:
        self._add_grad(t, d)
        loss = float(await _call(closure))
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    # ----------------------------------------------------------------------------- stepping
    async def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Run one L-BFGS optimization (several iterations); ``closure`` (plain or ``async``)
        recomputes the loss and its gradients and returns the loss. Returns the first loss."""
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]
        p0 = self._params[0]
        state = self.state[p0]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = await _call(closure)
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if float(abs(flat_grad).max()) <= tolerance_grad:  # already optimal
            return orig_loss

        d, t = _array(state.get("d")), _number(state.get("t"))
        old_dirs = [_array(v) for v in state.get("old_dirs") or []]
        old_stps = [_array(v) for v in state.get("old_stps") or []]
        ro = [_number(v) for v in state.get("ro") or []]
        h_diag, prev_loss = _number(state.get("H_diag")), _number(state.get("prev_loss"))
        prev_flat_grad = _array(state.get("prev_flat_grad"))
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            # the descent direction
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro, h_diag = [], [], [], 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = float(y.dot(s))
                if ys > 1e-10:  # update the memory
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / float(y.dot(y))
                num_old = len(old_dirs)
                if "al" not in state:
                    state["al"] = [None] * history_size
                al = state["al"]
                # the two-loop recursion: d = -H g
                q = -flat_grad
                for i in range(num_old - 1, -1, -1):
                    al[i] = float(old_stps[i].dot(q)) * ro[i]
                    q += -_number(al[i]) * old_dirs[i]
                d = r = q * h_diag
                for i in range(num_old):
                    be_i = float(old_dirs[i].dot(r)) * ro[i]
                    r += (_number(al[i]) - be_i) * old_stps[i]
            prev_flat_grad = flat_grad.copy()
            prev_loss = loss
            # the step length
            t = min(1.0, 1.0 / float(abs(flat_grad).sum())) * lr if state["n_iter"] == 1 else lr
            gtd = float(flat_grad.dot(d))
            if gtd > -tolerance_change:  # not a descent direction
                break
            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = [p.data.copy() for p in self._params]

                async def obj_func(step: float, x_init: list[Any] = x_init, direction: Any = d) -> tuple[float, Any]:
                    return await self._directional_evaluate(closure, x_init, step, direction)

                loss, flat_grad, t, ls_func_evals = await _strong_wolfe(
                    obj_func, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals
                )
                self._add_grad(t, d)
                opt_cond = float(abs(flat_grad).max()) <= tolerance_grad
            else:
                self._add_grad(t, d)
                if n_iter != max_iter:
                    # re-evaluate (not for the last iteration: no use for the gradient then)
                    loss = float(await _call(closure))
                    flat_grad = self._gather_flat_grad()
                    opt_cond = float(abs(flat_grad).max()) <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals
            # the stopping rules
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if float(abs(d * t).max()) <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state["d"] = tensor_on(d, p0)
        state["t"] = t
        state["old_dirs"] = [tensor_on(v, p0) for v in old_dirs]
        state["old_stps"] = [tensor_on(v, p0) for v in old_stps]
        state["ro"] = ro
        state["H_diag"] = h_diag
        state["prev_flat_grad"] = tensor_on(prev_flat_grad, p0)
        state["prev_loss"] = prev_loss
        return orig_loss

    async def step_async(self, closure: Callable[[], Any] | None = None) -> Any:
        """The same as ``await step(closure)`` (the other optimizers' spelling)."""
        if closure is None:
            raise TypeError("LBFGS.step() missing 1 required positional argument: 'closure'")
        return await self.step(closure)
