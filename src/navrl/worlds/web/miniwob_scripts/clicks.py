"""Scripted solutions of MiniWoB++'s click tasks beyond the 23-task table (buttons, menus, tabs,
collapsibles, dialogs, checkbox lists).
Each reads the goal and the UI tree and returns the next Step."""
from __future__ import annotations

from navrl.worlds.web.miniwob_scripts.common import Script

__all__ = ["SCRIPTS"]

SCRIPTS: dict[str, Script] = {}
