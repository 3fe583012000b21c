"""The phone world's widget toolkit: declarative widgets, layout and hit testing.

Apps build a fresh widget tree (a :class:`View`) from world state on every frame, like
React: widgets hold callbacks, state lives only in ``WorldState``, so snapshots are
plain data. :func:`layout` turns a View plus the skin's chrome into a flat
:class:`Frame` of positioned :class:`Element` s; the Frame does hit testing, builds the
accessibility tree and is what the renderer draws.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

Handler = Optional[Callable[[], None]]


# ----------------------------------------------------------------------------- widgets
@dataclass
class Text:
    text: str
    style: str = "body"          # body | title | caption | big
    color: str | None = None
    height: int | None = None


@dataclass
class Button:
    label: str
    on_tap: Handler = None
    style: str = "primary"       # primary | plain | destructive | link
    enabled: bool = True
    on_long_press: Handler = None
    description: str = ""


@dataclass
class IconButton:
    label: str                   # accessibility label ("Back", "Search", "More options")
    glyph: str                   # icon painter name: back, more, plus, search, close, ...
    on_tap: Handler = None
    enabled: bool = True


@dataclass
class TextField:
    key: str
    placeholder: str
    secure: bool = False
    label: str | None = None     # accessibility label; defaults to the placeholder


@dataclass
class Toggle:
    label: str
    value: bool
    on_change: Callable[[bool], None] | None = None
    enabled: bool = True


@dataclass
class ListItem:
    title: str
    subtitle: str = ""
    on_tap: Handler = None
    on_long_press: Handler = None
    on_swipe_left: Handler = None
    trailing: str = ""
    trailing_button: "Button | None" = None
    icon_color: str | None = None


@dataclass
class ListView:
    key: str
    items: list[ListItem]
    item_height: int = 52
    empty_text: str = "Nothing here"


@dataclass
class Row:
    children: list


@dataclass
class Segmented:
    """In-body tabs (segmented control)."""
    options: list[str]
    selected: int
    on_select: Callable[[int], None] | None = None


@dataclass
class DatePicker:
    key: str
    year: int
    month: int                   # 1..12
    selected: int | None         # day of month
    on_select: Callable[[int], None] | None = None
    on_month: Callable[[int], None] | None = None   # called with -1 / +1


@dataclass
class Picture:
    label: str
    color: str = "#cccccc"
    height: int = 120
    caption: str = ""


@dataclass
class Spacer:
    height: int = 12


@dataclass
class Dialog:
    title: str
    message: str
    buttons: list[Button]


@dataclass
class Sheet:
    title: str
    items: list[Button]
    message: str = ""


@dataclass
class View:
    """What an app screen returns; the skin adds navigation chrome around it."""

    title: str
    body: list
    actions: list[IconButton] = field(default_factory=list)  # nav-bar / app-bar actions
    fab: Button | None = None       # primary create action: FAB on android, nav button on ios
    tabs: list[tuple[str, str]] | None = None               # (label, glyph)
    active_tab: int = 0
    on_tab: Callable[[int], None] | None = None
    on_back: Handler = None         # None: no back affordance (root screen)
    overlay: Dialog | Sheet | None = None
    toast: str | None = None
    chrome: bool = True             # False for the launcher


# ----------------------------------------------------------------------------- elements
@dataclass
class Element:
    """A positioned, drawable, hittable thing. ``role`` None: drawn but not in the tree."""

    kind: str
    bounds: tuple[int, int, int, int]
    label: str = ""
    role: str | None = None
    style: str = ""
    value: str | None = None
    focused: bool = False
    enabled: bool = True
    on_tap: Handler = None
    on_long_press: Handler = None
    on_swipe: Callable[[str], bool] | None = None
    data: dict = field(default_factory=dict)
    node_id: str = ""

    def contains(self, x: int, y: int) -> bool:
        x0, y0, x1, y1 = self.bounds
        return x0 <= x < x1 and y0 <= y < y1


@dataclass
class ScrollRegion:
    key: str
    bounds: tuple[int, int, int, int]
    offset: int
    max_offset: int
    page: int
    # label -> item index of every item in the list, visible or not (the expert scrolls to them)
    index: dict[str, int] = field(default_factory=dict)
    first_visible: int = 0
    last_visible: int = -1


@dataclass
class Frame:
    width: int
    height: int
    elements: list[Element]
    scrolls: list[ScrollRegion]
    modal: bool = False            # an overlay is up: only overlay elements are hittable
    n_modal: int = 0               # the last n_modal elements belong to the overlay
    background: str = "#ffffff"

    def hit(self, x: int, y: int, want: str = "tap") -> Element | None:
        els = self.elements[-self.n_modal:] if self.modal and self.n_modal else self.elements
        for e in reversed(els):
            if not e.contains(x, y):
                continue
            h = e.on_tap if want == "tap" else e.on_long_press
            if h is not None or (want == "tap" and e.kind == "field"):
                return e
            if e.kind in ("dialog", "sheet"):
                return e      # the overlay's panel swallows taps beside its buttons
        return None

    def scroll_at(self, x: int | None, y: int | None) -> ScrollRegion | None:
        if self.modal:
            return None
        if x is None or y is None:
            return max(self.scrolls, key=lambda s: (s.bounds[3] - s.bounds[1]), default=None)
        for s in self.scrolls:
            x0, y0, x1, y1 = s.bounds
            if x0 <= x < x1 and y0 <= y < y1:
                return s
        return None


@dataclass
class Grid:
    """Launcher icon grid: items are (label, color, on_tap)."""
    items: list[tuple[str, str, Handler]]
    cols: int = 4
    cell_height: int = 84
