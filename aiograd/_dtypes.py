"""Dtype names as torch spells them; they are numpy dtypes (``aiograd.float32 == np.float32``)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["float16", "float32", "float64", "half", "double", "int32", "int64", "uint8", "bool_"]

float16: np.dtype[Any] = np.dtype(np.float16)
half: np.dtype[Any] = float16
float32: np.dtype[Any] = np.dtype(np.float32)
float64: np.dtype[Any] = np.dtype(np.float64)
double: np.dtype[Any] = float64
int32: np.dtype[Any] = np.dtype(np.int32)
int64: np.dtype[Any] = np.dtype(np.int64)
uint8: np.dtype[Any] = np.dtype(np.uint8)
bool_: np.dtype[Any] = np.dtype(np.bool_)
