"""Function transforms with ``torch.func``'s names: ``functional_call``, ``grad``,
``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``, ``vmap``.

aiograd's backward is a coroutine, so every transform that differentiates is awaited where
torch's returns a value: ``grad``, ``grad_and_value``, ``jacrev``, ``jacfwd`` and ``hessian``
return coroutine functions, and ``vjp``/``jvp`` are coroutines (as is ``vjp``'s ``vjp_fn``)::

    dx = await aiograd.func.grad(f)(x)                  # torch: torch.func.grad(f)(x)
    out, vjp_fn = await aiograd.func.vjp(f, x)
    (gx,) = await vjp_fn(v)
    per_sample = await aiograd.func.vmap(aiograd.func.grad(loss), in_dims=(None, 0, 0))(params, xs, ys)

``functional_call`` is synchronous (a module's forward is); ``vmap`` is synchronous for a plain
function and a coroutine function for a coroutine function (another transform). The function a
transform takes may be ``async def``, so transforms nest (``grad(grad(f))``,
``vmap(grad(f))``, ``hessian`` is ``jacfwd(jacrev(f))``).

Differences from torch.func: aiograd has no forward-mode AD, so ``jvp`` uses the
double-backward trick (``aiograd.functional.jvp``) and ``jacfwd`` is ``jacrev``; ``vmap`` has no
batching rules and calls the function once per slice, then stacks (exact for any function,
slower than torch's); results of a nested transform keep their graph (torch's levels are not
modelled: a transform's results stay differentiable inside another transform or when an input
already requires grad, and are detached otherwise, so a tensor captured from the closure at the
top level does not make a result differentiable).
"""

from ._eager import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp
from ._functional_call import functional_call
from ._vmap import vmap

__all__ = ["functional_call", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap"]
