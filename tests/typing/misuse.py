"""Mistakes both checkers must report: each marked line names mypy's error code, then pyright's rule.

If aiograd's declarations silently degraded to ``Any``, these would pass unnoticed.
"""

import aiograd as ag
import aiograd.nn.functional as F

w = ag.randn(3, requires_grad=True)
a = w + "one"  # expect: operator reportOperatorIssue
b: int = w.sum()  # expect: assignment reportAssignmentType
c = w.nosuch()  # expect: attr-defined reportAttributeAccessIssue
d = w.reshape(3, dim=0)  # expect: call-arg reportCallIssue
e = w.max(dim=0).values.shape
f: str = F.relu(w)  # expect: assignment reportAssignmentType
g: float = w.T  # expect: assignment reportAssignmentType
