"""The pointer planner's UI vocabulary: the words a weight may learn.

Everything else on a screen or in a goal (names, amounts, titles — the words that change
with every task instance) is an *entity*: it gets a per-state placeholder vector by order
of first appearance, shared by goal and screen, so no weight can memorise it
(DESIGN.md §3a). The vocabulary is built from the phone world's train suite (screens,
pop-ups and goals the expert meets) minus every word that appears in a task's sampled
parameters, plus function words and app names, which are never entities.
"""
from __future__ import annotations

import string

from navrl.agent.policy.pointer.text import STOPWORDS, pieces

PUNCTUATION = tuple(string.punctuation)


def _param_words(value, out: set[str]) -> None:
    if isinstance(value, dict):
        for v in value.values():
            _param_words(v, out)
    elif isinstance(value, (list, tuple, set)):
        for v in value:
            _param_words(v, out)
    elif isinstance(value, str):
        out.update(p.key for p in pieces(value) if p.is_word)


def entity_words(seeds: int = 60) -> set[str]:
    """Words of any template's parameters over ``seeds`` instances (names, titles, places ...)."""
    from navrl.tasks.spec import make_task, templates
    out: set[str] = set()
    for name in templates():
        for s in range(seeds):
            task = make_task(name, 7919 * s + 13)
            _param_words(task.params, out)
            _param_words(task.profile, out)
    return out - STOPWORDS


def phone_world_vocabulary(n_tasks: int = 160, seed: int = 0, min_count: int = 2) -> list[str]:
    """UI words of the phone world: seen at least ``min_count`` times on train-suite screens
    (perturbations on, so pop-up and consent buttons are in) or in goals, minus entities."""
    from collections import Counter

    from navrl.device.phone.world import PhoneWorld
    from navrl.tasks.expert import expert_walk
    from navrl.tasks.suites import suite_tasks
    counts: Counter = Counter()
    for task in suite_tasks("train", n_tasks, seed=seed):
        counts.update(p.key for p in pieces(task.goal) if p.is_word)
        for obs, _, _ in expert_walk(task):
            for n in obs.nodes:
                counts.update(p.key for p in pieces(n.label) if p.is_word)
                counts.update(p.key for p in pieces(n.value or "") if p.is_word)
    ents = entity_words()
    apps = {p.key for name in PhoneWorld(seed=0).state.installed for p in pieces(name) if p.is_word}
    words = {k for k, c in counts.items() if c >= min_count and k not in ents}
    return sorted(words | STOPWORDS | apps)
