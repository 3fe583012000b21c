"""Contacts (list, detail, add, edit) and Messages (conversations, conversation, new message)."""
from __future__ import annotations

import random

from navrl.worlds.phone.sim.app import App, Ctx, Variation, filler_names
from navrl.worlds.phone.sim.widgets import (Button, ListItem, ListView, Row, Text, TextField, View)

CONTACTS = [
    # name, phone, email, company
    ("Dana Whitaker", "555-201-3344", "dana.whitaker@mail.com", "Northwind"),
    ("Sam Ortiz", "555-318-0921", "sam.ortiz@example.com", "Blue Harbor"),
    ("Maya Lopez", "555-402-7716", "maya.lopez@mail.com", ""),
    ("Leo Brandt", "555-119-6620", "leo.b@example.org", "Brandt & Sons"),
    ("Ana Souza", "555-733-2085", "ana.souza@mail.com", "City Clinic"),
    ("Tom Becker", "555-640-1198", "tbecker@example.com", "Becker Design"),
    ("Priya Nair", "555-287-4453", "priya.nair@example.org", "Lumen Labs"),
    ("Chris Young", "555-905-3317", "chris.young@mail.com", ""),
    ("Olivia Chen", "555-562-0074", "olivia.chen@example.com", "Maple School"),
    ("Marcus Reed", "555-348-9902", "marcus.reed@mail.com", "Reed Realty"),
    ("Nina Petrova", "555-471-2236", "nina.p@example.org", ""),
    ("Jordan Blake", "555-826-5561", "jordan.blake@example.com", "Summit Gym"),
    ("Hannah Kim", "555-193-8847", "hannah.kim@mail.com", "Kim Bakery"),
    ("Omar Haddad", "555-654-3310", "omar.haddad@example.com", ""),
    ("Grace Liu", "555-760-4128", "grace.liu@example.org", "Harbor Bank"),
    ("Ethan Park", "555-237-9054", "ethan.park@mail.com", ""),
]
FILLER_FIRST = ["Avery", "Blair", "Casey", "Drew", "Emery", "Finley", "Harper", "Jesse", "Kai", "Logan", "Morgan",
                "Quinn", "Reese", "Rowan", "Skyler", "Tatum"]
FILLER_LAST = ["Adler", "Brooks", "Carver", "Dalton", "Ellis", "Fowler", "Garner", "Hayes", "Ingram", "Jensen"]

THREADS = [
    ("Sam Ortiz", [("Sam Ortiz", "Are we still on for dinner at 7?"), ("me", "Yes! See you there"),
                   ("Sam Ortiz", "Great, I booked a table at Luigi's")]),
    ("Ana Souza", [("me", "Can you send me the photos from Saturday?"), ("Ana Souza", "Sure, sending them tonight")]),
    ("Leo Brandt", [("Leo Brandt", "The game starts at 8:30"), ("me", "I will bring snacks")]),
    ("Priya Nair", [("Priya Nair", "Thanks for the book recommendation!")]),
]
SPAM = ["Your verification code is 482913", "Your package is out for delivery", "Reminder: appointment tomorrow",
        "Your ride is arriving now", "Payment received, thank you", "Reply STOP to unsubscribe"]


def digits(s: str) -> str:
    return "".join(ch for ch in s if ch.isdigit())


def contact(data: dict, name: str) -> dict | None:
    return next((c for c in data["contacts"] if c["name"] == name), None)


