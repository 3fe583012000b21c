"""Suites: ``train`` (ios), ``val`` (train's templates, a seed block training never draws: for
choosing settings), ``test-ios`` (held-out seeds and templates), ``test-android`` (the other
platform) and ``test-unseen`` (apps and layouts never trained on)."""
from __future__ import annotations

import random
from dataclasses import dataclass

from navrl.worlds.phone.sim import PerturbConfig
from navrl.worlds.phone.task import Family, TaskError, TaskSpec, Template, make_task, templates

TRAIN_SEEDS = 90_000
"""RL draws train instance seeds from ``range(TRAIN_SEEDS)`` (:func:`sample_tasks`); ``suite_tasks``
numbers instances ``seed_base + seed * SEED_BLOCK + i``."""
SEED_BLOCK = 100_000

UNSEEN_APPS = frozenset({"Recipes", "App Store"})
"""Apps no train task touches; their templates appear only in ``test-unseen``."""


@dataclass(frozen=True)
class SuiteDef:
    name: str
    skin: str
    layout: str
    seed_base: int
    description: str


SUITES: dict[str, SuiteDef] = {
    "train": SuiteDef("train", "ios", "default", 0, "iOS skin, training templates and seeds"),
    "val": SuiteDef("val", "ios", "default", 4_000_000,
                    "iOS skin, training templates, validation seeds (never drawn in training): choose settings here"),
    "test-ios": SuiteDef("test-ios", "ios", "default", 1_000_000,
                         "iOS skin, held-out seeds plus held-out templates"),
    "test-android": SuiteDef("test-android", "android", "default", 2_000_000,
                             "Android skin (never trained on), same templates as test-ios"),
    "test-unseen": SuiteDef("test-unseen", "ios", "alt", 3_000_000,
                            "unseen apps (Recipes, App Store) and the unseen 'alt' layout"),
}


def _uses_unseen(t: Template) -> bool:
    return bool(UNSEEN_APPS & set(t.apps))


def suite_templates(suite: str, names: tuple[str, ...] = ()) -> list[Template]:
    """The suite's templates (in its order), only those named in ``names`` if any (``--tasks``;
    a name the suite lacks is a TaskError naming it)."""
    if suite not in SUITES:
        raise TaskError(f"unknown suite {suite!r}; choose from {sorted(SUITES)}")
    ts = sorted(templates().values(), key=lambda t: t.name)
    if suite in ("train", "val"):
        out = [t for t in ts if not t.heldout and not _uses_unseen(t)]
    elif suite in ("test-ios", "test-android"):
        out = [t for t in ts if not _uses_unseen(t)]
    else:
        unseen = [t for t in ts if _uses_unseen(t)]
        # unseen apps first and twice as often: they are what the suite is about
        out = unseen + unseen + [t for t in ts if not _uses_unseen(t)]
    if names:
        have = {t.name for t in out}
        bad = [x for x in names if x not in have]
        if bad:
            raise TaskError(f"--tasks {bad[0]}: not a template of suite {suite} (`navrl tasks --suite {suite}` "
                            "lists them)")
        out = [t for t in out if t.name in names]
    return out


def suite_tasks(suite: str, n: int | None = None, seed: int = 0, perturb: PerturbConfig | None = None,
                families: set[Family] | None = None, single_app: bool = False,
                names: tuple[str, ...] = ()) -> list[TaskSpec]:
    """The first ``n`` instances of ``suite`` (default: two per template), deterministic.

    Templates are taken round-robin so every template appears; ``seed`` selects a
    different, non-overlapping block of instance seeds. ``names``: only these templates.
    """
    d = SUITES.get(suite)
    if d is None:
        raise TaskError(f"unknown suite {suite!r}; choose from {sorted(SUITES)}")
    ts = suite_templates(suite, names)
    if families is not None:
        ts = [t for t in ts if t.family in families]
    if single_app:
        ts = [t for t in ts if len(t.apps) == 1]
    if not ts:
        raise TaskError(f"suite {suite!r} has no templates for that filter")
    n = 2 * len(ts) if n is None else n
    base = d.seed_base + seed * SEED_BLOCK
    return [make_task(ts[i % len(ts)].name, base + i, suite=suite, skin=d.skin, layout=d.layout, perturb=perturb)
            for i in range(n)]


def sample_tasks(suite: str, k: int, rng: random.Random, perturb: PerturbConfig | None = None,
                 names: tuple[str, ...] = ()) -> list[TaskSpec]:
    """``k`` random instances (template uniform, fresh seed) — what RL draws each update
    (``names``: of these templates only)."""
    d = SUITES[suite]
    ts = suite_templates(suite, names)
    out = []
    for _ in range(k):
        t = rng.choice(ts)
        out.append(make_task(t.name, d.seed_base + rng.randrange(TRAIN_SEEDS), suite=suite, skin=d.skin,
                             layout=d.layout, perturb=perturb))
    return out
