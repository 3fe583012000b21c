"""Scripted solutions of the 23-task table's tasks (docs/results/miniwob/results.md) and the
email-inbox variants. Each reads the goal and the UI tree and returns the next Step."""
from __future__ import annotations

import re
from typing import Any, Callable

from navrl.observation import Observation, UINode
from navrl.tasks.task import NoExpert
from navrl.worlds.web.miniwob_scripts.common import MiniWoBTask, Script, field, fill, nodes, q, quoted, tap

__all__ = ["SCRIPTS", "TASKS"]


def _s_click_test(goal: str, obs: Observation, dev: Any = None) -> str:
    return 'Tap "Click Me!"'


def _s_click_quoted(goal: str, obs: Observation, dev: Any = None) -> str:
    return f"Tap {q(quoted(goal)[0])}"


def _s_focus_text(goal: str, obs: Observation, dev: Any = None) -> str:
    return 'Tap "text field"'


def _s_click_dialog(goal: str, obs: Observation, dev: Any = None) -> str:
    return 'Tap "Close"'


def _s_enter_text(goal: str, obs: Observation, dev: Any = None) -> str:
    text = quoted(goal)[0]
    return fill(obs, "text field", text) or 'Tap "Submit"'


def _s_login_user(goal: str, obs: Observation, dev: Any = None) -> str:
    user, pw = quoted(goal)[:2]
    return fill(obs, "Username", user) or fill(obs, "Password", pw, secret=True) or 'Tap "Login"'


def _s_enter_password(goal: str, obs: Observation, dev: Any = None) -> str:
    pw = quoted(goal)[0]
    fields = nodes(obs, "textfield")
    for f in fields:
        if (f.value or "") != "\u2022" * len(pw):
            return f"Tap {q(f.label)}" if not f.focused else f"Type {q(pw)}"
    return 'Tap "Submit"'


def _s_click_checkboxes(goal: str, obs: Observation, dev: Any = None) -> str:
    m = re.match(r"Select (.*) and click Submit\.?$", goal.strip())
    want = set() if not m or m.group(1) == "nothing" else {w.strip() for w in m.group(1).split(",")}
    for n in nodes(obs, "checkbox"):
        if (n.value == "on") != (n.label in want):
            return f"Tap {q(n.label)}"
    return 'Tap "Submit"'


def _s_click_option(goal: str, obs: Observation, dev: Any = None) -> str:
    m = re.match(r"Select (.*) and click Submit\.?$", goal.strip())
    want = m.group(1).strip() if m else ""
    for n in nodes(obs, "radio"):
        if n.label == want and n.value != "on":
            return f"Tap {q(n.label)}"
    return 'Tap "Submit"'


def _s_choose_list(goal: str, obs: Observation, dev: Any = None) -> str:
    m = re.match(r"Select (.*) from the list and click Submit\.?$", goal.strip())
    want = m.group(1).strip() if m else ""
    sel = next(iter(nodes(obs, "combobox")), None)
    if sel is not None and sel.value == want:
        return 'Tap "Submit"'
    options = [n for n in obs.nodes if n.role == "option"]
    if options:
        if any(n.label == want for n in options):
            return f"Tap {q(want)}"
        lists = [n for n in obs.nodes if n.role == "list" and "swipe" in n.actions and n.label]
        return f"Swipe up on {q(lists[0].label)}" if lists else "Swipe up"
    return f"Tap {q(sel.label if sel is not None else 'list')}"


def _s_use_autocomplete(goal: str, obs: Observation, dev: Any = None) -> str:
    qs = quoted(goal)
    start, end = qs[0], (qs[1] if len(qs) > 1 else "")
    f = field(obs)
    val = (f.value or "") if f is not None else ""
    ok = val.startswith(start) and val.endswith(end) and len(val) > len(start)
    if ok:
        return 'Tap "Submit"'
    picks = [n for n in obs.nodes if "tap" in n.actions and n.role in ("text", "option", "menuitem")
             and n.label.startswith(start) and n.label.endswith(end) and n.label != start]
    if picks:
        return f"Tap {q(picks[0].label)}"
    if f is not None and not f.focused:
        return f"Tap {q(f.label)}"
    if not val:
        return f"Type {q(start)}"
    return f"Tap {q(f.label) if f is not None else q('Tags')}"


