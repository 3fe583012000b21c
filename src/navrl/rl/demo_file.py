"""Demonstrations on disk: a gzipped JSON-lines file of (task id, prompt, target) steps with a header
that says what they demonstrate.

A demonstration's prompt is the planner's text input (goal, screen rows, history) and its target the
teacher's text, so the file does not depend on how a planner encodes them: planners with other input
columns train from the same file. Collecting is the expensive part of BC on MiniWoB++ (3,600 scripted
episodes in the browser for the all-task run, against ~3 minutes of training), so experiments that
change only the planner reuse one collection (``navrl experiment miniwob``'s ``demonstrations``).
"""
from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

from navrl.fileio import atomic_write_bytes
from navrl.rl.sft import Demo

FORMAT = "navrl-demos-1"


class DemoFileError(ValueError):
    """A demonstrations file that is unreadable, of another format, or of other demonstrations than asked."""


def save_demonstrations(path: str | Path, steps: list[tuple[str, Demo]], header: dict) -> Path:
    """Write ``steps`` ((task id, Demo), in order) under ``header`` (what they demonstrate: JSON
    values) atomically: a stopped write leaves no file."""
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz:
        gz.write((json.dumps({"format": FORMAT, **header}, sort_keys=True) + "\n").encode())
        for tid, d in steps:
            gz.write((json.dumps({"task": tid, "prompt": d.prompt, "target": d.target}) + "\n").encode())
    return atomic_write_bytes(path, buf.getvalue())


def load_demonstrations(path: str | Path, expect: dict | None = None) -> tuple[dict, list[tuple[str, Demo]]]:
    """(header, steps) of a file :func:`save_demonstrations` wrote; every key of ``expect`` must
    have the same value in its header (the same tasks, seed, episodes, screen), else
    :class:`DemoFileError` naming the first that differs."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            lines = f.read().splitlines()
        header = json.loads(lines[0]) if lines else {}
        if header.get("format") != FORMAT:
            raise DemoFileError(f"{path} is not a navrl demonstrations file ({FORMAT})")
        steps = [(r["task"], Demo(r["prompt"], r["target"])) for r in map(json.loads, lines[1:])]
    except (OSError, EOFError, json.JSONDecodeError, KeyError, TypeError) as e:
        raise DemoFileError(f"{path} is unreadable ({type(e).__name__})") from None
    for k, v in (expect or {}).items():
        if header.get(k) != v:
            raise DemoFileError(f"{path} demonstrates other {k} ({header.get(k)!r}, not {v!r})")
    return header, steps
