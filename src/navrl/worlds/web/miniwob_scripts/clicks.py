"""Scripted solutions of MiniWoB++'s click tasks beyond the 23-task table (buttons, menus, tabs,
collapsibles, dialogs, checkbox lists).
Each reads the goal and the UI tree and returns the next Step."""
from __future__ import annotations

import re
from typing import Any

from navrl.observation import Observation
from navrl.worlds.web.miniwob_scripts.common import MiniWoBTask, Script, field, fill, nodes, q, quoted, tap
from navrl.worlds.web.miniwob_scripts.core import SCRIPTS as _CORE

__all__ = ["SCRIPTS", "TASKS"]


def _s_click_button_named(goal: str, obs: Observation, dev: Any = None) -> str:
    """Tap the button the goal names ("Click button ONE.")."""
    m = re.search(r"button (\w+)", goal)
    return f"Tap {q(m.group(1) if m else 'ONE')}"


def _s_click_tab(goal: str, obs: Observation, dev: Any = None) -> str:
    """Tap the tab the goal names ("Click on Tab #2.")."""
    m = re.search(r"(Tab #\d+)", goal)
    return f"Tap {q(m.group(1) if m else 'Tab #1')}"


def _s_click_quoted_button(goal: str, obs: Observation, dev: Any = None) -> str:
    """Tap the button whose label the goal quotes."""
    want = (quoted(goal) or [""])[0]
    hit = next((n for n in nodes(obs, "button") if n.label == want), None)
    return tap(obs, hit) if hit is not None else f"Tap {q(want)}"


def _s_click_dialog_2(goal: str, obs: Observation, dev: Any = None) -> str:
    """Tap the dialog's button the goal quotes (its "x" is the close button, labelled Close)."""
    want = (quoted(goal) or [""])[0]
    return 'Tap "Close"' if want == "x" else f"Tap {q(want)}"


_SYNONYMS = (
    "big large huge enormous gigantic", "small tiny little mini petite", "red scarlet crimson vermillion",
    "happy cheerful joyful gleeful delighted", "sad unhappy sorrowful miserable tragic", "angry mad furious irritated",
    "evil wicked immoral sinful corrupt depraved", "wrong incorrect mistaken erroneous", "real genuine actual",
    "strange odd peculiar unusual weird", "stop cease halt end finish",
    "scared terrified panicked fearful frightened afraid", "quiet calm peaceful serene mild", "old aged archaic",
    "love like adore favor", "kill murder assassinate", "keep retain preserve sustain maintain",
    "hide conceal camouflage", "hate despise loathe detest dislike", "funny humorous amusing comical laughable",
    "fat fleshy plump chubby", "stupid dumb dull unwise", "delicious savory delectable appetizing",
    "cut slice carve chop", "brave courageous fearless", "begin start initiate launch", "answer reply response",
    "television televisions TV TVs", "house home houses homes", "fire flame fires flames", "pig pork swine",
    "rabbit rabbits bunny bunnies", "car cars automobile automobiles vehicle vehicles", "water",
)
"""click-checkboxes-soft's synonym groups (the page's own list; a word is in one group only)."""
_GROUP = {w: i for i, g in enumerate(_SYNONYMS) for w in g.split()}


def _s_click_checkboxes_soft(goal: str, obs: Observation, dev: Any = None) -> str:
    """Tick exactly the check boxes whose word is a synonym of a named word (the synonyms are
    the page's fixed list, world knowledge rather than anything on screen), then Submit."""
    m = re.match(r"Select words similar to (.*) and click Submit\.?$", goal.strip())
    want = {_GROUP.get(w.strip(), -1) for w in m.group(1).split(",")} if m else set()
    for n in nodes(obs, "checkbox"):
        if (n.value == "on") != (_GROUP.get(n.label, -2) in want):
            return tap(obs, n)
    return 'Tap "Submit"'


def _s_click_collapsible(goal: str, obs: Observation, dev: Any = None) -> str:
    """Open the one section (its header is the tab that is not Submit), then Submit."""
    tabs = [n for n in nodes(obs, "tab") if n.label != "Submit"]
    if tabs and tabs[0].value != "selected":
        return tap(obs, tabs[0])
    return 'Tap "Submit"'


def _s_click_collapsible_2(goal: str, obs: Observation, dev: Any = None) -> str:
    """The quoted link where it shows, else the section after the open one (round the three)
    (the device waits for a section's slide to end before it reads the tree)."""
    want = (quoted(goal) or [""])[0]
    hit = next((n for n in obs.nodes if n.label == want and "tap" in n.actions and n.role != "tab"), None)
    if hit is not None:
        return tap(obs, hit)
    tabs = nodes(obs, "tab")
    sel = next((i for i, n in enumerate(tabs) if n.value == "selected"), -1)
    return tap(obs, tabs[(sel + 1) % len(tabs)]) if tabs else "Swipe up"


