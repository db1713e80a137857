"""PyTorch's CPU selection algorithms, ported, for the one thing they decide that a stable sort
does not: which of several equal values (or NaNs) ``kthvalue`` and ``topk`` return the index of.

``kthvalue`` runs ATen's own ``quick_select_template`` (SortingUtils.h). ``topk`` (ATen's
``topk_impl_loop``, TopKImpl.h) runs libstdc++'s ``std::partial_sort`` when ``k * 64 <= n``, else
``std::nth_element`` followed by ``std::sort`` of the first ``k - 1``: those are ported here from
libstdc++'s bits/stl_algo.h and bits/stl_heap.h (introselect, introsort, heap select). Each
works on a Python list of one slice's values and returns original positions; aiograd calls them
only for slices with ties (``sorting``), on the host.

The comparators order NaN as larger than every number (PyTorch's), so ``greater`` and ``less``
below are "comes first" for ``largest=True`` and ``largest=False``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["quickselect", "topk_order"]

Compare = Callable[[Any, Any], bool]


def greater(a: Any, b: Any) -> bool:
    """PyTorch's ``(isnan(a) && !isnan(b)) || a > b``."""
    return bool((a != a and b == b) or a > b)


def less(a: Any, b: Any) -> bool:
    """PyTorch's ``(!isnan(a) && isnan(b)) || a < b``."""
    return bool((a == a and b != b) or a < b)


