"""Notes: a list of notes (pinned first), new note (Title + Body), open, pin, delete."""
from __future__ import annotations

import random

from navrl.worlds.phone.sim.app import App, Ctx, Variation, filler_names
from navrl.worlds.phone.sim.widgets import (Button, Dialog, ListItem, ListView, Row, Sheet, Text, TextField, View)

NOTES = [
    ("Groceries", "Milk, eggs, spinach, rice and coffee beans"),
    ("Packing list", "Passport, charger, sunscreen, two swimsuits"),
    ("Book ideas", "A lighthouse keeper who collects lost letters"),
    ("Gift ideas", "Scarf for Mom, puzzle for Leo, tea set for Ana"),
    ("Meeting notes", "Ship the beta on Friday and review the budget"),
    ("Workout plan", "Mon run 5k, Wed yoga, Fri weights, Sun swim"),
    ("Movies to watch", "Arrival, Paddington 2, The Farewell, Heat"),
    ("Garden", "Plant tomatoes in May and water the basil daily"),
]
# Extra notes that templates plant (never present unless planted)
PLANTABLE = [
    ("Locker code", "The gym locker code is 4182"),
    ("Wi-Fi at the cabin", "Network Pines, password cedar-77"),
    ("Parking spot", "Level 3, row G, spot 41"),
    ("Door code", "The front door code is 5590"),
    ("Bike lock", "The bike lock combination is 2716"),
    ("Dentist", "Dr. Patel on Tuesday at 9:30 am"),
    ("Flight info", "Flight UA 328 leaves at 7:15 pm"),
    ("Birthday party", "Saturday at 4 pm, bring balloons"),
]
FILLER_WORDS = ["Idea", "Draft", "Todo", "Reminder", "Thought", "List", "Memo", "Plan"]
FILLER_TOPICS = ["kitchen", "weekend", "car", "office", "trip", "budget", "music", "school", "garage", "party"]


def wrap_lines(text: str, width: int = 34) -> int:
    lines, cur = 1, 0
    for w in text.split():
        if cur and cur + 1 + len(w) > width:
            lines += 1
            cur = len(w)
        else:
            cur = cur + (1 if cur else 0) + len(w)
    return lines


class Notes(App):
    name = "Notes"
    color = "#f7c948"
    description = "Notes: write, read, pin and delete short notes."
    root = "main"

    def init_data(self, rng: random.Random, var: Variation) -> dict:
        notes = [{"id": i + 1, "title": t, "body": b, "pinned": False} for i, (t, b) in enumerate(NOTES)]
        if var.filler:
            for t in filler_names(rng, var.filler, FILLER_WORDS, FILLER_TOPICS, set()):
                notes.append({"id": len(notes) + 1, "title": t, "body": f"Something about the {t.split()[1]}",
                              "pinned": False})
        if var.shuffle:
            rng.shuffle(notes)
        return {"notes": notes, "next_id": len(notes) + 1, "recent": []}

    # -- helpers ---------------------------------------------------------------------------
    @staticmethod
    def labels(notes: list[dict]) -> dict[int, str]:
        """Row label of every note: its title, made unique with a counter."""
        seen: dict[str, int] = {}
        out = {}
        for n in notes:
            t = n["title"] or "Untitled"
            seen[t] = seen.get(t, 0) + 1
            out[n["id"]] = t if seen[t] == 1 else f"{t} ({seen[t]})"
        return out

    @staticmethod
    def ordered(d: dict, layout: str) -> list[dict]:
        notes = list(d["notes"])
        if layout == "alt":
            notes.sort(key=lambda n: n["title"].lower())
        return [n for n in notes if n["pinned"]] + [n for n in notes if not n["pinned"]]

    @staticmethod
    def get(d: dict, nid: int) -> dict | None:
        return next((n for n in d["notes"] if n["id"] == nid), None)

    def _open(self, ctx: Ctx, nid: int) -> None:
        ctx.opened(nid)
        ctx.push("note", id=nid)

    def _delete(self, ctx: Ctx, nid: int) -> None:
        d = ctx.data
        n = self.get(d, nid)
        if n is not None:
            d["notes"].remove(n)
            ctx.emit("note_deleted", title=n["title"])
            ctx.toast("Note deleted")

    def _pin(self, ctx: Ctx, nid: int) -> None:
        n = self.get(ctx.data, nid)
        if n is not None:
            n["pinned"] = not n["pinned"]
            ctx.toast("Pinned" if n["pinned"] else "Unpinned")

    # -- screens -------------------------------------------------------------------------------
    def view(self, ctx: Ctx, screen: str, params: dict) -> View:
        d = ctx.data
        alt = ctx.world.state.layout == "alt"
        if screen == "main":
            q = ctx.field("query").strip().lower()
            labels = self.labels(d["notes"])
            notes = [n for n in self.ordered(d, ctx.world.state.layout)
                     if not q or q in n["title"].lower() or q in n["body"].lower()]
            items = [ListItem(labels[n["id"]], n["body"], trailing="Pinned" if n["pinned"] else "",
                              on_tap=lambda i=n["id"]: self._open(ctx, i),
                              on_long_press=lambda i=n["id"]: ctx.show("menu", id=i))
                     for n in notes]
            lv = ListView("notes", items, empty_text="No notes" if not q else "No matching notes")
            search = TextField("query", "Search notes")
            body = [lv, search] if alt else [search, lv]
            return View("Notes", body, fab=Button("New Note", lambda: ctx.push("new")))
        if screen == "note":
            n = self.get(d, params["id"])
            if n is None:
                return View("Notes", [Text("This note was deleted.", "caption")])
            nid = n["id"]
            body: list = [Text(n["title"] or "Untitled", "title"),
                          Text(n["body"], "wrap", height=20 * wrap_lines(n["body"]) + 4)]
            buttons = [Button("Unpin" if n["pinned"] else "Pin", lambda: self._pin(ctx, nid), "plain"),
                       Button("Delete Note", lambda: ctx.show("confirm", id=nid), "destructive")]
            body.append(Row(buttons[::-1] if alt else buttons))
            return View(n["title"] or "Untitled", body)
        if screen == "new":
            def save() -> None:
                title = ctx.field("title").strip()
                text = ctx.field("body").strip()
                if not title and not text:
                    ctx.toast("The note is empty")
                    return
                note = {"id": d["next_id"], "title": title or text[:20], "body": text, "pinned": False}
                d["next_id"] += 1
                d["notes"].insert(0, note)
                ctx.emit("note_created", title=note["title"], body=text)
                ctx.pop()
                ctx.toast("Note saved")
            return View("New Note", [TextField("title", "Title"), TextField("body", "Body"),
                                     Button(ctx.L("Save"), save)])
        raise KeyError(screen)

    def overlay(self, ctx: Ctx, oid: str, params: dict):
        d = ctx.data
        n = self.get(d, params.get("id"))
        if n is None:
            return None
        nid = n["id"]
        if oid == "menu":
            def pin() -> None:
                ctx.dismiss()
                self._pin(ctx, nid)

            def delete() -> None:
                ctx.dismiss()
                self._delete(ctx, nid)
            return Sheet(n["title"] or "Untitled", [Button("Unpin" if n["pinned"] else "Pin", pin, "plain"),
                                                   *ctx.delete_buttons(delete)])
        if oid == "confirm":
            def yes() -> None:
                ctx.dismiss()
                self._delete(ctx, nid)
                ctx.pop()
            return Dialog("Delete this note?", "This can't be undone.",
                          ctx.delete_buttons(yes))
        return None
