"""Differentiable ops, one module per family, each op registered with its backward rule in
``_registry.OPS``; each family module's ``TENSOR_METHODS`` table binds its Tensor methods.

Layer 4, with ``aiograd.nn``: an op module may import the base, the devices, the graph core and
other op modules, never the executors, the engine or the API (an op never knows how its node
will be run)."""
