"""Calendar templates (and the Calendar expert helpers multi-app templates reuse)."""
from __future__ import annotations

import random

from navrl.worlds.phone.sim.apps.calendar import DELETE_EVENT, NEW_EVENT, TIMES, day, long_date, parse
from navrl.worlds.phone.expert import Ev, ExpertStep, Stage, field_value, goto, report_stage, step_ask, tap, type_into
from navrl.worlds.phone.task import Family, Template, register

C = "Calendar"
TITLES = ["Dinner with Priya", "Dentist Checkup", "Soccer Practice", "Budget Meeting", "Guitar Lesson",
          "Team Offsite", "Birthday Party", "Doctor Visit", "Movie Night", "Coffee with Alex", "Client Call",
          "Farmers Market"]


def norm(s: str) -> str:
    return " ".join(s.lower().split())


def has_event(world_or_ev, title: str, date: str, time: str | None = None, contains: bool = False) -> bool:
    st = world_or_ev.state
    t = norm(title)
    for e in st.data[C]["events"]:
        et = norm(e["title"])
        if (t in et if contains else et == t) and e["date"] == date and (time is None or e["time"] == time):
            return True
    return False


def clear_day(state, date: str) -> None:
    """Remove every event on ``date`` (so planted ones are alone and labels unique)."""
    d = state.data[C]
    d["events"] = [e for e in d["events"] if e["date"] != date]


def plant(state, title: str, date: str, time: str) -> int:
    d = state.data[C]
    eid = d["next_id"]
    d["next_id"] += 1
    d["events"].append({"id": eid, "title": title, "date": date, "time": time})
    return eid


def _month_step(ev: Ev, shown: tuple[int, int], date: str) -> ExpertStep | None:
    t = parse(date)
    if (t.year, t.month) == tuple(shown):
        return None
    later = (t.year, t.month) > tuple(shown)
    return tap(ev, "Next month" if later else "Previous month",
               f"The calendar shows the wrong month; {t:%B} is {'ahead' if later else 'behind'}.")


def _pick_date(ev: Ev, shown: tuple[int, int], cur: str, date: str) -> ExpertStep | None:
    """On a date picker showing month ``shown`` with ``cur`` selected: select ``date``."""
    if cur == date:
        return None
    t = parse(date)
    return _month_step(ev, shown, date) or tap(ev, str(t.day), f"I pick day {t.day} ({long_date(date)}).")


def show_date(ev: Ev, date: str) -> ExpertStep | None:
    """Month screen: select ``date`` and show its month (None once done)."""
    d = ev.data(C)
    s = _month_step(ev, tuple(d["ym"]), date)
    if s is not None:
        return s
    if d["sel"] != date:
        t = parse(date)
        return tap(ev, str(t.day), f"I select day {t.day} ({long_date(date)}).")
    return None


def on_month(ev: Ev) -> bool:
    return ev.state.fg == C and ev.screen() is not None and ev.screen()[0] == "month"


def day_shown(ev: Ev, date: str) -> bool:
    d = ev.data(C)
    return on_month(ev) and d["sel"] == date and tuple(d["ym"]) == (parse(date).year, parse(date).month)


def _own_dialog(ev: Ev) -> dict | None:
    ov = ev.state.overlay
    return ov if (ov is not None and ov.get("owner") == C and ev.state.fg == C) else None


def on_form(ev: Ev) -> bool:
    scr = ev.screen()
    return ev.state.fg == C and scr is not None and scr[0] == "new" and _own_dialog(ev) is None


def _form_date(ev: Ev) -> tuple[str, tuple[int, int]]:
    f = ev.state.fields
    cur = f.get(f"{C}/new/date") or ev.data(C)["sel"]
    ym = f.get(f"{C}/new/ym")
    shown = tuple(int(x) for x in ym.split("-")) if ym else (parse(cur).year, parse(cur).month)
    return cur, shown  # type: ignore[return-value]


