"""Rprop, ``torch.optim.Rprop``: per-coordinate step sizes that grow while the gradient keeps its
sign and shrink when it flips, the step following only the gradient's sign, with the arithmetic
of PyTorch's ``_single_tensor_rprop``."""

from __future__ import annotations

from typing import Any

from .optimizer import Optimizer, check_flags, check_nonnegative, increment_step, tensor_on, write

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Resilient backpropagation, as ``torch.optim.Rprop``.

    Per coordinate: where ``g * g_prev > 0`` the step size is multiplied by ``etas[1]``, where it
    is negative by ``etas[0]`` (and that coordinate's gradient is taken as 0 for this step and
    the next comparison), then clamped to ``step_sizes``; ``p -= sign(g) * step_size``. The
    state holds ``step``, ``prev`` and ``step_size`` (starting at ``lr``). ``foreach`` and
    ``capturable`` are accepted for PyTorch's signature; every step runs the single-tensor
    arithmetic.
    """

    _group_defaults_on_load = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}

    def __init__(
        self,
        params: Any,
        lr: float = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_nonnegative(lr=lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {
            "lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach, "maximize": maximize,
            "differentiable": differentiable, "capturable": capturable,
        }
        super().__init__(params, defaults)
        check_flags(defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        for p, state in self._with_state(group, "prev"):
            xp = p._device.xp
            if "step_size" not in state:  # (created with the state, as torch's, at the first step)
                state["step_size"] = tensor_on(xp.full_like(p.data, group["lr"]), p)
            increment_step(state["step"])
            assert p._grad is not None
            grad = -p._grad.data if group["maximize"] else p._grad.data.copy()
            prev, step_size = state["prev"], state["step_size"]
            sign = xp.sign(grad * prev.data)
            factor = xp.where(sign > 0, etaplus, xp.where(sign < 0, etaminus, 1)).astype(grad.dtype, copy=False)
            step_size.data *= factor
            xp.clip(step_size.data, step_size_min, step_size_max, out=step_size.data)
            grad[sign < 0] = 0  # (a flipped sign: no step now, and no comparison next time)
            p.data -= xp.sign(grad) * step_size.data
            prev.data[...] = grad
            write(prev)
            write(step_size)
            write(p)
