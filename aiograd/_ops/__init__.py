"""Differentiable ops, one module per family; each module's table binds its Tensor methods."""