def quickselect(values: list[Any], k: int) -> int:
    """The original position of the element ATen's ``quick_select_template`` puts at ``k``
    (0-based): median-of-three quickselect, NaN largest."""
    arr, pos = list(values), list(range(len(values)))

    def swap(i: int, j: int) -> None:
        arr[i], arr[j] = arr[j], arr[i]
        pos[i], pos[j] = pos[j], pos[i]

    low, high = 0, len(arr) - 1
    while True:
        if high <= low:
            return pos[k]
        if high == low + 1:
            if greater(arr[low], arr[high]):
                swap(low, high)
            return pos[k]
        swap(low + (high - low) // 2, low + 1)
        if greater(arr[low + 1], arr[high]):
            swap(low + 1, high)
        if greater(arr[low], arr[high]):
            swap(low, high)
        if greater(arr[low + 1], arr[low]):
            swap(low + 1, low)
        i, j, pivot = low + 1, high, arr[low]
        while True:
            i += 1
            while greater(pivot, arr[i]):
                i += 1
            j -= 1
            while greater(arr[j], pivot):
                j -= 1
            if j < i:
                break
            swap(i, j)
        swap(low, j)
        if j <= k:
            low = i
        if j >= k:
            high = j - 1


# ------------------------------------------------------------------------------ libstdc++
class _Range:
    """A list of (value, position) pairs under libstdc++'s algorithms, compared by value."""

    def __init__(self, items: list[tuple[Any, int]], comp: Compare) -> None:
        self.a = items
        self.comp = comp

    def lt(self, i: int, j: int) -> bool:
        return self.comp(self.a[i][0], self.a[j][0])

    def swap(self, i: int, j: int) -> None:
        self.a[i], self.a[j] = self.a[j], self.a[i]

    # ---------------------------------------------------------------- heaps (stl_heap.h)
    def push_heap(self, first: int, hole: int, top: int, value: tuple[Any, int]) -> None:
        parent = (hole - 1) // 2
        while hole > top and self.comp(self.a[first + parent][0], value[0]):
            self.a[first + hole] = self.a[first + parent]
            hole = parent
            parent = (hole - 1) // 2
        self.a[first + hole] = value

    def adjust_heap(self, first: int, hole: int, length: int, value: tuple[Any, int]) -> None:
        top, child = hole, hole
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if self.lt(first + child, first + child - 1):
                child -= 1
            self.a[first + hole] = self.a[first + child]
            hole = child
        if length % 2 == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            self.a[first + hole] = self.a[first + child - 1]
            hole = child - 1
        self.push_heap(first, hole, top, value)

    def make_heap(self, first: int, last: int) -> None:
        length = last - first
        if length < 2:
            return
        parent = (length - 2) // 2
        while True:
            self.adjust_heap(first, parent, length, self.a[first + parent])
            if parent == 0:
                return
            parent -= 1

    def pop_heap(self, first: int, last: int, result: int) -> None:
        value = self.a[result]
        self.a[result] = self.a[first]
        self.adjust_heap(first, 0, last - first, value)

    def heap_select(self, first: int, middle: int, last: int) -> None:
        self.make_heap(first, middle)
        for i in range(middle, last):
            if self.lt(i, first):
                self.pop_heap(first, middle, i)

    def sort_heap(self, first: int, last: int) -> None:
        while last - first > 1:
            last -= 1
            self.pop_heap(first, last, last)

    def partial_sort(self, first: int, middle: int, last: int) -> None:
        self.heap_select(first, middle, last)
        self.sort_heap(first, middle)

    # ---------------------------------------------------------------- sorting (stl_algo.h)
    def move_median_to_first(self, result: int, a: int, b: int, c: int) -> None:
        if self.lt(a, b):
            if self.lt(b, c):
                self.swap(result, b)
            elif self.lt(a, c):
                self.swap(result, c)
            else:
                self.swap(result, a)
        elif self.lt(a, c):
            self.swap(result, a)
        elif self.lt(b, c):
            self.swap(result, c)
        else:
            self.swap(result, b)

    def unguarded_partition(self, first: int, last: int, pivot: int) -> int:
        while True:
            while self.lt(first, pivot):
                first += 1
            last -= 1
            while self.lt(pivot, last):
                last -= 1
            if not first < last:
                return first
            self.swap(first, last)
            first += 1

    def partition_pivot(self, first: int, last: int) -> int:
        mid = first + (last - first) // 2
        self.move_median_to_first(first, first + 1, mid, last - 1)
        return self.unguarded_partition(first + 1, last, first)

    def unguarded_linear_insert(self, last: int) -> None:
        value = self.a[last]
        nxt = last - 1
        while self.comp(value[0], self.a[nxt][0]):
            self.a[last] = self.a[nxt]
            last = nxt
            nxt -= 1
        self.a[last] = value

    def insertion_sort(self, first: int, last: int) -> None:
        if first == last:
            return
        for i in range(first + 1, last):
            if self.lt(i, first):
                value = self.a[i]
                self.a[first + 1:i + 1] = self.a[first:i]
                self.a[first] = value
            else:
                self.unguarded_linear_insert(i)

    def introsort_loop(self, first: int, last: int, depth: int) -> None:
        while last - first > 16:
            if depth == 0:
                self.partial_sort(first, last, last)
                return
            depth -= 1
            cut = self.partition_pivot(first, last)
            self.introsort_loop(cut, last, depth)
            last = cut

    def sort(self, first: int, last: int) -> None:
        if first == last:
            return
        self.introsort_loop(first, last, 2 * _lg(last - first))
        if last - first > 16:
            self.insertion_sort(first, first + 16)
            for i in range(first + 16, last):
                self.unguarded_linear_insert(i)
        else:
            self.insertion_sort(first, last)

    def nth_element(self, first: int, nth: int, last: int) -> None:
        if first == last or nth == last:
            return
        depth = 2 * _lg(last - first)
        while last - first > 3:
            if depth == 0:
                self.heap_select(first, nth + 1, last)
                self.swap(first, nth)
                return
            depth -= 1
            cut = self.partition_pivot(first, last)
            if cut <= nth:
                first = cut
            else:
                last = cut
        self.insertion_sort(first, last)


def _lg(n: int) -> int:
    return n.bit_length() - 1


def topk_order(values: list[Any], k: int, largest: bool, sorted: bool) -> list[int]:
    """The original positions of the ``k`` elements ATen's CPU ``topk`` returns, in its order."""
    if k == 0:
        return []
    r = _Range([(v, i) for i, v in enumerate(values)], greater if largest else less)
    n = len(values)
    if k * 64 <= n:
        r.partial_sort(0, k, n)
    else:
        r.nth_element(0, k - 1, n)
        if sorted:
            r.sort(0, k - 1)
    return [i for _, i in r.a[:k]]
