"""Observation and UI-tree node types shared by every device backend (layer 1)."""
from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

from PIL import Image


@dataclass(frozen=True)
class UINode:
    """One accessibility node.

    ``bounds`` is (x0, y0, x1, y1) in screenshot pixels, x1/y1 exclusive.
    ``label`` is the accessibility label (visible text or the icon's description).
    """

    id: str
    role: str
    label: str
    bounds: tuple[int, int, int, int]
    enabled: bool = True
    focused: bool = False
    value: str | None = None
    description: str = ""
    actions: tuple[str, ...] = ()   # what the node reacts to: "tap", "long_press", "swipe"
    hidden: str = field(default="", repr=False)
    """A node that scrolls by itself: where its content runs past its box ("above", "below",
    "above below"; "" where it shows it all, and on every node that does not scroll). Out of the
    repr, which pinned screen digests hash (tests/worlds/phone/test_world_pin.py): the phone world
    writes none, and its screens are what they were; ``to_dict`` carries it where set."""

    @property
    def center(self) -> tuple[int, int]:
        x0, y0, x1, y1 = self.bounds
        return (x0 + x1) // 2, (y0 + y1) // 2

    def to_dict(self) -> dict:
        return {"id": self.id, "role": self.role, "label": self.label, "bounds": list(self.bounds),
                "enabled": self.enabled, "focused": self.focused, "value": self.value,
                "description": self.description, "actions": list(self.actions),
                **({"hidden": self.hidden} if self.hidden else {})}

    @staticmethod
    def from_dict(d: dict) -> "UINode":
        return UINode(d["id"], d["role"], d["label"], tuple(d["bounds"]), d.get("enabled", True),
                      d.get("focused", False), d.get("value"), d.get("description", ""),
                      tuple(d.get("actions", ())), d.get("hidden", ""))


@dataclass
class Observation:
    """What a device shows at one moment.

    The screenshot is produced lazily: backends pass ``render`` and the image is drawn
    only when :attr:`screenshot` or :attr:`png` is first read.
    """

    nodes: tuple[UINode, ...]
    app: str | None
    screen_size: tuple[int, int]
    platform: str
    render: Callable[[], Image.Image] | None = field(default=None, repr=False)
    _image: Image.Image | None = field(default=None, repr=False)
    _png: bytes | None = field(default=None, repr=False)

    @property
    def screenshot(self) -> Image.Image:
        if self._image is None:
            if self._png is not None:
                self._image = Image.open(io.BytesIO(self._png)).convert("RGB")
            elif self.render is not None:
                self._image = self.render()
            else:
                raise ValueError("observation has no screenshot")
        return self._image

    @property
    def png(self) -> bytes:
        if self._png is None:
            buf = io.BytesIO()
            self.screenshot.save(buf, format="PNG", compress_level=1)
            self._png = buf.getvalue()
        return self._png

    @property
    def has_screenshot(self) -> bool:
        return self._image is not None or self._png is not None or self.render is not None

    def focused_node(self) -> UINode | None:
        for n in self.nodes:
            if n.focused:
                return n
        return None

    def labels(self) -> list[str]:
        return [n.label for n in self.nodes if n.label]

    def ui_text(self) -> str:
        """The UI tree as compact text, one node a line, for text-only planners and judges."""
        lines = [f"app: {self.app or 'Home screen'}"]
        for n in self.nodes:
            extra = []
            if n.value:
                extra.append(f"value={n.value!r}")
            if n.focused:
                extra.append("focused")
            if not n.enabled:
                extra.append("disabled")
            tail = (" " + " ".join(extra)) if extra else ""
            lines.append(f"[{n.role}] {n.label}{tail}")
        return "\n".join(lines)


def ui_hash(obs: Observation) -> str:
    """Hash of a screen's app and UI tree: the screen's identity in step records
    (``Step.screen_hash``) and in the history the judges read."""
    h = hashlib.blake2b(digest_size=8)
    h.update((obs.app or "").encode())
    for n in obs.nodes:
        h.update(f"{n.role}|{n.label}|{n.value}|{n.focused}|{n.bounds}".encode())
    return h.hexdigest()


# ------------------------------------------------------------------------------ drawn things
# A drawn thing is listed by what a person sees (the browser device): a shape is an ``image``
# labelled "large red circle" (description ``shape``); a drawn letter or digit is ``text`` of one
# character whose description is its size and colour ("small blue"). MiniWoB++'s scripts and the
# pointer planner's inputs read them the same way through these two functions.
SAME_COLOUR = {"aqua": "cyan", "fuchsia": "magenta", "gray": "grey"}
"""Colour names the pages use that name the same colour as the tree's name."""
SAME_KIND = {"square": "rectangle"}
"""MiniWoB's "rectangle" is drawn as a square."""
DRAWN_SIZES = ("small", "large")
_KIND_WORDS = {"letter": "letter", "digit": "digit", "number": "digit", "item": "item", "shape": "shape"}


class DrawnThing(NamedTuple):
    size: str       # "small", "large" or ""
    colour: str     # the tree's colour words ("light blue")
    type: str       # "shape", "letter" or "digit"
    what: str       # the shape's kind ("circle", "rectangle") or the character itself


def drawn_thing(role: str, label: str, description: str) -> DrawnThing | None:
    """What a node of ``role`` / ``label`` / ``description`` draws, None for another node."""
    lab = label.strip()
    if role == "image" and description == "shape" and lab:
        w = lab.lower().split()
        size = w[0] if w[0] in DRAWN_SIZES else ""
        return DrawnThing(size, " ".join(w[1 if size else 0:-1]), "shape", SAME_KIND.get(w[-1], w[-1]))
    if role == "text" and description and len(lab) == 1 and lab.isalnum():
        w = description.lower().split()
        size = w[0] if w and w[0] in DRAWN_SIZES else ""
        return DrawnThing(size, " ".join(w[1 if size else 0:]), "digit" if lab.isdigit() else "letter", lab)
    return None


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 1 and word.endswith("s") and not word.endswith("ss") else word


def fits_description(thing: DrawnThing, words: list[str]) -> bool:
    """Whether ``thing`` fits MiniWoB's description ``words`` ("large red circle", "small item",
    "blue letter", "q", "circles": a size, a colour, then a type, a shape, a character or "item";
    plurals and the synonyms above read as the tree names them; a drawn character keeps its case)."""
    words = list(words)
    if words and words[0].lower() in DRAWN_SIZES:
        if thing.size != words.pop(0).lower():
            return False
    if len(words) > 1:
        if thing.colour != SAME_COLOUR.get(words[0].lower(), words[0].lower()):
            return False
        words = words[1:]
    if len(words) != 1:
        return False
    w = words[0] if len(words[0]) == 1 else _singular(words[0].lower())
    if len(w) == 1:
        return w == thing.what
    w = SAME_KIND.get(w, w)
    kind = _KIND_WORDS.get(w)
    return kind == "item" or kind == thing.type or w == thing.what