def _s_focus_text_2(goal: str, obs: Observation, dev: Any = None) -> str:
    m = re.search(r"the (\d+)(?:st|nd|rd|th) input", goal)
    fields = nodes(obs, "textfield")
    k = int(m.group(1)) if m else 1
    return tap(obs, fields[k - 1]) if len(fields) >= k else 'Tap "text field"'


def _s_enter_text_2(goal: str, obs: Observation, dev: Any = None) -> str:
    text = quoted(goal)[0]
    text = text.lower() if "lower case" in goal else text.upper()
    return fill(obs, "text field", text) or 'Tap "Submit"'


_WIDGETS: dict[str, Callable[[UINode], bool]] = {
    "radio": lambda n: n.role == "radio",
    "checkbox": lambda n: n.role == "checkbox",
    "button": lambda n: n.role == "button",
    "textarea": lambda n: n.role == "textfield" and n.description == "textarea",
    "text": lambda n: n.role == "textfield" and n.description != "textarea",
}
"""click-widget's widget types (the page's data-type) as navrl's UI tree shows them."""


def _s_click_widget(goal: str, obs: Observation, dev: Any = None) -> str:
    want = _WIDGETS.get((quoted(goal) or [""])[0])
    hits = [n for n in obs.nodes if want is not None and n.actions and want(n)]
    return tap(obs, hits[0]) if hits else 'Tap "Submit"'


def _s_click_button_sequence(goal: str, obs: Observation, dev: Any = None) -> str:
    """ONE, then TWO: the first button keeps the focus its tap gave it, which says it was tapped."""
    names = re.findall(r"button (\w+)", goal)[:2]
    buttons = {n.label: n for n in nodes(obs, "button")}
    first, second = (buttons.get(x) for x in (names + ["", ""])[:2])
    if first is not None and not first.focused:
        return tap(obs, first)
    return tap(obs, second) if second is not None else 'Tap "Submit"'


def _s_click_tab_2(goal: str, obs: Observation, dev: Any = None) -> str:
    """The link where it shows, else the tab after the selected one (round the three)."""
    want = (quoted(goal) or [""])[0]
    links = [n for n in obs.nodes if n.label == want and "tap" in n.actions and n.role != "tab"]
    if links:
        return tap(obs, links[0])
    tabs = nodes(obs, "tab")
    sel = next((i for i, n in enumerate(tabs) if n.value == "selected"), -1)
    return tap(obs, tabs[(sel + 1) % len(tabs)]) if tabs else "Swipe up"


_TREE_FOLDERS = """() => Array.from(document.querySelectorAll('#tree span'))
    .filter(s => s.offsetParent !== null)
    .map(s => [s.textContent, s.parentElement.classList.contains('expandable')])"""


def _s_navigate_tree(goal: str, obs: Observation, dev: Any = None) -> str:
    """The named item where it shows, else the first folder still closed (read off the page:
    files and folders look alike in the UI tree)."""
    want = (quoted(goal) or [""])[0]
    hit = next((n for n in obs.nodes if n.label == want and n.actions), None)
    if hit is not None:
        return tap(obs, hit)
    if dev is None:
        raise NoExpert("navigate-tree's scripted solution reads the page (which folders are closed)")
    shown = dev.evaluate(_TREE_FOLDERS)
    seen: dict[str, int] = {}
    for label, closed in shown:
        seen[label] = seen.get(label, 0) + 1
        if closed:
            same = [n for n in obs.nodes if n.label == label]
            return tap(obs, same[seen[label] - 1]) if len(same) >= seen[label] else f"Tap {q(label)}"
    return "Swipe up"


_SEARCH_PAGE = "() => (document.querySelector('#pagination li.active') || {}).textContent || ''"


