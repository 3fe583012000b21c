"""Platform skins: where the chrome goes and what things are called.

``ios`` and ``android`` differ the way real platforms do: a back chevron and bottom tab
bar vs an app bar with "Navigate up", an overflow menu, a FAB and the system
Back/Home/Overview bar; some labels; positions; screen size.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Skin:
    name: str
    width: int
    height: int
    status_h: int
    bar_h: int                 # nav bar (ios) / app bar (android)
    tab_h: int
    sys_h: int                 # system navigation bar (android) / home indicator (ios)
    back_label: str
    title_align: str           # center | left
    accent: str
    bar_bg: str
    bar_fg: str
    bg: str
    fab: bool                  # primary create action as a floating button
    overflow: bool             # app-bar actions beyond the first go into "More options"
    system_back: bool          # a system Back button exists
    labels: dict = field(default_factory=dict)
    font_scale: float = 1.0

    def label(self, key: str) -> str:
        """Platform wording for a UI string; falls back to the key itself."""
        return self.labels.get(key, key)


IOS = Skin(
    name="ios", width=320, height=640, status_h=20, bar_h=44, tab_h=50, sys_h=14,
    back_label="Back", title_align="center", accent="#007aff", bar_bg="#f7f7f8", bar_fg="#111111",
    bg="#ffffff", fab=False, overflow=False, system_back=False,
    labels={"Add to cart": "Add to Bag", "Cart": "Bag", "Delete": "Delete", "Settings": "Settings",
            "Compose": "Compose", "Search": "Search", "OK": "OK", "Cancel": "Cancel",
            "Save": "Done", "More": "More"},
)

ANDROID = Skin(
    name="android", width=360, height=720, status_h=24, bar_h=56, tab_h=56, sys_h=44,
    back_label="Navigate up", title_align="left", accent="#6750a4", bar_bg="#6750a4", bar_fg="#ffffff",
    bg="#fffbfe", fab=True, overflow=True, system_back=True,
    labels={"Add to cart": "Add to cart", "Cart": "Cart", "Delete": "Remove", "Compose": "Compose",
            "Search": "Search", "OK": "OK", "Cancel": "CANCEL", "Save": "Save", "More": "More"},
    font_scale=1.05,
)

SKINS = {"ios": IOS, "android": ANDROID}


def get_skin(name: str) -> Skin:
    try:
        return SKINS[name]
    except KeyError:
        raise ValueError(f"unknown skin {name!r}; choose from {sorted(SKINS)}") from None
