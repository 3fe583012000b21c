"""The phone world's text, for the planners that need a vocabulary or a tokenizer corpus
(registered as the world's hooks ``vocabulary``, ``entity_words`` and ``corpus``)."""
from __future__ import annotations

from functools import lru_cache

from navrl.agent.policy.pointer.text import STOPWORDS, pieces


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
    """Words of any template's parameters over ``seeds`` instances (names, titles, places ...).
    Computed once per ``seeds`` in a process (the world is deterministic); a fresh set each call."""
    return set(_entity_words(seeds))


@lru_cache(maxsize=4)
def _entity_words(seeds: int) -> frozenset[str]:
    from navrl.worlds.phone.task import make_task, templates
    out: set[str] = set()
    for name in templates():
        for s in range(seeds):
            task = make_task(name, 7919 * s + 13)
            _param_words(task.params, out)
            _param_words(task.profile, out)
    return frozenset(out - STOPWORDS)


def phone_world_vocabulary(n_tasks: int = 160, seed: int = 0, min_count: int = 2) -> list[str]:
    """UI words of the phone world: seen at least ``min_count`` times on train-suite screens
    (perturbations on, so pop-up and consent buttons are in) or in goals, minus entities.
    Computed once per argument set in a process (~0.7 s: the expert walks every task; the world
    is deterministic); a fresh list each call."""
    return list(_vocabulary(n_tasks, seed, min_count))


@lru_cache(maxsize=8)
def _vocabulary(n_tasks: int, seed: int, min_count: int) -> tuple[str, ...]:
    from collections import Counter

    from navrl.worlds.phone.sim.world import PhoneWorld
    from navrl.worlds.phone.expert import expert_walk
    from navrl.worlds.phone.suites import suite_tasks
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
    return tuple(sorted(words | STOPWORDS | apps))


def corpus_and_labels(n_tasks: int, seed: int) -> tuple[list[str], set[str]]:
    from navrl.agent.planner import PlannerContext
    from navrl.agent.prompt import PromptConfig, build_prompt
    from navrl.worlds.phone.expert import expert_walk
    from navrl.worlds.phone.suites import suite_tasks
    texts: list[str] = []
    labels: set[str] = set()
    # the suites the tokenizer's corpus was built from (``val`` added later would change it)
    corpus_suites = ("train", "test-ios", "test-android", "test-unseen")
    per = max(1, n_tasks // len(corpus_suites))
    for suite in corpus_suites:
        for task in suite_tasks(suite, per, seed=seed):
            hist: list[tuple[str, str]] = []
            for obs, s, mem in expert_walk(task):
                labels.update(n.label for n in obs.nodes if n.label)
                texts.append(build_prompt(PlannerContext(task, obs, list(hist), "", list(mem.qa)),
                                          PromptConfig(max_history=3, include_reasoning=False, compact=True)))
                texts.append(s.text())
                hist.append((s.reasoning, s.step))
    return texts, labels
