"""The planner's text protocol (docs/design.md §3): ``Reasoning / Step / Remaining``.

Parsing is tolerant of case, spacing, markdown emphasis, quotes and stray text around
the block, but never guesses: output with no Step is :data:`UNPARSEABLE`.
"""
from __future__ import annotations

import re

# Plan's home is navrl.planning (the task layer's expert writes the same block); imported here
# so that navrl.agent.plan.Plan keeps working
from navrl.planning import Plan

MAX_FIELD = 2000  # characters kept per field; a 100 KB rant is cut, not choked on


class Unparseable:
    """Marker for planner output with no usable Step."""

    _inst = None

    def __new__(cls):
        if cls._inst is None:
            cls._inst = super().__new__(cls)
        return cls._inst

    def __repr__(self) -> str:
        return "UNPARSEABLE"

    def __bool__(self) -> bool:
        return False


UNPARSEABLE = Unparseable()

_HEAD = re.compile(r"^[\s>*_#`-]*(reasoning|thought|step|action|remaining|remaining plan)[\s*_`]*[:：][\s*_`]*(.*)$",
                   re.I)
_FENCE = re.compile(r"^\s*```[\w+-]*\s*$")
_ALIASES = {"thought": "reasoning", "action": "step", "remaining plan": "remaining"}


def parse_plan(text: str | None) -> Plan | Unparseable:
    """Split planner output into a :class:`Plan`; :data:`UNPARSEABLE` when no Step."""
    if not text or not text.strip():
        return UNPARSEABLE
    fields: dict[str, list[str]] = {}
    cur: str | None = None
    for line in text.replace("\r\n", "\n").split("\n"):
        if _FENCE.match(line):   # a markdown fence line is not part of any field
            continue
        m = _HEAD.match(line)
        if m:
            key = m.group(1).lower()
            key = _ALIASES.get(key, key)
            if key in fields:       # a second block: keep the first
                cur = None
                continue
            cur = key
            fields[cur] = [m.group(2)]
        elif cur is not None:
            fields[cur].append(line)
    # lines joined, ends trimmed, inner spacing kept: typed text stays verbatim
    step = " ".join(ln.strip() for ln in fields.get("step", []) if ln.strip()).strip("*` \t")
    if not step:
        return UNPARSEABLE
    reasoning = " ".join(" ".join(fields.get("reasoning", [])).split())
    remaining = " ".join(" ".join(fields.get("remaining", [])).split())
    return Plan(reasoning[:MAX_FIELD], step[:MAX_FIELD], remaining[:MAX_FIELD])
