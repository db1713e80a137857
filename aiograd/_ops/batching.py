"""Which backward rules run vectorized over a batch of gradients, and the helpers they share.

Under ``grad(..., is_grads_batched=True)`` every gradient carries leading batch dims
(``_util.batch_ndim()``). Elementwise rules need nothing (numpy broadcasts from the right); the
shape-sensitive ones (sum back to a broadcast operand's shape, reshape back, permute back, expand
a reduction's gradient, ...) put the batch dims in front of the shapes they saved. A node whose
rule is listed in ``BATCHED_RULES`` runs once on the whole batch; any other one runs once per
sample (``aiograd._engine.batched``), so an unlisted rule is never wrong, only slower.
"""

from __future__ import annotations

from typing import Any

from .._core._node import GraphRoot, Node
from ._registry import OPS
from ._util import Tensor, batch_ndim

__all__ = ["BATCHED_RULES", "PER_SAMPLE_RULES", "batch_ndim", "per_sample_scalar", "batched_sum_to", "has_batched_rule", "shift_axes", "sum_to_array", "sum_to_axes"]

#: Node names (PyTorch's) whose rules are written for leading batch dims; tests/
#: test_batched_grad.py checks each against the per-sample loop, bit for bit where the same
#: kernel runs on the same numbers (docs/functional.md, "Equal to the loop").
BATCHED_RULES: frozenset[str] = frozenset({
    # elementwise math (aiograd/_ops/unary_math.py, binary_math.py): broadcasting from the right
    "Expm1Backward0",
    "Log2Backward0",
    "Log10Backward0",
    "RsqrtBackward0",
    "ReciprocalBackward0",
    "TanBackward0",
    "AsinBackward0",
    "AcosBackward0",
    "AtanBackward0",
    "SinhBackward0",
    "CoshBackward0",
    "FloorBackward0",
    "CeilBackward0",
    "RoundBackward0",
    "TruncBackward0",
    "FracBackward0",
    "Atan2Backward0",
    "HypotBackward0",
    "FmodBackward0",
    "FmodBackward1",
    "RemainderBackward0",
    "RemainderBackward1",
    "XlogyBackward0",
    "XlogyBackward1",
    "XlogyBackward2",
    "LerpBackward0",
    "LerpBackward1",
    "AddcmulBackward0",
    "AddcdivBackward0",
    "MaskedFillBackward0",
    "GatherBackward0",
    "IndexSelectBackward0",
    "SelectBackward0",
    "SliceBackward0",
    "IndexBackward0",
    "LinalgVectorNormBackward0",
    "NllLoss2DBackward0",
    "NllLossBackward0",
    "MseLossBackward0",
    "MinBackward1",
    "MaxBackward1",
    "AbsBackward0",
    "AddBackward0",
    "AliasBackward0",
    "CatBackward0",
    "ClampBackward0",
    "ClampBackward1",
    "CloneBackward0",
    "CosBackward0",
    "DivBackward0",
    "ExpBackward0",
    "ExpandBackward0",
    "FillBackward2",
    "AddmmBackward0",
    "Log1PBackward0",
    "LogBackward0",
    "LogSoftmaxBackward0",
    "LogsumexpBackward0",
    "MatmulBackward0",
    "MvBackward0",
    "MaxBackward0",
    "MaximumBackward0",
    "MeanBackward0",
    "MeanBackward1",
    "MinBackward0",
    "MinimumBackward0",
    "MmBackward0",
    "MulBackward0",
    "NegBackward0",
    "PermuteBackward0",
    "PowBackward0",
    "PowBackward1",
    "PowBackward2",
    "ProdBackward0",
    "ProdBackward1",
    "ReluBackward0",
    "RepeatBackward0",
    "RsubBackward1",
    "SigmoidBackward0",
    "SignBackward0",
    "SinBackward0",
    "SoftmaxBackward0",
    "SplitBackward0",
    "SplitWithSizesBackward0",
    "SqrtBackward0",
    "SqueezeBackward0",
    "SqueezeBackward1",
    "SqueezeBackward2",
    "SqueezeBackward4",
    "StackBackward0",
    "StdBackward0",
    "SubBackward0",
    "SumBackward0",
    "SumBackward1",
    "SumToSizeBackward0",
    "TanhBackward0",
    "ToCopyBackward0",
    "TransposeBackward0",
    "TBackward0",
    "UnsafeViewBackward0",
    "UnbindBackward0",
    "UnsqueezeBackward0",
    "VarBackward0",
    "ViewBackward0",
    "WhereBackward0",
    "ZeroBackward0",
    # products (aiograd/_ops/products.py): matrix products broadcast over the leading batch, and a
    # per-sample scalar gradient is reshaped to broadcast (per_sample_scalar)
    "BmmBackward0",
    "DotBackward0",
    "TraceBackward0",
    # linear algebra (linear_systems.py, decompositions.py, orthogonal.py): the formulas are matrix
    # products, solves and masks over the last two dims, which broadcast over a leading batch
    "LinalgInvExBackward0",
    "LinalgSolveExBackward0",
    "LinalgSlogdetBackward0",
    "LinalgCholeskyExBackward0",
    "LinalgQrBackward0",
    "LinalgEighBackward0",
    "LinalgSvdBackward0",
    # erf, erfc and the nn.functional activations: elementwise, constant masks
    "ErfBackward0",
    "ErfcBackward0",
    "GeluBackward0",
    "SiluBackward0",
    "MishBackward0",
    "EluBackward0",
    "EluBackward1",
    "LeakyReluBackward0",
    "LeakyReluBackward1",
    "SoftplusBackward0",
    "HardtanhBackward0",
    # reductions, scans, sorting (reduction_extra.py, scans.py, sorting.py): the reduced or
    # scanned dim counted from the end, reduced gradients expanded by expand_reduced
    "AmaxBackward0",
    "AminBackward0",
    "CumsumBackward0",
    "CumprodBackward0",
    "SortBackward0",
    "SortBackward1",
    "TopkBackward0",
    "KthvalueBackward0",
    "MedianBackward0",
    "MedianBackward1",
    # shape and indexing: dims shifted past the batch dims, indices
    # broadcast over them; the pads touch trailing dims only
    "FlipBackward0",
    "RollBackward0",
    "TrilBackward0",
    "TriuBackward0",
    "DiagonalBackward0",
    "DiagonalBackward0_copy",
    "DiagEmbedBackward0",
    "ScatterBackward0",
    "ScatterBackward1",
    "ScatterAddBackward0",
    "IndexAddBackward0",
    "MaskedSelectBackward0",
    "ConstantPadNdBackward0",
    "ReflectionPad1DBackward0",
    "ReflectionPad2DBackward0",
    "ReflectionPad3DBackward0",
    "ReplicationPad1DBackward0",
    "ReplicationPad2DBackward0",
    "ReplicationPad3DBackward0",
    # nn losses (aiograd/nn/_losses.py): elementwise rules, the reduced gradient by per_sample_scalar
    "SmoothL1LossBackward0",
    "HuberLossBackward0",
    "BinaryCrossEntropyBackward0",
    "BinaryCrossEntropyWithLogitsBackward0",
    # convolutions and pooling (aiograd/nn/_conv.py, _pooling.py): the batch dims lead every product
    "ConvolutionBackward0",
    "MaxPool2DWithIndicesBackward0",
    "AvgPool2DBackward0",
    "AdaptiveAvgPool2DBackward0",
})

