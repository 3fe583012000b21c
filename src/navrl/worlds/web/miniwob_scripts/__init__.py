"""Scripted solutions of MiniWoB++ tasks in navrl's Step language (``Tap "Submit"``), played by
:class:`navrl.agent.planner.ExpertPlanner` through the accessibility grounder like any plan and
used as BC demonstrations. One module per kind of task; :data:`MINIWOB_SCRIPTS` is the only
list of them."""
from __future__ import annotations

from navrl.worlds.web.miniwob_scripts import clicks, core, forms, multistep
from navrl.worlds.web.miniwob_scripts.common import Script

__all__ = ["MINIWOB_SCRIPTS", "Script"]


def _merge(*modules) -> dict[str, Script]:
    out: dict[str, Script] = {}
    for m in modules:
        twice = set(out) & set(m.SCRIPTS)
        if twice:
            raise ValueError(f"{m.__name__} scripts {sorted(twice)} a second time")
        out.update(m.SCRIPTS)
    return out


MINIWOB_SCRIPTS: dict[str, Script] = _merge(core, clicks, forms, multistep)
"""MiniWoB task -> (goal, observation, device) -> the next Step. A script reads the observation;
the few that must know what the UI tree does not show (which tree folders are closed, which
result page is up) read the page through the device, as the phone world's expert reads its
device."""
