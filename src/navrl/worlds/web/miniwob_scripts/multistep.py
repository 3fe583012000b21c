"""Scripted solutions of MiniWoB++'s multi-step tasks beyond the 23-task table (tabs to switch,
email-inbox's natural-language variants, lists to page through, sequences).
Each reads the goal and the UI tree and returns the next Step."""
from __future__ import annotations

from navrl.worlds.web.miniwob_scripts.common import Script

__all__ = ["SCRIPTS"]

SCRIPTS: dict[str, Script] = {}
