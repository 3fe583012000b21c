"""Scripted solutions of MiniWoB++'s form and reading tasks beyond the 23-task table (dates,
times, tables, text to copy or transform, numbers to compute).
Each reads the goal and the UI tree and returns the next Step."""
from __future__ import annotations

import re
from typing import Any

from navrl.observation import Observation, UINode
from navrl.tasks.task import NoExpert
from navrl.worlds.web.miniwob_scripts.common import MiniWoBTask, Script, field, fill, nodes, q, quoted, tap
from navrl.worlds.web.miniwob_scripts.core import SCRIPTS as _CORE

__all__ = ["SCRIPTS", "TASKS"]


def _put(obs: Observation, node: UINode | None, text: str) -> str | None:
    """Tap ``node``, then type: the next step, or None once it holds ``text`` (fill, for a field
    whose label others share)."""
    if node is None or (node.value or "") == text:
        return None
    return tap(obs, node) if not node.focused else f"Type {q(text)}"


def _inputs(obs: Observation) -> list[UINode]:
    """The one-line text fields (not the text areas)."""
    return [n for n in nodes(obs, "textfield") if n.description != "textarea"]


def _texts(obs: Observation) -> list[UINode]:
    """The text nodes below the instruction (the first node)."""
    return [n for n in obs.nodes[1:] if n.role == "text"]


def _s_login_user_popup(goal: str, obs: Observation, dev: Any = None) -> str:
    """login-user, closing the session popup (its Cancel) when focusing a field brings it up."""
    if any(n.label == "Cancel" and n.actions for n in obs.nodes):
        return 'Tap "Cancel"'
    user, pw = quoted(goal)[:2]
    return fill(obs, "Username", user) or fill(obs, "Password", pw, secret=True) or 'Tap "OK"'


def _s_read_table(goal: str, obs: Observation, dev: Any = None) -> str:
    """Type the table's value beside the asked key (the cell after it), then Submit."""
    m = re.search(r"value of (.+?) into", goal)
    cells = [n.label for n in _texts(obs)]
    key = m.group(1) if m else ""
    val = cells[cells.index(key) + 1] if key in cells[:-1] else ""
    return fill(obs, "text field", val) or 'Tap "Submit"'


def _s_read_table_2(goal: str, obs: Observation, dev: Any = None) -> str:
    """Fill each field with the table's value beside the key that labels it, then Submit."""
    cells = [n.label for n in _texts(obs)]
    for f in _inputs(obs):
        key = f.label.rstrip(":").strip()
        if key in cells[:-1]:
            step = _put(obs, f, cells[cells.index(key) + 1])
            if step:
                return step
    return 'Tap "Submit"'


def _s_find_word(goal: str, obs: Observation, dev: Any = None) -> str:
    """Type the paragraph's k-th word (its letters: the page ignores punctuation), then Submit."""
    m = re.search(r"the (\d+)(?:st|nd|rd|th) word", goal)
    k = int(m.group(1)) if m else 1
    para = max(_texts(obs), key=lambda n: len(n.label), default=None)
    words = [re.sub(r"[^A-Za-z]", "", w) for w in (para.label.split() if para else [])]
    return fill(obs, "text field", words[k - 1] if len(words) >= k else "") or 'Tap "Submit"'


_MOVIE_KEYS = (("genre", "genre"), ("director", "director"), ("year", "year"), ("date", "year"))


def _s_movie_search(goal: str, obs: Observation, dev: Any = None) -> str:
    """Fill genre, director and year into the fields their labels name (a label stands before
    its field, or in one layout after it), then the form's button."""
    m = re.search(r"Search for (\S+) movies directed by (.+?) from year (\d+)", goal)
    want = dict(zip(("genre", "director", "year"), m.groups())) if m else {}

    ns = list(obs.nodes)

    def key(i: int) -> str | None:   # node 0 is the instruction, which names them all
        low = ns[i].label.lower() if 0 < i < len(ns) and ns[i].role == "text" else ""
        return next((k for w, k in _MOVIE_KEYS if w in low), None)

    fields = [i for i, n in enumerate(ns) if n.role == "textfield"]
    after = bool(fields) and key(fields[0] - 1) is None
    for i in fields:
        k = key(i + 1 if after else i - 1)
        step = _put(obs, ns[i], want.get(k, "")) if k else None
        if step:
            return step
    last = max(i for i, n in enumerate(ns) if n.actions and n.role != "textfield")
    return tap(obs, ns[last])


