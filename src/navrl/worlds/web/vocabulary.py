"""The web world's planner vocabulary: the phone world's UI words plus the words MiniWoB++'s
goals repeat.

The pointer planner learns a weight only for vocabulary words; every other word of a goal or a
screen is an *entity*, a placeholder numbered by first appearance (docs/design.md §3a), so that
no weight memorises a name or an amount. With the phone world's vocabulary alone, MiniWoB++'s
instruction words were entities too: "the width is larger" and "the height is smaller" encoded
alike (two placeholders), "left" was whatever placeholder its place gave it, and BC dragged every
circle and every grip right. The words added here are those the goals of the installed
``miniwob`` package's task pages repeat: a word in at least 5 of the goals read from 16 seeds of
every page, under at least 5 of the seeds (directions, sizes, shapes, colours, ordinals, the
pages' own verbs), not the names, words and numbers a page draws per instance seed.
``miniwob_words.txt`` is generated from the pages by ``python -m
navrl.worlds.web.vocabulary`` (it reads their goals in Chromium) and committed, so building a
planner needs no browser.
"""
from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

__all__ = ["WORDS_FILE", "goal_words", "miniwob_goal_words", "web_vocabulary"]

WORDS_FILE = Path(__file__).with_name("miniwob_words.txt")
"""The committed word list (one word per line, after a comment header)."""

_WORD = re.compile(r"[A-Za-z]+")


def goal_words(goals: list[tuple[int, str]], min_goals: int = 5, min_seeds: int = 5) -> list[str]:
    """Lower-cased words of ``goals`` ((instance seed, goal) pairs) that occur in at least
    ``min_goals`` goals and under at least ``min_seeds`` different seeds, sorted. The seeds
    count because pages draw their entities from the instance seed: the same seed gives the
    same person's name on many pages, a page's own words recur under every seed."""
    n_goals: Counter = Counter()
    seeds: dict[str, set[int]] = {}
    for seed, g in goals:
        for w in {m.group(0).lower() for m in _WORD.finditer(g)}:
            n_goals[w] += 1
            seeds.setdefault(w, set()).add(seed)
    return sorted(w for w, n in n_goals.items() if n >= min_goals and len(seeds[w]) >= min_seeds)


def miniwob_goal_words(seeds: int = 16, min_goals: int = 5, min_seeds: int = 5, names=("all",)) -> list[str]:
    """:func:`goal_words` of ``seeds`` instances of every page in ``names`` (read in Chromium)."""
    from navrl.worlds.web.tasks import miniwob_task, resolve_miniwob_names
    goals = [(s, miniwob_task(n, s).goal) for n in resolve_miniwob_names(names) for s in range(seeds)]
    return goal_words(goals, min_goals, min_seeds)


@lru_cache(maxsize=1)
def _committed_words() -> tuple[str, ...]:
    if not WORDS_FILE.exists():
        return ()
    return tuple(ln.strip() for ln in WORDS_FILE.read_text(encoding="utf-8").splitlines()
                 if ln.strip() and not ln.startswith("#"))


def web_vocabulary(n_tasks: int = 160, seed: int = 0, min_count: int = 2) -> list[str]:
    """The phone world's vocabulary (the same arguments; its words keep their ids) followed by
    the committed MiniWoB++ goal words it lacks."""
    from navrl.tasks.registry import get_world      # the phone world's hook: worlds do not import each other
    base = get_world("phone").hook("vocabulary")(n_tasks=n_tasks, seed=seed, min_count=min_count)
    have = set(base)
    return base + [w for w in _committed_words() if w not in have]


if __name__ == "__main__":      # regenerate miniwob_words.txt from the installed pages
    import sys
    from navrl.fileio import atomic_write_text
    words = miniwob_goal_words()
    atomic_write_text(WORDS_FILE, "# words in >= 5 goals, under >= 5 seeds, of 16 seeds of every MiniWoB++ page that runs\n"
                                  "# (python -m navrl.worlds.web.vocabulary; navrl.worlds.web.vocabulary)\n"
                                  + "\n".join(words) + "\n")
    print(f"{len(words)} words -> {WORDS_FILE}", file=sys.stderr)