#: Registered nodes whose rules still run once per sample under a batched backward: the in-place
#: writes that send a gradient to their source (``copy_``, ``fill_`` with a tensor, ``x[i] = v``:
#: their rules sum it back to the source's unbatched shape). ``IndexPutBackward0`` here is
#: ``x[mask] = v``'s node (``assign``); indexing's scatter of the same name is batched.
PER_SAMPLE_RULES: frozenset[str] = frozenset({
    "MaskedFillBackward1",  # (its value's gradient is a sum over the sample)
    "FillBackward3",
    "IndexPutBackward0",
    "CopyBackwards",
    "CopySlices",
    # linear algebra: det's recorded rule splits the batch of matrices into singular and
    # invertible ones; einsum's rule does take a batch (subscripts of its own), but an equation of
    # three or more operands follows numpy's contraction path, which sums in another order once
    # the batch is there (not bit for bit the loop)
    "EinsumBackward0",
    "LinalgDetBackward0",
    # the normalizations reduce over axes of the saved input, and embedding scatters
    # into the weight's unbatched shape: written for one sample (a batched version would put
    # the batch dims in front of those axes and shapes)
    "NativeLayerNormBackward0",
    "NativeBatchNormBackward0",
    "NativeGroupNormBackward0",
    "EmbeddingBackward0",
})

_classes: set[type[Node]] | None = None


def has_batched_rule(node: Node) -> bool:
    """Whether ``node``'s backward runs on a whole batch of gradients at once."""
    global _classes
    if _classes is None:
        found: set[type[Node]] = {GraphRoot}
        for rule in OPS.values():
            found.update(cls for cls in rule.nodes if cls.__name__ in BATCHED_RULES)
        # the scatters that indexing records under create_graph (their rule is the same kernel)
        found.update(cls.scatter_cls for cls in list(found) if hasattr(cls, "scatter_cls"))
        _classes = found
    return type(node) in _classes and getattr(node, "batchable", True)


def sum_to_axes(shape: tuple[int, ...], target: tuple[int, ...], nb: int) -> tuple[int, ...]:
    """The axes of an array of ``shape`` (batch dims first) to sum so that it becomes the batch
    dims followed by ``target``: the broadcast's extra leading dims and its stretched 1s."""
    lead = len(shape) - nb - len(target)
    return tuple(range(nb, nb + lead)) + tuple(
        nb + lead + i for i, s in enumerate(target) if s == 1 and shape[nb + lead + i] != 1
    )


def batched_sum_to(grad: Tensor, shape: tuple[int, ...], nb: int) -> Tensor:
    """``sum_to_size(grad, shape)`` for a gradient with ``nb`` leading batch dims (kept)."""
    gshape = grad.data.shape
    axes = sum_to_axes(gshape, shape, nb)
    out = grad.sum(axes, keepdim=True) if axes else grad
    target = gshape[:nb] + shape
    return out if out.data.shape == target else out.reshape(target)


def sum_to_array(data: Any, shape: tuple[int, ...], nb: int) -> Any:
    """``batched_sum_to`` on an array (the first-order fast path)."""
    axes = sum_to_axes(data.shape, shape, nb)
    if axes:
        data = data.sum(axis=axes, keepdims=True)
    target = data.shape[:nb] + shape
    return data if data.shape == target else data.reshape(target)


def per_sample_scalar(grad: Tensor, ndim: int) -> Tensor:
    """The gradient of a one-element output, shaped to broadcast against a per-sample array of
    ``ndim`` dims: as it is unbatched, with trailing 1s after the batch dims when batched."""
    nb = batch_ndim()
    return grad.reshape(grad.data.shape[:nb] + (1,) * ndim) if nb else grad


def shift_axes(axes: tuple[int, ...]) -> tuple[int, ...]:
    """Non-negative axes of an unbatched gradient, as axes of the batched one."""
    nb = batch_ndim()
    return tuple(a + nb for a in axes) if nb else axes
