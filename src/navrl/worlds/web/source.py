"""The web world's task source: MiniWoB++ pages of the installed package, fresh seeds."""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Sequence

from navrl.tasks.task import TaskError

__all__ = ["MiniWoBTasks"]


@dataclass
class MiniWoBTasks:
    """MiniWoB++ tasks: ``names`` (any page of the installed ``miniwob`` package, or a group:
    ``all``, ``ccnet``, ``table23``, ``scripted``; default the ``miniwob`` suite's tasks), each
    draw a uniformly chosen task with a fresh instance seed. Judged by the page's own reward."""

    names: Sequence[str] = ()
    phone: str = "iphone"
    name: str = "miniwob"
    default_judge = "page"

    def __post_init__(self) -> None:
        from navrl.worlds.web.tasks import resolve_miniwob_names
        self.names = resolve_miniwob_names(self.names)

    def sample(self, k: int, rng: random.Random) -> list[Any]:
        from navrl.worlds.web.tasks import miniwob_task
        return [miniwob_task(rng.choice(self.names), rng.randrange(2**31), phone=self.phone) for _ in range(k)]
