"""Lay a View out on a skin: chrome (status, bars, tabs, system nav) + body column."""
from __future__ import annotations

import calendar
from dataclasses import dataclass
from typing import Callable

from navrl.worlds.phone.sim.skin import Skin
from navrl.worlds.phone.sim.widgets import (Button, DatePicker, Dialog, Element, Frame, Grid, IconButton,
                                        ListView, Picture, Row, ScrollRegion, Segmented, Sheet, Spacer,
                                        Text, TextField, Toggle, View)

PAD = 12
HEIGHTS = {"body": 24, "title": 32, "caption": 20, "big": 44, "wrap": 60, "toast": 36}


@dataclass
class ChromeHooks:
    """World-level callbacks the chrome needs (not owned by the app)."""
    go_home: Callable[[], None]
    system_back: Callable[[], None]
    open_overflow: Callable[[], None]
    focus: Callable[[str], None]
    field_value: Callable[[str], str]
    focused_key: str | None
    scroll_offset: Callable[[str], int]
    overflow_open: bool = False
    close_overflow: Callable[[], None] | None = None
    clear_field: Callable[[str], None] | None = None


def _widget_height(w, width: int) -> int:
    if isinstance(w, Text):
        return w.height or HEIGHTS.get(w.style, 24)
    if isinstance(w, (Button, IconButton, TextField)):
        return 44
    if isinstance(w, Toggle):
        return 48
    if isinstance(w, Segmented):
        return 40
    if isinstance(w, DatePicker):
        return 36 + 20 + 6 * 32 + 4
    if isinstance(w, Picture):
        return w.height
    if isinstance(w, Spacer):
        return w.height
    if isinstance(w, Row):
        return max((_widget_height(c, width) for c in w.children), default=0)
    if isinstance(w, Grid):
        rows = (len(w.items) + w.cols - 1) // w.cols
        return rows * w.cell_height
    if isinstance(w, ListView):
        return 0  # flexible
    raise TypeError(f"unknown widget {type(w).__name__}")


