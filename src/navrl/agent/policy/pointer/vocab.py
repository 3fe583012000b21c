"""The pointer planner's UI vocabulary: the words a weight may learn.

Everything else on a screen or in a goal (names, amounts, titles — the words that change
with every task instance) is an *entity*: it gets a per-state placeholder vector by order
of first appearance, shared by goal and screen, so no weight can memorise it
(docs/design.md §3a). The phone world's vocabulary (its ``vocabulary``
hook, :mod:`navrl.worlds.phone.corpus`) is built from its train suite (screens,
pop-ups and goals the expert meets) minus every word that appears in a task's sampled
parameters, plus function words and app names, which are never entities.
"""
from __future__ import annotations

import string


PUNCTUATION = tuple(string.punctuation)


def phone_world_vocabulary(n_tasks: int = 160, seed: int = 0, min_count: int = 2) -> list[str]:
    """The phone world's UI vocabulary (its ``vocabulary`` hook: screens and goals of the
    train suite minus entity words, plus function words and app names)."""
    from navrl.tasks.registry import get_world
    return get_world("phone").hook("vocabulary")(n_tasks=n_tasks, seed=seed, min_count=min_count)


def entity_words(seeds: int = 60) -> set[str]:
    """The phone world's entity words (its ``entity_words`` hook)."""
    from navrl.tasks.registry import get_world
    return get_world("phone").hook("entity_words")(seeds=seeds)