def create_stages(title: str, date: str, time: str) -> list[Stage]:
    """Stages that create event ``title`` on ``date`` at ``time`` (the last one saves)."""
    def open_form(ev):
        if _own_dialog(ev):
            return tap(ev, ev.skin.label("Cancel"), "This dialog is not what I need; I cancel it.")
        return goto(ev, C, [("month", None, None), ("new", None, NEW_EVENT)])

    def pick(ev):
        cur, shown = _form_date(ev)
        return _pick_date(ev, shown, cur, date)
    return [
        Stage("open the new event form", on_form, open_form),
        Stage(f"title it {title}", lambda ev: on_form(ev) and field_value(ev, "Title") == title,
              lambda ev: type_into(ev, "Title", title, f"The event should be called {title!r}.")),
        Stage(f"pick {long_date(date)}", lambda ev: on_form(ev) and _form_date(ev)[0] == date, pick),
        Stage(f"choose {time}", lambda ev: on_form(ev) and ev.state.fields.get(f"{C}/new/time") == time,
              lambda ev: tap(ev, time, f"The event is at {time}.")),
        Stage("save the event", lambda ev: False,
              lambda ev: tap(ev, ev.skin.label("Save"), "Title, date and time are right; I save the event.")),
    ]


def _event_id(ev: Ev, title: str, date: str) -> int | None:
    return next((e["id"] for e in ev.data(C)["events"] if e["title"] == title and e["date"] == date), None)


def delete_stages(title: str, date: str) -> list[Stage]:
    def on_event(ev):
        eid = _event_id(ev, title, date)
        return ev.state.fg == C and eid is not None and ev.screen() == ("event", {"id": eid})

    def find(ev):
        if _own_dialog(ev):
            return tap(ev, ev.skin.label("Cancel"), "This dialog is for something else; I cancel it.")
        return goto(ev, C, [("month", None, None)]) or show_date(ev, date) or \
            tap(ev, title, f"{title} is listed on {long_date(date)}.")

    def delete(ev):
        ov = _own_dialog(ev)
        if ov:
            if ov["id"] == "confirm" and ov["params"].get("id") == _event_id(ev, title, date):
                return tap(ev, ev.skin.label("Delete"), "The dialog asks me to confirm deleting the event.")
            return tap(ev, ev.skin.label("Cancel"), "This dialog is for something else; I cancel it.")
        return tap(ev, DELETE_EVENT, f"This is {title}; I delete it.")
    return [Stage(f"open {title} on {long_date(date)}", on_event, find),
            Stage("delete it and confirm", lambda ev: False, delete)]


def goto_day(ev: Ev, date: str) -> ExpertStep | None:
    if _own_dialog(ev):
        return tap(ev, ev.skin.label("Cancel"), "I close this dialog.")
    return goto(ev, C, [("month", None, None)]) or show_date(ev, date)


def day_stage(date: str) -> Stage:
    """Show ``date`` in the month view."""
    return Stage(f"open {long_date(date)}", lambda ev: day_shown(ev, date), lambda ev: goto_day(ev, date))


def _free_dates(rng: random.Random, lo: int = 1, hi: int = 40) -> str:
    return day(rng.randint(lo, hi))


@register
class CalendarCreateEvent(Template):
    name = "calendar_create_event"
    family = Family.SINGLE
    apps = (C,)
    max_steps = 20

    def sample(self, rng):
        return {"title": rng.choice(TITLES), "date": _free_dates(rng), "time": rng.choice(TIMES)}

    def goal(self, p):
        return f"Create a calendar event called {p['title']} on {long_date(p['date'])} at {p['time']}."

    def setup(self, state, p):
        d = state.data[C]
        d["events"] = [e for e in d["events"] if e["title"] != p["title"]]

    def check(self, world, p, answer):
        return has_event(world, p["title"], p["date"], p["time"])

    def stages(self, p):
        return create_stages(p["title"], p["date"], p["time"])


