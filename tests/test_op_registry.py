"""The op registry drives the op tests: every registered op has an ``OpSpec`` row somewhere, and
every row names a registered op.

The tables of tests/test_ops_elementwise.py, test_ops_shape.py, test_ops_linalg.py and
test_ops_convenience.py cover their families; ``SPECS`` here covers the ops whose own test
modules are written by hand (casts, comparisons, reductions, indexing, in-place ops, joining,
losses). Each row gets the factory's tests: gradcheck and gradgradcheck on float64 inputs, the
forward, first and second derivatives against PyTorch, float32 in and out, the grad_fn name.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
from op_factory import OpSpec, away_from, const, make_op_tests, spec_op

from aiograd._core._node import Node
from aiograd._ops._registry import OPS

IDX = np.array([2, 0, 2])  # an index vector into a dim of size 3
IDX2 = np.array([[0, 2, 1], [1, 1, 0]])  # gather indices for a (2, 3) input along dim 1
CLASSES = np.array([1, 0, 2, 1])  # class targets for a (4, 3) input

nonzero = away_from(0.0, gap=0.2)
ties = lambda r: [r.integers(0, 3, (2, 3)), r.integers(0, 3, (2, 3))]  # noqa: E731 - equal entries


def _setitem(lib: Any, x: Any, y: Any) -> Any:
    z = x.clone()
    z[0] = y
    return z


# A float32 step: the finite differences of a linear op need a step that float32 can resolve.
COARSE = 0.25

SPECS = [
    # ---------------------------------------------------------------- casting
    OpSpec("to", lambda lib, x: x.to(x.dtype, copy=True), ((2, 3),)),
    OpSpec("cpu", lambda lib, x: x.cpu() * 2.0, ((2, 3),)),
    OpSpec("float", lambda lib, x: x.float(), ((2, 3),), eps=COARSE, rtol=1e-6),
    OpSpec("double", lambda lib, x: x.float().double(), ((2, 3),), eps=COARSE, float32=False, rtol=1e-6),
    OpSpec("type_as", lambda lib, x, y: x.float().type_as(y) * y, ((2, 3), (2, 3)), eps=COARSE, rtol=1e-6),
    OpSpec("long", lambda lib, x: (x * 3).long(), ((2, 3),), grad=False, why="an integer result"),
    OpSpec("bool", lambda lib, x: x.bool(), ((2, 3),), grad=False, why="a bool result"),
    # ---------------------------------------------------------------- comparisons
    *(
        OpSpec(name, (lambda n: lambda lib, x, y: getattr(x, n)(y))(name), ties, grad=False, why="a bool result")
        for name in ("eq", "ne", "lt", "le", "gt", "ge")
    ),
    # ---------------------------------------------------------------- reductions
    OpSpec("sum", lambda lib, x: x.sum(), ((2, 3),), grad_fn="SumBackward0"),
    OpSpec("sum_dim", lambda lib, x: x.sum(1, keepdim=True), ((2, 3),)),
    OpSpec("mean", lambda lib, x: x.mean(), ((2, 3),), grad_fn="MeanBackward0"),
    OpSpec("sum_over_dims_names_node_1", lambda lib, x: x.sum((0, 1)), ((2, 3),), grad_fn="SumBackward1", op="sum"),
    OpSpec("mean_over_dim_names_node_1", lambda lib, x: x.mean(1, keepdim=True), ((2, 3),), grad_fn="MeanBackward1", op="mean"),
    OpSpec("mean_dim", lambda lib, x: x.mean(0), ((2, 3),)),
    OpSpec("var", lambda lib, x: x.var(1), ((2, 3),), grad_fn="VarBackward0"),
    OpSpec("max", lambda lib, x: x.max(), ((2, 3),), grad_fn="MaxBackward1"),
    OpSpec("max_dim", lambda lib, x: x.max(1).values, ((2, 3),), grad_fn="MaxBackward0"),
    OpSpec("min", lambda lib, x: x.min(), ((2, 3),), grad_fn="MinBackward1"),
    OpSpec("min_dim", lambda lib, x: x.min(0).values, ((2, 3),), grad_fn="MinBackward0"),
    OpSpec("argmax", lambda lib, x: x.argmax(1), ((2, 3),), grad=False, why="an index result"),
    OpSpec("argmin", lambda lib, x: x.argmin(), ((2, 3),), grad=False, why="an index result"),
    OpSpec("prod", lambda lib, x: x.prod(), ((2, 3),), grad_fn="ProdBackward0"),
    OpSpec("prod_dim", lambda lib, x: x.prod(1), ((2, 3),), grad_fn="ProdBackward1"),
    OpSpec("logsumexp", lambda lib, x: x.logsumexp(1), ((2, 3),), grad_fn="LogsumexpBackward0"),
    OpSpec("softmax", lambda lib, x: x.softmax(1), ((2, 3),), grad_fn="SoftmaxBackward0"),
    OpSpec("log_softmax", lambda lib, x: x.log_softmax(0), ((2, 3),), grad_fn="LogSoftmaxBackward0"),
    # ---------------------------------------------------------------- indexing
    OpSpec("getitem", lambda lib, x: x[1:, [0, 2]], ((3, 3),), grad_fn="IndexBackward0"),
    OpSpec("getitem_slice", lambda lib, x: x[::2], ((3, 2),), grad_fn="SliceBackward0"),
    OpSpec("getitem_select", lambda lib, x: x[1], ((3, 2),), grad_fn="SelectBackward0"),
    OpSpec("index_select", lambda lib, x: x.index_select(1, const(lib, IDX)), ((2, 3),),
           grad_fn="IndexSelectBackward0"),
    OpSpec("gather", lambda lib, x: x.gather(1, const(lib, IDX2)), ((2, 3),), grad_fn="GatherBackward0"),
    # ---------------------------------------------------------------- in place (on a clone)
    OpSpec("add_", lambda lib, x, y: x.clone().add_(y, alpha=2.0), ((2, 3), (3,)), grad_fn="AddBackward0"),
    OpSpec("sub_", lambda lib, x, y: x.clone().sub_(y), ((2, 3), (2, 3)), grad_fn="SubBackward0"),
    OpSpec("mul_", lambda lib, x, y: x.clone().mul_(y), ((2, 3), (2, 3)), grad_fn="MulBackward0"),
    OpSpec("div_", lambda lib, x, y: x.clone().div_(y), lambda r: [r.uniform(-2, 2, (2, 3)), *nonzero([(3,)])(r)],
           grad_fn="DivBackward0"),
    OpSpec("pow_", lambda lib, x: x.clone().pow_(3), ((2, 3),), grad_fn="PowBackward0"),
    OpSpec("neg_", lambda lib, x: x.clone().neg_(), ((2, 3),), grad_fn="NegBackward0"),
    OpSpec("exp_", lambda lib, x: x.clone().exp_(), ((2, 3),), grad_fn="ExpBackward0"),
    OpSpec("relu_", lambda lib, x: x.clone().relu_(), nonzero([(2, 3)]), grad_fn="ReluBackward0"),
    OpSpec("clamp_", lambda lib, x: x.clone().clamp_(-0.5, 0.5), away_from(-0.5, 0.5)([(2, 3)]),
           grad_fn="ClampBackward1"),
    OpSpec("clamp_tensors_", lambda lib, x, lo: x.clone().clamp_(min=lo, max=lo + 1.0), ((2, 3), (3,)),
           grad_fn="ClampBackward0"),
    OpSpec("zero_", lambda lib, x: x.clone().zero_(), ((2, 3),), grad_fn="ZeroBackward0", gradgrad=False,
           why="its gradient is a constant zero: nothing to differentiate again"),
    OpSpec("fill_", lambda lib, x: x.clone().fill_(2.0), ((2, 3),), grad_fn="FillBackward2", gradgrad=False,
           why="its gradient is a constant zero: nothing to differentiate again"),
    # (no grad_fn row: torch spells these two "torch::autograd::CopyBackwards" / "...CopySlices")
    OpSpec("copy_", lambda lib, x, y: x.clone().copy_(y), ((2, 3), (3,))),
    OpSpec("setitem", _setitem, ((2, 3), (3,))),
    # ---------------------------------------------------------------- joining
    OpSpec("cat", lambda lib, x, y: lib.cat([x, y], 1), ((2, 3), (2, 1)), grad_fn="CatBackward0"),
    OpSpec("stack", lambda lib, x, y: lib.stack([x, y], 1), ((2, 3), (2, 3)), grad_fn="StackBackward0"),
    OpSpec("split", lambda lib, x: x.split(2)[1] * 2.0, ((3, 2),)),
    OpSpec("split_with_sizes", lambda lib, x: x.split_with_sizes([1, 2], 1)[1], ((2, 3),),
           grad_fn="SplitWithSizesBackward0"),
    OpSpec("chunk", lambda lib, x: x.chunk(2, 1)[0], ((2, 4),), grad_fn="SplitBackward0"),
    OpSpec("unbind", lambda lib, x: x.unbind(0)[1], ((2, 3),), grad_fn="UnbindBackward0"),
    # ---------------------------------------------------------------- losses
    OpSpec("mse_loss", lambda lib, x, y: lib.nn.functional.mse_loss(x, y), ((2, 3), (2, 3)),
           grad_fn="MseLossBackward0"),
    OpSpec("nll_loss", lambda lib, x: lib.nn.functional.nll_loss(x, const(lib, CLASSES)), ((4, 3),),
           grad_fn="NllLossBackward0"),
    OpSpec("cross_entropy", lambda lib, x: lib.nn.functional.cross_entropy(x, const(lib, CLASSES)), ((4, 3),),
           grad_fn="NllLossBackward0"),
]

globals().update(make_op_tests(SPECS))

#: The test modules whose ``*SPECS`` tables cover the rest of the registry.
SPEC_MODULES = (
    "test_ops_elementwise", "test_ops_unary_math", "test_ops_binary_math", "test_ops_pointwise", "test_ops_shape", "test_ops_linalg", "test_ops_convenience",
    "test_ops_products", "test_linalg",
    "test_ops_reduction_extra", "test_ops_scans", "test_ops_sorting",
    "test_ops_rearrange", "test_ops_scatter", "test_ops_padding",  # shape and indexing
    # nn losses, distances and attention (aiograd/nn/_losses.py, _distance.py, _attention.py)
    "test_nn_losses", "test_nn_attention",
    # convolutions and pooling (families _conv, _pooling)
    "test_nn_conv", "test_nn_pooling", "test_nn_conv3d",
)
# special functions, activations, dropout, normalization, embedding
SPEC_MODULES += ("test_ops_special", "test_nn_activations", "test_nn_dropout", "test_nn_normalization", "test_nn_embedding")
# rounding divisions, bitwise and logical ops, products with vectors
SPEC_MODULES += ("test_ops_rounding", "test_ops_bitwise", "test_ops_vector_products")
SPEC_MODULES += ("test_nn_layers_extra",)  # relu6...glu, prelu, fold, pixel_shuffle (aiograd/nn/_activations_extra.py, _fold.py)
SPEC_MODULES += ("test_ops_model_ops",)  # addmm, baddbmm, addbmm, repeat_interleave, meshgrid, unique, histc...
SPEC_MODULES += ("test_linalg_triangular",)  # linalg.solve_triangular (aiograd/_ops/triangular.py)
SPEC_MODULES += ("test_linalg_lstsq_eig",)  # linalg.lstsq, eig, eigvals (aiograd/_ops/linalg_lstsq.py, eig.py)
SPEC_MODULES += ("test_ops_inplace_variants",)
SPEC_MODULES += ("test_ops_torch_aliases",)  # exp2...nextafter, isclose, isin, cummax, aminmax, swapaxes, rsub...
SPEC_MODULES += ("test_nn_losses_more",)  # ctc_loss (aiograd/nn/_ctc.py); the other new losses compose ops
SPEC_MODULES += ("test_ops_special_gamma",)  # erfinv, lgamma, digamma, polygamma, mvlgamma
SPEC_MODULES += ("test_nn_interpolate",)  # interpolate, grid_sample, affine_grid (aiograd/nn/_interpolate.py, _grid_sample.py)
SPEC_MODULES += ("test_ops_stats_more",)  # statistics, distances, windows, torch.det... (aiograd/_ops/statistics*.py...)
SPEC_MODULES += ("test_random_poisson",)  # poisson (aiograd/_ops/random_poisson.py)
SPEC_MODULES += ("test_ops_shape_more",)  # hstack..diff, take..scatter_reduce, searchsorted (joining_more, scatter_more...)
SPEC_MODULES += ("test_dtypes_api",)  # half, int, short, char, byte, type (aiograd/_ops/casting.py)  # sin_, atan2_, lerp_, eq_, t_... (aiograd/_ops/inplace_variants.py)


def all_specs() -> list[OpSpec]:
    specs = list(SPECS)
    for name in SPEC_MODULES:
        module = importlib.import_module(name)
        for key, value in vars(module).items():
            if key.endswith("SPECS"):
                specs.extend(value)
    return specs


def test_every_registered_op_has_a_spec() -> None:
    covered = {spec_op(s) for s in all_specs()}
    missing = sorted(set(OPS) - covered)
    assert not missing, f"registered ops without an OpSpec row: {missing}"


def test_every_spec_names_a_registered_op() -> None:
    unknown = sorted(s.name for s in all_specs() if spec_op(s) is not None and spec_op(s) not in OPS)
    assert not unknown, f"OpSpec rows naming no registered op (give them op=...): {unknown}"


def test_every_differentiable_op_is_gradchecked_and_every_exception_says_why() -> None:
    specs = all_specs()
    for s in specs:
        if not (s.grad and s.gradgrad and s.torch):
            assert s.why, f"{s.name}: a spec that skips a check must say why"
    checked = {spec_op(s) for s in specs if s.grad}
    untested = sorted(name for name, rule in OPS.items() if rule.differentiable and name not in checked)
    assert not untested, f"differentiable ops never gradchecked: {untested}"


def test_registry_rules_are_consistent() -> None:
    families = {"triangular", "casting", "elementwise", "unary_math", "binary_math", "pointwise", "shape", "reduction", "indexing", "joining", "linalg",
                "convenience", "inplace", "assign", "functional", "softmax"}
    families |= {"products", "linear_systems", "decompositions", "orthogonal", "linalg_lstsq", "eig"}  # linear algebra
    families |= {"special", "special_gamma", "activations", "dropout", "normalization", "embedding"}
    families |= {"reduction_extra", "scans", "sorting"}
    families |= {"rearrange", "scatter", "padding"}  # shape and indexing
    families |= {"losses", "distance", "attention"}  # nn losses, distances, attention (aiograd/nn)
    families |= {"_conv", "_pooling"}  # convolutions and pooling (aiograd/nn/_conv.py, _pooling.py)
    families |= {"rounding", "bitwise", "vector_products"}  # rounding divisions, bitwise, mv/addmv/vdot/inner
    families |= {"_interpolate", "_grid_sample"}  # upsampling and spatial transformers (aiograd/nn)
    families |= {"joining_more", "scatter_more", "scatter_reduce", "search"}  # hstack..diff, take..scatter_reduce
    families |= {"statistics", "statistics_more", "windows", "distances", "linalg_compat"}  # torch.* statistics...
    families |= {"random_poisson"}  # poisson (aiograd/_ops/random_poisson.py)
    families |= {"elementwise_more", "predicates", "scans_more", "torch_aliases"}  # torch.* aliases, exp2, isclose, cummax...
    for name, rule in OPS.items():
        assert rule.name == name and rule.family in families, name
        assert callable(rule.forward), name
        for node in rule.nodes:
            assert issubclass(node, Node), (name, node)
            assert node.name is Node.name and node.__name__ == node.__qualname__, (name, node)
            # the generated class is reachable under its own name (pickling, repr, tracebacks)
            module = importlib.import_module(node.__module__)
            assert any(v is node for v in vars(module).values()), (name, node)
    assert OPS["exp"].node_names == ("ExpBackward0",)
    assert OPS["sub"].node_names == ("SubBackward0", "RsubBackward1")
    assert not OPS["argmax"].differentiable and OPS["matmul"].differentiable


def test_generated_nodes_keep_saved_fields_and_costs() -> None:
    from aiograd._ops import elementwise, linalg, unary_math

    assert unary_math.TanhBackward0._saved == ("result",)
    assert unary_math.SinBackward0._saved == ("x",)
    assert elementwise.MulBackward0._saved == ("a", "b")
    assert elementwise.AddBackward0._saved == ()
    # matmul's cost estimate is kept (the engine offloads big products); elementwise uses the default
    assert not linalg.MmBackward0.cost_scales_with_grads
    assert not linalg.AddmmBackward0.cost_scales_with_grads
    assert elementwise.MulBackward0.cost_scales_with_grads


def test_no_op_records_a_graph_under_no_grad() -> None:
    """Under ``no_grad`` an op records no node (its outputs have no ``grad_fn``; a view of a leaf
    still says ``requires_grad``, as torch's): an op that computed through aiograd ops in a
    context of its own (numpy's quiet one) would see grad mode on there and record."""
    import aiograd as ag

    recorded = []
    for spec in all_specs():
        if not spec.grad:
            continue
        xs = spec.tensors()
        with ag.no_grad():
            out = spec.run(*xs)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        if any(isinstance(o, ag.Tensor) and o.grad_fn is not None for o in outs):
            recorded.append(spec.name)
    assert not recorded, f"nodes recorded under no_grad: {recorded}"
