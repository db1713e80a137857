"""The numbers of a tensor's ``repr``, as torch writes them: one format for all the elements
printed, chosen from those elements (``1.``, ``1.5000``, ``1.0000e+10``), padded to a common width.

:class:`NumberFormatter` is the choice; :func:`_format.format_tensor` lays the strings out.
Numbers are formatted as Python floats (float16 and float32 values widened exactly to double),
the way torch formats its ``tolist()`` values, so the digits agree with torch's to the last one.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


class NumberFormatter:
    """Formats the elements of one real array (the real or the imaginary part of a complex one).

    Built from the elements that will be printed (a summarised tensor's edges only), it fixes:

    * ``int_mode``: every nonzero finite value is a whole number, printed ``3.`` (the point says
      "floating"); integer and bool dtypes are printed with ``str`` and have no modes;
    * ``sci_mode``: ``1.2346e+05``, chosen when the nonzero finite magnitudes span more than a
      factor 1000, or reach above 1e8, or below 1e-4 (``sci_mode`` True or False forces it);
      else fixed point with ``precision`` decimals;
    * ``width``: the widest nonzero finite value's string; every string is right-aligned to it.

    Zeros, nans and infs take no part in those choices: ``[nan, 1., inf]`` is int mode of width
    2 (``"1."``), and ``"nan"``, wider, just goes unpadded. An array with no nonzero finite value
    at all keeps the defaults (int mode, fixed point, width 1) whatever ``sci_mode`` asks.
    """

    def __init__(self, values: np.ndarray, precision: int, sci_mode: bool | None) -> None:
        self.precision = precision
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        flat = values.reshape(-1)
        if not self.floating:  # integers and bools: their str, as Python writes it
            self.width = max([1, *(len(str(v)) for v in flat.tolist())])
            return
        nonzero = flat[np.isfinite(flat) & (flat != 0)]
        if nonzero.size == 0:
            return
        # Magnitudes in double: a float16 max / min could overflow in float16.
        magnitudes = np.abs(nonzero).astype(np.float64)
        smallest, largest = float(magnitudes.min()), float(magnitudes.max())
        self.int_mode = bool(np.all(nonzero == np.ceil(nonzero)))
        if sci_mode is None:
            self.sci_mode = largest / smallest > 1000.0 or largest > 1.0e8 or smallest < 1.0e-4
        else:
            self.sci_mode = bool(sci_mode)
        numbers = nonzero.tolist()
        if self.sci_mode:
            self.width = max(len(f"{v:.{precision}e}") for v in numbers)
        elif self.int_mode:
            self.width = max(len(f"{v:.0f}") for v in numbers) + 1  # + 1: the "." appended
        else:
            self.width = max(len(f"{v:.{precision}f}") for v in numbers)

    def format(self, value: Any) -> str:
        """``value`` (a Python number from ``tolist()``) as printed, right-aligned to the width."""
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:.{self.precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}"
            if math.isfinite(value):  # "nan" and "inf" take no point
                text += "."
        else:
            text = f"{value:.{self.precision}f}"
        return text.rjust(self.width)


def format_complex(value: complex, real: NumberFormatter, imag: NumberFormatter) -> str:
    """``1.+2.0000j``: the two parts each by its own formatter; the imaginary part loses its
    padding and keeps its sign (``-0.5000j``, ``-0.j`` for a negative zero), else gains a "+"."""
    real_text = real.format(value.real)
    imag_text = (imag.format(value.imag) + "j").lstrip()
    if imag_text[0] in "+-":
        return real_text + imag_text
    return real_text + "+" + imag_text