def _s_form_sequence_2(goal: str, obs: Observation, dev: Any = None) -> str:
    """Check the k-th radio button, type the number into the j-th field, then Submit."""
    m = re.search(r"the (\d)\w\w radio button.*?number \"(-?\d+)\" into the (\d)\w\w textbox", goal)
    r, num, t = (int(m.group(1)), m.group(2), int(m.group(3))) if m else (1, "", 1)
    radios, fields = nodes(obs, "radio"), _inputs(obs)
    if len(radios) >= r and radios[r - 1].value != "on":
        return tap(obs, radios[r - 1])
    return (_put(obs, fields[t - 1], num) if len(fields) >= t else None) or 'Tap "Submit"'


def _s_simple_arithmetic(goal: str, obs: Observation, dev: Any = None) -> str:
    """Type the answer of "a op b =" (computed: the result is no span of the page), then Submit."""
    prob = next((n.label for n in _texts(obs) if re.match(r"\d+ [-+x] \d+ =", n.label)), "")
    m = re.match(r"(\d+) ([-+x]) (\d+)", prob)
    a, op, b = (int(m.group(1)), m.group(2), int(m.group(3))) if m else (0, "+", 0)
    ans = a + b if op == "+" else a - b if op == "-" else a * b
    return fill(obs, "text field", str(ans)) or 'Tap "Submit"'


def _s_simple_algebra(goal: str, obs: Observation, dev: Any = None) -> str:
    """Type x solving "x op d = a" or "d op x = a" (computed: no span of the page), then Submit."""
    prob = next((n.label for n in _texts(obs) if "=" in n.label and re.search(r"\d", n.label)), "")
    m = re.match(r"\s*(x|\d+) ([-+]) (x|\d+) = (-?\d+)", prob)
    if m is None:
        return 'Tap "Submit"'
    left, op, right, a = m.group(1), m.group(2), m.group(3), int(m.group(4))
    d = int(right if left == "x" else left)
    ans = a - d if op == "+" else a + d if left == "x" else d - a
    return fill(obs, "text field", str(ans)) or 'Tap "Submit"'


def _s_text_transform(goal: str, obs: Observation, dev: Any = None) -> str:
    """Type the skewed characters (one text node each, joined: no single span), then Submit."""
    text = "".join(n.label for n in _texts(obs) if len(n.label) == 1)
    return fill(obs, "text field", text) or 'Tap "Submit"'


def _s_copy_paste(goal: str, obs: Observation, dev: Any = None) -> str:
    """Type the (k-th) text area's text into the text input, then Submit."""
    m = re.search(r"the (\d)\w\w text area", goal)
    areas = [n for n in nodes(obs, "textfield") if n.description == "textarea"]
    k = int(m.group(1)) if m else 1
    text = (areas[k - 1].value or "") if len(areas) >= k else ""
    return _put(obs, next(iter(_inputs(obs)), None), text) or 'Tap "Submit"'


def _s_scroll_text(goal: str, obs: Observation, dev: Any = None) -> str:
    """Type the text area's last word (the UI tree holds its whole text), then Submit."""
    area = next((n for n in nodes(obs, "textfield") if n.description == "textarea"), None)
    words = (area.value or "").split() if area is not None else []
    word = re.sub(r"[^A-Za-z0-9]", "", words[-1]) if words else ""
    return _put(obs, next(iter(_inputs(obs)), None), word) or 'Tap "Submit"'


