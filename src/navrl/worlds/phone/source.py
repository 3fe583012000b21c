"""The phone world's task source: fresh random instances of a suite, for online RL."""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from navrl.tasks.task import TaskError
from navrl.worlds.phone.sim import FaultConfig, PerturbConfig

__all__ = ["PhoneWorldTasks"]


@dataclass
class PhoneWorldTasks:
    """Fresh random instances of a phone-world suite: template uniform, new seed each draw."""

    suite: str = "train"
    perturb: PerturbConfig | None = None
    """Perturbations of the drawn tasks (None: the suite's default pop-ups and sheets)."""
    faults: FaultConfig | None = None
    """Infrastructure faults injected into the drawn tasks' worlds (None: none)."""
    names: tuple[str, ...] = ()
    """Only these templates (``--tasks``); empty: all of the suite's."""
    name: str = field(init=False)
    has_expert = True
    """Every task has the scripted expert (``TaskSpec.expert_step`` / ``expert_length``): guided starts work."""
    default_judge = "oracle"

    def __post_init__(self) -> None:
        from navrl.worlds.phone.suites import SUITES
        if self.suite not in SUITES:
            raise TaskError(f"unknown phone-world suite {self.suite!r}; choose from {sorted(SUITES)}")
        self.name = self.suite
        if self.names:
            from navrl.worlds.phone.suites import suite_templates
            suite_templates(self.suite, self.names)   # a name the suite lacks: TaskError now, not at the first draw

    def sample(self, k: int, rng: random.Random) -> list[Any]:
        from navrl.worlds.phone.suites import sample_tasks
        tasks = sample_tasks(self.suite, k, rng, perturb=self.perturb, names=self.names)
        if self.faults is not None:
            tasks = [t.with_(faults=self.faults) for t in tasks]
        return tasks
