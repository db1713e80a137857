"""Layer 1, the base: dtypes, the default random generator, cost estimates, grad mode, which
GraphTask is running, and tensor formatting.

Modules here import only the standard library, numpy and each other, never a layer above
(``tests/test_layers.py`` checks it). This package's ``__init__`` imports nothing.
"""
