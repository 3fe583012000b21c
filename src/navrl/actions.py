"""The seven actions of docs/design.md §2, their validation and a round-trip text form.

Layer 1: imports nothing from navrl.

Text form (what logs and trajectories store), one action per line::

    tap(120, 340)
    long_press(120, 340, 1.0)
    swipe(up)                      swipe(left, 200, 310)          swipe(10, 400, 10, 100)
    type("running shoes")          home()
    ask_user("Which size?")        complete()     complete("42")

Strings are JSON-quoted, so any text (quotes, newlines, ``$(rm -rf /)``) round-trips
exactly and is never interpreted.
"""
from __future__ import annotations

import enum
import json
import re
from dataclasses import dataclass, field


class ActionError(ValueError):
    """An action that is malformed or does not fit the screen it targets."""


class ActionKind(str, enum.Enum):
    TAP = "tap"
    LONG_PRESS = "long_press"
    SWIPE = "swipe"
    TYPE = "type"
    HOME = "home"
    ASK_USER = "ask_user"
    COMPLETE = "complete"


DIRECTIONS = ("up", "down", "left", "right")
DEVICE_KINDS = frozenset({ActionKind.TAP, ActionKind.LONG_PRESS, ActionKind.SWIPE, ActionKind.TYPE, ActionKind.HOME})
"""Kinds a Device executes; ask_user and complete are episode actions."""


