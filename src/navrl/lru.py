"""Bounded memo tables: remember computed values by key, forget some past a size.

One helper for the caches of the judges, the runner and the planners, so that each
states its size and what it forgets, and none grows without bound.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Generic, Hashable, Literal, TypeVar

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
    """

    __slots__ = ("size", "touch", "_all", "_d")

    def __init__(self, size: int, *, touch: bool = False, evict: Literal["oldest", "all"] = "oldest"):
        if evict not in ("oldest", "all"):
            raise ValueError(f"evict must be 'oldest' or 'all', not {evict!r}")
        if touch and evict == "all":
            raise ValueError("touch=True needs evict='oldest' (an emptied table has no order to keep)")
        self.size = size
        self.touch = touch
        self._all = evict == "all"
        self._d: dict[K, V] = {} if self._all else OrderedDict()

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
        else:
            d[key] = value
            while len(d) > self.size:
                d.popitem(last=False)  # type: ignore[call-arg]
        return value

    def __contains__(self, key: object) -> bool:
        return key in self._d

    def __len__(self) -> int:
        return len(self._d)

    def clear(self) -> None:
        self._d.clear()
