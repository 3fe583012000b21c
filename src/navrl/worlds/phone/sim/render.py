"""Draw a Frame with Pillow (built-in scalable font, no system fonts)."""
from __future__ import annotations

from functools import lru_cache

from PIL import Image, ImageDraw, ImageFont

from navrl.worlds.phone.sim.widgets import Element, Frame

SIZES = {"body": 14, "title": 17, "caption": 12, "big": 26, "bartitle": 16, "wrap": 13, "toast": 13}


@lru_cache(maxsize=64)
def font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


@lru_cache(maxsize=8192)
def _glyphs(text: str, size: int, anchor: str | None) -> tuple[Image.Image, int, int]:
    """The text's coverage mask, rendered once: drawing text is the renderer's hot spot."""
    f = font(size)
    l, t, r, b = f.getbbox(text, anchor=anchor)
    m = Image.new("L", (max(1, r - l), max(1, b - t)), 0)
    ImageDraw.Draw(m).text((-l, -t), text, font=f, fill=255, anchor=anchor)
    return m, l, t


@lru_cache(maxsize=16384)
def _length(text: str, size: int) -> float:
    return font(size).getlength(text)


class _Draw:
    """ImageDraw with cached text masks and text lengths (same pixels, ~5x faster text)."""

    def __init__(self, img: Image.Image):
        self.img = img
        self.d = ImageDraw.Draw(img)

    def __getattr__(self, name):
        return getattr(self.d, name)

    def text(self, xy, text, font=None, fill=None, anchor=None) -> None:
        if not text:
            return
        m, l, t = _glyphs(text, font.size, anchor)
        self.img.paste(fill, (int(xy[0]) + l, int(xy[1]) + t), m)

    def textlength(self, text, font=None) -> float:
        return _length(text, font.size)


def _fit(d: ImageDraw.ImageDraw, text: str, f, width: int) -> str:
    if d.textlength(text, font=f) <= width:
        return text
    while text and d.textlength(text + "...", font=f) > width:
        text = text[:-1]
    return text + "..."


def _icon(d: ImageDraw.ImageDraw, glyph: str, box, color: str) -> None:
    x0, y0, x1, y1 = box
    cx, cy = (x0 + x1) // 2, (y0 + y1) // 2
    r = 7
    if glyph in ("back", "sysback"):
        d.line([(cx + 4, cy - r), (cx - 4, cy), (cx + 4, cy + r)], fill=color, width=3)
    elif glyph == "forward":
        d.line([(cx - 4, cy - r), (cx + 4, cy), (cx - 4, cy + r)], fill=color, width=3)
    elif glyph == "more":
        for dy in (-6, 0, 6):
            d.ellipse([cx - 2, cy + dy - 2, cx + 2, cy + dy + 2], fill=color)
    elif glyph == "plus":
        d.line([(cx - r, cy), (cx + r, cy)], fill=color, width=3)
        d.line([(cx, cy - r), (cx, cy + r)], fill=color, width=3)
    elif glyph == "search":
        d.ellipse([cx - 7, cy - 7, cx + 3, cy + 3], outline=color, width=2)
        d.line([(cx + 2, cy + 2), (cx + 7, cy + 7)], fill=color, width=3)
    elif glyph == "close":
        d.line([(cx - 6, cy - 6), (cx + 6, cy + 6)], fill=color, width=2)
        d.line([(cx - 6, cy + 6), (cx + 6, cy - 6)], fill=color, width=2)
    elif glyph == "syshome":
        d.ellipse([cx - 8, cy - 8, cx + 8, cy + 8], outline=color, width=2)
    elif glyph == "sysoverview":
        d.rectangle([cx - 7, cy - 7, cx + 7, cy + 7], outline=color, width=2)
    elif glyph == "trash":
        d.rectangle([cx - 6, cy - 4, cx + 6, cy + 8], outline=color, width=2)
        d.line([(cx - 8, cy - 6), (cx + 8, cy - 6)], fill=color, width=2)
    elif glyph == "star":
        d.polygon([(cx, cy - 8), (cx + 3, cy - 2), (cx + 8, cy - 2), (cx + 4, cy + 2), (cx + 6, cy + 8),
                   (cx, cy + 4), (cx - 6, cy + 8), (cx - 4, cy + 2), (cx - 8, cy - 2), (cx - 3, cy - 2)], fill=color)
    elif glyph == "edit":
        d.line([(cx - 6, cy + 6), (cx + 6, cy - 6)], fill=color, width=3)
    else:  # a letter in a circle
        d.ellipse([cx - 9, cy - 9, cx + 9, cy + 9], outline=color, width=2)
        t = (glyph[:1] or "?").upper()
        d.text((cx, cy), t, font=font(11), fill=color, anchor="mm")


