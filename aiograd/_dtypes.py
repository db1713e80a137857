"""Dtype names as torch spells them; they are numpy dtypes (``aiograd.float32 == np.float32``)."""

from __future__ import annotations

import numpy as np

__all__ = ["float16", "float32", "float64", "half", "double", "int32", "int64", "uint8", "bool_"]

float16 = half = np.dtype(np.float16)
float32 = np.dtype(np.float32)
float64 = double = np.dtype(np.float64)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
uint8 = np.dtype(np.uint8)
bool_ = np.dtype(np.bool_)
