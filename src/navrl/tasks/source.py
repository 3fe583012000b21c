"""Task sources: where online RL draws its tasks from (one part handed to the trainer).

A :class:`TaskSource` answers one question — "give me ``k`` tasks, drawn with this RNG" —
so the same trainer serves the phone world, MiniWoB++ in Chromium, a user's web app and
synthesised tasks. Sources are deterministic given the RNG: the trainer's fixed task pool
(``TrainConfig.data.task_pool``) and every update's draw reproduce from the run's seed.

* a world's own sources (``navrl.worlds.phone.source.PhoneWorldTasks``: fresh instances of
  a phone-world suite; ``navrl.worlds.web.source.MiniWoBTasks``: MiniWoB++ pages, fresh
  seeds), reached through the suite registry (:func:`suite_source`);
* :class:`FixedTasks` — a fixed list (a web-app YAML suite, an exported synthesised suite),
  visited in a shuffled cycle so every task comes round before any repeats.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Protocol, Sequence, runtime_checkable

from navrl.tasks.task import TaskError

__all__ = ["FixedTasks", "TaskSource", "suite_source"]


@runtime_checkable
class TaskSource(Protocol):
    """Anything that hands out tasks (``TaskSpec``-like: ``id``, ``goal``, ``max_steps``,
    ``to_dict()``, and ``make_device()`` where no device farm is given)."""

    name: str
    """What the tasks are, for logs and run metadata (``train``, ``miniwob``, a file's stem)."""

    def sample(self, k: int, rng: random.Random) -> list[Any]:
        """``k`` tasks drawn with ``rng`` (deterministic given its state)."""
        ...


@dataclass
class FixedTasks:
    """A fixed list of tasks (a web-app suite file, a synthesised suite), drawn in a shuffled
    cycle: every task comes round once before any comes round again."""

    tasks: Sequence[Any]
    name: str = "tasks"

    def __post_init__(self) -> None:
        self.tasks = list(self.tasks)
        if not self.tasks:
            raise TaskError(f"task source {self.name!r} has no tasks")

    def sample(self, k: int, rng: random.Random) -> list[Any]:
        out: list[Any] = []
        while len(out) < k:
            order = list(range(len(self.tasks)))
            rng.shuffle(order)
            out += [self.tasks[i] for i in order[:k - len(out)]]
        return out


def suite_source(name: str, **options: Any) -> TaskSource:
    """The task source of the registered suite ``name`` (options: :class:`~navrl.tasks.registry.SuiteOptions` fields)."""
    from navrl.tasks.registry import SuiteOptions, get_suite
    return get_suite(name).source(SuiteOptions(**options))
