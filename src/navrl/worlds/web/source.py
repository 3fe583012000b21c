"""The web world's task source: MiniWoB++ pages of the installed package, fresh seeds."""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Sequence

from navrl.tasks.task import TaskError

__all__ = ["MiniWoBTasks"]


@dataclass
class MiniWoBTasks:
    """MiniWoB++ tasks: ``names`` (any page of the installed ``miniwob`` package; default the
    ``miniwob`` suite's tasks), each draw a uniformly chosen task with a fresh instance seed.
    Judged by the page's own reward."""

    names: Sequence[str] = ()
    phone: str = "iphone"
    name: str = "miniwob"
    default_judge = "page"

    def __post_init__(self) -> None:
        from navrl.worlds.web.tasks import MINIWOB_TASKS, miniwob_installed_tasks
        self.names = tuple(self.names) or tuple(MINIWOB_TASKS)
        unknown = [x for x in self.names if x not in MINIWOB_TASKS]
        if unknown:
            installed = set(miniwob_installed_tasks())
            bad = [x for x in unknown if x not in installed]
            if bad:
                raise TaskError(f"unknown MiniWoB task {bad[0]!r}: the installed miniwob package has no page "
                                f"{bad[0]}.html ({len(installed)} task pages installed)")

    def sample(self, k: int, rng: random.Random) -> list[Any]:
        from navrl.worlds.web.tasks import miniwob_task
        return [miniwob_task(rng.choice(self.names), rng.randrange(2**31), phone=self.phone) for _ in range(k)]