def _s_sign_agreement(goal: str, obs: Observation, dev: Any = None) -> str:
    """Cancel; or scroll the agreement to its end (the name field and Agree stay disabled till
    then), type the quoted name and press the quoted button."""
    if "Scroll to the bottom" not in goal:
        return 'Tap "Cancel"'
    name, button = (quoted(goal) + ["", ""])[:2]
    f = field(obs, "Name")
    if f is not None and not f.enabled:
        return 'Swipe up on "text field"'
    return fill(obs, "Name", name) or f"Tap {q(button)}"


def _s_click_pie(goal: str, obs: Observation, dev: Any = None) -> str:
    """Open the pie menu (its "+"), then tap the quoted item. Where the open menu ("-") shows no
    items, the tree was read before the wheel's animation ended (Raphael's own frame loop, which
    the device's settle does not see: 1 or 2 episodes in 20): a sideways swipe, which moves
    nothing and ends off the wheel's items, reads it again."""
    want = (quoted(goal) or [""])[0]
    hit = next((n for n in obs.nodes if n.label == want and n.role == "text"), None)
    if hit is not None:
        return tap(obs, hit)
    return "Swipe left" if any(n.label == "-" for n in obs.nodes) else 'Tap "+"'


def _minutes(s: str) -> int:
    m = re.fullmatch(r"\s*(\d+)h (\d+)m\s*", s)
    return int(m.group(1)) * 60 + int(m.group(2)) if m else -1


def _s_buy_ticket(goal: str, obs: Observation, dev: Any = None) -> str:
    """Tap the Book button of the cheapest / dearest / shortest / longest ticket (price on the
    button, duration in the text after "Duration:" above it)."""
    tickets, dur = [], -1
    for i, n in enumerate(obs.nodes):
        if n.role == "text" and _minutes(n.label) >= 0:
            dur = _minutes(n.label)
        m = re.fullmatch(r"Book for \$(\d+)", n.label)
        if m and n.role == "button":
            tickets.append((int(m.group(1)), dur, n))
    if not tickets:
        return "Swipe up"
    key = {"cheapest cost": lambda t: t[0], "most expensive cost": lambda t: -t[0],
           "shortest duration": lambda t: t[1], "longest duration": lambda t: -t[1]}
    want = next((k for k in key if k in goal), "cheapest cost")
    return tap(obs, min(tickets, key=key[want])[2])


SCRIPTS: dict[str, Script] = {
    "click-test-2": _s_click_button_named,
    "click-test-transfer": _s_click_button_named,
    "click-tab": _s_click_tab,
    "unicode-test": _s_click_quoted_button,
    "click-dialog-2": _s_click_dialog_2,
    "click-checkboxes-large": _CORE["click-checkboxes"],
    "click-checkboxes-transfer": _CORE["click-checkboxes"],
    "click-checkboxes-soft": _s_click_checkboxes_soft,
    "click-collapsible": _s_click_collapsible,
    "click-collapsible-nodelay": _s_click_collapsible,
    "click-collapsible-2": _s_click_collapsible_2,
    "click-collapsible-2-nodelay": _s_click_collapsible_2,
    "buy-ticket": _s_buy_ticket,
    "click-pie-nodelay": _s_click_pie,
    "sign-agreement": _s_sign_agreement,
}

TASKS: tuple[MiniWoBTask, ...] = (
    MiniWoBTask("click-test-2", 5, "tap the named one of two buttons"),
    MiniWoBTask("click-test-transfer", 5, "tap the named one of two buttons"),
    MiniWoBTask("click-tab", 5, "tap the named tab"),
    MiniWoBTask("unicode-test", 5, "tap the button whose (unicode) label the goal quotes"),
    MiniWoBTask("click-dialog-2", 5, "tap the dialog's named button (Cancel, OK or its x)"),
    MiniWoBTask("click-checkboxes-large", 20, "tick exactly the named check boxes (up to 12) and submit"),
    MiniWoBTask("click-checkboxes-transfer", 12, "tick exactly the named check boxes and submit"),
    MiniWoBTask("click-checkboxes-soft", 12, "tick exactly the check boxes whose words are synonyms of the named ones and submit"),
    MiniWoBTask("click-collapsible", 6, "open the one collapsible section and submit"),
    MiniWoBTask("click-collapsible-nodelay", 6, "open the one collapsible section and submit"),
    MiniWoBTask("click-collapsible-2", 10, "open sections of an accordion until the quoted link shows, then tap it"),
    MiniWoBTask("click-collapsible-2-nodelay", 8, "open sections of an accordion until the quoted link shows, then tap it"),
    MiniWoBTask("click-pie-nodelay", 8, "open a pie menu and tap the quoted item"),
    MiniWoBTask("buy-ticket", 6, "book the cheapest, dearest, shortest or longest of four tickets"),
    MiniWoBTask("sign-agreement", 50, "cancel, or scroll an agreement to its end, type the name and agree or cancel"),
)
"""One record per scripted task here: its step limit (the expert's steps with room to spare) and a line on what the script does."""
