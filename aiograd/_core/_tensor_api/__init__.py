"""Tensor's methods, operators and properties as type checkers see them. GENERATED: do not edit.

Written by ``python3 tools/gen_tensor_api.py`` from the functions that
``aiograd._api._tensor_methods`` binds onto ``Tensor`` with ``setattr``, which mypy and pyright
cannot follow; run it again after adding or changing a bound op (``tests/test_typing.py`` fails
while this package is not current). Each declaration is the bound function's signature (its first
parameter as ``self``), overloads and the first sentence of its docstring, in one class per module
of ops, each in a module of this package. ``Tensor`` derives from ``TensorMethods``, which derives
from those classes for the checkers only: at run time it is an empty class, so attribute lookups
and the hot paths are as before, and this package imports nothing at run time, its own modules
included.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._assign import AssignMethods
    from ._autograd import AutogradMethods
    from ._batched_products import BatchedProductsMethods
    from ._binary_math import BinaryMathMethods
    from ._bitwise import BitwiseMethods
    from ._casting import CastingMethods
    from ._convenience import ConvenienceMethods
    from ._distances import DistancesMethods
    from ._elementwise import ElementwiseMethods
    from ._elementwise_more import ElementwiseMoreMethods
    from ._hooks import HooksMethods
    from ._indexing import IndexingMethods
    from ._inplace import InplaceMethods
    from ._inplace_variants import InplaceVariantsMethods
    from ._joining import JoiningMethods
    from ._joining_more import JoiningMoreMethods
    from ._linalg import LinalgMethods
    from ._linalg_compat import LinalgCompatMethods
    from ._operator_util import OperatorUtilMethods
    from ._pointwise import PointwiseMethods
    from ._predicates import PredicatesMethods
    from ._products import ProductsMethods
    from ._random_ops import RandomOpsMethods
    from ._rearrange import RearrangeMethods
    from ._reduction import ReductionMethods
    from ._reduction_extra import ReductionExtraMethods
    from ._rounding import RoundingMethods
    from ._scans import ScansMethods
    from ._scans_more import ScansMoreMethods
    from ._scatter import ScatterMethods
    from ._scatter_more import ScatterMoreMethods
    from ._scatter_reduce import ScatterReduceMethods
    from ._shape import ShapeMethods
    from ._softmax import SoftmaxMethods
    from ._sorting import SortingMethods
    from ._special import SpecialMethods
    from ._special_gamma import SpecialGammaMethods
    from ._statistics import StatisticsMethods
    from ._statistics_more import StatisticsMoreMethods
    from ._torch_aliases import TorchAliasesMethods
    from ._unary_math import UnaryMathMethods
    from ._vector_products import VectorProductsMethods
    from ._windows import WindowsMethods

    class TensorMethods(
        ElementwiseMethods,
        UnaryMathMethods,
        CastingMethods,
        BinaryMathMethods,
        OperatorUtilMethods,
        PointwiseMethods,
        IndexingMethods,
        JoiningMethods,
        LinalgMethods,
        ReductionMethods,
        SoftmaxMethods,
        ShapeMethods,
        ConvenienceMethods,
        InplaceMethods,
        AssignMethods,
        InplaceVariantsMethods,
        HooksMethods,
        BatchedProductsMethods,
        ProductsMethods,
        SpecialMethods,
        SpecialGammaMethods,
        ReductionExtraMethods,
        ScansMethods,
        SortingMethods,
        RearrangeMethods,
        ScatterMethods,
        RoundingMethods,
        BitwiseMethods,
        VectorProductsMethods,
        RandomOpsMethods,
        JoiningMoreMethods,
        ScatterMoreMethods,
        ScatterReduceMethods,
        StatisticsMethods,
        StatisticsMoreMethods,
        WindowsMethods,
        DistancesMethods,
        LinalgCompatMethods,
        ElementwiseMoreMethods,
        PredicatesMethods,
        ScansMoreMethods,
        TorchAliasesMethods,
        AutogradMethods,
    ):
        """Declarations (for type checkers only) of the methods bound onto Tensor by ``_tensor_methods``."""

        __slots__ = ()

else:

    class TensorMethods:
        """The methods bound onto Tensor by ``_tensor_methods`` (declared above, for type checkers)."""

        __slots__ = ()


__all__ = ["TensorMethods"]
