"""Task sources: where online RL draws its tasks from (one part handed to the trainer).

A :class:`TaskSource` answers one question — "give me ``k`` tasks, drawn with this RNG" —
so the same trainer serves the phone world, MiniWoB++ in Chromium, a user's web app and
synthesised tasks. Sources are deterministic given the RNG: the trainer's fixed task pool
(``TrainConfig.task_pool``) and every update's draw reproduce from the run's seed.

* :class:`PhoneWorldTasks` — fresh instances of a phone-world suite (``train`` by default),
  optionally with fault injection.
* :class:`MiniWoBTasks` — MiniWoB++ tasks of the installed ``miniwob`` package, fresh seeds.
* :class:`FixedTasks` — a fixed list (a web-app YAML suite, an exported synthesised suite),
  visited in a shuffled cycle so every task comes round before any repeats.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable

from navrl.device.phone import FaultConfig, PerturbConfig
from navrl.tasks.spec import TaskError

__all__ = ["FixedTasks", "MiniWoBTasks", "PhoneWorldTasks", "TaskSource"]


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
class PhoneWorldTasks:
    """Fresh random instances of a phone-world suite: template uniform, new seed each draw."""

    suite: str = "train"
    perturb: PerturbConfig | None = None
    """Perturbations of the drawn tasks (None: the suite's default pop-ups and sheets)."""
    faults: FaultConfig | None = None
    """Infrastructure faults injected into the drawn tasks' worlds (None: none)."""
    name: str = field(init=False)

    def __post_init__(self) -> None:
        from navrl.tasks.suites import SUITES
        if self.suite not in SUITES:
            raise TaskError(f"unknown phone-world suite {self.suite!r}; choose from {sorted(SUITES)}")
        self.name = self.suite

    def sample(self, k: int, rng: random.Random) -> list[Any]:
        from navrl.tasks.suites import sample_tasks
        tasks = sample_tasks(self.suite, k, rng, perturb=self.perturb)
        if self.faults is not None:
            tasks = [t.with_(faults=self.faults) for t in tasks]
        return tasks


@dataclass
class MiniWoBTasks:
    """MiniWoB++ tasks: ``names`` (any page of the installed ``miniwob`` package; default the
    ``miniwob`` suite's tasks), each draw a uniformly chosen task with a fresh instance seed.
    Judged by the page's own reward."""

    names: Sequence[str] = ()
    phone: str = "iphone"
    name: str = "miniwob"

    def __post_init__(self) -> None:
        from navrl.tasks.web import MINIWOB_TASKS, miniwob_installed_tasks
        self.names = tuple(self.names) or tuple(MINIWOB_TASKS)
        unknown = [x for x in self.names if x not in MINIWOB_TASKS]
        if unknown:
            installed = set(miniwob_installed_tasks())
            bad = [x for x in unknown if x not in installed]
            if bad:
                raise TaskError(f"unknown MiniWoB task {bad[0]!r}: the installed miniwob package has no page "
                                f"{bad[0]}.html ({len(installed)} task pages installed)")

    def sample(self, k: int, rng: random.Random) -> list[Any]:
        from navrl.tasks.web import miniwob_task
        return [miniwob_task(rng.choice(self.names), rng.randrange(2**31), phone=self.phone) for _ in range(k)]


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
