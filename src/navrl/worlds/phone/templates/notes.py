"""Notes templates (and small expert helpers the other social templates reuse)."""
from __future__ import annotations

import random

from navrl.worlds.phone.sim.apps.notes import NOTES, Notes
from navrl.worlds.phone.expert import (Ev, ExpertStep, Stage, findable, goto, report_stage, scroll_to, step_complete,
                                step_long_press, step_tap, tap, type_into)
from navrl.worlds.phone.task import Family, Template, register
from navrl.worlds.phone.templates.changes import new_notes

N = "Notes"


# ------------------------------------------------------------------------------ shared helpers
def own_overlay(ev: Ev, app: str) -> dict | None:
    """The app's own dialog or sheet, when one is up and ``app`` is in front."""
    ov = ev.state.overlay
    if ov is not None and ov.get("owner") == app and ev.state.fg == app:
        return ov
    return None


def cancel_overlay(ev: Ev, why: str = "This dialog is not what I need; I close it.") -> ExpertStep:
    for lab in (ev.skin.label("Cancel"), "OK", "Close", "Not Now"):
        if ev.visible(lab):
            return step_tap(ev, lab, why)
    return tap(ev, ev.skin.label("Cancel"), why)


def clear_field(ev: Ev, label: str) -> ExpertStep | None:
    """Empty the text field ``label`` (None when it is already empty)."""
    n = ev.node(label, "textfield")
    if n is None or not n.value:
        return None
    if not n.focused:
        return step_tap(ev, label, f"The {label} box has old text; I select it to clear it.")
    return step_tap(ev, "Clear text", f"I clear the {label} box.")


def long_press(ev: Ev, label: str, why: str) -> ExpertStep:
    """Long-press ``label``, scrolling to it first if needed."""
    if ev.visible(label):
        return step_long_press(ev, label, why)
    s = scroll_to(ev, label)
    if s is None:
        from navrl.worlds.phone.expert import ExpertStuck
        raise ExpertStuck(f"{label!r} is not reachable on {ev.where()}")
    return s


def norm(s: str | None) -> str:
    return " ".join((s or "").lower().strip().strip(".!").split())


# ------------------------------------------------------------------------------ notes helpers
def note_by_title(state, title: str) -> dict | None:
    return next((n for n in state.data[N]["notes"] if n["title"] == title), None)


def note_label(ev: Ev, nid: int) -> str:
    return Notes.labels(ev.data(N)["notes"])[nid]


def to_notes_list(ev: Ev, label: str) -> ExpertStep | None:
    """Reach the Notes list with ``label`` findable in it (None when there)."""
    s = goto(ev, N, [("main", None, None)])
    if s is not None:
        return s
    if not findable(ev, label):
        s = clear_field(ev, "Search notes")
        if s is not None:
            return s
    return None


def open_note(ev: Ev, title: str) -> ExpertStep | None:
    """Navigate to the note titled ``title``; None once it is on screen."""
    n = note_by_title(ev.state, title)
    if n is None:
        return step_complete(ev, f"The note {title} no longer exists, so I can't go on.")
    if own_overlay(ev, N):
        return cancel_overlay(ev)
    if ev.state.fg == N and ev.screen() == ("note", {"id": n["id"]}):
        return None
    lab = note_label(ev, n["id"])
    if ev.state.fg == N and ev.screen() == ("main", {}) or ev.state.fg != N:
        s = to_notes_list(ev, lab)
        if s is not None:
            return s
    return goto(ev, N, [("main", None, None), ("note", {"id": n["id"]}, lab)])


def on_note(ev: Ev, title: str) -> bool:
    n = note_by_title(ev.state, title)
    return n is not None and ev.state.fg == N and ev.screen() == ("note", {"id": n["id"]}) \
        and ev.state.loading is None and own_overlay(ev, N) is None


def note_stage(title: str) -> Stage:
    """Open the note titled ``title`` (done while it is on screen)."""
    return Stage(f"open the note {title}", lambda ev: on_note(ev, title), lambda ev: open_note(ev, title))


# ------------------------------------------------------------------------------ templates
NEW_NOTES = [
    ("Call the plumber", "Kitchen sink leaks, call before Friday"),
    ("Book club", "Read chapters 4 to 7 for Thursday"),
    ("Dry cleaning", "Pick up the blue suit on Monday"),
    ("Car service", "Oil change booked for the 14th"),
    ("Birthday cake", "Order a lemon cake for Sara"),
    ("Recipe to try", "Miso glazed salmon with rice"),
    ("Weekend plan", "Hike on Saturday, brunch on Sunday"),
    ("Vet visit", "Bring Milo to the vet at 10 am"),
    ("Passwords hint", "Ask Tom about the router reset"),
    ("Podcast list", "Try Radiolab and Song Exploder"),
]

