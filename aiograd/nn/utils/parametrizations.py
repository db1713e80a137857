"""``aiograd.nn.utils.parametrizations`` (torch/nn/utils/parametrizations.py): weight and spectral
normalization as parametrizations (``parametrize.register_parametrization``), with torch's state
dict keys: ``parametrizations.<name>.original0``/``original1`` (magnitude and direction) for
``weight_norm``, ``parametrizations.<name>.original`` and the power-iteration buffers
``parametrizations.<name>.0._u``/``_v`` for ``spectral_norm``."""

from __future__ import annotations

import math
import types
from enum import Enum, auto

import numpy as np

from ..._base._grad_mode import no_grad
from ..._core._tensor import Tensor
from ..._ops.casting import to
from ..._ops.joining import cat
from ..._ops.linear_systems import solve
from .. import functional as F
from ..modules.module import Module
from . import parametrize
from .weight_norm import _weight_norm, norm_except_dim

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _eye(n: int, like: Tensor) -> Tensor:
    return to(Tensor._wrap(np.eye(n, dtype=like.dtype)), like.device)


def _matrix_exp(a: Tensor) -> Tensor:
    """torch.matrix_exp of (a batch of) square matrices, by scaling and squaring with a degree-20
    Taylor polynomial, written with differentiable ops (so the gradient is the ops' own)."""
    n = a.shape[-1]
    norm = float(np.abs(a.detach().cpu().numpy()).sum(axis=-2).max()) if a.numel() else 0.0
    s = max(0, math.ceil(math.log2(norm))) if norm > 0 else 0
    b = a / (2.0**s) if s else a
    eye = _eye(n, a)
    out = eye
    term = eye
    for k in range(1, 21):
        term = (term @ b) / float(k)
        out = out + term
    for _ in range(s):
        out = out @ out
    return out


def _householder_product(a: Tensor, tau: Tensor) -> Tensor:
    """torch.linalg.householder_product: the first ``k`` columns of ``H_1 ... H_k``,
    ``H_i = I - tau_i v_i v_i^H``, ``v_i`` the ``i``-th column of ``a`` below the diagonal with a 1
    on it; differentiable ops only."""
    n, k = a.shape[-2], a.shape[-1]
    eye = _eye(n, a)
    v_all = a.tril(-1) + eye[:, :k]
    q = eye
    for i in range(k):
        v = v_all[..., :, i : i + 1]
        q = q - (q @ v) * tau[..., i : i + 1].unsqueeze(-1) @ v.mT
    return q[..., :, :k]


def _geqrf(a: Tensor) -> tuple[Tensor, Tensor]:
    """torch.geqrf (no gradient): LAPACK's QR in Householder form, from numpy's raw QR."""
    data = np.asarray(a.detach().cpu().numpy())
    batch = data.shape[:-2]
    flat = data.reshape((-1, *data.shape[-2:]))
    hs, taus = [], []
    for m in flat:
        h, tau = np.linalg.qr(m, mode="raw")
        hs.append(h.T)
        taus.append(tau)
    x = np.stack(hs).reshape(data.shape) if flat.shape[0] else data.copy()
    t = np.stack(taus).reshape((*batch, -1)) if flat.shape[0] else np.zeros((*batch, 0))
    return to(Tensor._wrap(x.astype(data.dtype)), a.device), to(
        Tensor._wrap(t.astype(data.dtype)), a.device
    )


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    eps = 10.0 * n * float(np.finfo(q.dtype).eps)
    return bool(np.allclose((q.mT @ q).detach().cpu().numpy(), np.eye(k), atol=eps))


def _make_orthogonal(a: Tensor) -> Tensor:
    x, tau = _geqrf(a)
    q = _householder_product(x, tau)
    return q * x.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    base: Tensor

    def __init__(
        self, weight: Tensor, orthogonal_map: _OrthMaps, *, use_trivialization: bool = True
    ) -> None:
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                zeros = X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)
                X = cat([X, zeros], dim=-1)
            A = X - X.mT
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = _matrix_exp(A)
            else:
                eye = _eye(n, A)
                Q = solve(eye - 0.5 * A, eye + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if "base" in self._buffers:
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        with no_grad():
            if Q.shape != self.shape:
                raise ValueError(
                    f"Expected a matrix or batch of matrices of shape aiograd.Size({list(self.shape)}). "
                    f"Got a tensor of shape aiograd.Size({list(Q.shape)})."
                )
            Q_init = Q
            n, k = Q.shape[-2], Q.shape[-1]
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential "
                        "or the Cayley parametrizations when use_trivialization=False."
                    )
                A, tau = _geqrf(Q)
                idx = np.arange(min(A.shape[-2], A.shape[-1]))
                signs = np.sign(A.data[..., idx, idx])
                signs[tau.data == 0.0] *= -1
                A.data[..., idx, idx] = signs
                return A.mT if transpose else A
            if n == k:
                Q = _make_orthogonal(Q) if not _is_orthogonal(Q) else Q.clone()
            else:
                N = Q.new_empty(*Q.shape[:-2], n, n - k).normal_()
                Q = _make_orthogonal(cat([Q, N], dim=-1))
            self.base = Q
            neg_id = Q_init.new_zeros(*Q_init.shape)
            idx = np.arange(min(n, k))
            neg_id.data[..., idx, idx] = -1.0
            return neg_id


