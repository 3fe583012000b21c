"""Scripted solutions of MiniWoB++ tasks in navrl's Step language (``Tap "Submit"``), played by
:class:`navrl.agent.planner.ExpertPlanner` through the accessibility grounder like any plan and
used as BC demonstrations. One module per kind of task; :data:`MINIWOB_SCRIPTS` is the only
list of them."""
from __future__ import annotations

from navrl.worlds.web.miniwob_scripts import clicks, core, drags, forms, multistep, visual
from navrl.worlds.web.miniwob_scripts.common import MiniWoBTask, Script

__all__ = ["MINIWOB_SCRIPTS", "MINIWOB_TASKS", "MiniWoBTask", "Script"]


_MODULES = (core, clicks, forms, multistep, visual, drags)


def _merge() -> tuple[dict[str, Script], dict[str, MiniWoBTask]]:
    scripts: dict[str, Script] = {}
    tasks: dict[str, MiniWoBTask] = {}
    for m in _MODULES:
        twice = set(scripts) & set(m.SCRIPTS)
        if twice:
            raise ValueError(f"{m.__name__} scripts {sorted(twice)} a second time")
        if {t.name for t in m.TASKS} != set(m.SCRIPTS):
            raise ValueError(f"{m.__name__}: TASKS and SCRIPTS name different tasks")
        scripts.update(m.SCRIPTS)
        tasks.update((t.name, t) for t in m.TASKS)
    return scripts, tasks


MINIWOB_SCRIPTS, MINIWOB_TASKS = _merge()
"""MiniWoB task -> (goal, observation, device) -> the next Step. A script reads the observation;
the few that must know what the UI tree does not show (which tree folders are closed, which
result page is up) read the page through the device, as the phone world's expert reads its
device."""
# MINIWOB_TASKS: task -> MiniWoBTask (step limit, a line on the script), the same tasks as
# MINIWOB_SCRIPTS, in module order: the ``miniwob`` suite's tasks and the ``scripted`` group.