PLANTED = [
    # (title, body, question, answer)
    ("Locker code", "The gym locker code is 4182", "What is my gym locker code? I wrote it in Notes.", "4182"),
    ("Door code", "The front door code is 5590", "What is the front door code saved in my notes?", "5590"),
    ("Bike lock", "The bike lock combination is 2716", "What is my bike lock combination? Check Notes.", "2716"),
    ("Flight info", "Flight UA 328 leaves at 7:15 pm", "What time does my flight leave, according to my notes?",
     "7:15 pm"),
    ("Dentist", "Dr. Patel on Tuesday at 9:30 am", "Which day is my dentist appointment? It is in Notes.",
     "Tuesday"),
    ("Parking spot", "Level 3, row G, spot 41", "On which level did I park? I noted it in Notes.", "3"),
]


def plant_note(state, title: str, body: str, pos: int, pinned: bool = False) -> None:
    d = state.data[N]
    note = {"id": d["next_id"], "title": title, "body": body, "pinned": pinned}
    d["next_id"] += 1
    d["notes"].insert(min(pos, len(d["notes"])), note)


@register
class NotesCreate(Template):
    name = "notes_create"
    family = Family.SINGLE
    apps = (N,)
    max_steps = 14

    def sample(self, rng: random.Random) -> dict:
        t, b = rng.choice(NEW_NOTES)
        return {"title": t, "body": b}

    def goal(self, p):
        return f"Create a new note titled \"{p['title']}\" that says \"{p['body']}\"."

    def check(self, world, p, answer):
        return any(n["title"].strip() == p["title"] and n["body"].strip() == p["body"]
                   for n in world.state.data[N]["notes"])

    def achieved(self, start, end, p, answer):
        # a note the episode wrote, with a title and a text of its own
        made = [n for n in new_notes(start, end) if n["title"].strip() and n["body"].strip()]
        return {"title": made[0]["title"].strip(), "body": made[0]["body"].strip()} if made else None

    def stages(self, p):
        t, b = p["title"], p["body"]

        def on_new(ev):
            return ev.state.fg == N and ev.screen() == ("new", {}) and ev.state.loading is None

        def fv(ev, k):
            return ev.state.fields.get(f"{N}/new/{k}", "")

        def open_new(ev):
            if own_overlay(ev, N):
                return cancel_overlay(ev)
            return goto(ev, N, [("main", None, None), ("new", None, "New Note")])
        return [Stage("start a new note", on_new, open_new),
                Stage(f"type the title {t}", lambda ev: on_new(ev) and fv(ev, "title") == t,
                      lambda ev: type_into(ev, "Title", t)),
                Stage("type the text", lambda ev: on_new(ev) and fv(ev, "body") == b,
                      lambda ev: type_into(ev, "Body", b)),
                Stage("save the note", lambda ev: False, lambda ev: tap(ev, ev.skin.label("Save"), "I save the note."))]


@register
class NotesDelete(Template):
    name = "notes_delete"
    family = Family.SINGLE
    apps = (N,)
    max_steps = 14

    def sample(self, rng):
        return {"title": rng.choice(NOTES)[0]}

    def goal(self, p):
        return f"Delete my note \"{p['title']}\"."

    def check(self, world, p, answer):
        titles = {n["title"] for n in world.state.data[N]["notes"]}
        return p["title"] not in titles and all(t in titles for t, _ in NOTES if t != p["title"])

    def stages(self, p):
        t = p["title"]

        def act(ev):
            n = note_by_title(ev.state, t)
            if n is None:
                return step_complete(ev, "The note is gone but other notes were deleted too; I can't undo that.")
            ov = own_overlay(ev, N)
            if ov is not None:
                if ov["params"].get("id") == n["id"]:
                    return tap(ev, ev.skin.label("Delete"), f"This asks about {t}; I confirm the delete.")
                return cancel_overlay(ev)
            if on_note(ev, t):
                return tap(ev, "Delete Note", "I delete this note.")
            lab = note_label(ev, n["id"])
            s = to_notes_list(ev, lab)
            if s is not None:
                return s
            return long_press(ev, lab, f"I long-press {t} to get its options.")
        return [Stage(f"delete the note {t}", lambda ev: False, act)]


@register
class NotesPin(Template):
    name = "notes_pin"
    family = Family.SINGLE
    apps = (N,)
    max_steps = 12
    heldout = True

    def sample(self, rng):
        return {"title": rng.choice(NOTES)[0]}

    def goal(self, p):
        return f"Pin the note \"{p['title']}\" to the top of my notes."

    def check(self, world, p, answer):
        n = note_by_title(world.state, p["title"])
        return n is not None and n["pinned"]

    def stages(self, p):
        t = p["title"]
        return [note_stage(t),
                Stage("pin it", lambda ev: False, lambda ev: tap(ev, "Pin", "The note has a Pin button."))]


@register
class NotesRead(Template):
    name = "notes_read"
    family = Family.ANSWER
    apps = (N,)
    max_steps = 12

    def sample(self, rng):
        i = rng.randrange(len(PLANTED))
        return {"i": i, "pos": rng.randrange(0, 8)}

    def goal(self, p):
        return PLANTED[p["i"]][2]

    def setup(self, state, p):
        t, b, _, _ = PLANTED[p["i"]]
        plant_note(state, t, b, p["pos"])

    def answer(self, p):
        return PLANTED[p["i"]][3]

    def stages(self, p):
        t, b, _, a = PLANTED[p["i"]]
        return [note_stage(t),
                report_stage("the answer", f"The note says \"{b}\".", a)]