def orthogonal(
    module: Module,
    name: str = "weight",
    orthogonal_map: str | None = None,
    *,
    use_trivialization: bool = True,
) -> Module:
    """Parametrize the matrix (or batch of matrices) ``name`` of ``module`` to stay orthogonal
    (torch's ``parametrizations.orthogonal``): ``orthogonal_map`` ``"matrix_exp"`` (the default for
    square matrices), ``"cayley"`` or ``"householder"`` (the default otherwise) maps the unconstrained
    ``original`` onto orthogonal matrices; with ``use_trivialization`` (default) the result is
    multiplied by the buffer ``base``, set on registration and on each assignment. Real tensors
    only. Returns ``module``."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(
            f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions."
        )
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError(
            'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: '
            f"{orthogonal_map}"
        )
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        if dim is None:
            dim = -1
        self.dim = dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        weight_g = norm_except_dim(weight, 2, self.dim)
        weight_v = weight
        return weight_g, weight_v


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Apply weight normalization to the parameter ``name`` of ``module`` as a parametrization:
    ``module.<name>`` becomes ``g * v / ||v||``, the norm over every dim but ``dim`` (the whole
    tensor when ``dim=None``), with ``g`` in ``module.parametrizations.<name>.original0`` and ``v``
    in ``original1``. Remove it with ``parametrize.remove_parametrizations``. Returns ``module``."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    _add_weight_norm_compat(module, name)
    return module


def _add_weight_norm_compat(module: Module, name: str) -> None:
    """torch's load-state-dict pre-hook of ``weight_norm``: an old-style checkpoint's
    ``<name>_g``/``<name>_v`` load into ``parametrizations.<name>.original0``/``original1``.
    (aiograd's Module has no load pre-hooks: the module's own ``_load_from_state_dict`` is
    wrapped, once, on the instance.)"""
    module.__dict__.setdefault("_weight_norm_compat_names", []).append(name)
    if "_load_from_state_dict" not in module.__dict__:
        module.__dict__["_load_from_state_dict"] = types.MethodType(
            _load_with_weight_norm_compat, module
        )


def _load_with_weight_norm_compat(
    self: Module, state_dict: dict, prefix: str, *args: object
) -> None:
    for name in self.__dict__.get("_weight_norm_compat_names", ()):
        g_key = f"{prefix}{name}_g"
        v_key = f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            original0 = state_dict.pop(g_key)
            original1 = state_dict.pop(v_key)
            state_dict[f"{prefix}parametrizations.{name}.original0"] = original0
            state_dict[f"{prefix}parametrizations.{name}.original1"] = original1
    type(self)._load_from_state_dict(self, state_dict, prefix, *args)


class _SpectralNorm(Module):
    def __init__(
        self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12
    ) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})"
            )
        if n_power_iterations <= 0:
            raise ValueError(
                f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            with no_grad():
                u = weight_mat.new_empty(h).normal_(0, 1)
                v = weight_mat.new_empty(w).normal_(0, 1)
                self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
                self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if weight.ndim <= 1:
            raise AssertionError(
                f"Expected weight to have more than 1 dimension, got {weight.ndim}"
            )
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(weight_mat.mv(self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(weight_mat.t().mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = u.vdot(weight_mat.mv(v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def _transposed_convs() -> tuple[type, ...]:
    from ..modules import conv

    names = ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")
    return tuple(getattr(conv, n) for n in names if hasattr(conv, n))


def spectral_norm(
    module: Module,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: int | None = None,
) -> Module:
    """Apply spectral normalization to the tensor ``name`` of ``module`` as a parametrization:
    ``module.<name>`` becomes ``weight / sigma``, sigma the largest singular value of the weight
    as a matrix (``dim`` first; by default 1 for transposed convolutions, 0 otherwise), estimated by
    power iteration on the buffers ``_u`` and ``_v`` of ``module.parametrizations.<name>[0]``:
    15 steps at registration, then ``n_power_iterations`` per access in training mode and none
    in eval mode. A 1-d tensor is just normalized. Returns ``module``."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, _transposed_convs()) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps)
    )
    return module
