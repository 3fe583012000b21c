"""Mail: an inbox with search, messages (flag, mark unread, delete) and compose."""
from __future__ import annotations

import random

from navrl.worlds.phone.sim.app import App, Ctx, Variation
from navrl.worlds.phone.sim.apps.records import add_email, food_receipt, shop_receipt
from navrl.worlds.phone.sim.apps.seed import SHOP_RECEIPTS, TODAY, days_ago, seed_orders, short_date
from navrl.worlds.phone.sim.widgets import Button, Dialog, IconButton, ListItem, ListView, Row, Sheet, Text, TextField, View

ME = "alex.morgan@mail.com"

SEED = [
    # sender, address, subject, body, days ago, unread
    ("Chase Bank", "alerts@chase.com", "Your May statement is ready",
     "Your statement for the period ending May 31 is ready. Closing balance: $3,214.56. Minimum payment due: none.",
     10, False),
    ("Jordan Lee", "jordan.lee@mail.com", "Dinner on Friday?",
     "Hey! Are we still on for dinner Friday at 7? I booked a table at Thai Basil.", 1, True),
    ("Delta Air Lines", "noreply@delta.com", "Your trip confirmation DL4417",
     "Confirmation code: HXK7PQ. Flight DL 4417, Seattle to Denver, departs Jul 2 at 8:15 AM.", 6, False),
    ("Bright Smile Dental", "office@brightsmile.com", "Appointment reminder",
     "This is a reminder of your cleaning on June 20 at 3:30 PM with Dr. Patel.", 3, True),
    ("Sam Rivera", "sam.rivera@mail.com", "Photos from the hike",
     "Here are the photos from Saturday. The view from the top was amazing!", 4, False),
    ("Chase Bank", "alerts@chase.com", "Direct deposit received",
     "A direct deposit of $2,400.00 from ACME CORP was posted to your checking account.", 8, False),
    ("Netflix", "info@netflix.com", "Your monthly receipt",
     "Thanks for being a member. Standard plan: $15.49 charged to your card ending 4242.", 9, False),
    ("Oak Street Apartments", "rent@oakstreetapts.com", "Rent due July 1",
     "Friendly reminder: July rent of $1,850.00 is due on July 1.", 2, False),
]

FILLER_SENDERS = [("Medium Daily Digest", "noreply@medium.com"), ("LinkedIn", "news@linkedin.com"),
                  ("Spotify", "no-reply@spotify.com"), ("Goodreads", "news@goodreads.com"),
                  ("REI Co-op", "deals@rei.com"), ("The Morning Brew", "crew@morningbrew.com"),
                  ("Duolingo", "hello@duolingo.com"), ("Eventbrite", "noreply@eventbrite.com")]
FILLER_TOPICS = ["Weekly digest", "Picks for you", "Your weekly update", "Deals this week", "New this week",
                 "Don't miss out", "Recommended for you", "Your summary"]


def inbox_order(d: dict) -> list[dict]:
    return sorted(d["emails"], key=lambda e: (e["date"], e["id"]), reverse=True)


def find_email(d: dict, subject: str) -> dict | None:
    return next((e for e in d["emails"] if e["subject"] == subject), None)


