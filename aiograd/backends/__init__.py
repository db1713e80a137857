"""Backend switches, as ``torch.backends``: ``cudnn``, ``cuda``, ``mps`` and ``cpu``, so that
training scripts that set or query them run unchanged:

    aiograd.backends.cudnn.deterministic = True
    aiograd.backends.cudnn.benchmark = False
    if aiograd.backends.mps.is_available(): ...

The flags are kept (a script reads back what it set) but change nothing in aiograd: aiograd uses
no cuDNN, has no convolution autotuner to benchmark, no TF32 or reduced-precision matmul switch
(its math is numpy's, or CuPy's on CUDA, in the tensors' own dtypes) and no MPS device. For
reproducible gradients use ``aiograd.use_deterministic_algorithms(True)``, which fixes the order
in which the engine sums the gradients that meet at a node (see docs/executors.md).
"""

from __future__ import annotations

from . import cpu, cuda, cudnn, mps

__all__ = ["cpu", "cuda", "cudnn", "mps"]