class Contacts(App):
    name = "Contacts"
    color = "#5e8ad6"
    description = "Contacts: people with phone numbers and email addresses; add and edit contacts."
    root = "main"

    def init_data(self, rng: random.Random, var: Variation) -> dict:
        cs = [{"name": n, "phone": p, "email": e, "company": co} for n, p, e, co in CONTACTS]
        if var.filler:
            for n in filler_names(rng, var.filler * 2, FILLER_FIRST, FILLER_LAST, {c["name"] for c in cs}):
                first, last = n.lower().split()
                cs.append({"name": n, "phone": f"555-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}",
                           "email": f"{first}.{last}@example.net", "company": ""})
        return {"contacts": cs, "recent": []}

    @staticmethod
    def ordered(d: dict, layout: str) -> list[dict]:
        if layout == "alt":   # sorted by last name
            return sorted(d["contacts"], key=lambda c: (c["name"].split()[-1].lower(), c["name"].lower()))
        return sorted(d["contacts"], key=lambda c: c["name"].lower())

    def _open(self, ctx: Ctx, name: str) -> None:
        ctx.opened(name)
        ctx.push("contact", name=name)

    def _edit(self, ctx: Ctx, name: str) -> None:
        c = contact(ctx.data, name)
        ctx.push("edit", name=name)
        ctx.set_field("phone", c["phone"], screen="edit")
        ctx.set_field("email", c["email"], screen="edit")

    def view(self, ctx: Ctx, screen: str, params: dict) -> View:
        d = ctx.data
        alt = ctx.world.state.layout == "alt"
        if screen == "main":
            q = ctx.field("query").strip().lower()
            cs = [c for c in self.ordered(d, ctx.world.state.layout)
                  if not q or q in c["name"].lower() or q in digits(c["phone"]) and digits(q) == q]
            items = [ListItem(c["name"], c["company"], on_tap=lambda n=c["name"]: self._open(ctx, n),
                              icon_color="#b0b6c3") for c in cs]
            return View("Contacts", [TextField("query", "Search contacts"),
                                     ListView("contacts", items, empty_text="No contacts" if not q else "No results")],
                        fab=Button("Add Contact", lambda: ctx.push("add")))
        if screen == "contact":
            c = contact(d, params["name"])
            if c is None:
                return View("Contacts", [Text("This contact was deleted.", "caption")])
            n = c["name"]
            info: list = [Text("Phone", "caption"), Text(c["phone"] or "-"),
                          Text("Email", "caption"), Text(c["email"] or "-")]
            if c["company"]:
                info += [Text("Company", "caption"), Text(c["company"])]
            buttons = Row([Button("Message", lambda: ctx.open_app("Messages", "thread", name=n)),
                           Button("Edit", lambda: self._edit(ctx, n), "plain")])
            body = [Text(n, "title")] + ([buttons] + info if alt else info + [buttons])
            return View(n, body)
        if screen == "add":
            def save() -> None:
                first, last = ctx.field("first").strip(), ctx.field("last").strip()
                name = " ".join(x for x in (first, last) if x)
                if not name:
                    ctx.toast("Enter a name")
                    return
                if contact(d, name) is not None:
                    ctx.toast("That contact already exists")
                    return
                c = {"name": name, "phone": ctx.field("phone").strip(), "email": ctx.field("email").strip(),
                     "company": ""}
                d["contacts"].append(c)
                ctx.emit("contact_added", **c)
                ctx.pop()
                ctx.toast("Contact saved")
            return View("New Contact", [TextField("first", "First name"), TextField("last", "Last name"),
                                        TextField("phone", "Phone"), TextField("email", "Email"),
                                        Button(ctx.L("Save"), save)])
        if screen == "edit":
            c = contact(d, params["name"])
            if c is None:
                return View("Edit", [Text("This contact was deleted.", "caption")])

            def save_edit() -> None:
                c["phone"] = ctx.field("phone").strip()
                c["email"] = ctx.field("email").strip()
                ctx.emit("contact_edited", name=c["name"], phone=c["phone"], email=c["email"])
                ctx.pop()
                ctx.toast("Contact updated")
            return View("Edit Contact", [Text(c["name"], "title"), TextField("phone", "Phone"),
                                         TextField("email", "Email"), Button(ctx.L("Save"), save_edit)])
        raise KeyError(screen)


def thread_of(data: dict, name: str) -> dict | None:
    return next((t for t in data["threads"] if t["with"] == name), None)


