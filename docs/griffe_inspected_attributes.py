"""A griffe extension for the API reference (mkdocs.yml loads it): an attribute found by
inspection is given its value's docstring, so ``Tensor.output_nr = 0`` would be documented with
``int``'s docstring. An attribute whose docstring is its value's type's is left undocumented
instead (and so not shown)."""

from __future__ import annotations

import inspect
from typing import Any

import griffe


class DropTypeDocstrings(griffe.Extension):
    def on_attribute_instance(self, *, node: Any, attr: griffe.Attribute, **kwargs: Any) -> None:
        obj = getattr(node, "obj", None)
        if attr.docstring is None or obj is None:
            return
        type_doc = inspect.getdoc(type(obj))
        if type_doc is not None and attr.docstring.value == inspect.cleandoc(type_doc):
            attr.docstring = None
