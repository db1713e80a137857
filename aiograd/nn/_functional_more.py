"""More of torch.nn.functional: ``hardshrink``, ``softshrink``, ``channel_shuffle``,
``bilinear``, ``pairwise_distance``, ``rms_norm``, ``local_response_norm`` and
``gumbel_softmax``.

Where PyTorch records a dedicated node (``HardshrinkBackward0``, ``SoftshrinkBackward0``,
``ChannelShuffleBackward0``) so does each here, its rule written in aiograd ops (so it can be
differentiated again). The others are composed of aiograd ops as PyTorch composes them (ATen's
``rms_norm`` and ``pairwise_distance``, torch.nn.functional's ``local_response_norm`` and
``gumbel_softmax``), so their nodes are those of their parts (``MulBackward0``,
``RsqrtBackward0``, ``NormBackward1``, ``DivBackward0``, ``SoftmaxBackward0``). ``bilinear`` is an
``einsum`` (PyTorch records ``TrilinearBackward0``; the values and gradients are the same).

None of these is registered in the op registry: they are functions of ``nn.functional`` only.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._base._dtypes import scalar_type_name
from .._ops._registry import backward, variant
from .._ops._util import Tensor, attach, edge_of, like, needs_grad, not_tensor
from .._ops.convenience import LinalgVectorNormBackward0, norm
from .._ops.elementwise import where
from .._ops.padding import pad
from .._ops.products import einsum
from ._activations import _apply, _kernel_name_error

__all__ = [
    "bilinear", "channel_shuffle", "gumbel_softmax", "hardshrink", "local_response_norm", "pairwise_distance",
    "rms_norm", "softshrink",
]


def _check(name: str, input: Any) -> None:
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor(name, input)


# ------------------------------------------------------------------------------ hardshrink, softshrink
def _outside(x: Tensor, lambd: float) -> Any:
    """Where ``x`` is outside ``[-lambd, lambd]`` (NaN included): where the gradient passes."""
    xd = x.data
    return ~((xd >= -lambd) & (xd <= lambd))


@backward(name="HardshrinkBackward0", saved=("x",), batched=True)
def _HardshrinkBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """The gradient outside ``[-lambd, lambd]``, 0 inside (PyTorch's ``hardshrink_backward``)."""
    g, x = grads[0], self.x.unpack(self)
    return (where(_outside(x, self.lambd), g, 0.0),)


@backward(name="SoftshrinkBackward0", saved=("x",), batched=True)
def _SoftshrinkBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """The gradient outside ``[-lambd, lambd]``, 0 inside (PyTorch's ``softshrink_backward``)."""
    g, x = grads[0], self.x.unpack(self)
    return (where(_outside(x, self.lambd), g, 0.0),)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x`` where ``|x| > lambd``, 0 elsewhere."""
    _check("hardshrink", input)

    def forward(xp: Any, x: Any) -> Any:
        return xp.where((x >= -lambd) & (x <= lambd), 0, x)

    return _apply(input, forward, _HardshrinkBackward0, False, "hardshrink_cpu", lambd=lambd)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, 0 between; ``lambd``
    must be in ``[0, max of the dtype]``, as PyTorch checks."""
    _check("softshrink", input)
    x = input.data
    if x.dtype.kind != "f":
        raise _kernel_name_error("softshrink_check", x)
    top = float(np.finfo(x.dtype).max)
    if not 0 <= lambd <= top:
        raise RuntimeError(
            f"lambda must be in range [0, {top:g}] for input dtype {scalar_type_name(x.dtype)}, but found {lambd:g}"
        )

    def forward(xp: Any, x: Any) -> Any:
        return xp.where(x > lambd, x - lambd, xp.where(x < -lambd, x + lambd, 0))

    return _apply(input, forward, _SoftshrinkBackward0, False, "softshrink_cpu", lambd=lambd)


# ------------------------------------------------------------------------------ channel_shuffle
def _shuffle(xp: Any, x: Any, groups: int) -> Any:
    n, c = x.shape[0], x.shape[1]
    return xp.ascontiguousarray(x.reshape(n, groups, c // groups, *x.shape[2:]).swapaxes(1, 2)).reshape(x.shape)


@backward(name="ChannelShuffleBackward0")
def _ChannelShuffleBackward0(self: Any, grads: list[Any]) -> tuple[Any]:
    """The inverse permutation: a shuffle into ``channels / groups`` groups."""
    g = grads[0]
    return (channel_shuffle(g, g.data.shape[1] // self.groups),)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Split the channels (dim 1) into ``groups`` groups and interleave them: ``(N, g, C/g, *)``
    transposed to ``(N, C/g, g, *)``."""
    _check("channel_shuffle", input)
    x = input.data
    if x.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes {list(x.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    if x.shape[1] % groups:
        raise RuntimeError(
            f"Number of channels must be divisible by groups. Got {x.shape[1]} channels and {groups} groups."
        )
    out = like(_shuffle(input._device.xp, x, groups), input)
    if needs_grad(input):
        node: Any = attach(_ChannelShuffleBackward0((edge_of(input),)), out)
        node.groups = groups
    return out


# ------------------------------------------------------------------------------ bilinear
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]``: the two
    inputs share their leading dims, ``weight`` is ``(out, in1, in2)``."""
    _check("bilinear", input1)
    s1, s2, sw = input1.data.shape, input2.data.shape, weight.data.shape
    if len(s1) != len(s2):
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {len(s1)} and {len(s2)}")
    for i in range(len(s1) - 1):
        if s1[i] != s2[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: got {s1[i]} and {s2[i]}")
    if s1[-1] != sw[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {s1[-1]} but expected {sw[1]}")
    if len(sw) < 3:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-len(sw)}, {len(sw) - 1}], but got 2)")
    if s2[-1] != sw[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {s2[-1]} but expected {sw[2]}")
    if bias is not None and bias.data.shape[-1] != sw[0]:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {bias.data.shape[-1]} but expected {sw[0]}")
    out = einsum("...i,oij,...j->...o", input1, weight, input2)
    return out if bias is None else out + bias


# ------------------------------------------------------------------------------ pairwise_distance
NormBackward1 = variant("NormBackward1", LinalgVectorNormBackward0, "``torch.norm(x, p, dim)`` (ATen's ``norm``).",
                        module=__name__)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` over the last dim (of the broadcast pair), as ATen's
    ``pairwise_distance``: the ``eps`` is added to the difference, not to the norm."""
    _check("pairwise_distance", x1)
    dim = max(x1.data.ndim, x2.data.ndim) - 1
    diff = x1 - x2 + eps
    out = norm(diff, p, dim, keepdim)
    node: Any = out.grad_fn
    if type(node) is LinalgVectorNormBackward0:  # ATen's ``norm``: PyTorch names its node NormBackward1
        node.__class__ = NormBackward1
    return out


# ------------------------------------------------------------------------------ rms_norm
def _shape_str(shape: Sequence[int]) -> str:
    return str(list(shape))


def rms_norm(
    input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None, eps: float | None = None
) -> Tensor:
    """``input * rsqrt(mean(input ** 2) + eps) * weight``, the mean over the last
    ``len(normalized_shape)`` dims; ``eps=None`` is the machine epsilon of the input's dtype
    (float32's for a float16 input, computed in float32 as PyTorch's opmath)."""
    _check("rms_norm", input)
    normalized = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    x = input.data
    if not normalized:
        raise RuntimeError(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, "
            f"but got normalized_shape = {_shape_str(normalized)}"
        )
    if weight is not None and tuple(weight.data.shape) != normalized:
        raise RuntimeError(
            "Expected weight to be of same shape as normalized_shape, but got weight of shape "
            f"{_shape_str(weight.data.shape)} and normalized_shape = {_shape_str(normalized)}"
        )
    k = len(normalized)
    if x.ndim < k:
        raise ValueError(f"Input tensor must have at least {k} dimensions, but got {x.ndim}")
    if tuple(x.shape[x.ndim - k:]) != normalized:
        raise RuntimeError(
            f"Given normalized_shape={_shape_str(normalized)}, expected input with shape "
            f"[*{', '.join(str(s) for s in normalized)}], but got input of size{_shape_str(x.shape)}"
        )
    if x.dtype.kind != "f":
        raise _kernel_name_error("rms_norm", x)
    upcast = x.dtype.itemsize < 4
    xin = input.float() if upcast else input  # type: ignore[attr-defined]
    if eps is None:
        eps = float(np.finfo(xin.data.dtype).eps)
    dims = tuple(range(x.ndim - 1, x.ndim - 1 - k, -1))
    rstd = (xin.pow(2).mean(dims, keepdim=True) + eps).rsqrt()
    result = xin * rstd
    if upcast:
        result = result.type_as(input)
    return result if weight is None else result * weight


# ------------------------------------------------------------------------------ local_response_norm
def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """``x / (k + alpha * mean(x ** 2 over size neighbouring channels)) ** beta``, the mean an
    average pool over the zero-padded channels, as torch.nn.functional's."""
    from ._pooling import avg_pool2d
    from ._pooling3d import avg_pool3d

    dim = input.dim()  # type: ignore[attr-defined]
    if dim < 3:
        raise ValueError(
            f"Expected 3D or higher dimensionality                          input (got {dim} dimensions)"
        )
    if input.data.size == 0:
        return input
    div = input.mul(input)  # type: ignore[attr-defined]
    if dim == 3:
        div = div.unsqueeze(1)
        div = pad(div, (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = input.data.shape
        div = div.view(sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1)
        div = div.view(sizes)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div  # type: ignore[no-any-return]


# ------------------------------------------------------------------------------ gumbel_softmax
def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    """Samples of the Gumbel-softmax distribution: ``softmax((logits + g) / tau, dim)`` with
    ``g = -log(Exponential(1))`` drawn as PyTorch draws it (so the same seed gives the same
    samples); ``hard=True`` returns the one-hot of the argmax, with the soft sample's gradient
    (straight-through). ``eps`` is deprecated and unused, as in PyTorch."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -logits.new_empty(logits.shape).exponential_().log()  # (empty_like's dtype and device)
    gumbels = (logits + gumbels) / tau
    y_soft = gumbels.softmax(dim)
    if hard:
        index = y_soft.max(dim, keepdim=True)[1]
        y_hard = logits.new_zeros(logits.shape).scatter_(dim, index, 1.0)
        return y_hard - y_soft.detach() + y_soft  # type: ignore[no-any-return]
    return y_soft  # type: ignore[no-any-return]

