"""Values and gradients at the edges, against torch: every differentiable elementwise op,
reduction and loss of the registry evaluated at NaN, +-inf, +-0, +-subnormal and +-1 (float64,
and float32 for the unary ops), forward and gradient, equal to torch's: the positions of NaNs,
the infinities and the signs of zeros exactly, finite values to the few ulps by which two
correct kernels may differ (tests/helpers.py's ``assert_matches_torch``: which kernels torch and
numpy run depends on the CPU). The choices are listed in
docs/gradients-at-edges.md; its intentional exceptions are asserted here too (so that the test
fails if torch changes its mind)."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import assert_matches_torch, requires_torch, torch

import aiograd as ag
from aiograd._ops._registry import OPS

pytestmark = requires_torch

NAN, INF = float("nan"), float("inf")
EDGES = {
    np.float64: [NAN, INF, -INF, 0.0, -0.0, 5e-324, -5e-324, 1.0, -1.0],
    np.float32: [NAN, INF, -INF, 0.0, -0.0, 1e-45, -1e-45, 1.0, -1.0, 100.0, -100.0],
}

Fn = Callable[[Any, Any], Any]

UNARY: dict[str, Fn] = {
    # torch's aliases and more elementwise math (aiograd/_ops/elementwise_more.py, torch_aliases.py)
    "exp2": lambda lib, x: lib.exp2(x), "deg2rad": lambda lib, x: x.deg2rad(), "rad2deg": lambda lib, x: x.rad2deg(),
    "sinc": lambda lib, x: lib.sinc(x), "sgn": lambda lib, x: lib.sgn(x), "logit": lambda lib, x: lib.logit(x),
    "logit_eps": lambda lib, x: lib.logit(x, eps=0.25), "float_power": lambda lib, x: lib.float_power(x, 3),
    "clamp_min": lambda lib, x: lib.clamp_min(x, 0.0), "clamp_max": lambda lib, x: x.clamp_max(-0.0),
    "neg": lambda lib, x: -x,
    "nan_to_num": lambda lib, x: x.nan_to_num(),  # (aiograd/_ops/unary_math.py)
    "exp": lambda lib, x: x.exp(),
    "log": lambda lib, x: x.log(),
    "log1p": lambda lib, x: x.log1p(),
    "sqrt": lambda lib, x: x.sqrt(),
    "abs": lambda lib, x: x.abs(),
    "sign": lambda lib, x: x.sign(),
    "sin": lambda lib, x: x.sin(),
    "cos": lambda lib, x: x.cos(),
    "tanh": lambda lib, x: x.tanh(),
    "sigmoid": lambda lib, x: x.sigmoid(),
    "relu": lambda lib, x: x.relu(),
    "clone": lambda lib, x: x.clone(),
    "square": lambda lib, x: x.square(),
    "clamp_0_1": lambda lib, x: x.clamp(0.0, 1.0),
    "clamp_min_0": lambda lib, x: x.clamp(min=0.0),
    "clamp_max_neg0": lambda lib, x: x.clamp(max=-0.0),
    "clamp_min_nan": lambda lib, x: x.clamp(min=NAN),
    "clamp_inverted": lambda lib, x: x.clamp(1.0, 0.0),
    "clip": lambda lib, x: lib.clip(x, -1.0, 0.0),
    "pow_2": lambda lib, x: x**2,
    "pow_3": lambda lib, x: x**3,
    "pow_0": lambda lib, x: x**0,
    "pow_1": lambda lib, x: x**1,
    "pow_half": lambda lib, x: x**0.5,
    "pow_neg_half": lambda lib, x: x**-0.5,
    "pow_neg1": lambda lib, x: x**-1,
    "pow_neg2": lambda lib, x: x**-2,
    "pow_2_5": lambda lib, x: x**2.5,
    "pow_nan": lambda lib, x: x**NAN,
    "pow_inf": lambda lib, x: x**INF,
    "rpow_2": lambda lib, x: 2.0**x,
    "rpow_0": lambda lib, x: 0.0**x,  # 0 ** b: d/db is -inf for b < 0
    "rpow_neg1": lambda lib, x: (-1.0) ** x,
    "rpow_1": lambda lib, x: 1.0**x,
    "add": lambda lib, x: x + 1.0,
    "sub": lambda lib, x: x - 1.0,
    "rsub": lambda lib, x: 1.0 - x,
    "mul_0": lambda lib, x: x * 0.0,
    "mul_inf": lambda lib, x: x * INF,
    "div": lambda lib, x: x / 2.0,
    "rdiv": lambda lib, x: 1.0 / x,
    "true_divide": lambda lib, x: lib.true_divide(x, -0.0),
    "where": lambda lib, x: lib.where(x > 0, x, -x),
    "relu_": lambda lib, x: x.clone().relu_(),
    "exp_": lambda lib, x: x.clone().exp_(),
    "neg_": lambda lib, x: x.clone().neg_(),
    "clamp_": lambda lib, x: x.clone().clamp_(min=0.0),
    "pow_": lambda lib, x: x.clone().pow_(0.5),
    "F.relu": lambda lib, x: lib.nn.functional.relu(x),
    "masked_fill": lambda lib, x: x.masked_fill(x > 0, 0.0),
    "expm1": lambda lib, x: x.expm1(),
    "log2": lambda lib, x: x.log2(),
    "log10": lambda lib, x: x.log10(),
    "rsqrt": lambda lib, x: x.rsqrt(),
    "reciprocal": lambda lib, x: x.reciprocal(),
    "tan": lambda lib, x: x.tan(),
    "asin": lambda lib, x: x.asin(),
    "acos": lambda lib, x: x.acos(),
    "atan": lambda lib, x: x.atan(),
    "sinh": lambda lib, x: x.sinh(),
    "cosh": lambda lib, x: x.cosh(),
    "floor": lambda lib, x: x.floor(),
    "ceil": lambda lib, x: x.ceil(),
    "round": lambda lib, x: x.round(),
    "trunc": lambda lib, x: x.trunc(),
    "frac": lambda lib, x: x.frac(),
    "F.sigmoid": lambda lib, x: lib.sigmoid(x),
    # special functions and nn.functional activations
    "erf": lambda lib, x: x.erf(),
    "erfc": lambda lib, x: x.erfc(),
    "erfinv": lambda lib, x: x.erfinv(),
    "lgamma": lambda lib, x: x.lgamma(),
    "digamma": lambda lib, x: x.digamma(),
    "polygamma": lambda lib, x: x.polygamma(2),
    "F.gelu": lambda lib, x: lib.nn.functional.gelu(x),
    "F.gelu_tanh": lambda lib, x: lib.nn.functional.gelu(x, approximate="tanh"),
    "F.silu": lambda lib, x: lib.nn.functional.silu(x),
    "F.mish": lambda lib, x: lib.nn.functional.mish(x),
    "F.elu": lambda lib, x: lib.nn.functional.elu(x),
    "F.leaky_relu": lambda lib, x: lib.nn.functional.leaky_relu(x),
    "F.softplus": lambda lib, x: lib.nn.functional.softplus(x),
    "F.hardtanh": lambda lib, x: lib.nn.functional.hardtanh(x),
    "F.hardswish": lambda lib, x: lib.nn.functional.hardswish(x),
    "F.hardsigmoid": lambda lib, x: lib.nn.functional.hardsigmoid(x),
    "F.logsigmoid": lambda lib, x: lib.nn.functional.logsigmoid(x),
    "F.threshold": lambda lib, x: lib.nn.functional.threshold(x, 0.5, -2.0),
    "F.selu": lambda lib, x: lib.nn.functional.selu(x),
    "F.celu": lambda lib, x: lib.nn.functional.celu(x, 0.7),
}

BINARY: dict[str, Fn] = {
    # (aiograd/_ops/elementwise_more.py, torch_aliases.py)
    "copysign": lambda lib, ab: lib.copysign(ab[0], ab[1]), "fmax": lambda lib, ab: lib.fmax(ab[0], ab[1]),
    "fmin": lambda lib, ab: lib.fmin(ab[0], ab[1]), "nextafter": lambda lib, ab: lib.nextafter(ab[0], ab[1]),
    "rsub": lambda lib, ab: lib.rsub(ab[0], ab[1], alpha=2.0),
    "clamp_min_tensors": lambda lib, ab: lib.clamp_min(ab[0], ab[1]),
    "clamp_max_tensors": lambda lib, ab: lib.clamp_max(ab[0], ab[1]),
    "add": lambda lib, ab: ab[0] + ab[1],
    "sub": lambda lib, ab: ab[0] - ab[1],
    "mul": lambda lib, ab: ab[0] * ab[1],
    "div": lambda lib, ab: ab[0] / ab[1],
    "pow": lambda lib, ab: ab[0] ** ab[1],
    "maximum": lambda lib, ab: lib.maximum(ab[0], ab[1]),
    "minimum": lambda lib, ab: lib.minimum(ab[0], ab[1]),
    "max_binary": lambda lib, ab: lib.max(ab[0], ab[1]),
    "clamp_min_tensor": lambda lib, ab: lib.clamp(ab[0], min=ab[1]),
    "clamp_max_tensor": lambda lib, ab: lib.clamp(ab[0], max=ab[1]),
    "clamp_both_tensors": lambda lib, ab: lib.clamp(ab[0], min=ab[1], max=ab[1] + 1.0),
    "where": lambda lib, ab: lib.where(ab[0] > ab[1], ab[0], ab[1]),
    "mse_loss": lambda lib, ab: lib.nn.functional.mse_loss(ab[0], ab[1], reduction="none"),
    "lerp": lambda lib, ab: lib.lerp(ab[0], ab[1], 0.25),
    "lerp_tensor_weight": lambda lib, ab: lib.lerp(ab[0], ab[1], ab[1]),
    "addcmul": lambda lib, ab: lib.addcmul(ab[0], ab[0], ab[1], value=0.5),
    "addcdiv": lambda lib, ab: lib.addcdiv(ab[0], ab[0], ab[1]),
    "atan2": lambda lib, ab: lib.atan2(ab[0], ab[1]),
    "hypot": lambda lib, ab: lib.hypot(ab[0], ab[1]),
    "logaddexp": lambda lib, ab: lib.logaddexp(ab[0], ab[1]),
    "fmod": lambda lib, ab: lib.fmod(ab[0], ab[1]),
    "remainder": lambda lib, ab: lib.remainder(ab[0], ab[1]),
    "xlogy": lambda lib, ab: lib.xlogy(ab[0], ab[1]),
    # nn losses (aiograd/nn/_losses.py), elementwise
    "l1_loss": lambda lib, ab: lib.nn.functional.l1_loss(ab[0], ab[1], reduction="none"),
    "smooth_l1_loss": lambda lib, ab: lib.nn.functional.smooth_l1_loss(ab[0], ab[1], reduction="none"),
    "huber_loss": lambda lib, ab: lib.nn.functional.huber_loss(ab[0], ab[1], reduction="none", delta=0.5),
    "binary_cross_entropy_with_logits": lambda lib, ab: lib.nn.functional.binary_cross_entropy_with_logits(
        ab[0], ab[1], reduction="none"),
    "kl_div": lambda lib, ab: lib.nn.functional.kl_div(ab[0], ab[1], reduction="none"),
    "kl_div_log_target": lambda lib, ab: lib.nn.functional.kl_div(ab[0], ab[1], reduction="none", log_target=True),
}

REDUCTIONS: dict[str, Fn] = {
    # scans and aminmax (aiograd/_ops/scans_more.py)
    "cummax": lambda lib, x: lib.cummax(x, 0).values, "cummin": lambda lib, x: lib.cummin(x, 0).values,
    "logcumsumexp": lambda lib, x: lib.logcumsumexp(x, 0),
    "aminmax": lambda lib, x: lib.aminmax(x).min * 2.0 + lib.aminmax(x).max,
    "sum": lambda lib, x: x.sum(),
    "mean": lambda lib, x: x.mean(),
    "var": lambda lib, x: x.var(),
    "var_correction0": lambda lib, x: x.var(correction=0),
    "std": lambda lib, x: x.std(),
    "std_correction0": lambda lib, x: x.std(correction=0),
    "std_dim": lambda lib, x: x.reshape(1, -1).std(1),
    "max": lambda lib, x: x.max(),
    "min": lambda lib, x: x.min(),
    "max_dim": lambda lib, x: x.max(0)[0],
    "min_dim": lambda lib, x: x.min(0)[0],
    "prod": lambda lib, x: x.prod(),
    "prod_dim": lambda lib, x: x.prod(0),
    "norm": lambda lib, x: x.norm(),
    "norm_dim": lambda lib, x: x.reshape(1, -1).norm(dim=1),
    "norm_1": lambda lib, x: x.norm(1),
    "norm_inf": lambda lib, x: x.norm(INF),
    "norm_3": lambda lib, x: x.norm(3),
    "norm_1_5": lambda lib, x: x.norm(1.5),
    "norm_half": lambda lib, x: x.norm(0.5),
    "logsumexp": lambda lib, x: x.logsumexp(0),
    "softmax": lambda lib, x: x.softmax(0),
    "log_softmax": lambda lib, x: x.log_softmax(0),
    "mse_loss": lambda lib, x: lib.nn.functional.mse_loss(x, x.detach() * 0.0 + 1.0),
    "cross_entropy": lambda lib, x: lib.nn.functional.cross_entropy(x.reshape(1, -1), lib.tensor([0])),
    "nll_loss": lambda lib, x: lib.nn.functional.nll_loss(x.reshape(1, -1), lib.tensor([0])),
    # normalizations
    "layer_norm": lambda lib, x: lib.nn.functional.layer_norm(x, x.shape),
    "batch_norm": lambda lib, x: lib.nn.functional.batch_norm(lib.cat([x, x * 2.0]).reshape(-1, 1), None, None, training=True),
    "group_norm": lambda lib, x: lib.nn.functional.group_norm(lib.cat([x, x * 2.0]).reshape(1, -1), 1),
    # reductions, scans and sorting
    "amax": lambda lib, x: x.amax(),
    "amin": lambda lib, x: x.amin(),
    "amax_dim": lambda lib, x: x.reshape(1, -1).amax(1),
    "cumsum": lambda lib, x: x.cumsum(0),
    "cumprod": lambda lib, x: x.cumprod(0),
    "sort": lambda lib, x: x.sort()[0],
    "sort_descending": lambda lib, x: x.sort(descending=True)[0],
    "topk": lambda lib, x: x.topk(1)[0],
    "kthvalue": lambda lib, x: x.kthvalue(1)[0],
    "median": lambda lib, x: x.median(),
    "median_dim": lambda lib, x: x.median(0)[0],
    "norm_neg_inf": lambda lib, x: x.norm(-INF),
    "norm_neg1": lambda lib, x: x.norm(-1),
    "norm_0": lambda lib, x: x.norm(0),
}

#: Ops whose result at a tie of +0 and -0 has no fixed sign in torch: its vectorized loop
#: returns the second operand, its scalar loop (the last few elements) the first; aiograd always
#: returns the second. Their zeros are compared without their signs.
ZERO_TIES = {"maximum", "minimum", "max_binary", "clamp_min_tensor", "clamp_max_tensor",
             "clamp_both_tensors"}


def _lerp_product_underflows(a: Any, b: Any, w: Any) -> Any:
    """Where lerp's product ``w * (b - a)`` (``(1 - w) * (b - a)`` for ``|w| >= 0.5``) is not 0
    but rounds to 0: the sign of the zero it then gives is a rounding. torch's AVX2 and AVX-512
    kernels fuse the multiply-add (one rounding, the exact product's sign: ``lerp(0, -5e-324,
    0.25)`` is -0.0), its default kernel and numpy round twice (+0.0)."""
    with np.errstate(all="ignore"):
        d, f = b - a, np.where(np.abs(w) < 0.5, w, 1.0 - w)
        return (d != 0) & (f != 0) & (f * d == 0)


#: Binary ops and where (a predicate on the operands) their forward's zero may have either sign.
ROUNDED_ZEROS: dict[str, Callable[[Any, Any], Any]] = {
    "lerp": lambda a, b: _lerp_product_underflows(a, b, 0.25),
    "lerp_tensor_weight": lambda a, b: _lerp_product_underflows(a, b, b),
}
#: The normalizations: their values are ``x - mean`` scaled, a difference of terms of the order
#: of the inputs (1 here) that may be 0 or near it, so they are off by units of 1, not of
#: themselves (helpers.assert_matches_torch's scale); and the sign of a zero they give depends on
#: the arrangement (aiograd's ``(x - mean) * rstd`` is -0.0 at x = -0.0, torch's is +0.0), which
#: is not compared.
NORMALIZATIONS = {"layer_norm", "batch_norm", "group_norm"}
#: Ops whose gradient at these inputs is a difference of terms of the order of 1 (the incoming
#: gradient is 1, the finite inputs are of magnitude 1) that is 0 or near it: ``g - softmax *
#: sum(g)``, the normalizations' mean gradient subtracted, ``cdf(x) + x * pdf(x)`` and its like
#: for x < 0. Off by units of 1, not of themselves.
CANCELLING = {"softmax", "log_softmax", "F.gelu", "F.gelu_tanh", "F.silu", "F.mish"} | NORMALIZATIONS

#: (op, dtype, input value): the documented exceptions (docs/gradients-at-edges.md), checked
#: apart in test_documented_exceptions.
EXCEPTIONS = {("log1p", np.float64, 5e-324), ("log1p", np.float64, -5e-324),
              ("log1p", np.float32, 1e-45), ("log1p", np.float32, -1e-45),
              ("sigmoid", np.float32, -100.0), ("F.sigmoid", np.float32, -100.0)}
# torch's vectorised loops differ from its scalar loop (the formula, which aiograd
# follows) at NaN for ELU's and Hardtanh's gradients and at +inf for float32 GELU; asserted in
# tests/test_nn_activations.py::test_torchs_vectorised_loops_differ_from_its_formula_...
EXCEPTIONS |= {("F.elu", np.float64, NAN), ("F.elu", np.float32, NAN), ("F.hardtanh", np.float64, NAN),
               ("F.hardtanh", np.float32, NAN), ("F.gelu", np.float32, INF)}

#: Binary ops and the operand pairs (a predicate on the arrays) that are documented exceptions:
#: torch's fmod and remainder by a subnormal divisor are NaN (its kernel divides first, and
#: a / b overflows); aiograd's are C's exact fmod.
def _by_subnormal(a: Any, b: Any) -> Any:
    return np.isfinite(a) & (a != 0) & (np.abs(b) > 0) & (np.abs(b) < np.finfo(np.float64).tiny)


BINARY_EXCEPTIONS: dict[str, Callable[[Any, Any], Any]] = {"fmod": _by_subnormal, "remainder": _by_subnormal}

#: Differentiable registered ops that have no value edges of their own (they move, copy or
#: select values, or are covered through the ops above): the registry test below keeps this
#: list honest.
NOT_POINTWISE = {
    "to", "cpu", "float", "double", "half", "type", "reshape", "view", "flatten", "permute", "transpose", "T",
    "mT", "squeeze", "unsqueeze", "expand", "broadcast_to", "sum_to_size", "repeat", "t",
    "expand_as", "view_as", "reshape_as", "contiguous", "type_as", "getitem", "index_select",
    "gather", "zero_", "fill_", "copy_", "setitem", "add_", "sub_", "mul_", "div_", "cat",
    "stack", "split_with_sizes", "split", "chunk", "unbind", "matmul", "mm", "linear",
    # linear algebra: matrix functions, not elementwise
    "bmm", "dot", "outer", "trace", "tensordot", "einsum", "linalg_inv", "linalg_solve", "linalg_det",
    "linalg_slogdet", "linalg_pinv", "linalg_cholesky", "linalg_qr", "linalg_eigh", "linalg_svd", "linalg_solve_triangular",
    "linalg_lstsq", "linalg_eig", "linalg_eigvals",
    # shape and indexing: they move or pick entries, no arithmetic
    "flip", "roll", "narrow", "select", "movedim", "moveaxis", "unflatten", "tril", "triu", "diagonal",
    "diag", "tile", "scatter", "scatter_add", "index_add", "masked_select", "take_along_dim", "pad",
    "tril_", "triu_", "scatter_", "scatter_add_", "index_add_",
}
NOT_POINTWISE |= {"ctc_loss"}  # a sequence loss over log-probabilities (tests/test_nn_losses_more.py)
NOT_POINTWISE |= {"dropout", "embedding"}  # a random mask (a mul); a row lookup
# nn: binary_cross_entropy raises for inputs outside [0, 1], NaN included (its 0 and 1 are in
# tests/test_nn_losses.py); the distances and attention are composites of the ops covered here.
NOT_POINTWISE |= {"binary_cross_entropy", "normalize", "cosine_similarity", "scaled_dot_product_attention",
                  "multi_head_attention_forward"}
# convolutions and pooling (families _conv, _pooling): products and window selections
NOT_POINTWISE |= {"conv1d", "conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"}
NOT_POINTWISE |= {"conv3d", "conv_transpose3d", "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d"}
# the in-place view ops (aiograd/_ops/inplace_variants.py): a new shape, no arithmetic
NOT_POINTWISE |= {"t_", "transpose_", "squeeze_", "unsqueeze_"}
NOT_POINTWISE |= {"mv", "addmv", "vdot", "inner"}  # products with vectors (aiograd/_ops/vector_products.py)
NOT_POINTWISE |= {"addmm", "baddbmm", "addbmm", "meshgrid", "cartesian_prod", "repeat_interleave"}  # products; copies
# nn (aiograd/nn/_activations_extra.py, _fold.py, _pooling1d.py, _interpolate.py, _grid_sample.py):
# gated products, learned slopes, convolutions, rearrangements, window selections, resampling
NOT_POINTWISE |= {"swapaxes", "adjoint", "ravel"}  # torch's other spellings of transpose and view
NOT_POINTWISE |= {"mvlgamma"}  # a sum of lgammas over p shifted copies (lgamma's edges are above)
NOT_POINTWISE |= {"glu", "prelu", "conv_transpose1d", "unfold", "fold", "pixel_shuffle", "pixel_unshuffle",
                  "adaptive_max_pool2d", "interpolate", "grid_sample", "affine_grid"}
# torch.* statistics, distances and the old linear algebra names (aiograd/_ops/statistics*.py,
# distances.py, linalg_compat.py): reductions, sorts and matrix functions composed of covered ops
NOT_POINTWISE |= {"det", "slogdet", "logdet", "inverse", "pinverse", "cholesky", "qr", "svd", "linalg_matrix_exp",
                  "matrix_exp", "linalg_matrix_power", "matrix_power", "linalg_cross", "cdist", "pdist", "dist",
                  "renorm", "addr", "var_mean", "std_mean", "nansum", "nanmean", "nanmedian", "mode", "quantile",
                  "nanquantile", "cov", "corrcoef", "trapezoid", "cumulative_trapezoid"}
NOT_POINTWISE |= {"poisson"}  # random samples, zero gradient: its edges (inf, NaN, negative rates) in test_random_poisson
# more joining, shape and scatter ops (aiograd/_ops/joining_more.py, scatter_more.py): they move or pick
# entries; diff and kron are sub and mul (their edges above); scatter_reduce's edges (NaN, inf, zeros
# in prod) are compared with torch in tests/test_ops_shape_more.py
NOT_POINTWISE |= {"atleast_1d", "atleast_2d", "atleast_3d", "hstack", "vstack", "dstack", "column_stack",
                  "broadcast_tensors", "tensor_split", "fliplr", "flipud", "rot90", "diag_embed", "block_diag",
                  "kron", "diff", "take", "index_fill", "index_fill_", "index_copy", "index_copy_", "index_put",
                  "index_put_", "masked_scatter", "masked_scatter_", "slice_scatter", "select_scatter",
                  "diagonal_scatter", "scatter_reduce", "scatter_reduce_"}


def _numpy(t: Any) -> np.ndarray[Any, Any]:
    if t is None:
        return np.array([])
    if isinstance(t, torch.Tensor):
        return t.detach().numpy(force=True)
    return np.asarray(t.data)


def _run(lib: Any, fn: Fn, arrays: list[np.ndarray[Any, Any]]) -> tuple[Any, list[Any]]:
    xs = [lib.tensor(a, requires_grad=True) for a in arrays]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        out = fn(lib, xs[0] if len(xs) == 1 else xs)
        if isinstance(out, tuple):
            out = out[0]
        if lib is torch:
            grads = torch.autograd.grad(out.sum(), xs, allow_unused=True)
        else:
            grads = ag.sync.grad(out.sum(), xs, allow_unused=True)
    return _numpy(out), [_numpy(g) for g in grads]


def _compare(name: str, fn: Fn, arrays: list[np.ndarray[Any, Any]]) -> None:
    """aiograd's forward and gradients against torch's: the same NaNs, infinities and signs of
    zeros, finite values to the few ulps two libms or summation orders may differ by
    (helpers.ULPS: which kernel torch and numpy run depends on the CPU)."""
    expected, got = _run(torch, fn, arrays), _run(ag, fn, arrays)
    signs = name not in ZERO_TIES
    normalization = name in NORMALIZATIONS
    forward_signs = ~ROUNDED_ZEROS[name](*arrays) if name in ROUNDED_ZEROS else signs and not normalization
    assert_matches_torch(got[0], expected[0], f"{name} forward at {arrays}", zero_signs=forward_signs,
                         scale=1.0 if normalization else 0.0)
    scale = 1.0 if name in CANCELLING else 0.0
    for i, (g, tg) in enumerate(zip(got[1], expected[1])):
        assert_matches_torch(g, tg, f"{name} gradient {i} at {arrays}", zero_signs=signs, scale=scale)


# ------------------------------------------------------------------------------ the tests
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_at_edges_matches_torch(name: str, dtype: Any) -> None:
    values = [v for v in EDGES[dtype] if (name, dtype, v) not in EXCEPTIONS]
    _compare(name, UNARY[name], [np.array(values, dtype=dtype)])


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_at_every_pair_of_edges_matches_torch(name: str) -> None:
    values = np.array(EDGES[np.float64])
    a, b = np.repeat(values, len(values)), np.tile(values, len(values))
    if name in BINARY_EXCEPTIONS:  # (checked apart in test_documented_exceptions)
        keep = ~BINARY_EXCEPTIONS[name](a, b)
        a, b = a[keep], b[keep]
    _compare(name, BINARY[name], [a, b])


def _vectors(dtype: Any = np.float64) -> list[list[float]]:
    """One-element vectors, constant ones, each edge beside ordinary values and beside each
    other edge (ties, zeros among factors, NaN with inf ...)."""
    edges = EDGES[dtype][:9]
    out = []
    for u in edges:
        out += [[u], [u, u], [u, u, u], [u, 1.0], [2.0, u, 2.0], [u, -1.0, 0.0]]
        out += [[u, v] for v in edges]
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_at_edges_match_torch(name: str, dtype: Any) -> None:
    for vector in _vectors(dtype):
        if name.startswith("std") and dtype is np.float32 and 1e-45 in np.abs(vector):
            continue  # torch's float32 std accumulates in double: test_documented_exceptions
        _compare(name, REDUCTIONS[name], [np.array(vector, dtype=dtype)])


def test_every_differentiable_op_is_covered() -> None:
    covered = {name.split("_")[0] for name in [*UNARY, *BINARY, *REDUCTIONS]}
    covered |= {name.removeprefix("F.") for name in UNARY} | set(UNARY) | set(BINARY) | set(REDUCTIONS)
    covered |= {"clip", "true_divide", "relu_", "exp_", "neg_", "clamp_", "pow_", "square",
                "log_softmax", "cross_entropy", "nll_loss", "mse_loss", "log1p", "clone"}
    # the in-place variants write their out-of-place op's edge values, bit for bit
    # (tests/test_ops_inplace_variants.py, test_edge_values_equal_the_out_of_place_op)
    covered |= importlib.import_module("test_ops_inplace_variants").EDGE_COVERED
    missing = [name for name, rule in OPS.items()
               if rule.differentiable and name not in covered and name not in NOT_POINTWISE]
    assert not missing, f"differentiable ops without an edge-value test: {missing}"


# ------------------------------------------------------------------------------ exceptions
def test_documented_exceptions() -> None:
    """The differences docs/gradients-at-edges.md lists, as they stand on both sides."""
    for dtype, tiny in ((np.float64, 5e-324), (np.float32, 1e-45)):
        x = np.array([tiny, -tiny], dtype=dtype)
        # log1p at a subnormal: torch's vectorised kernels (AVX2, AVX-512) flush it to 0, its
        # default (scalar) kernel keeps it, the kernel's choice; aiograd keeps log1p(x) = x
        theirs = torch.tensor(x).log1p().numpy()
        assert (theirs == 0).all() or (theirs == x).all(), theirs
        np.testing.assert_array_equal(ag.tensor(x).log1p().data, x)
        assert_matches_torch(ag.tensor(x).log1p().data, theirs, "log1p at a subnormal")  # (within the floor)
    # fmod by a subnormal divisor: NaN in torch's vectorized loop with its AVX2 and AVX-512
    # kernels (its scalar loop, for the last few elements, and its default kernel are exact),
    # C's exact remainder in aiograd
    a, b = np.repeat([1.0, -1.0], 32), np.repeat([5e-324, -5e-324], 32)
    theirs, exact = torch.fmod(torch.tensor(a), torch.tensor(b)).numpy()[:16], np.fmod(a, b)[:16]
    assert np.isnan(theirs).all() or (np.array_equal(theirs, exact)
                                      and np.array_equal(np.signbit(theirs), np.signbit(exact))), theirs
    np.testing.assert_array_equal(ag.fmod(ag.tensor(a), ag.tensor(b)).numpy(), np.fmod(a, b))
    # float32 std of subnormals: both accumulate in double (as torch's CPU var does)
    x = np.array([0.0, 1e-45], dtype=np.float32)
    assert torch.tensor(x).std().item() == pytest.approx(1.4e-45, rel=0.01)
    assert ag.tensor(x).std().item() == torch.tensor(x).std().item()
    # sigmoid far in the negative float32 tail: torch's 1 / (1 + exp(-x)) overflows to 0,
    # aiograd keeps the (subnormal) value
    x = np.array([-100.0], dtype=np.float32)
    assert torch.tensor(x).sigmoid().item() == 0.0
    assert ag.tensor(x).sigmoid().item() == pytest.approx(np.exp(-100.0), rel=1e-6)


# ------------------------------------------------------------------------------ losses
LOSS_INPUTS = [[[0.0, -0.0], [-0.0, 0.0]], [[np.inf, 0.0], [np.nan, -np.inf]], [[1.5, -0.0], [0.0, 2.0]]]
LOSS_TARGETS = [[0, 1], [1, 0], [0, -100], [-100, -100]]


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True], ids=["", "weighted"])
@pytest.mark.parametrize("loss", ["nll_loss", "cross_entropy"])
def test_class_losses_at_edges_match_torch(loss: str, weighted: bool, reduction: str) -> None:
    """Signed zeros (a zero sum is +0, as PyTorch accumulates into a +0), an ignored target
    (0 whatever its input, inf and NaN included) and the gradient's zeros, against torch."""
    for values in LOSS_INPUTS:
        for target in LOSS_TARGETS:
            def fn(lib: Any, x: Any, target: list[int] = target) -> Any:
                weight = lib.tensor(np.array([0.5, 2.0])) if weighted else None
                return getattr(lib.nn.functional, loss)(x, lib.tensor(target), weight=weight, reduction=reduction)

            _compare(loss, fn, [np.array(values)])


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_mse_loss_gradients_of_equal_operands_are_plus_zero(reduction: str) -> None:
    def fn(lib: Any, xy: Any) -> Any:
        return lib.nn.functional.mse_loss(xy[0], xy[1], reduction=reduction)

    values = np.array([0.0, -0.0, 1.5, -2.0])
    _compare("mse_loss", fn, [values, values.copy()])