def _s_search_engine(goal: str, obs: Observation, dev: Any = None) -> str:
    """Search the name, go to the result's page (3 to a page), tap the result there (the page
    shown is read off the page: the UI tree does not mark the active page number)."""
    name = quoted(goal)[0]
    m = re.search(r"click the (\d+)(?:st|nd|rd|th) search result", goal)
    k = int(m.group(1)) if m else 1
    box = field(obs)
    links = [n for n in nodes(obs, "link") if not re.fullmatch(r"\d+|[<>\u00ab\u00bb]|Prev|Next|First|Last", n.label)]
    if box is not None and (box.value or "") != name:
        return fill(obs, box.label, name) or 'Tap "Search"'
    if not links:
        return 'Tap "Search"'
    if dev is None:
        raise NoExpert("search-engine's scripted solution reads the page (which result page shows)")
    page, want = str(dev.evaluate(_SEARCH_PAGE)).strip(), (k - 1) // 3 + 1
    if page != str(want):
        return f"Tap {q(str(want))}"
    return tap(obs, links[(k - 1) % 3]) if len(links) >= 3 else tap(obs, links[-1])



def _s_email_inbox(goal: str, obs: Observation, dev: Any = None) -> str:
    """Open the sender's email (scrolling the inbox until it shows), then: the trash or star icon,
    or Reply / Forward, fill the text or the recipient, and the send icon."""
    m = re.match(r"Find the email by (.+?) and (.*)$", goal.strip())
    name, rest = (m.group(1), m.group(2)) if m else ("", goal)
    by_label = {n.label: n for n in obs.nodes if n.actions}
    box = next((n for n in nodes(obs, "textfield") if n.description == "textarea"), None)
    if "send reply" in by_label:                                    # writing the reply
        text = (quoted(rest) or [""])[0]
        if box is not None and (box.value or "") != text:
            return tap(obs, box) if not box.focused else f"Type {q(text)}"
        return 'Tap "send reply"'
    if "send forward" in by_label:                                  # forwarding
        to = re.search(r"forward that email to (.+?)\.?$", rest)
        return fill(obs, "to", to.group(1) if to else "") or 'Tap "send forward"'
    if "Reply" in by_label and "Forward" in by_label:                # the email is open
        for words, label in (("trash icon", "trash"), ("star icon", "star"), ("reply to", "Reply"),
                             ("forward", "Forward")):
            if words in rest and label in by_label:
                return tap(obs, by_label[label])
    hit = next((n for n in obs.nodes if n.label == name and "tap" in n.actions), None)
    if hit is not None:
        return tap(obs, hit)
    return "Swipe up"



_SOCIAL_ICONS = {"Reply": "reply", "Retweet": "retweet", "Like": "like"}
_SOCIAL_MENU_OPEN = "() => document.querySelectorAll('#area ul:not(.hide)').length > 0"
_SOCIAL_WHERE = """(user) => {
  const area = document.getElementById('area'), a = area.getBoundingClientRect();
  const menu = document.querySelector('#area ul:not(.hide)');
  const el = menu || Array.from(area.querySelectorAll('.username')).find((e) => e.textContent.trim() === user);
  if (!el) return 1;
  const r = el.getBoundingClientRect();
  return r.bottom <= a.top ? -1 : (r.top >= a.bottom ? 1 : 0);
}"""


def _s_social_media(goal: str, obs: Observation, dev: Any = None) -> str:
    """The user's post: its reply / retweet / like icon, or its "more" menu and the item there
    (Mute and Block name the user: "Mute @leo"); the feed scrolls until what is needed shows
    (whether a menu is open below the fold is read off the page)."""
    m = re.match(r'For the user (@\S+), click on the "(.+)" button', goal.strip())
    user, action = (m.group(1), m.group(2)) if m else ("", "")
    shown = list(obs.nodes)
    item = f"{action} {user}" if action in ("Mute", "Block") else action
    menu = [n for n in shown if n.label == item and "tap" in n.actions]
    if menu and action not in _SOCIAL_ICONS:
        return tap(obs, menu[0])
    at = next((i for i, n in enumerate(shown) if n.label == user), None)
    if at is None:        # scrolled past (a swipe may go further than needed): back the way it shows
        return "Swipe down" if dev is not None and dev.evaluate(_SOCIAL_WHERE, user) < 0 else "Swipe up"
    post = []
    for n in shown[at + 1:]:
        if n.label.startswith("@") and n.role == "text":
            break
        post.append(n)
    want = _SOCIAL_ICONS.get(action, "more")
    hit = next((n for n in post if n.label == want and "tap" in n.actions), None)
    if hit is not None and want == "more" and dev is not None and dev.evaluate(_SOCIAL_MENU_OPEN):
        # the menu is open and its item out of view (below the fold, or above after a long swipe)
        return "Swipe down" if dev.evaluate(_SOCIAL_WHERE, user) < 0 else "Swipe up"
    return tap(obs, hit) if hit is not None else "Swipe up"


