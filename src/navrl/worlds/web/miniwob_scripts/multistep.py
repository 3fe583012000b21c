"""Scripted solutions of MiniWoB++'s multi-step tasks beyond the 23-task table (tabs to switch,
email-inbox's natural-language variants, lists to page through, sequences).
Each reads the goal and the UI tree and returns the next Step."""
from __future__ import annotations

from navrl.worlds.web.miniwob_scripts.common import MiniWoBTask, Script

__all__ = ["SCRIPTS", "TASKS"]

SCRIPTS: dict[str, Script] = {}

TASKS: tuple[MiniWoBTask, ...] = ()
"""One record per scripted task here: its step limit (the expert's steps with room to spare) and a line on what the script does."""
