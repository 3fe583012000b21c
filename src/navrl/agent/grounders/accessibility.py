"""The accessibility grounder (CPU default): match the step's quoted label to a UI node.

Exact label first, then case- and spacing-insensitive, then fuzzy (difflib ratio above
``threshold``); below the threshold it refuses rather than guesses.
"""
from __future__ import annotations

import difflib
import re

from navrl.actions import Action
from navrl.agent.grounders.base import Grounder, GroundingError
from navrl.agent.steps import StepCommand, is_drag, ordinal
from navrl.observation import Observation, UINode


def _key(s: str) -> str:
    return re.sub(r"\s+", " ", s.strip().lower())


class AccessibilityGrounder(Grounder):
    def __init__(self, threshold: float = 0.8):
        self.threshold = threshold

    def find(self, label: str, obs: Observation, want: str = "tap", nth: int | None = None) -> UINode:
        """The node ``label`` names (exact, then case- and spacing-insensitive, then fuzzy); with
        ``nth``, the nth of the nodes with exactly that label (else insensitively), in screen order."""
        nodes = [n for n in obs.nodes if n.label]
        if not nodes:
            raise GroundingError("the screen has no labelled elements")
        if nth is not None:
            same = [n for n in nodes if n.label == label] or [n for n in nodes if _key(n.label) == _key(label)]
            if len(same) < nth:
                raise GroundingError(f"no {ordinal(nth)} element labelled {label!r} on screen ({len(same)} so labelled)")
            return same[nth - 1]

        def best(cands: list[UINode]) -> UINode | None:
            if not cands:
                return None
            act = [n for n in cands if want in n.actions and n.enabled]
            return (act or [n for n in cands if n.actions] or cands)[0]
        n = best([n for n in nodes if n.label == label])
        if n is None:
            k = _key(label)
            n = best([n for n in nodes if _key(n.label) == k or (n.description and _key(n.description) == k)])
        if n is None:
            k = _key(label)
            scored = sorted(((difflib.SequenceMatcher(None, k, _key(n.label)).ratio(), -i, n)
                             for i, n in enumerate(nodes)), key=lambda t: (t[0], t[1]), reverse=True)
            top = [t for t in scored if t[0] >= self.threshold]
            if top:
                n = best([t[2] for t in top if t[0] == top[0][0]])
        if n is None:
            raise GroundingError(f"no element labelled {label!r} on screen")
        return n

    def ground_command(self, cmd: StepCommand, obs: Observation) -> Action:
        a = self.episode_action(cmd)
        if a is not None:
            return a
        if cmd.kind in ("tap", "long_press"):
            if not cmd.target:
                raise GroundingError(f"{cmd.kind} needs a target")
            n = self.find(cmd.target, obs, "tap" if cmd.kind == "tap" else "long_press", cmd.nth)
            x, y = n.center
            return Action.tap(x, y) if cmd.kind == "tap" else Action.long_press(x, y)
        if cmd.kind == "type":
            if not cmd.text:
                raise GroundingError("Type needs text")
            return Action.type(cmd.text)
        if cmd.kind == "swipe":
            if cmd.target:
                n = self.find(cmd.target, obs, "drag" if is_drag(cmd) else "swipe", cmd.nth)
                if cmd.dest:  # a drag onto another node: centre to centre
                    (x, y), (x2, y2) = n.center, self.find(cmd.dest, obs, "tap", cmd.dest_nth).center
                    return Action.swipe(x=x, y=y, x2=x2, y2=y2)
                return Action.swipe(cmd.direction, *n.center)
            return Action.swipe(cmd.direction)
        raise GroundingError(f"cannot ground {cmd.kind}")