class Messages(App):
    name = "Messages"
    color = "#34c759"
    description = "Messages: text conversations; open a conversation or start a new message and send it."
    root = "main"

    def init_data(self, rng: random.Random, var: Variation) -> dict:
        threads = [{"with": w, "messages": [{"from": f, "text": t} for f, t in msgs]} for w, msgs in THREADS]
        if var.filler:
            for _ in range(var.filler):
                num = f"555-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}"
                threads.insert(rng.randrange(len(threads) + 1),
                               {"with": num, "messages": [{"from": num, "text": rng.choice(SPAM)}]})
        return {"threads": threads}

    def _resolve(self, ctx: Ctx, to: str) -> str | None:
        """A recipient from the To field: a contact's name (any case) or a phone number."""
        to = " ".join(to.split())
        if not to:
            return None
        cs = ctx.app_data("Contacts")["contacts"] if "Contacts" in ctx.world.state.data else []
        for c in cs:
            if c["name"].lower() == to.lower():
                return c["name"]
        ds = digits(to)
        if len(ds) >= 7 and all(ch.isdigit() or ch in " -()+" for ch in to):
            for c in cs:
                if digits(c["phone"]) == ds:
                    return c["name"]
            return to
        return None

    def _send(self, ctx: Ctx, to: str, text: str) -> None:
        d = ctx.data
        t = thread_of(d, to)
        if t is None:
            t = {"with": to, "messages": []}
        else:
            d["threads"].remove(t)
        d["threads"].insert(0, t)
        t["messages"].append({"from": "me", "text": text})
        ctx.emit("message_sent", to=to, text=text)

    def view(self, ctx: Ctx, screen: str, params: dict) -> View:
        d = ctx.data
        if screen == "main":
            items = [ListItem(t["with"], t["messages"][-1]["text"] if t["messages"] else "",
                              on_tap=lambda w=t["with"]: ctx.push("thread", name=w), icon_color="#9fd9ad")
                     for t in d["threads"]]
            return View("Messages", [ListView("threads", items, empty_text="No conversations")],
                        fab=Button("New Message", lambda: ctx.push("new")))
        if screen == "thread":
            who = params["name"]
            t = thread_of(d, who)
            msgs = t["messages"] if t else []
            shown: list = []
            room = 300 if ctx.skin.name == "ios" else 330
            for m in reversed(msgs):
                line = f"{'Me' if m['from'] == 'me' else m['from'].split()[0]}: {m['text']}"
                h = 20 * max(1, (len(line) + 39) // 40) + 4
                if room - h - 6 < 0:
                    break
                room -= h + 6
                shown.insert(0, Text(line, "wrap", height=h, color="#0a5fd6" if m["from"] == "me" else None))
            if not msgs:
                shown = [Text("No messages yet.", "caption")]

            def send() -> None:
                text = ctx.field("message").strip()
                if not text:
                    ctx.toast("Type a message")
                    return
                self._send(ctx, who, text)
                ctx.set_field("message", "")
            return View(who, shown + [TextField("message", "Message"), Button("Send", send)])
        if screen == "new":
            to_q = ctx.field("to").strip().lower()

            def send_new() -> None:
                to = self._resolve(ctx, ctx.field("to"))
                text = ctx.field("message").strip()
                if to is None:
                    ctx.toast("Choose a recipient")
                    return
                if not text:
                    ctx.toast("Type a message")
                    return
                self._send(ctx, to, text)
                ctx.reset("main")
                ctx.push("thread", name=to)

            def pick(name: str) -> None:
                ctx.set_field("to", name)
            sugg = []
            if to_q:
                cs = ctx.app_data("Contacts")["contacts"] if "Contacts" in ctx.world.state.data else []
                sugg = [ListItem(c["name"], c["phone"], on_tap=lambda n=c["name"]: pick(n))
                        for c in sorted(cs, key=lambda c: c["name"])
                        if to_q in c["name"].lower() and c["name"].lower() != to_q]
            body: list = [TextField("to", "To"), TextField("message", "Message"), Button("Send", send_new)]
            if sugg:
                body += [Text("Suggestions", "caption"), ListView("suggestions", sugg)]
            return View("New Message", body)
        raise KeyError(screen)