def render(frame: Frame, accent: str = "#007aff", platform: str = "ios") -> Image.Image:
    img = Image.new("RGB", (frame.width, frame.height), frame.background)
    d = _Draw(img)
    # status bar
    d.text((10, 2), "9:41", font=font(12), fill="#111111")
    d.rectangle([frame.width - 34, 5, frame.width - 12, 13], outline="#111111")
    for e in frame.elements:
        _draw(d, e, accent, img)
    if platform == "ios":
        w = frame.width
        d.rounded_rectangle([w // 2 - 60, frame.height - 9, w // 2 + 60, frame.height - 4], radius=3, fill="#111111")
    return img


def _draw(d: ImageDraw.ImageDraw, e: Element, accent: str, img: Image.Image) -> None:
    x0, y0, x1, y1 = e.bounds
    k = e.kind
    if k == "bar":
        d.rectangle([x0, y0, x1, y1], fill=e.data.get("bg", "#f7f7f8"))
        d.line([(x0, y1 - 1 if not e.data.get("line") else y0), (x1, y1 - 1 if not e.data.get("line") else y0)],
               fill="#d0d0d0")
    elif k == "text":
        size = SIZES.get(e.style, 14)
        color = e.data.get("fg") or e.data.get("color") or ("#666666" if e.style == "caption" else "#111111")
        f = font(size)
        if e.style == "wrap":
            words, line, yy = e.label.split(), "", y0
            for wd in words:
                t = (line + " " + wd).strip()
                if d.textlength(t, font=f) > (x1 - x0) and line:
                    d.text((x0, yy), line, font=f, fill=color)
                    yy += 20
                    line = wd
                else:
                    line = t
            d.text((x0, yy), line, font=f, fill=color)
        elif e.style == "toast":
            d.rounded_rectangle([x0, y0, x1, y1], radius=16, fill="#333333")
            d.text(((x0 + x1) // 2, (y0 + y1) // 2), _fit(d, e.label, f, x1 - x0 - 16), font=f, fill="#ffffff",
                   anchor="mm")
        elif e.data.get("align") == "center":
            d.text(((x0 + x1) // 2, (y0 + y1) // 2), _fit(d, e.label, font(size), x1 - x0), font=f, fill=color,
                   anchor="mm")
        else:
            d.text((x0, (y0 + y1) // 2), _fit(d, e.label, f, x1 - x0), font=f, fill=color, anchor="lm")
    elif k == "button":
        st = e.style
        if st == "primary":
            d.rounded_rectangle([x0, y0, x1, y1], radius=10, fill=accent if e.enabled else "#c8c8c8")
            fill = "#ffffff"
        elif st == "destructive":
            d.rounded_rectangle([x0, y0, x1, y1], radius=10, fill="#ff3b30")
            fill = "#ffffff"
        elif st == "link":
            fill = accent
        else:
            d.rounded_rectangle([x0, y0, x1, y1], radius=10, outline="#d0d0d0", fill="#f4f4f6")
            fill = accent if e.enabled else "#999999"
        f = font(14)
        d.text(((x0 + x1) // 2, (y0 + y1) // 2), _fit(d, e.label, f, x1 - x0 - 8), font=f, fill=fill, anchor="mm")
    elif k == "icon":
        color = e.data.get("fg", accent) if e.enabled else "#aaaaaa"
        if e.data.get("text"):
            _icon(d, e.style, (x0, y0, x0 + 24, y1), color)
            d.text((x0 + 22, (y0 + y1) // 2), e.label, font=font(14), fill=color, anchor="lm")
        else:
            _icon(d, e.style, e.bounds, color if e.style not in ("sysback", "syshome", "sysoverview") else "#444444")
    elif k == "field":
        d.rounded_rectangle([x0, y0, x1, y1], radius=8, fill="#f1f1f4",
                            outline=accent if e.focused else "#d0d0d0", width=2 if e.focused else 1)
        val = e.value or ""
        if e.data.get("secure") and val:
            val = "*" * len(val)
        txt, col = (val, "#111111") if val else (e.data.get("placeholder", ""), "#999999")
        f = font(14)
        shown = _fit(d, txt, f, x1 - x0 - 24)
        d.text((x0 + 10, (y0 + y1) // 2), shown, font=f, fill=col, anchor="lm")
        if e.focused:
            cx = x0 + 10 + (d.textlength(shown, font=f) if val else 0) + 1
            d.line([(cx, y0 + 10), (cx, y1 - 10)], fill=accent, width=2)
    elif k == "toggle":
        d.text((x0, (y0 + y1) // 2), _fit(d, e.label, font(14), x1 - x0 - 70), font=font(14), fill="#111111",
               anchor="lm")
        on = e.value == "on"
        tx0, ty0 = x1 - 52, (y0 + y1) // 2 - 14
        d.rounded_rectangle([tx0, ty0, tx0 + 50, ty0 + 28], radius=14, fill="#34c759" if on else "#d9d9de")
        kx = tx0 + (24 if on else 2)
        d.ellipse([kx, ty0 + 2, kx + 24, ty0 + 26], fill="#ffffff")
        d.line([(x0, y1 - 1), (x1, y1 - 1)], fill="#eeeeee")
    elif k == "segment":
        sel = e.value == "selected"
        d.rounded_rectangle([x0 + 1, y0, x1 - 1, y1], radius=8, fill=accent if sel else "#eeeeef")
        d.text(((x0 + x1) // 2, (y0 + y1) // 2), _fit(d, e.label, font(13), x1 - x0 - 6), font=font(13),
               fill="#ffffff" if sel else "#333333", anchor="mm")
    elif k == "cell":
        right = e.data.get("text_right", x1 - 12)
        tx = x0 + 12
        if e.data.get("icon"):
            d.rounded_rectangle([x0 + 12, y0 + 10, x0 + 40, y0 + 38], radius=6, fill=e.data["icon"])
            tx = x0 + 50
        sub = e.data.get("subtitle")
        trailing = e.data.get("trailing") or ""
        tw = d.textlength(trailing, font=font(13)) + 8 if trailing else 0
        if sub:
            d.text((tx, y0 + 8), _fit(d, e.label, font(15), right - tx - tw), font=font(15), fill="#111111")
            d.text((tx, y0 + 28), _fit(d, sub, font(12), right - tx - tw), font=font(12), fill="#777777")
        else:
            d.text((tx, (y0 + y1) // 2), _fit(d, e.label, font(15), right - tx - tw), font=font(15), fill="#111111",
                   anchor="lm")
        if trailing:
            d.text((right, (y0 + y1) // 2), trailing, font=font(13), fill="#777777", anchor="rm")
        d.line([(tx, y1 - 1), (x1, y1 - 1)], fill="#e6e6e6")
    elif k == "tab":
        sel = e.value == "selected"
        col = e.data.get("accent", accent) if sel else "#8e8e93"
        cx = (x0 + x1) // 2
        _icon(d, e.style, (cx - 12, y0 + 4, cx + 12, y0 + 28), col)
        d.text((cx, y0 + 38), _fit(d, e.label, font(11), x1 - x0 - 4), font=font(11), fill=col, anchor="mm")
    elif k == "fab":
        d.rounded_rectangle([x0, y0, x1, y1], radius=16, fill=e.data.get("accent", accent))
        _icon(d, "plus", e.bounds, "#ffffff")
    elif k == "appicon":
        cx = (x0 + x1) // 2
        s = 28
        d.rounded_rectangle([cx - s, y0 + 2, cx + s, y0 + 2 + 2 * s], radius=14, fill=e.data.get("color", "#888"))
        d.text((cx, y0 + 2 + s), e.label[:2], font=font(20), fill="#ffffff", anchor="mm")
        d.text((cx, y1 - 8), _fit(d, e.label, font(11), x1 - x0), font=font(11), fill="#111111", anchor="mm")
    elif k == "picture":
        d.rounded_rectangle([x0, y0, x1, y1], radius=10, fill=e.data.get("color", "#cccccc"))
        cap = e.data.get("caption") or e.label
        d.text(((x0 + x1) // 2, (y0 + y1) // 2), _fit(d, cap, font(14), x1 - x0 - 8), font=font(14), fill="#ffffff",
               anchor="mm")
    elif k == "day":
        sel = e.value == "selected"
        if sel:
            d.ellipse([(x0 + x1) // 2 - 14, y0 + 1, (x0 + x1) // 2 + 14, y1 - 1], fill=accent)
        d.text(((x0 + x1) // 2, (y0 + y1) // 2), e.label, font=font(13), fill="#ffffff" if sel else "#111111",
               anchor="mm")
    elif k == "scrim":
        img.paste(Image.blend(img, Image.new("RGB", img.size, "#000000"), 0.35))
    elif k in ("dialog", "sheet"):
        d.rounded_rectangle([x0, y0, x1, y1 + (20 if k == "sheet" else 0)], radius=16, fill="#ffffff")
