"""Scripted solutions of MiniWoB++'s multi-step tasks beyond the 23-task table (tabs to switch,
email-inbox's natural-language variants, lists to page through, sequences).
Each reads the goal and the UI tree and returns the next Step."""
from __future__ import annotations

import re
from typing import Any

from navrl.observation import Observation
from navrl.tasks.task import NoExpert
from navrl.worlds.web.miniwob_scripts import core
from navrl.worlds.web.miniwob_scripts.common import MiniWoBTask, Script, field, fill, nodes, q, quoted, tap

__all__ = ["SCRIPTS", "TASKS"]

_EMAIL_FIELDS = "() => core.currentFields || {}"
_EMAIL_GOALS = {
    "delete": "Find the email by {by} and click the trash icon to delete it.",
    "star": "Find the email by {by} and click the star icon to mark it as important.",
    "reply": 'Find the email by {by} and reply to them with the text "{message}".',
    "forward": "Find the email by {by} and forward that email to {to}.",
}


def _s_email_inbox_nl(goal: str, obs: Observation, dev: Any = None) -> str:
    """email-inbox worded freely: the page's own fields (sender, task, recipient or text; read off
    the page, as some wordings swap the two names) put in email-inbox's wording, then its script."""
    if dev is None:
        raise NoExpert("email-inbox's natural-language variants' scripted solution reads the page's fields")
    f = dev.evaluate(_EMAIL_FIELDS)
    task = f.get("task") or "forward"    # email-inbox-forward-nl's fields name no task
    return core.SCRIPTS["email-inbox"](_EMAIL_GOALS[task].format_map(f), obs, dev)


def _s_odd_or_even(goal: str, obs: Observation, dev: Any = None) -> str:
    """Each row's Odd or Even button in turn, then Submit: the last tapped button keeps its focus,
    which says how far the rows are done."""
    rows, row = [], []        # (Odd, number, Even) per row, in the page's order
    for n in obs.nodes:
        if n.role == "button" and n.label in ("Odd", "Even"):
            row.append(n)
        elif row and re.fullmatch(r"-?\d+", n.label):
            row.append(n)
        if len(row) == 3:
            rows.append(row)
            row = []
    done = next((i + 1 for i, r in enumerate(rows) if r[0].focused or r[2].focused), 0)
    if done < len(rows):
        odd, num, even = rows[done]
        return tap(obs, odd if int(num.label) % 2 else even)
    return 'Tap "Submit"'


def _s_phone_book(goal: str, obs: Observation, dev: Any = None) -> str:
    """Page through the contacts with ">" until the named one shows, then tap the asked property
    (the link after its "Phone:", "Email:" or "Address:")."""
    m = re.match(r"Find (.+) in the contact book and click on their (\w+)", goal.strip())
    name, prop = (m.group(1), m.group(2)) if m else ("", "phone")
    if any(n.role == "header" and n.label == name for n in obs.nodes):
        after = {"phone": "Phone:", "email": "Email:", "address": "Address:"}.get(prop, "Phone:")
        at = next((i for i, n in enumerate(obs.nodes) if n.label == after), None)
        hit = next((n for n in obs.nodes[at + 1:] if "tap" in n.actions), None) if at is not None else None
        if hit is not None:
            return tap(obs, hit)
    return 'Tap ">"'


_DIGITS = {     # number-checkboxes' 7x4 patterns (rows of the page's PATTERNS), 1 = ticked
    "0": "0110 1001 1001 1001 1001 1001 0110", "1": "0010 0110 0010 0010 0010 0010 0010",
    "2": "0110 1001 1001 0010 0100 1000 1111", "3": "0110 1001 0001 0110 0001 1001 0110",
    "4": "1000 1010 1010 1111 0010 0010 0010", "5": "1111 1000 1000 1110 0001 1001 0110",
    "6": "0110 1001 1000 1110 1001 1001 0110", "7": "1111 1001 0001 0010 0010 0100 0100",
    "8": "0110 1001 1001 0110 1001 1001 0110", "9": "0110 1001 1001 0111 0001 1001 0110",
}


def _s_number_checkboxes(goal: str, obs: Observation, dev: Any = None) -> str:
    """Tick the digit's pattern in the 7x4 grid of check boxes, then Submit. The example is a
    picture the UI tree does not show: the pattern is the digit's shape, as the page draws it."""
    digit = (quoted(goal) or ["0"])[0]
    want = _DIGITS.get(digit, _DIGITS["0"]).replace(" ", "")
    boxes = nodes(obs, "checkbox")
    for box, w in zip(boxes, want):
        if (box.value == "on") != (w == "1"):
            return tap(obs, box)
    return 'Tap "Submit"'


SCRIPTS: dict[str, Script] = {
    **{f"click-tab-2-{v}": core.SCRIPTS["click-tab-2"] for v in ("easy", "medium", "hard")},
    "email-inbox-star-reply": core.SCRIPTS["email-inbox"],
    **{f"email-inbox-{v}": _s_email_inbox_nl for v in ("nl-turk", "forward-nl", "forward-nl-turk")},
    "odd-or-even": _s_odd_or_even,
    "phone-book": _s_phone_book,
    "number-checkboxes": _s_number_checkboxes,
}

TASKS: tuple[MiniWoBTask, ...] = (
    MiniWoBTask("click-tab-2-easy", 5, "tap the named link on the one tab"),
    MiniWoBTask("click-tab-2-medium", 6, "switch between two tabs until the named link shows, then tap it"),
    MiniWoBTask("click-tab-2-hard", 10, "switch between tabs until the named link shows, then tap it"),
    MiniWoBTask("email-inbox-star-reply", 12, "open a sender's email, then star it or reply with a text"),
    MiniWoBTask("email-inbox-nl-turk", 12, "email-inbox worded freely: delete, star, reply to or forward a sender's email"),
    MiniWoBTask("email-inbox-forward-nl", 12, "email-inbox worded freely: forward a sender's email to someone"),
    MiniWoBTask("email-inbox-forward-nl-turk", 12, "email-inbox worded freely: forward a sender's email to someone"),
    MiniWoBTask("odd-or-even", 8, "mark each of three numbers Odd or Even, then submit"),
    MiniWoBTask("phone-book", 10, "page through contacts to the named one and tap its phone, email or address"),
    MiniWoBTask("number-checkboxes", 20, "tick the check boxes that draw the asked digit, then submit"),
)
"""One record per scripted task here: its step limit (the expert's steps with room to spare) and a line on what the script does."""
