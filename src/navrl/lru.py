"""Bounded memo tables: remember computed values by key, forget some past a size.

One helper for the caches of the judges, the runner and the planners, so that each
states its size and what it forgets, and none grows without bound.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Generic, Hashable, Literal, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_MISSING = object()


class BoundedCache(Generic[K, V]):
    """A table of at most ``size`` entries (``size + 1`` with ``evict="all"``).

    - ``evict="oldest"`` (default): a put that takes the table past ``size`` drops the
      entry put earliest (first in, first out); with ``touch=True`` a hit in :meth:`get`
      moves its entry to the back, so the least recently used one goes (an LRU).
    - ``evict="all"``: a put into a table that already holds more than ``size`` entries
      empties it first (no order to keep: a plain dict).

    A put under a key already there replaces the value and keeps its place.

    With ``weigh`` (value -> its weight, e.g. bytes) and ``max_weight`` (``evict="oldest"``
    only), the entries' total weight is kept at most ``max_weight`` too, dropping the oldest
    (the newest entry stays even when it alone weighs more).
    """

    __slots__ = ("size", "touch", "_all", "_d", "weigh", "max_weight", "weight", "_w")

    def __init__(self, size: int, *, touch: bool = False, evict: Literal["oldest", "all"] = "oldest",
                 weigh: Callable[[V], int] | None = None, max_weight: int | None = None):
        if evict not in ("oldest", "all"):
            raise ValueError(f"evict must be 'oldest' or 'all', not {evict!r}")
        if touch and evict == "all":
            raise ValueError("touch=True needs evict='oldest' (an emptied table has no order to keep)")
        if (weigh is None) != (max_weight is None) or (weigh is not None and evict == "all"):
            raise ValueError("weigh and max_weight go together, with evict='oldest'")
        self.size = size
        self.touch = touch
        self._all = evict == "all"
        self._d: dict[K, V] = {} if self._all else OrderedDict()
        self.weigh, self.max_weight = weigh, max_weight
        self.weight = 0
        """The entries' total weight (0 without ``weigh``)."""
        self._w: dict[K, int] = {}

    def get(self, key: K, default: V | None = None) -> V | None:
        """The value under ``key`` (a hit counts as a use with ``touch``), else ``default``."""
        d = self._d
        if not self.touch:
            return d.get(key, default)
        v = d.get(key, _MISSING)
        if v is _MISSING:
            return default
        d.move_to_end(key)  # type: ignore[attr-defined]
        return v  # type: ignore[return-value]

    def put(self, key: K, value: V) -> V:
        """Remember ``value`` under ``key``, forgetting as the table's rule says; returns ``value``."""
        d = self._d
        if self._all:
            if len(d) > self.size:
                d.clear()
            d[key] = value
        elif self.weigh is None:
            d[key] = value
            while len(d) > self.size:
                d.popitem(last=False)  # type: ignore[call-arg]
        else:
            w = self.weigh(value)
            self.weight += w - self._w.get(key, 0)
            self._w[key] = w
            d[key] = value
            while len(d) > self.size or (self.weight > self.max_weight and len(d) > 1):  # type: ignore[operator]
                old, _ = d.popitem(last=False)  # type: ignore[call-arg]
                self.weight -= self._w.pop(old)
        return value

    def __contains__(self, key: object) -> bool:
        return key in self._d

    def __len__(self) -> int:
        return len(self._d)

    def clear(self) -> None:
        self._d.clear()
        self._w.clear()
        self.weight = 0
