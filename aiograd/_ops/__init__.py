"""Differentiable ops, one module per family, each op registered with its backward rule in
``_registry.OPS``; each family module's ``TENSOR_METHODS`` table binds its Tensor methods."""