_SCROLLED = """() => { const a = document.getElementById('text-area');
    return [a.scrollTop, a.scrollHeight - a.clientHeight - a.scrollTop]; }"""


def _s_scroll_text_2(goal: str, obs: Observation, dev: Any = None) -> str:
    """Swipe the text area to its bottom (up) or top (down), then Submit (how far it is scrolled
    is read off the page: the UI tree does not show it)."""
    area = next((n for n in nodes(obs, "textfield") if n.description == "textarea"), None)
    if area is None or dev is None:
        raise NoExpert("scroll-text-2's scripted solution reads the page (how far the text area is scrolled)")
    above, below = dev.evaluate(_SCROLLED)
    if "bottom" in goal and below > 2:
        return f"Swipe up on {q(area.label)}"
    if "top" in goal and above > 2:
        return f"Swipe down on {q(area.label)}"
    return 'Tap "Submit"'


_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")


def _s_choose_date(goal: str, obs: Observation, dev: Any = None) -> str:
    """Open the date picker, page to the goal's month (Prev / Next), tap its day, then Submit."""
    m = re.search(r"(\d\d)/(\d\d)/(\d{4})", goal)
    if m is None:
        return 'Tap "Submit"'
    f = next(iter(_inputs(obs)), None)
    if f is not None and (f.value or "") == m.group(0):
        return 'Tap "Submit"'
    labels = [n.label for n in obs.nodes]
    shown = next((i for i, x in enumerate(labels[:-1]) if x in _MONTHS and labels[i + 1].isdigit()), None)
    if shown is None:                                    # the picker is closed
        return tap(obs, f) if f is not None else 'Tap "Submit"'
    have = int(labels[shown + 1]) * 12 + _MONTHS.index(labels[shown])
    want = int(m.group(3)) * 12 + int(m.group(1)) - 1
    if have != want:
        return 'Tap "Prev"' if want < have else 'Tap "Next"'
    day = next((n for n in nodes(obs, "link") if n.label == str(int(m.group(2)))), None)
    return tap(obs, day) if day is not None else 'Tap "Submit"'


def _s_use_spinner(goal: str, obs: Observation, dev: Any = None) -> str:
    """Step the spinner's value to the goal's number with its up / down arrows (the page
    refuses typed keys), then Submit."""
    m = re.search(r"Select (-?\d+) with the spinner", goal)
    f = field(obs)
    if m is None or f is None:
        return 'Tap "Submit"'
    try:
        have = int(f.value or "0")
    except ValueError:
        have = 0
    want = int(m.group(1))
    return 'Tap "up"' if have < want else 'Tap "down"' if have > want else 'Tap "Submit"'


def _s_enter_date_time(goal: str, obs: Observation, dev: Any = None) -> str:
    """Type the goal's date (MM/DD/YYYY) or time (h:mm AM/PM) into the date / time field, as
    written in the goal, then Submit (the field shows a time with a leading zero: 09:37 PM)."""
    m = re.search(r"Enter (\S+(?: [AP]M)?) as the (?:date|time)", goal)
    f = field(obs)
    if m is None or f is None:
        return 'Tap "Submit"'
    want = m.group(1)
    if (f.value or "").lstrip("0") == want.lstrip("0"):
        return 'Tap "Submit"'
    return f"Tap {q(f.label)}" if not f.focused else f"Type {q(want)}"


def _s_generate_number(goal: str, obs: Observation, dev: Any = None) -> str:
    """Generate until the number shown meets the goal (less / greater than, odd, even), then Submit."""
    ns = list(obs.nodes)
    gen = next((i for i, n in enumerate(ns) if n.label == "Generate"), 0)
    shown = ns[gen - 1].label if gen > 0 else "-"
    if not re.fullmatch(r"-?\d+", shown):
        return 'Tap "Generate"'
    v = int(shown)
    m = re.search(r"(less|greater) than (\d+)", goal)
    if m:
        ok = v < int(m.group(2)) if m.group(1) == "less" else v > int(m.group(2))
    else:
        ok = (v % 2 == 1) == ("odd" in goal)
    return 'Tap "Submit"' if ok else 'Tap "Generate"'