class Mail(App):
    name = "Mail"
    color = "#1e88e5"
    description = "Email: read the inbox, search messages, flag, mark unread or delete them, compose and send."
    root = "inbox"

    def init_data(self, rng: random.Random, var: Variation) -> dict:
        d: dict = {"emails": [], "sent": [], "trash": [], "next_id": 1, "me": ME}
        seed = list(SEED)
        if var.shuffle:
            ages = [s[4] for s in seed]
            rng.shuffle(ages)
            seed = [s[:4] + (a,) + s[5:] for s, a in zip(seed, ages)]
        for sender, addr, subj, body, ago, unread in seed:
            add_email(d, sender, addr, subj, body, days_ago(ago), unread=unread)
        for o in seed_orders():
            add_email(d, **food_receipt(o))
        for r in SHOP_RECEIPTS:
            add_email(d, **shop_receipt(*r))
        if var.filler:
            for sender, addr in rng.sample(FILLER_SENDERS, min(var.filler, len(FILLER_SENDERS))):
                topic = rng.choice(FILLER_TOPICS)
                add_email(d, sender, addr, f"{topic} from {sender}",
                          f"{topic}: stories and offers picked for you by {sender}. Unsubscribe any time.",
                          days_ago(rng.randint(0, 12)), unread=rng.random() < 0.5)
        return d

    # -------------------------------------------------------------------------- screens
    def view(self, ctx: Ctx, screen: str, params: dict) -> View:
        d = ctx.data
        if screen == "inbox":
            q = ctx.field("query").strip().lower()
            mails = [e for e in inbox_order(d) if not q or q in e["sender"].lower() or q in e["subject"].lower()
                     or q in e["body"].lower() or q in e["addr"].lower()]
            rows = []
            for e in mails:
                def open_(e=e) -> None:
                    e["unread"] = False
                    ctx.push("message", id=e["id"])
                marks = (" | Unread" if e["unread"] else "") + (" | Flagged" if e["flagged"] else "")
                rows.append(ListItem(e["subject"], f"{e['sender']}{marks}", on_tap=open_,
                                     trailing=short_date(e["date"]),
                                     icon_color="#1e88e5" if e["unread"] else None))
            search = TextField("query", "Search mail")
            lst = ListView("inbox", rows, item_height=52, empty_text="No messages" if not q else "No results")
            body = [lst, search] if ctx.world.state.layout == "alt" else [search, lst]
            return View("Inbox", body, actions=[IconButton("Trash", "trash", lambda: ctx.push("trash"))],
                        fab=Button(ctx.L("Compose"), lambda: ctx.push("compose")))
        if screen == "trash":
            rows = [ListItem(e["subject"], e["sender"], on_tap=lambda e=e: ctx.show("restore", id=e["id"]),
                             trailing=short_date(e["date"])) for e in inbox_order({"emails": d["trash"]})]
            return View("Trash", [Text("Tap a message to restore it.", "caption"),
                                  ListView("trash", rows, item_height=52, empty_text="Trash is empty")])
        if screen == "message":
            e = next((e for e in d["emails"] if e["id"] == params["id"]), None)
            if e is None:
                return View("Message", [Text("This message was deleted.", "caption")])

            def flag() -> None:
                e["flagged"] = not e["flagged"]
                ctx.emit("mail_flagged", id=e["id"], flagged=e["flagged"])
                ctx.toast("Flagged" if e["flagged"] else "Flag removed")

            def unread() -> None:
                e["unread"] = True
                ctx.emit("mail_unread", id=e["id"])
                ctx.pop()
            lines = max(2, (len(e["body"]) + 37) // 38)
            return View("Message", [
                Text(e["subject"], "title"),
                Text(f"From: {e['sender']} <{e['addr']}>", "caption"),
                Text(f"Date: {short_date(e['date'])}, 2024" + ("   Flagged" if e["flagged"] else ""), "caption"),
                Text(e["body"], "wrap", height=20 * lines + 8),
                Row([Button("Unflag" if e["flagged"] else "Flag", flag, "plain"),
                     Button("Mark Unread", unread, "plain")]),
                Button(ctx.L("Delete"), lambda: ctx.show("delete", id=e["id"]), "destructive"),
            ])
        if screen == "compose":
            def send() -> None:
                to = ctx.field("to").strip()
                if not to:
                    ctx.toast("Add a recipient")
                    return
                msg = {"to": to, "subject": ctx.field("subject").strip(), "body": ctx.field("body").strip(),
                       "date": TODAY}
                d["sent"].append(msg)
                ctx.emit("mail_sent", **msg)
                ctx.pop()
                ctx.toast("Message sent")
            return View("New Message", [Text(f"From: {d['me']}", "caption"), TextField("to", "To"),
                                        TextField("subject", "Subject"), TextField("body", "Body"),
                                        Button("Send", send)])
        raise KeyError(screen)

    def overlay(self, ctx: Ctx, oid: str, params: dict):
        d = ctx.data
        if oid == "delete":
            def delete() -> None:
                e = next((e for e in d["emails"] if e["id"] == params["id"]), None)
                if e is not None:
                    d["emails"].remove(e)
                    d["trash"].append(e)
                    ctx.emit("mail_deleted", id=e["id"], subject=e["subject"])
                ctx.dismiss()
                ctx.pop()
                ctx.toast("Message deleted")
            return Dialog("Delete this message?", "It will be moved to the Trash.",
                          ctx.delete_buttons(delete))
        if oid == "restore":
            e = next((e for e in d["trash"] if e["id"] == params["id"]), None)
            if e is None:
                return None

            def restore() -> None:
                d["trash"].remove(e)
                d["emails"].append(e)
                ctx.emit("mail_restored", id=e["id"], subject=e["subject"])
                ctx.dismiss()
                ctx.toast("Moved to Inbox")
            return Sheet(e["subject"], [Button("Restore", restore), ctx.cancel_button()],
                         message=f"From {e['sender']}")
        return None
