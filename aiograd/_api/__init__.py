"""Layer 7's private modules: ``backward``/``grad`` (``_autograd``), checkpointing, the tensor
factories, the binding of the ops as Tensor methods (``_tensor_methods``), the trio bridge and
the runner of coroutine tests.

They may import every layer below (base, devices, graph core, ops, executors, engine); the
public modules (``aiograd.functional``, ``aiograd.sync``, ``aiograd.graph``, ...) sit beside
this package in the same layer. This package's ``__init__`` imports nothing.
"""