class _Builder:
    def __init__(self, skin: Skin, hooks: ChromeHooks, ns: str):
        self.skin, self.hooks, self.ns = skin, hooks, ns
        self.els: list[Element] = []
        self.scrolls: list[ScrollRegion] = []

    def add(self, e: Element) -> Element:
        self.els.append(e)
        return e

    # -- body widgets ------------------------------------------------------------------
    def place(self, w, x0: int, y0: int, x1: int, y1: int) -> None:
        h = self.hooks
        if isinstance(w, Text):
            role = "header" if w.style in ("title", "big") else "text"
            self.add(Element("text", (x0, y0, x1, y1), w.text, role, style=w.style, data={"color": w.color}))
        elif isinstance(w, Button):
            self.add(Element("button", (x0, y0 + 2, x1, y1 - 2), w.label, "button", style=w.style,
                             enabled=w.enabled, on_tap=w.on_tap if w.enabled else None,
                             on_long_press=w.on_long_press if w.enabled else None))
        elif isinstance(w, IconButton):
            self.add(Element("icon", (x0, y0, min(x1, x0 + 44), y1), w.label, "button", style=w.glyph,
                             enabled=w.enabled, on_tap=w.on_tap if w.enabled else None))
        elif isinstance(w, TextField):
            key = f"{self.ns}/{w.key}"
            val = h.field_value(key)
            self.add(Element("field", (x0, y0 + 2, x1, y1 - 2), w.label or w.placeholder, "textfield",
                             value=val, focused=(h.focused_key == key),
                             on_tap=(lambda k=key: h.focus(k)),
                             data={"placeholder": w.placeholder, "secure": w.secure, "key": key}))
            if val and h.focused_key == key:
                self.add(Element("icon", (x1 - 36, y0 + 4, x1 - 4, y1 - 4), "Clear text", "button", style="close",
                                 on_tap=lambda k=key: h.clear_field(k), data={"fg": "#8e8e93"}))
        elif isinstance(w, Toggle):
            cb = w.on_change
            self.add(Element("toggle", (x0, y0, x1, y1), w.label, "switch", value="on" if w.value else "off",
                             enabled=w.enabled,
                             on_tap=(lambda cb=cb, v=w.value: cb(not v)) if (cb and w.enabled) else None))
        elif isinstance(w, Segmented):
            n = max(1, len(w.options))
            cw = (x1 - x0) // n
            for i, opt in enumerate(w.options):
                cb = w.on_select
                self.add(Element("segment", (x0 + i * cw, y0 + 4, x0 + (i + 1) * cw, y1 - 4), opt, "tab",
                                 value="selected" if i == w.selected else None,
                                 on_tap=(lambda cb=cb, i=i: cb(i)) if cb else None))
        elif isinstance(w, DatePicker):
            self._datepicker(w, x0, y0, x1)
        elif isinstance(w, Picture):
            self.add(Element("picture", (x0, y0, x1, y1), w.label, "image", data={"color": w.color,
                                                                                   "caption": w.caption}))
        elif isinstance(w, Spacer):
            pass
        elif isinstance(w, Row):
            n = max(1, len(w.children))
            gap = 8
            cw = ((x1 - x0) - gap * (n - 1)) // n
            for i, c in enumerate(w.children):
                cx0 = x0 + i * (cw + gap)
                self.place(c, cx0, y0, cx0 + cw, y0 + _widget_height(c, cw))
        elif isinstance(w, Grid):
            cw = (x1 - x0) // w.cols
            for i, (label, color, cb) in enumerate(w.items):
                r, c = divmod(i, w.cols)
                bx0, by0 = x0 + c * cw, y0 + r * w.cell_height
                self.add(Element("appicon", (bx0 + 4, by0 + 4, bx0 + cw - 4, by0 + w.cell_height - 4), label,
                                 "icon", on_tap=cb, data={"color": color}))
        elif isinstance(w, ListView):
            self._list(w, x0, y0, x1, y1)
        else:
            raise TypeError(f"unknown widget {type(w).__name__}")

    def _list(self, w: ListView, x0: int, y0: int, x1: int, y1: int) -> None:
        key = f"{self.ns}/{w.key}"
        ih = w.item_height
        vis = max(1, (y1 - y0) // ih)
        n = len(w.items)
        max_off = max(0, n - vis)
        off = min(max(0, self.hooks.scroll_offset(key)), max_off)
        region = ScrollRegion(key, (x0 - PAD, y0, x1 + PAD, y1), off, max_off, max(1, vis - 1))
        for i, it in enumerate(w.items):
            region.index.setdefault(it.title, i)
        region.first_visible, region.last_visible = off, min(n, off + vis) - 1
        self.scrolls.append(region)
        if n == 0:
            self.add(Element("text", (x0, y0, x1, y0 + 32), w.empty_text, "text", style="caption"))
            return
        for j, it in enumerate(w.items[off:off + vis]):
            iy0 = y0 + j * ih
            tb = it.trailing_button
            right = x1 - (86 if tb else 0)
            sw = it.on_swipe_left
            # the accessibility value carries every text the cell shows (a forecast row's
            # condition *and* its high/low), as an iOS cell's accessibilityValue does
            self.add(Element("cell", (x0 - PAD, iy0, x1 + PAD, iy0 + ih), it.title, "cell",
                             value=", ".join(t for t in (it.subtitle, it.trailing) if t) or None, on_tap=it.on_tap, on_long_press=it.on_long_press,
                             on_swipe=(lambda d, sw=sw: (sw() or True) if d == "left" else False) if sw else None,
                             data={"subtitle": it.subtitle, "trailing": it.trailing, "icon": it.icon_color,
                                   "text_right": right}))
            if tb is not None:
                self.add(Element("button", (x1 - 80, iy0 + 8, x1, iy0 + ih - 8), tb.label, "button",
                                 style=tb.style, enabled=tb.enabled, on_tap=tb.on_tap if tb.enabled else None))

    def _datepicker(self, w: DatePicker, x0: int, y0: int, x1: int) -> None:
        name = calendar.month_name[w.month]
        cm = w.on_month
        self.add(Element("icon", (x0, y0, x0 + 36, y0 + 36), "Previous month", "button", style="back",
                         on_tap=(lambda: cm(-1)) if cm else None))
        self.add(Element("text", (x0 + 40, y0, x1 - 40, y0 + 36), f"{name} {w.year}", "header", style="title"))
        self.add(Element("icon", (x1 - 36, y0, x1, y0 + 36), "Next month", "button", style="forward",
                         on_tap=(lambda: cm(1)) if cm else None))
        cw = (x1 - x0) // 7
        gy = y0 + 36
        for i, d in enumerate("MTWTFSS"):
            self.add(Element("text", (x0 + i * cw, gy, x0 + (i + 1) * cw, gy + 20), d, None, style="caption"))
        gy += 20
        first, ndays = calendar.monthrange(w.year, w.month)
        cs = w.on_select
        for day in range(1, ndays + 1):
            cell = first + day - 1
            r, c = divmod(cell, 7)
            bx, by = x0 + c * cw, gy + r * 32
            self.add(Element("day", (bx + 1, by + 1, bx + cw - 1, by + 31), str(day), "button",
                             value="selected" if day == w.selected else None,
                             on_tap=(lambda d=day: cs(d)) if cs else None))

    # -- overlays ------------------------------------------------------------------------
    def overlay(self, ov, W: int, H: int) -> int:
        start = len(self.els)
        self.add(Element("scrim", (0, 0, W, H), "", None))
        if isinstance(ov, Dialog):
            msg_lines = max(1, (len(ov.message) + 31) // 32)
            ph = 56 + msg_lines * 20 + 12 + 48 * len(ov.buttons)
            px0, py0 = 24, max(40, (H - ph) // 2)
            self.add(Element("dialog", (px0, py0, W - 24, py0 + ph), ov.title, "dialog",
                             data={"message": ov.message}))
            self.add(Element("text", (px0 + 16, py0 + 12, W - 40, py0 + 40), ov.title, "header", style="title"))
            self.add(Element("text", (px0 + 16, py0 + 44, W - 40, py0 + 44 + msg_lines * 20), ov.message, "text",
                             style="wrap"))
            by = py0 + 56 + msg_lines * 20 + 8
            for b in ov.buttons:
                self.add(Element("button", (px0 + 16, by, W - 40, by + 42), b.label, "button", style=b.style,
                                 on_tap=b.on_tap))
                by += 48
        else:  # Sheet
            ph = 52 + (24 if ov.message else 0) + 48 * len(ov.items) + 16
            py0 = H - ph
            self.add(Element("sheet", (0, py0, W, H), ov.title, "dialog", data={"message": ov.message}))
            self.add(Element("text", (16, py0 + 12, W - 16, py0 + 40), ov.title, "header", style="title"))
            y = py0 + 48
            if ov.message:
                self.add(Element("text", (16, y, W - 16, y + 22), ov.message, "text", style="caption"))
                y += 24
            for b in ov.items:
                self.add(Element("button", (16, y, W - 16, y + 42), b.label, "button", style=b.style,
                                 on_tap=b.on_tap))
                y += 48
        return len(self.els) - start


def _system_bar(b: _Builder, skin: Skin, hooks: ChromeHooks, W: int, H: int) -> None:
    """Android's Back / Home / Overview bar (iOS has only the home indicator, drawn by the renderer)."""
    if not skin.system_back:
        return
    sy = H - skin.sys_h
    b.add(Element("bar", (0, sy, W, H), "", None, data={"bg": "#f0f0f0"}))
    third = W // 3
    b.add(Element("icon", (0, sy, third, H), "Back", "button", style="sysback", on_tap=hooks.system_back))
    b.add(Element("icon", (third, sy, 2 * third, H), "Home", "button", style="syshome", on_tap=hooks.go_home))
    b.add(Element("icon", (2 * third, sy, W, H), "Overview", "button", style="sysoverview", on_tap=lambda: None))


def layout(view: View, skin: Skin, hooks: ChromeHooks, ns: str) -> Frame:
    """Position everything; returns the Frame that is drawn, hit-tested and read as a tree."""
    W, H = skin.width, skin.height
    b = _Builder(skin, hooks, ns)
    top = skin.status_h
    bottom = H - skin.sys_h
    if view.chrome:
        # -- top bar ---------------------------------------------------------------------
        bar = (0, top, W, top + skin.bar_h)
        b.add(Element("bar", bar, "", None, data={"bg": skin.bar_bg}))
        left = 8
        if view.on_back is not None:
            b.add(Element("icon", (4, top, 4 + (70 if skin.name == "ios" else 44), top + skin.bar_h),
                          skin.back_label, "button", style="back", on_tap=view.on_back,
                          data={"fg": skin.bar_fg, "text": skin.name == "ios"}))
            left = 52
        actions = list(view.actions)
        if view.fab is not None and not skin.fab:
            actions.append(IconButton(view.fab.label, "plus", view.fab.on_tap))
        shown = actions
        if skin.overflow and len(actions) > 1:
            shown = actions[:1] + [IconButton("More options", "more", hooks.open_overflow)]
        ax = W - 4
        for a in reversed(shown):
            b.add(Element("icon", (ax - 40, top + 2, ax, top + skin.bar_h - 2), a.label, "button", style=a.glyph,
                          enabled=a.enabled, on_tap=a.on_tap if a.enabled else None, data={"fg": skin.bar_fg}))
            ax -= 40
        if skin.title_align == "center":
            tb = (76, top, W - 76, top + skin.bar_h)
        else:
            tb = (left + 8, top, ax, top + skin.bar_h)
        b.add(Element("text", tb, view.title, "header", style="bartitle",
                      data={"align": skin.title_align, "fg": skin.bar_fg}))
        top += skin.bar_h
        # -- system bar (android) ---------------------------------------------------------
        _system_bar(b, skin, hooks, W, H)
        # -- tabs --------------------------------------------------------------------------
        if view.tabs:
            ty = bottom - skin.tab_h
            b.add(Element("bar", (0, ty, W, bottom), "", None, data={"bg": "#f7f7f8", "line": True}))
            n = len(view.tabs)
            tw = W // n
            cb = view.on_tab
            for i, (lab, glyph) in enumerate(view.tabs):
                b.add(Element("tab", (i * tw, ty, (i + 1) * tw, bottom), lab, "tab", style=glyph,
                              value="selected" if i == view.active_tab else None,
                              on_tap=(lambda cb=cb, i=i: cb(i)) if cb else None,
                              data={"accent": skin.accent}))
            bottom = ty
    else:
        _system_bar(b, skin, hooks, W, H)
    # -- body ------------------------------------------------------------------------------
    x0, x1 = PAD, W - PAD
    fixed = [(_widget_height(w, x1 - x0) if not isinstance(w, ListView) else None) for w in view.body]
    n_lists = sum(1 for f in fixed if f is None)
    gap = 6
    used = sum(f for f in fixed if f is not None) + gap * len(view.body)
    flex = max(0, (bottom - top - 8) - used)
    per_list = flex // n_lists if n_lists else 0
    y = top + 8
    for w, f in zip(view.body, fixed):
        h = per_list if f is None else f
        if y + h > bottom:
            if isinstance(w, ListView) and y + 52 <= bottom:
                h = bottom - y
            else:
                break  # clipped: off the bottom of the screen
        b.place(w, x0, y, x1, y + h)
        y += h + gap
    if view.fab is not None and skin.fab:
        fy = bottom - 72
        fb = view.fab
        b.add(Element("fab", (W - 72, fy, W - 16, fy + 56), fb.label, "button", style="plus", on_tap=fb.on_tap,
                      data={"accent": skin.accent}))
    if view.toast:
        b.add(Element("toast", (24, bottom - 96, W - 24, bottom - 60), view.toast, "text", style="toast"))
    # -- overlay -----------------------------------------------------------------------------
    n_modal = 0
    ov = view.overlay
    if ov is None and hooks.overflow_open and skin.overflow and len(view.actions) + (1 if view.fab and not skin.fab else 0) > 1:
        rest = view.actions[1:]
        ov = Sheet("More options", [Button(a.label, a.on_tap, style="plain") for a in rest]
                   + [Button(skin.label("Cancel"), hooks.close_overflow, style="plain")])
    if ov is not None:
        n_modal = b.overlay(ov, W, H)
    for i, e in enumerate(b.els):
        e.node_id = f"n{i}"
    return Frame(W, H, b.els, b.scrolls, modal=n_modal > 0, n_modal=n_modal, background=skin.bg)
