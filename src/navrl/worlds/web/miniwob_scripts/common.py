"""What the MiniWoB++ scripted solutions share: finding nodes, filling a field, and writing a
tap in navrl's Step language so the accessibility grounder lands it on the intended node."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from navrl.agent.steps import ordinal
from navrl.observation import Observation, UINode

__all__ = ["MiniWoBTask", "Script", "field", "fill", "nodes", "q", "quoted", "ref", "tap"]

Script = Callable[[str, Observation, Any], str]
"""(goal, observation, device) -> the next Step. ``device`` is the episode's browser device (or
None), for the few scripts that read what the UI tree does not show."""


@dataclass(frozen=True)
class MiniWoBTask:
    """A scripted MiniWoB++ task: its step limit and what its script does."""
    name: str
    max_steps: int
    description: str
    scripted: bool = True


def q(s: str) -> str:
    return f'"{s}"'


def nodes(obs: Observation, role: str | None = None) -> list[UINode]:
    return [n for n in obs.nodes if role is None or n.role == role]


def field(obs: Observation, label: str | None = None) -> UINode | None:
    fs = [n for n in nodes(obs, "textfield") if label is None or n.label.lower() == label.lower()]
    return fs[0] if fs else None


def fill(obs: Observation, label: str, text: str, secret: bool = False) -> str | None:
    """Tap the field, then type: the next step, or None once the field holds ``text``."""
    f = field(obs, label)
    if f is None:
        return None
    want = "\u2022" * len(text) if secret else text
    if (f.value or "") == want:
        return None
    if not f.focused:
        return f"Tap {q(f.label)}"
    return f"Type {q(text)}"


def quoted(goal: str) -> list[str]:
    return re.findall(r'"([^"]*)"', goal)


def tap(obs: Observation, node: UINode) -> str:
    """Tap ``node`` in the Step language: by its label, or as the nth node so labelled where the
    label alone grounds to another (:func:`ref`: as the accessibility grounder picks)."""
    return f"Tap {ref(obs, node)}"


def ref(obs: Observation, node: UINode, want: str = "tap") -> str:
    """``node`` as a step names it where the grounder looks for an element that takes ``want``:
    its quoted label, or "the nth" of the nodes so labelled where the label alone grounds to
    another (the first that takes ``want``, else the first that takes anything)."""
    same = [n for n in obs.nodes if n.label == node.label]
    first = (next((n for n in same if want in n.actions and n.enabled), None)
             or next((n for n in same if n.actions), None) or (same[0] if same else node))
    if first is node:
        return q(node.label)
    return f"the {ordinal(next(i for i, n in enumerate(same) if n is node) + 1)} {q(node.label)}"
