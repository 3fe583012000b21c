"""Filmstrips: a row of screenshots with the step under each and tap/swipe marks on it."""
from __future__ import annotations

import textwrap
from dataclasses import dataclass

from PIL import Image, ImageDraw, ImageFont

from navrl.actions import Action, ActionKind

_VERDICT_COLORS = {"success": "#2e9d4f", "fail": "#d64541", "overcomplete": "#8e44ad", "justified": "#2e9d4f",
                   "unjustified": "#d64541", None: "#555555"}


@dataclass
class Frame:
    image: Image.Image
    step: str
    action: Action | None = None
    verdict: str | None = None


def mark_action(img: Image.Image, action: Action | None) -> Image.Image:
    """Draw a tap (ring), long press (double ring) or swipe (arrow) on a copy of ``img``."""
    img = img.convert("RGB").copy()
    if action is None:
        return img
    d = ImageDraw.Draw(img)
    red = "#ff2d55"
    if action.kind in (ActionKind.TAP, ActionKind.LONG_PRESS) and action.x is not None:
        x, y = action.x, action.y
        d.ellipse([x - 14, y - 14, x + 14, y + 14], outline=red, width=4)
        if action.kind is ActionKind.LONG_PRESS:
            d.ellipse([x - 22, y - 22, x + 22, y + 22], outline=red, width=2)
    elif action.kind is ActionKind.SWIPE:
        w, h = img.size
        if action.x2 is not None:
            x0, y0, x1, y1 = action.x, action.y, action.x2, action.y2
        else:
            x0, y0 = (action.x, action.y) if action.x is not None else (w // 2, h // 2)
            dx, dy = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}[action.direction]
            x1, y1 = x0 + dx * w // 4, y0 + dy * h // 5
        d.line([(x0, y0), (x1, y1)], fill=red, width=5)
        import math
        ang = math.atan2(y1 - y0, x1 - x0)
        for s in (2.6, -2.6):
            d.line([(x1, y1), (x1 + 16 * math.cos(ang + s), y1 + 16 * math.sin(ang + s))], fill=red, width=5)
    return img


def filmstrip(frames: list[Frame], title: str = "", thumb_width: int = 200, per_row: int = 6) -> Image.Image:
    """Compose ``frames`` into one image: thumbnails in rows, numbered, with the step text below."""
    if not frames:
        raise ValueError("no frames")
    f_txt = ImageFont.load_default(size=12)
    f_title = ImageFont.load_default(size=15)
    thumbs = []
    for fr in frames:
        im = mark_action(fr.image, fr.action)
        r = thumb_width / im.width
        thumbs.append(im.resize((thumb_width, int(im.height * r)), Image.LANCZOS))
    th = max(t.height for t in thumbs)
    cap_h = 64
    gap = 10
    cols = min(per_row, len(frames))
    rows = (len(frames) + per_row - 1) // per_row
    head = 34 if title else 8
    W = cols * (thumb_width + gap) + gap
    H = head + rows * (th + cap_h + gap)
    out = Image.new("RGB", (W, H), "#ffffff")
    d = ImageDraw.Draw(out)
    if title:
        d.text((gap, 8), textwrap.shorten(title, 140), font=f_title, fill="#111111")
    for i, (fr, t) in enumerate(zip(frames, thumbs)):
        r, c = divmod(i, per_row)
        x, y = gap + c * (thumb_width + gap), head + r * (th + cap_h + gap)
        out.paste(t, (x, y))
        d.rectangle([x, y, x + t.width - 1, y + t.height - 1], outline="#cccccc")
        col = _VERDICT_COLORS.get(fr.verdict, "#555555")
        d.text((x, y + th + 4), f"{i + 1}. " + (fr.verdict or ""), font=f_txt, fill=col)
        for j, line in enumerate(textwrap.wrap(fr.step, 30)[:3]):
            d.text((x, y + th + 20 + 14 * j), line, font=f_txt, fill="#222222")
    return out


def trajectory_filmstrip(tr, title: str) -> Image.Image:
    """The filmstrip of a trajectory that recorded frames (``RunnerConfig(record_frames=True)``)."""
    import io
    frames = []
    for i, png in enumerate(tr.frames):
        img = Image.open(io.BytesIO(png)).convert("RGB")
        if i < len(tr.steps):
            s = tr.steps[i]
            act = Action.from_text(s.action) if s.action and s.kind == "device" else None
            frames.append(Frame(img, s.step or "(unparseable)", act, s.verdict))
        else:
            end = f"END: {tr.terminal_verdict}" + (f" ({tr.answer})" if tr.answer else "")
            frames.append(Frame(img, end, None, "success" if tr.success else "fail"))
    return filmstrip(frames, title)