@register
class CalendarDeleteEvent(Template):
    name = "calendar_delete_event"
    family = Family.SINGLE
    apps = (C,)
    max_steps = 16

    def sample(self, rng):
        return {"title": rng.choice(TITLES), "date": _free_dates(rng, -2, 35), "time": rng.choice(TIMES),
                "other": rng.choice(TITLES)}

    def goal(self, p):
        return f"Delete the {p['title']} event on {long_date(p['date'])} from my calendar."

    def setup(self, state, p):
        d = state.data[C]
        d["events"] = [e for e in d["events"] if e["title"] != p["title"]]
        plant(state, p["title"], p["date"], p["time"])
        if p["other"] != p["title"]:
            plant(state, p["other"], p["date"], TIMES[(TIMES.index(p["time"]) + 2) % len(TIMES)])

    def check(self, world, p, answer):
        return not has_event(world, p["title"], p["date"]) and \
            (p["other"] == p["title"] or any(e["title"] == p["other"] for e in world.state.data[C]["events"]))

    def stages(self, p):
        return delete_stages(p["title"], p["date"])


@register
class CalendarDayAgenda(Template):
    name = "calendar_day_agenda"
    family = Family.ANSWER
    apps = (C,)
    max_steps = 12

    def sample(self, rng):
        return {"title": rng.choice(TITLES), "date": _free_dates(rng, 1, 45), "time": rng.choice(TIMES)}

    def goal(self, p):
        return f"What do I have on my calendar on {long_date(p['date'])}?"

    def setup(self, state, p):
        clear_day(state, p["date"])
        plant(state, p["title"], p["date"], p["time"])

    def answer(self, p):
        return p["title"]

    def stages(self, p):
        return [day_stage(p["date"]),
                report_stage("the event", f"The only event that day is {p['title']} at {p['time']}.", p["title"])]


@register
class CalendarEventTime(Template):
    name = "calendar_event_time"
    family = Family.ANSWER
    apps = (C,)
    max_steps = 12
    heldout = True

    def sample(self, rng):
        a, b = rng.sample(TITLES, 2)
        t1, t2 = rng.sample(TIMES, 2)
        return {"title": a, "other": b, "date": _free_dates(rng, 1, 45), "time": t1, "other_time": t2}

    def goal(self, p):
        return f"What time is {p['title']} on {long_date(p['date'])}?"

    def setup(self, state, p):
        clear_day(state, p["date"])
        plant(state, p["other"], p["date"], p["other_time"])
        plant(state, p["title"], p["date"], p["time"])

    def answer(self, p):
        return p["time"]

    def stages(self, p):
        return [day_stage(p["date"]),
                report_stage("the time", f"{p['title']} is listed at {p['time']}.", p["time"])]


@register
class CalendarAskDentist(Template):
    name = "calendar_ask_dentist"
    family = Family.ASK_USER
    apps = (C,)
    max_steps = 22

    def sample(self, rng):
        return {"date": _free_dates(rng, 2, 30), "time": rng.choice(TIMES)}

    def goal(self, p):
        return f"Add my dentist appointment on {long_date(p['date'])} to the calendar, titled Dentist."

    def profile(self, p):
        return {"dentist appointment time": p["time"]}

    def setup(self, state, p):
        d = state.data[C]
        d["events"] = [e for e in d["events"] if "dentist" not in e["title"].lower()]

    def check(self, world, p, answer):
        return has_event(world, "Dentist", p["date"], p["time"], contains=True)

    def stages(self, p):
        return [Stage("ask the user what time the appointment is", lambda ev: ev.knows(p["time"]),
                      lambda ev: step_ask(ev, "What time is your dentist appointment?",
                                          "The goal gives the date but not the time of the appointment."))] + \
            create_stages("Dentist", p["date"], p["time"])
