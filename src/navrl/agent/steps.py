"""Step commands: the structured reading of a plan's ``Step`` line (docs/design.md §3 forms).

``Tap "Search"`` · ``Tap the 3rd "text field"`` (the third element so labelled) ·
``Long press "Photo 3"`` · ``Type "running shoes"`` · ``Swipe up`` ·
``Swipe left on "Recipe 2"`` · ``Drag "A" to "B"`` (a swipe from A's centre to B's; ordinals
as for taps: ``Drag the 2nd "A" to the 3rd "B"``) · ``Drag "A" up`` (a swipe from A's centre) ·
``Go home`` · ``Ask user: <question>`` · ``Complete`` ·
``Complete: <answer>``. Anything else is kind ``unknown``: the grounder cannot act on it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

QUOTES = {"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'", "\u00ab": '"', "\u00bb": '"', "`": '"'}


@dataclass(frozen=True)
class StepCommand:
    kind: str                 # tap | long_press | type | swipe | home | ask_user | complete | unknown
    target: str | None = None  # quoted label or description
    text: str | None = None    # typed text, question or answer
    direction: str | None = None
    raw: str = ""
    nth: int | None = None     # tap / long press / drag: the nth (1-based) of the elements so labelled
    dest: str | None = None    # drag: the label of the element to drop onto (``Drag "A" to "B"``)
    dest_nth: int | None = None  # drag: the nth of the elements labelled ``dest``


def _norm_quotes(s: str) -> str:
    for a, b in QUOTES.items():
        s = s.replace(a, b)
    return s


def _quoted(s: str) -> str | None:
    s = s.strip()
    m = re.match(r'^"(.*)"$', s, re.S) or re.match(r"^'(.*)'$", s, re.S)
    if m:
        return m.group(1)
    m = re.search(r'"([^"]+)"', s) or re.search(r"'([^']+)'", s)
    if m:
        return m.group(1)
    s = s.strip().rstrip(".")
    return s or None


_NTH = re.compile(r'^(?:the\s+)?(\d{1,2})(?:st|nd|rd|th)\s+(".+")$', re.I | re.S)


def _nth(body: str) -> tuple[int | None, str]:
    """``the 3rd "text field"`` -> (3, ``"text field"``); anything else -> (None, body)."""
    m = _NTH.match(body.strip())
    if m and int(m.group(1)) >= 1:
        return int(m.group(1)), m.group(2)
    return None, body


def ordinal(k: int) -> str:
    """1 -> "1st", 2 -> "2nd", 3 -> "3rd", 11 -> "11th", 22 -> "22nd"."""
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


_DRAG_DIR = re.compile(r"^drag\s+(.+?)\s+(up|down|left|right)$", re.I | re.S)
_DRAG_TO = re.compile(r'^drag\s+((?:the\s+)?(?:\d{1,2}(?:st|nd|rd|th)\s+)?"[^"]+")\s+'
                      r'(?:(?:on|in)?to|over)\s+(.+)$', re.I | re.S)


def is_drag(cmd: StepCommand) -> bool:
    """Whether a swipe command was written as a drag (``Drag "A" ...``): its start node is
    found among the elements that take a mouse drag."""
    return cmd.kind == "swipe" and (cmd.dest is not None or _norm_quotes(cmd.raw).strip().lower().startswith("drag"))


_SWIPE = re.compile(r"^(?:swipe|scroll)\s+(up|down|left|right)(?:\s+(?:on|over|at)\s+(.+))?$", re.I | re.S)


def parse_step(step: str) -> StepCommand:
    raw = step
    orig = step.strip().rstrip(".").strip()
    s = _norm_quotes(orig)   # one character for one: positions in ``s`` are positions in ``orig``
    low = s.lower()
    m = re.match(r"^ask(?:\s+the)?\s+user\s*[:,-]?\s*(.*)$", s, re.I | re.S)
    if m:
        q = m.group(1).strip().strip('"').strip()
        return StepCommand("ask_user", text=q or None, raw=raw)
    m = re.match(r"^(?:complete|done|finish(?:ed)?|task complete)\s*(?:[:,-]\s*(.*))?$", s, re.I | re.S)
    if m:
        ans = (m.group(1) or "").strip().strip('"').strip()
        return StepCommand("complete", text=ans or None, raw=raw)
    if low in ("go home", "home", "press home", "go to home screen", "go to the home screen", "go back home"):
        return StepCommand("home", raw=raw)
    m = _SWIPE.match(s)
    if m:
        tgt = _quoted(m.group(2)) if m.group(2) else None
        return StepCommand("swipe", target=tgt, direction=m.group(1).lower(), raw=raw)
    m = _DRAG_TO.match(s)
    if m:
        nth, body = _nth(m.group(1))
        dnth, dbody = _nth(m.group(2))
        return StepCommand("swipe", target=_quoted(body), raw=raw, nth=nth, dest=_quoted(dbody), dest_nth=dnth)
    m = _DRAG_DIR.match(s)
    if m:
        nth, body = _nth(m.group(1))
        return StepCommand("swipe", target=_quoted(body), direction=m.group(2).lower(), raw=raw, nth=nth)
    m = re.match(r"^(?:long[\s-]?press|press and hold|touch and hold)\s+(?:on\s+)?(.+)$", s, re.I | re.S)
    if m:
        nth, body = _nth(m.group(1))
        return StepCommand("long_press", target=_quoted(body), raw=raw, nth=nth)
    m = re.match(r"^type\s+(.+?)(?:\s+(?:into|in)\s+(?:the\s+)?\"([^\"]+)\"(?:\s+field)?)?$", s, re.I | re.S)
    if m:
        body = m.group(1).strip()
        if len(body) >= 2 and body[0] == body[-1] and body[0] in "\"'":
            # the typed text verbatim from the original: quotes and backticks inside it are data
            a = m.start(1) + (len(m.group(1)) - len(m.group(1).lstrip()))
            text = orig[a + 1:a + len(body) - 1]
        else:
            text = _quoted(body)
        return StepCommand("type", target=m.group(2), text=text, raw=raw)
    m = re.match(r"^(?:tap|click|press|select|open|choose)\s+(?:on\s+)?(?:the\s+)?(.+)$", s, re.I | re.S)
    if m:
        nth, body = _nth(m.group(1))
        return StepCommand("tap", target=_quoted(body), raw=raw, nth=nth)
    return StepCommand("unknown", raw=raw)