SCRIPTS: dict[str, Script] = {
    "click-test": _s_click_test,
    "click-button": _s_click_quoted,
    "click-link": _s_click_quoted,
    "enter-text": _s_enter_text,
    "focus-text": _s_focus_text,
    "click-dialog": _s_click_dialog,
    "click-checkboxes": _s_click_checkboxes,
    "login-user": _s_login_user,
    "use-autocomplete": _s_use_autocomplete,
    "choose-list": _s_choose_list,
    "click-option": _s_click_option,
    "enter-password": _s_enter_password,
    "focus-text-2": _s_focus_text_2,
    "enter-text-2": _s_enter_text_2,
    "click-widget": _s_click_widget,
    "click-button-sequence": _s_click_button_sequence,
    "click-tab-2": _s_click_tab_2,
    "navigate-tree": _s_navigate_tree,
    "search-engine": _s_search_engine,
    "email-inbox": _s_email_inbox,
    **{f"email-inbox-{v}": _s_email_inbox for v in ("delete", "forward", "important", "noscroll", "reply")},
    "social-media": _s_social_media,
}
"""The 23-task table's scripts and email-inbox's variants (see the package's MINIWOB_SCRIPTS). A
script reads the observation; the few that must know what the UI tree does not show (which
tree folders are closed, which result page is up) read the page through the device, as the
phone world's expert reads its device."""


TASKS: tuple[MiniWoBTask, ...] = (
    MiniWoBTask("click-test", 5, "tap the one button"),
    MiniWoBTask("click-button", 5, "tap the button with the given text"),
    MiniWoBTask("click-link", 5, "tap the link with the given word in a paragraph"),
    MiniWoBTask("enter-text", 8, "type the given text into a field and submit"),
    MiniWoBTask("focus-text", 5, "focus the text field"),
    MiniWoBTask("click-dialog", 5, "close a dialog with its x"),
    MiniWoBTask("click-checkboxes", 12, "tick exactly the named check boxes and submit"),
    MiniWoBTask("login-user", 10, "fill in a username and password and log in"),
    MiniWoBTask("use-autocomplete", 10, "pick an item from an autocomplete list"),
    MiniWoBTask("choose-list", 8, "choose an item from a drop-down list and submit"),
    MiniWoBTask("click-option", 8, "select the named radio button and submit"),
    MiniWoBTask("enter-password", 10, "type a password twice and submit"),
    MiniWoBTask("focus-text-2", 5, "focus the k-th of three alike text fields"),
    MiniWoBTask("enter-text-2", 8, "type the given word in the asked case and submit"),
    MiniWoBTask("click-widget", 5, "tap a widget of the named type (radio, checkbox, text, textarea, button)"),
    MiniWoBTask("click-button-sequence", 5, "tap button ONE, then button TWO"),
    MiniWoBTask("click-tab-2", 8, "switch tabs until the named link shows, then tap it"),
    MiniWoBTask("navigate-tree", 10, "open folders of a file tree until the named item shows, then tap it"),
    MiniWoBTask("search-engine", 12, "search a name, page to the k-th result and tap it"),
    MiniWoBTask("email-inbox", 12, "open a sender's email, then delete, star, reply with a text or forward it"),
    MiniWoBTask("email-inbox-delete", 10, "open a sender's email and delete it"),
    MiniWoBTask("email-inbox-forward", 12, "open a sender's email and forward it to someone"),
    MiniWoBTask("email-inbox-important", 10, "open a sender's email and star it"),
    MiniWoBTask("email-inbox-noscroll", 12, "email-inbox with every email in view"),
    MiniWoBTask("email-inbox-reply", 12, "open a sender's email and reply with a text"),
    MiniWoBTask("social-media", 10, "tap a post's icon or an item of its menu, for a named user"),
)
"""The step limit and a line on each of these tasks."""
