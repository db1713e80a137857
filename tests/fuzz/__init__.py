"""A differential fuzzer of aiograd against torch, generated from the op registry.

* ``source``: where a program's random choices come from (Hypothesis or a seeded numpy RNG);
* ``programs``: the arguments of one program (tensors, views of them, scalars) and how each
  library builds them, and a program's copy-pasteable repro;
* ``ops``: every registered op (``aiograd._ops._registry.OPS``) as a fuzz target: its torch
  counterpart, how it is called, and the argument strategies read off its signature (plus a
  small override table, and the ops skipped with a reason);
* ``compare``: runs a program on both libraries and lists the differences;
* ``known``: the differences known today (each a bug to fix, or a deliberate choice);
* ``hunt``: the long, collecting mode that writes a Markdown report of distinct differences.

tests/test_fuzz_torch.py is the pytest entry point; its docstring says how to run each mode.
"""
