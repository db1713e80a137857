"""A griffe extension for the API reference (mkdocs.yml loads it) that adapts what inspection
finds to Markdown:

- an attribute found by inspection is given its value's docstring, so ``Tensor.output_nr = 0``
  would be documented with ``int``'s docstring: such an attribute is left undocumented instead
  (and so not shown);
- the docstrings are reStructuredText-flavoured prose: a role (``:func:`x```) becomes the code
  span it names, and a paragraph ending in ``::`` (a literal block follows) ends in ``:``.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:func|class|meth|data|attr|mod|exc|obj):`~?([^`]+)`")
_LITERAL_BLOCK = re.compile(r"(\S)::$", re.M)


class InspectedDocstrings(griffe.Extension):
    def on_attribute_instance(self, *, node: Any, attr: griffe.Attribute, **kwargs: Any) -> None:
        obj = getattr(node, "obj", None)
        if attr.docstring is None or obj is None:
            return
        type_doc = inspect.getdoc(type(obj))
        if type_doc is not None and attr.docstring.value == inspect.cleandoc(type_doc):
            attr.docstring = None

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            text = _ROLE.sub(r"`\1`", obj.docstring.value)
            obj.docstring.value = _LITERAL_BLOCK.sub(r"\1:", text)
