"""Scripted solutions of MiniWoB++'s form and reading tasks beyond the 23-task table (dates,
times, tables, text to copy or transform, numbers to compute).
Each reads the goal and the UI tree and returns the next Step."""
from __future__ import annotations

from navrl.worlds.web.miniwob_scripts.common import Script

__all__ = ["SCRIPTS"]

SCRIPTS: dict[str, Script] = {}