SCRIPTS: dict[str, Script] = {
    "enter-text-dynamic": _CORE["enter-text"],
    "login-user-popup": _s_login_user_popup,
    "use-autocomplete-nodelay": _CORE["use-autocomplete"],
    "read-table": _s_read_table,
    "read-table-2": _s_read_table_2,
    "find-word": _s_find_word,
    "multi-layouts": _s_movie_search,
    "multi-orderings": _s_movie_search,
    "form-sequence-2": _s_form_sequence_2,
    "simple-arithmetic": _s_simple_arithmetic,
    "simple-algebra": _s_simple_algebra,
    "text-transform": _s_text_transform,
    "copy-paste": _s_copy_paste,
    "copy-paste-2": _s_copy_paste,
    "scroll-text": _s_scroll_text,
    "scroll-text-2": _s_scroll_text_2,
    "generate-number": _s_generate_number,
    "choose-date-easy": _s_choose_date,
    "choose-date": _s_choose_date,
    "choose-date-nodelay": _s_choose_date,
    "choose-date-medium": _s_choose_date,
    "use-spinner": _s_use_spinner,
    "enter-date": _s_enter_date_time,
    "enter-time": _s_enter_date_time,
}

TASKS: tuple[MiniWoBTask, ...] = (
    MiniWoBTask("enter-text-dynamic", 8, "type the given text into a field that moves about, and submit"),
    MiniWoBTask("login-user-popup", 12, "log in with a username and password, closing a popup that may come up"),
    MiniWoBTask("use-autocomplete-nodelay", 10, "pick an item from an autocomplete list (no delay)"),
    MiniWoBTask("read-table", 8, "type the table's value of the named key and submit"),
    MiniWoBTask("read-table-2", 10, "fill two fields with the table's values of their keys and submit"),
    MiniWoBTask("find-word", 8, "type the paragraph's k-th word and submit"),
    MiniWoBTask("multi-layouts", 12, "fill a movie search form (one of five layouts) and submit"),
    MiniWoBTask("multi-orderings", 12, "fill a movie search form whose rows are shuffled and submit"),
    MiniWoBTask("form-sequence-2", 8, "check the k-th radio, type a number into the j-th field and submit"),
    MiniWoBTask("simple-arithmetic", 8, "type the result of a one-digit sum, difference or product and submit"),
    MiniWoBTask("simple-algebra", 8, "type x solving a linear equation and submit"),
    MiniWoBTask("text-transform", 8, "type the skewed characters shown and submit"),
    MiniWoBTask("copy-paste", 8, "type a text area's text into the text input and submit"),
    MiniWoBTask("copy-paste-2", 8, "type the k-th text area's text into the text input and submit"),
    MiniWoBTask("scroll-text", 8, "type the last word of a text area and submit"),
    MiniWoBTask("scroll-text-2", 12, "swipe a text area to its bottom or top and submit"),
    MiniWoBTask("generate-number", 20, "generate numbers until one meets the goal, then submit"),
    MiniWoBTask("choose-date-easy", 16, "pick a December day in a date picker and submit"),
    MiniWoBTask("choose-date", 20, "pick a day of 2016 in a date picker, paging back month by month, and submit"),
    MiniWoBTask("choose-date-nodelay", 20, "pick a day of 2016 in a date picker, paging back month by month, and submit"),
    MiniWoBTask("choose-date-medium", 20, "pick a day of late 2016 in an animated date picker, paging back, and submit"),
    MiniWoBTask("use-spinner", 16, "step a spinner to the given number with its arrows and submit"),
    MiniWoBTask("enter-date", 6, "type a date into a date field and submit"),
    MiniWoBTask("enter-time", 6, "type a time into a time field and submit"),
)
"""One record per scripted task here: its step limit (the expert's steps with room to spare) and a line on what the script does."""
