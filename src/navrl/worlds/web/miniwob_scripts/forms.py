"""Scripted solutions of MiniWoB++'s form and reading tasks beyond the 23-task table (dates,
times, tables, text to copy or transform, numbers to compute).
Each reads the goal and the UI tree and returns the next Step."""
from __future__ import annotations

from navrl.worlds.web.miniwob_scripts.common import MiniWoBTask, Script

__all__ = ["SCRIPTS", "TASKS"]

SCRIPTS: dict[str, Script] = {}

TASKS: tuple[MiniWoBTask, ...] = ()
"""One record per scripted task here: its step limit (the expert's steps with room to spare) and a line on what the script does."""