@dataclass(frozen=True)
class Action:
    """One agent action.

    Coordinates are screenshot pixels of the observation the action was grounded on.
    A swipe has a ``direction`` and optionally a start point (x, y), or explicit
    end points (x, y, x2, y2) with ``direction`` derived.
    """

    kind: ActionKind
    x: int | None = None
    y: int | None = None
    x2: int | None = None
    y2: int | None = None
    direction: str | None = None
    duration: float = 1.0
    text: str | None = None
    meta: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    # -- constructors ----------------------------------------------------------------
    @staticmethod
    def tap(x: int, y: int) -> "Action":
        return Action(ActionKind.TAP, x=int(x), y=int(y))

    @staticmethod
    def long_press(x: int, y: int, duration: float = 1.0) -> "Action":
        return Action(ActionKind.LONG_PRESS, x=int(x), y=int(y), duration=float(duration))

    @staticmethod
    def swipe(direction: str | None = None, x: int | None = None, y: int | None = None,
              x2: int | None = None, y2: int | None = None) -> "Action":
        if direction is None and None not in (x, y, x2, y2):
            dx, dy = x2 - x, y2 - y  # type: ignore[operator]
            if abs(dx) >= abs(dy):
                direction = "right" if dx > 0 else "left"
            else:
                direction = "down" if dy > 0 else "up"
        return Action(ActionKind.SWIPE, x=x, y=y, x2=x2, y2=y2, direction=direction)

    @staticmethod
    def type(text: str) -> "Action":
        return Action(ActionKind.TYPE, text=text)

    @staticmethod
    def home() -> "Action":
        return Action(ActionKind.HOME)

    @staticmethod
    def ask_user(question: str) -> "Action":
        return Action(ActionKind.ASK_USER, text=question)

    @staticmethod
    def complete(answer: str | None = None) -> "Action":
        return Action(ActionKind.COMPLETE, text=answer)

    # -- properties ------------------------------------------------------------------
    @property
    def is_device_action(self) -> bool:
        return self.kind in DEVICE_KINDS

    def validate(self, screen_size: tuple[int, int] | None = None) -> "Action":
        """Raise ActionError if malformed or outside ``screen_size`` (width, height)."""
        k = self.kind
        if not isinstance(k, ActionKind):
            raise ActionError(f"unknown action kind {k!r}")
        pts: list[tuple[int | None, int | None]] = []
        if k in (ActionKind.TAP, ActionKind.LONG_PRESS):
            if self.x is None or self.y is None:
                raise ActionError(f"{k.value} needs x and y")
            pts.append((self.x, self.y))
            if k is ActionKind.LONG_PRESS and not (0 < self.duration <= 60):
                raise ActionError(f"long_press duration must be in (0, 60] s, got {self.duration}")
        elif k is ActionKind.SWIPE:
            if self.direction not in DIRECTIONS:
                raise ActionError(f"swipe direction must be one of {DIRECTIONS}, got {self.direction!r}")
            if (self.x is None) != (self.y is None) or (self.x2 is None) != (self.y2 is None):
                raise ActionError("swipe points need both coordinates")
            if self.x is not None:
                pts.append((self.x, self.y))
            if self.x2 is not None:
                pts.append((self.x2, self.y2))
        elif k is ActionKind.TYPE:
            if not self.text:
                raise ActionError("type needs non-empty text")
        elif k is ActionKind.ASK_USER:
            if not self.text or not self.text.strip():
                raise ActionError("ask_user needs a question")
        if screen_size is not None:
            w, h = screen_size
            for px, py in pts:
                if not (0 <= px < w and 0 <= py < h):  # type: ignore[operator]
                    raise ActionError(f"point ({px}, {py}) is outside the {w}x{h} screen")
        return self

    # -- text form -------------------------------------------------------------------
    def to_text(self) -> str:
        k = self.kind
        if k is ActionKind.TAP:
            return f"tap({self.x}, {self.y})"
        if k is ActionKind.LONG_PRESS:
            return f"long_press({self.x}, {self.y}, {self.duration:g})"
        if k is ActionKind.SWIPE:
            if self.x2 is not None:
                return f"swipe({self.x}, {self.y}, {self.x2}, {self.y2})"
            if self.x is not None:
                return f"swipe({self.direction}, {self.x}, {self.y})"
            return f"swipe({self.direction})"
        if k is ActionKind.TYPE:
            return f"type({json.dumps(self.text, ensure_ascii=False)})"
        if k is ActionKind.HOME:
            return "home()"
        if k is ActionKind.ASK_USER:
            return f"ask_user({json.dumps(self.text, ensure_ascii=False)})"
        if self.text is None:
            return "complete()"
        return f"complete({json.dumps(self.text, ensure_ascii=False)})"

    @staticmethod
    def from_text(s: str) -> "Action":
        """Inverse of :meth:`to_text`. Raises ActionError on anything else."""
        m = _TEXT_RE.fullmatch(s.strip())
        if not m:
            raise ActionError(f"not an action: {s[:80]!r}")
        name, args = m.group(1), m.group(2).strip()
        try:
            kind = ActionKind(name)
        except ValueError:
            raise ActionError(f"unknown action kind {name!r}") from None
        if kind in (ActionKind.TYPE, ActionKind.ASK_USER, ActionKind.COMPLETE):
            if not args:
                if kind is ActionKind.COMPLETE:
                    return Action.complete()
                raise ActionError(f"{name} needs a string argument")
            try:
                text = json.loads(args)
            except json.JSONDecodeError as e:
                raise ActionError(f"bad string in {name}: {e}") from None
            if not isinstance(text, str):
                raise ActionError(f"{name} needs a string argument")
            return Action(kind, text=text)
        parts = [p.strip() for p in args.split(",")] if args else []
        try:
            if kind is ActionKind.HOME:
                if parts:
                    raise ActionError("home takes no arguments")
                return Action.home()
            if kind is ActionKind.TAP and len(parts) == 2:
                return Action.tap(int(parts[0]), int(parts[1]))
            if kind is ActionKind.LONG_PRESS and len(parts) in (2, 3):
                d = float(parts[2]) if len(parts) == 3 else 1.0
                return Action.long_press(int(parts[0]), int(parts[1]), d)
            if kind is ActionKind.SWIPE:
                if len(parts) == 1:
                    return Action.swipe(parts[0])
                if len(parts) == 3:
                    return Action.swipe(parts[0], int(parts[1]), int(parts[2]))
                if len(parts) == 4:
                    a, b, c, d = (int(p) for p in parts)
                    return Action.swipe(None, a, b, c, d)
        except ValueError:
            raise ActionError(f"bad arguments in {s[:80]!r}") from None
        raise ActionError(f"wrong number of arguments in {s[:80]!r}")


_TEXT_RE = re.compile(r"([a-z_]+)\((.*)\)", re.S)
