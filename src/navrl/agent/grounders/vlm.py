"""The VLM grounder: a vision-language model on an OpenAI-compatible endpoint points at
the element a step names (docs/design.md §3).

The screenshot (optionally downscaled) and the step go to the model; its reply is read
for one point in any of the usual forms::

    (x, y)    [x, y]    x=.. y=..    x: .., y: ..    {"x": .., "y": ..}    {"point": [x, y]}
    <point>x y</point>    <point>(x, y)</point>    [x1, y1, x2, y2]  (a box: its centre)

``coords`` says how to read the numbers: ``pixel`` (pixels of the image sent),
``norm1`` (0-1), ``norm1000`` (0-1000, Qwen-VL style) or ``auto``: pixels unless the
reply says it is normalised ("normalized", "0-1000", "/1000") or every number is a
fraction in [0, 1]. A reply that declines ("NOT_FOUND", "cannot find", ...) or has no
point, or a point outside the screen, raises GroundingError: the grounder never guesses.

Steps that need no screen (home, ask user, complete, type, a direction-only swipe) are
answered without a call. An endpoint that stays unavailable is an infrastructure failure:
``DeviceError("grounder_unavailable")``, which the episode runner masks.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from navrl.actions import Action
from navrl.agent.grounders.base import Grounder, GroundingError
from navrl.agent.steps import StepCommand
from navrl.api import ChatClient, outages_as
from navrl.device.base import DeviceError
from navrl.observation import Observation

COORD_FORMATS = ("auto", "pixel", "norm1", "norm1000")

_INSTRUCTIONS = {
    "pixel": "Reply with the point as (x, y) in pixels of this {w}x{h} screenshot.",
    "auto": "Reply with the point as (x, y) in pixels of this {w}x{h} screenshot.",
    "norm1": "Reply with the point as (x, y), each normalised to 0-1 of the screenshot's width and height.",
    "norm1000": "Reply with the point as <point>x y</point>, each normalised to 0-1000 of the screenshot's "
                "width and height.",
}

SYSTEM = ("You are a GUI grounding model. Given a phone screenshot and one instruction, you locate the screen "
          "element the instruction refers to and answer with a single point inside it. If the element is not on "
          "the screen, reply exactly NOT_FOUND.")


@dataclass(frozen=True)
class VLMGrounderConfig:
    """How the VLM grounder asks and how it reads the answer."""

    coords: str = "auto"
    """How to read the model's numbers: auto | pixel | norm1 | norm1000 (see the module doc)."""
    instruction: str | None = None
    """The answer-format sentence of the prompt (``{w}``/``{h}`` are filled in); None: one matching ``coords``."""
    max_side: int | None = None
    """Downscale the screenshot so its longer side is at most this many pixels (points are scaled back)."""
    temperature: float = 0.0
    """Sampling temperature."""
    max_tokens: int = 128
    """Completion-token cap."""

    def __post_init__(self) -> None:
        if self.coords not in COORD_FORMATS:
            raise ValueError(f"coords must be one of {COORD_FORMATS}, got {self.coords!r}")
        if self.max_side is not None and self.max_side < 16:
            raise ValueError("max_side must be >= 16")


_NUM = r"[-+]?\d+(?:\.\d+)?"
_REFUSAL = re.compile(r"not[_\s-]?found|can(?:no|')t\s+(?:find|locate|see)|cannot\s+(?:find|locate|see)|"
                      r"unable\s+to\s+(?:find|locate)|no\s+such\s+element|does\s*n[o']t\s+exist|is\s*n[o']t\s+"
                      r"(?:visible|present|on)|not\s+(?:visible|present)\s+on", re.I)
_NORM_HINT = re.compile(r"normali[sz]ed|0\s*[-–~to]+\s*1000|/\s*1000|per\s*mille|relative\s+coordinates", re.I)
_PATTERNS = [
    re.compile(rf"<point>\s*[\(\[]?\s*({_NUM})\s*[,\s]\s*({_NUM})\s*[\)\]]?\s*</point>", re.I),
    re.compile(rf"\bx\s*[=:]\s*({_NUM})\s*[,;]?\s*\by\s*[=:]\s*({_NUM})", re.I),
    re.compile(rf"\[\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*\]"),
    re.compile(rf"\(\s*({_NUM})\s*,\s*({_NUM})\s*\)"),
    re.compile(rf"\[\s*({_NUM})\s*,\s*({_NUM})\s*\]"),
]


def _json_point(text: str) -> tuple[list[float], str] | None:
    for m in re.finditer(r"\{[^{}]*\}", text):
        try:
            d = json.loads(m.group(0))
        except json.JSONDecodeError:
            continue
        if not isinstance(d, dict):
            continue
        if isinstance(d.get("x"), (int, float)) and isinstance(d.get("y"), (int, float)):
            return [float(d["x"]), float(d["y"])], m.group(0)
        for k in ("point", "coordinates", "coordinate", "position", "click", "bbox", "box"):
            v = d.get(k)
            if isinstance(v, list) and len(v) in (2, 4) and all(isinstance(t, (int, float)) for t in v):
                return [float(t) for t in v], m.group(0)
    return None


