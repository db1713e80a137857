"""Tensor's methods bound from ``aiograd._ops.elementwise_more``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from typing import TypeAlias

    from .._tensor import Tensor
    from .._types import TensorLike

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _float: TypeAlias = builtins.float

    class ElementwiseMoreMethods:
        """Declared from ``aiograd._ops.elementwise_more``."""

        def exp2(self) -> Tensor:
            """Elementwise ``2 ** input``."""
            ...
        def deg2rad(self) -> Tensor:
            """Degrees to radians: ``input * pi / 180``."""
            ...
        def rad2deg(self) -> Tensor:
            """Radians to degrees: ``input * 180 / pi``."""
            ...
        def sinc(self) -> Tensor:
            """The normalized sinc, ``sin(pi x) / (pi x)`` (1 at 0); its gradient is 0 at 0, as
            PyTorch's."""
            ...
        def sgn(self) -> Tensor:
            """The sign of real ``input`` (as ``sign``), under PyTorch's ``SgnBackward0``."""
            ...
        def logit(self, eps: _float | None = None) -> Tensor:
            """``log(p / (1 - p))``, ``p`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given."""
            ...
        def float_power(self, exponent: TensorLike) -> Tensor:
            """``input ** exponent`` in double precision: the result is float64 whatever the
            operands' dtypes (complex128 for complex ones), as ``torch.float_power``."""
            ...
        def copysign(self, other: TensorLike) -> Tensor:
            """``input``'s magnitude with ``other``'s sign, elementwise; a floating result (the
            default dtype for integer operands)."""
            ...
        def fmax(self, other: Tensor) -> Tensor:
            """The elementwise maximum, ignoring NaN: the other operand where one is NaN (NaN only
            where both are), as ``torch.fmax``."""
            ...
        def fmin(self, other: Tensor) -> Tensor:
            """The elementwise minimum, ignoring NaN, as ``torch.fmin``: see :func:`fmax`."""
            ...
        def heaviside(self, values: Tensor) -> Tensor:
            """The Heaviside step: 0 where ``input < 0`` (and at NaN), 1 where ``input > 0``,
            ``values`` where ``input == 0``."""
            ...
        def nextafter(self, other: Tensor) -> Tensor:
            """The next floating-point value after ``input`` towards ``other``, elementwise."""
            ...
        def signbit(self) -> Tensor:
            """Whether the sign bit is set (``-0.0`` included), elementwise: a bool tensor."""
            ...
        def positive(self) -> Tensor:
            """``input`` itself (``+input``); refused for bool tensors, as PyTorch's."""
            ...
