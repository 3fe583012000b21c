"""navrl.lru.BoundedCache: the three forgetting rules the memo tables rely on."""
from __future__ import annotations

import copy
import pickle

import pytest

from navrl.lru import BoundedCache


def test_oldest_goes_first_and_gets_do_not_count() -> None:
    c: BoundedCache[str, int] = BoundedCache(2)
    c.put("a", 1), c.put("b", 2)
    assert c.get("a") == 1
    c.put("c", 3)                      # "a" was put first: it goes, the hit notwithstanding
    assert "a" not in c and c.get("b") == 2 and c.get("c") == 3 and len(c) == 2
    c.put("b", 20)                     # replacing keeps its place
    c.put("d", 4)
    assert "b" not in c and c.get("c") == 3 and c.get("d") == 4


def test_touch_makes_it_least_recently_used() -> None:
    c: BoundedCache[str, int] = BoundedCache(2, touch=True)
    c.put("a", 1), c.put("b", 2)
    assert c.get("a") == 1             # "a" is now the most recent
    c.put("c", 3)
    assert "b" not in c and "a" in c and "c" in c
    assert c.get("zz", -1) == -1


def test_evict_all_empties_a_table_past_its_size() -> None:
    c: BoundedCache[int, int | None] = BoundedCache(2, evict="all")
    for i in range(3):
        c.put(i, None)
    assert len(c) == 3                 # up to size + 1, like `if len(d) > size: d.clear()` before the put
    c.put(3, 30)
    assert len(c) == 1 and c.get(3) == 30 and 0 not in c


def test_put_returns_the_value_and_the_table_copies() -> None:
    c: BoundedCache[str, list[int]] = BoundedCache(4, touch=True)
    v = [1]
    assert c.put("k", v) is v
    for d in (copy.deepcopy(c), pickle.loads(pickle.dumps(c))):
        assert d.get("k") == [1] and d.size == 4 and d.touch
    c.clear()
    assert len(c) == 0


def test_bad_rules_are_refused() -> None:
    with pytest.raises(ValueError):
        BoundedCache(3, evict="newest")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        BoundedCache(3, touch=True, evict="all")


def test_a_weight_budget_drops_the_oldest_until_the_entries_fit() -> None:
    c: BoundedCache[str, str] = BoundedCache(100, touch=True, weigh=len, max_weight=10)
    c.put("a", "xxxx"), c.put("b", "xxxx")
    assert c.weight == 8 and len(c) == 2
    assert c.get("a") == "xxxx"        # "a" is now the most recent: "b" goes first
    c.put("c", "xxxx")                 # 12 > 10
    assert "b" not in c and "a" in c and "c" in c and c.weight == 8
    c.put("a", "x")                    # replacing re-weighs
    assert c.weight == 5
    c.put("big", "x" * 50)             # the newest stays even alone over the budget
    assert list(c._d) == ["big"] and c.weight == 50
    c.clear()
    assert c.weight == 0 and len(c) == 0
    d = pickle.loads(pickle.dumps(BoundedCache(3, weigh=len, max_weight=5)))
    d.put("k", "vvvvvv"), d.put("j", "v")
    assert list(d._d) == ["j"] and d.weight == 1
    with pytest.raises(ValueError):
        BoundedCache(3, weigh=len)     # a weight without a budget
    with pytest.raises(ValueError):
        BoundedCache(3, evict="all", weigh=len, max_weight=5)