def parse_point(text: str, size: tuple[int, int], coords: str = "auto") -> tuple[int, int]:
    """One point in pixels of an image of ``size`` (w, h) from a grounding reply.

    Raises GroundingError on a refusal, no point, or a point outside the image.
    """
    if coords not in COORD_FORMATS:
        raise ValueError(f"coords must be one of {COORD_FORMATS}")
    if not text or not text.strip():
        raise GroundingError("the grounding model gave an empty reply")
    if _REFUSAL.search(text):
        raise GroundingError(f"the grounding model did not find the element: {text.strip()[:80]!r}")
    found = _json_point(text)
    if found is None:
        for pat in _PATTERNS:
            m = pat.search(text)
            if m:
                found = ([float(g) for g in m.groups()], m.group(0))
                break
    if found is None:
        raise GroundingError(f"no point in the grounding reply: {text.strip()[:80]!r}")
    vals, matched = found
    if len(vals) == 4:   # a box: its centre
        vals = [(vals[0] + vals[2]) / 2, (vals[1] + vals[3]) / 2]
    x, y = vals
    w, h = size
    mode = coords
    if mode == "auto":
        if _NORM_HINT.search(text):
            mode = "norm1" if max(abs(x), abs(y)) <= 1.0 else "norm1000"
        elif 0 <= x <= 1 and 0 <= y <= 1 and ("." in matched):
            mode = "norm1"
        else:
            mode = "pixel"
    if mode == "norm1":
        lim, x, y = 1.0, x * w, y * h
    elif mode == "norm1000":
        lim, x, y = 1000.0, x / 1000 * w, y / 1000 * h
    else:
        lim = None
    if lim is not None and not (0 <= vals[0] <= lim and 0 <= vals[1] <= lim):
        raise GroundingError(f"normalised point {vals} is outside 0-{lim:g}")
    xi, yi = int(round(x)), int(round(y))
    if lim is not None:   # normalised 1.0 / 1000 is the far edge: clamp onto the last pixel
        xi, yi = min(max(xi, 0), w - 1), min(max(yi, 0), h - 1)
    if not (0 <= xi < w and 0 <= yi < h):
        raise GroundingError(f"point ({xi}, {yi}) is outside the {w}x{h} screenshot")
    return xi, yi


class VLMGrounder(Grounder):
    """Grounds tap, long press and targeted swipes with a VLM over :class:`~navrl.api.ChatClient`."""

    def __init__(self, client: ChatClient, config: VLMGrounderConfig | None = None):
        self.client = client
        self.cfg = config or VLMGrounderConfig()
        self.last_reply: str | None = None

    def __repr__(self) -> str:
        return f"VLMGrounder({self.client!r}, coords={self.cfg.coords!r})"

    def _image(self, obs: Observation):
        if not obs.has_screenshot:
            raise GroundingError("the observation has no screenshot for the VLM grounder")
        im = obs.screenshot
        if self.cfg.max_side and max(im.size) > self.cfg.max_side:
            s = self.cfg.max_side / max(im.size)
            im = im.resize((max(1, round(im.size[0] * s)), max(1, round(im.size[1] * s))))
        return im

    def locate(self, description: str, instruction: str, obs: Observation) -> tuple[int, int]:
        """Pixel point (of ``obs``'s screenshot) of the element ``description``."""
        im = self._image(obs)
        w, h = im.size
        fmt = (self.cfg.instruction or _INSTRUCTIONS[self.cfg.coords]).format(w=w, h=h)
        user = f"Instruction: {instruction}\nElement: {description}\n{fmt}\nIf it is not on the screen, reply NOT_FOUND."
        with outages_as(lambda e: DeviceError("grounder_unavailable", str(e))):
            r = self.client.chat([{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
                                 images=[im], temperature=self.cfg.temperature, max_tokens=self.cfg.max_tokens)
        self.last_reply = r.text
        x, y = parse_point(r.text, (w, h), self.cfg.coords)
        W, H = obs.screen_size
        if (w, h) != (W, H):
            x, y = min(W - 1, int(round(x * W / w))), min(H - 1, int(round(y * H / h)))
        return x, y

    def ground_command(self, cmd: StepCommand, obs: Observation) -> Action:
        a = self.episode_action(cmd)
        if a is not None:
            return a
        if cmd.kind == "type":
            if not cmd.text:
                raise GroundingError("Type needs text")
            return Action.type(cmd.text)
        if cmd.kind == "swipe" and not cmd.target:
            return Action.swipe(cmd.direction)
        if cmd.kind in ("tap", "long_press", "swipe"):
            desc = cmd.target or cmd.raw.strip()
            if not desc:
                raise GroundingError(f"{cmd.kind} needs a target")
            x, y = self.locate(desc, cmd.raw.strip() or desc, obs)
            if cmd.kind == "tap":
                return Action.tap(x, y)
            if cmd.kind == "long_press":
                return Action.long_press(x, y)
            if cmd.dest:  # Drag "A" to "B": B located as its own element
                x2, y2 = self.locate(cmd.dest, cmd.raw.strip(), obs)
                return Action.swipe(x=x, y=y, x2=x2, y2=y2)
            return Action.swipe(cmd.direction, x, y)
        raise GroundingError(f"cannot ground {cmd.kind}")
