"""``torch.special``: the special functions under the names that namespace gives them, for model
code that writes ``torch.special.expit(x)`` or ``torch.special.gammaln(x)``.

Each name is the aiograd op itself (``expit`` is ``aiograd.sigmoid``, ``gammaln`` is
``aiograd.lgamma``, ``psi`` is ``aiograd.digamma``, ``multigammaln`` is ``aiograd.mvlgamma``), so
values, gradients and node names are those ops', which are torch's. Not here: the Bessel,
orthogonal-polynomial, incomplete-gamma, ``zeta``, ``ndtr``/``ndtri``/``log_ndtr``, ``entr``,
``erfcx``, ``xlog1py`` and ``i0``/``i1`` families (no aiograd op computes them yet).
"""

from __future__ import annotations

from ._ops.binary_math import xlogy
from ._ops.elementwise_more import exp2, logit, sinc
from ._ops.rounding import round  # noqa: A004  (torch.special's name)
from ._ops.softmax import log_softmax, logsumexp, softmax
from ._ops.special import erf, erfc
from ._ops.special_gamma import digamma, erfinv, polygamma
from ._ops.special_gamma import lgamma as _lgamma
from ._ops.special_gamma import mvlgamma as _mvlgamma
from ._ops.unary_math import expm1, log1p
from ._ops.unary_math import sigmoid as _sigmoid

__all__ = [
    "digamma", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammaln", "log1p", "log_softmax", "logit",
    "logsumexp", "multigammaln", "polygamma", "psi", "round", "sinc", "softmax", "xlogy",
]

expit = _sigmoid  #: ``torch.special.expit``: the logistic sigmoid
gammaln = _lgamma  #: ``torch.special.gammaln``: ``log |Γ(x)|``
psi = digamma  #: ``torch.special.psi``: the digamma function
multigammaln = _mvlgamma  #: ``torch.special.multigammaln``: the multivariate log-gamma
