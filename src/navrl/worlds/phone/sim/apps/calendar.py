"""Calendar: a month view with the day's events, a new-event form and event details.

The phone's "today" is :data:`TODAY` (fixed, so tasks that say "this week" or "on Friday"
are deterministic); Weather's forecast starts on the same day.
"""
from __future__ import annotations

import datetime as _dt
import random

from navrl.worlds.phone.sim.app import App, Ctx, Variation
from navrl.worlds.phone.sim.widgets import (Button, DatePicker, Dialog, ListItem, ListView, Segmented, Spacer, Text,
                                        TextField, View)

TODAY = _dt.date(2024, 6, 10)          # a Monday
TIMES = ["8 AM", "10 AM", "12 PM", "2 PM", "4 PM", "6 PM"]
NEW_EVENT = "New Event"
DELETE_EVENT = "Delete Event"

SEED_EVENTS = [
    # title, days after TODAY, time
    ("Team Standup", 0, "10 AM"), ("Lunch with Sam", 1, "12 PM"), ("Yoga Class", 2, "6 PM"),
    ("Project Review", 3, "2 PM"), ("Haircut", 5, "10 AM"), ("Team Standup", 7, "10 AM"),
    ("Book Club", 9, "6 PM"), ("Flight to Denver", 13, "8 AM"), ("Parents Visit", 19, "12 PM"),
    ("Quarterly Planning", 24, "10 AM"), ("Car Service", 30, "8 AM"),
]
FILLER = ["Call Mom", "Gym", "Groceries", "Pay Rent", "Coffee with Jo", "Oil Change", "Piano Lesson", "Vet Visit",
          "Laundry", "Water Plants"]


def day(offset: int) -> str:
    """ISO date ``offset`` days after TODAY."""
    return (TODAY + _dt.timedelta(days=offset)).isoformat()


def parse(iso: str) -> _dt.date:
    return _dt.date.fromisoformat(iso)


def long_date(iso: str) -> str:
    """"Friday, June 14"."""
    d = parse(iso)
    return f"{d:%A}, {d:%B} {d.day}"


def short_date(iso: str) -> str:
    """"Fri, Jun 14"."""
    d = parse(iso)
    return f"{d:%a}, {d:%b} {d.day}"


def shift_month(y: int, m: int, delta: int) -> tuple[int, int]:
    k = y * 12 + (m - 1) + delta
    return k // 12, k % 12 + 1


def time_key(t: str) -> int:
    return TIMES.index(t) if t in TIMES else len(TIMES)


class Calendar(App):
    name = "Calendar"
    color = "#ff3b30"
    description = "Calendar: month view, a day's events, create events with date and time, view and delete events."
    root = "month"

    def init_data(self, rng: random.Random, var: Variation) -> dict:
        evs = [{"title": t, "date": day(o), "time": tm} for t, o, tm in SEED_EVENTS]
        if var.filler:
            for t in rng.sample(FILLER, min(var.filler, len(FILLER))):
                evs.append({"title": t, "date": day(rng.randint(-3, 40)), "time": rng.choice(TIMES)})
        if var.shuffle:
            rng.shuffle(evs)
        for i, e in enumerate(evs):
            e["id"] = i + 1
        return {"events": evs, "next_id": len(evs) + 1, "sel": TODAY.isoformat(), "ym": [TODAY.year, TODAY.month]}

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def find(d: dict, eid: int) -> dict | None:
        return next((e for e in d["events"] if e["id"] == eid), None)

    def view(self, ctx: Ctx, screen: str, params: dict) -> View:
        d = ctx.data
        if screen == "month":
            y, m = d["ym"]
            sel = parse(d["sel"])

            def pick(dd: int, y=y, m=m) -> None:
                d["sel"] = _dt.date(y, m, dd).isoformat()

            def month(delta: int, y=y, m=m) -> None:
                d["ym"] = list(shift_month(y, m, delta))
            evs = sorted((e for e in d["events"] if e["date"] == d["sel"]), key=lambda e: (time_key(e["time"]), e["id"]))
            items, seen = [], {}
            for e in evs:
                k = seen[e["title"]] = seen.get(e["title"], 0) + 1
                label = e["title"] if k == 1 else f"{e['title']} ({k})"    # labels stay unique on the screen
                items.append(ListItem(label, e["time"], on_tap=lambda i=e["id"]: ctx.push("event", id=i)))
            picker = DatePicker("month", y, m, sel.day if (sel.year, sel.month) == (y, m) else None, pick, month)
            cap = Text(short_date(d["sel"]) + (" (Today)" if d["sel"] == TODAY.isoformat() else ""), "caption")
            lst = ListView("events", items, empty_text="No events")
            # the "alt" layout puts the day caption above the month (the list stays at the bottom: on
            # Android the New Event button floats over the bottom right corner)
            body = [cap, picker, lst] if ctx.world.state.layout == "alt" else [picker, cap, lst]
            return View("Calendar", body, fab=Button(NEW_EVENT, lambda: ctx.push("new")))
        if screen == "new":
            dstr = ctx.field("date") or d["sel"]
            dd = parse(dstr)
            ym = ctx.field("ym")
            y, m = (int(ym.split("-")[0]), int(ym.split("-")[1])) if ym else (dd.year, dd.month)
            tm = ctx.field("time")

            def pick(k: int, y=y, m=m) -> None:
                ctx.set_field("date", _dt.date(y, m, k).isoformat())

            def month(delta: int, y=y, m=m) -> None:
                y2, m2 = shift_month(y, m, delta)
                ctx.set_field("ym", f"{y2}-{m2}")

            def set_time(i: int) -> None:
                ctx.set_field("time", TIMES[i])

            def save() -> None:
                title = ctx.field("title").strip()
                if not title:
                    ctx.toast("Add a title")
                    return
                if not tm:
                    ctx.toast("Pick a time")
                    return
                ev = {"id": d["next_id"], "title": title, "date": dstr, "time": tm}
                d["next_id"] += 1
                d["events"].append(ev)
                d["sel"], d["ym"] = dstr, [dd.year, dd.month]
                ctx.emit("event_created", **ev)
                ctx.pop()
                ctx.toast("Event saved")
            body = [TextField("title", "Title"),
                    Text(f"Date: {short_date(dstr)}", "caption"),
                    DatePicker("date", y, m, dd.day if (dd.year, dd.month) == (y, m) else None, pick, month),
                    Text("Time" + (f": {tm}" if tm else " - select one"), "caption"),
                    Segmented(TIMES, TIMES.index(tm) if tm in TIMES else -1, set_time),
                    Button(ctx.L("Save"), save)]
            return View(NEW_EVENT, body)
        if screen == "event":
            e = self.find(d, params["id"])
            if e is None:
                return View("Event", [Text("This event was deleted.", "caption")])
            return View("Event Details", [Text(e["title"], "title"), Text(long_date(e["date"])),
                                          Text(e["time"]), Spacer(),
                                          Button(DELETE_EVENT, lambda i=e["id"]: ctx.show("confirm", id=i),
                                                 "destructive")])
        raise KeyError(screen)

    def overlay(self, ctx: Ctx, oid: str, params: dict):
        if oid == "confirm":
            d = ctx.data
            e = self.find(d, params["id"])

            def delete() -> None:
                if e is not None:
                    d["events"].remove(e)
                    ctx.emit("event_deleted", **e)
                ctx.dismiss()
                ctx.pop()
            return Dialog("Delete Event?", f"\"{e['title'] if e else 'This event'}\" will be removed.",
                          ctx.delete_buttons(delete))
        return None
