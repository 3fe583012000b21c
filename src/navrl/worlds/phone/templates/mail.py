"""Mail templates (and the Mail expert helpers the multi-app templates reuse)."""
from __future__ import annotations

from typing import Callable

from navrl.worlds.phone.sim.apps.mail import SEED, find_email
from navrl.worlds.phone.sim.apps.records import add_email
from navrl.worlds.phone.sim.apps.seed import days_ago
from navrl.worlds.phone.expert import (Ev, ExpertStuck, Stage, field_value, findable, goto, report_stage, step_ask, step_tap,
                                tap, type_into)
from navrl.worlds.phone.task import Family, Template, register
from navrl.worlds.phone.templates.changes import sent_emails

M = "Mail"

CONTACTS = [("Jordan Lee", "jordan.lee@mail.com"), ("Sam Rivera", "sam.rivera@mail.com"),
            ("Priya Shah", "priya.shah@work.com"), ("Chris Park", "chris.park@mail.com"),
            ("Dana White", "dana.white@work.com"), ("Leo Martin", "leo.martin@mail.com")]
MESSAGES = [("Lunch plans", "Are you free for lunch on Tuesday?"),
            ("Meeting notes", "I put the notes from today in the shared folder."),
            ("Weekend trip", "Let's leave Saturday at 9 am."),
            ("Book club", "The next book is The Overstory."),
            ("Quick question", "Can you call me when you get a chance?"),
            ("Thank you", "Thanks again for your help yesterday."),
            ("Project update", "The draft is ready for review.")]


def at(ev: Ev, app: str, screen: str, params: dict | None = None) -> bool:
    """The front app is ``app`` and it shows ``screen`` (with ``params`` a subset of its params)."""
    if ev.state.fg != app:
        return False
    cur = ev.screen()
    return cur is not None and cur[0] == screen and all(cur[1].get(k) == v for k, v in (params or {}).items())


def on_email(ev: Ev, subject: str) -> bool:
    """The message with ``subject`` is open, with nothing over it."""
    e = find_email(ev.data(M), subject)
    return e is not None and at(ev, M, "message", {"id": e["id"]}) and ev.state.overlay is None


def mail_overlay(ev: Ev, delete_id: int | None = None):
    """Answer Mail's own dialog: confirm deleting ``delete_id``, cancel anything else."""
    ov = ev.state.overlay
    if ev.state.fg != M or not ov or ov.get("owner") != M:
        return None
    if ov["id"] == "delete" and ov["params"].get("id") == delete_id:
        return tap(ev, ev.skin.label("Delete"), "The dialog asks me to confirm deleting this message.")
    return tap(ev, ev.skin.label("Cancel"), "This dialog is not what I want; I cancel it.")


def in_trash(ev_or_world, subject: str) -> bool:
    return any(e["subject"] == subject for e in ev_or_world.state.data[M]["trash"])


def mail_restore(ev: Ev, subject: str):
    """Bring the message with ``subject`` back from the Trash."""
    e = next(e for e in ev.data(M)["trash"] if e["subject"] == subject)
    ov = ev.state.overlay
    if ev.state.fg == M and ov and ov.get("owner") == M:
        if ov["id"] == "restore" and ov["params"].get("id") == e["id"]:
            return tap(ev, "Restore", f"I restore \"{subject}\" from the Trash.")
        return tap(ev, ev.skin.label("Cancel"), "This dialog is not what I want; I cancel it.")
    return goto(ev, M, [("inbox", None, None), ("trash", None, "Trash")]) or \
        tap(ev, subject, f"\"{subject}\" was deleted; I open it in the Trash to restore it.")


def mail_open(ev: Ev, subject: str):
    """Open the message with ``subject`` (None once it is on screen); restores it from the Trash if needed."""
    e = find_email(ev.data(M), subject)
    if e is None:
        if in_trash(ev, subject):
            return mail_restore(ev, subject)
        raise ExpertStuck(f"no email {subject!r}")
    if at(ev, M, "message", {"id": e["id"]}):
        return None
    s = mail_overlay(ev)
    if s is not None:
        return s
    if at(ev, M, "inbox") and len(ev.state.stacks[M]) == 1 and not findable(ev, subject):
        q = field_value(ev, "Search mail")
        if q:
            n = ev.node("Search mail", "textfield")
            if n is not None and not n.focused:
                return step_tap(ev, "Search mail", "The search box filters out the message I need; I clear it.")
            return step_tap(ev, "Clear text", "The search text hides the message I need; I clear it.")
    return goto(ev, M, [("inbox", None, None), ("message", {"id": e["id"]}, subject)])


def compose_stages(to: str, subject: str, body: str, what: str = "the email",
                   body_ok: Callable[[str], bool] | None = None) -> list[Stage]:
    """The expert's stages of writing and sending an email. ``body_ok``: what the task's check
    accepts as the body, where that is more than ``body`` itself (the expert writes ``body``;
    a body the check accepts is done, so the oracle judges count it as progress, not a detour)."""
    def on_compose(ev: Ev) -> bool:
        return at(ev, M, "compose") and ev.state.overlay is None

    def fv(ev: Ev, key: str) -> str:
        return ev.state.fields.get(f"{M}/compose/{key}", "")

    def open_compose(ev: Ev):
        return mail_overlay(ev) or goto(ev, M, [("inbox", None, None), ("compose", None, ev.skin.label("Compose"))])
    return [
        Stage("open a new message", on_compose, open_compose),
        Stage(f"address it to {to}", lambda ev: on_compose(ev) and fv(ev, "to") == to,
              lambda ev: type_into(ev, "To", to)),
        Stage(f"set the subject to {subject}", lambda ev: on_compose(ev) and fv(ev, "subject") == subject,
              lambda ev: type_into(ev, "Subject", subject)),
        Stage("write the message", lambda ev: on_compose(ev) and (fv(ev, "body") == body or (
            body_ok is not None and body_ok(fv(ev, "body")))),
              lambda ev: type_into(ev, "Body", body)),
        Stage(f"send {what}", lambda ev: False, lambda ev: tap(ev, "Send", "Everything is filled in; I send it.")),
    ]


def norm(s: str) -> str:
    return " ".join(s.lower().replace("$", "").replace(",", "").strip().strip(".!").split())


def carries(body: str, text: str) -> bool:
    """``body`` holds ``text`` (compared as :func:`norm` forms: case, "$", "," and spacing aside)."""
    return norm(text) in norm(body)


def sent_to(world, to: str, subject: str | None = None, body_has: str | None = None) -> bool:
    for m in world.state.data[M]["sent"]:
        if m["to"].strip().lower() != to.lower():
            continue
        if subject is not None and norm(m["subject"]) != norm(subject):
            continue
        if body_has is not None and not carries(m["body"], body_has):
            continue
        return True
    return False


@register
class MailSend(Template):
    name = "mail_send"
    family = Family.SINGLE
    apps = (M,)
    max_steps = 16

    def sample(self, rng):
        name, addr = rng.choice(CONTACTS)
        subj, body = rng.choice(MESSAGES)
        return {"name": name, "to": addr, "subject": subj, "body": body}

    def goal(self, p):
        return f"Send an email to {p['to']} with the subject \"{p['subject']}\" that says \"{p['body']}\""

    def check(self, world, p, answer):
        return sent_to(world, p["to"], p["subject"], p["body"])

    def achieved(self, start, end, p, answer):
        # the last email the episode sent, whatever it says: "Send an email to <its to> ..."
        for m in reversed(sent_emails(start, end)):
            if m["to"] and m["subject"] and m["body"]:
                name = next((n for n, a in CONTACTS if a.lower() == m["to"].lower()), m["to"])
                return {"name": name, "to": m["to"], "subject": m["subject"], "body": m["body"]}
        return None

    def stages(self, p):
        return compose_stages(p["to"], p["subject"], p["body"])




@register
class MailDelete(Template):
    name = "mail_delete"
    family = Family.SINGLE
    apps = (M,)
    max_steps = 14

    def sample(self, rng):
        s = rng.choice(SEED)
        return {"sender": s[0], "subject": s[2]}

    def goal(self, p):
        return f"Delete the email from {p['sender']} with the subject \"{p['subject']}\"."

    def check(self, world, p, answer):
        d = world.state.data[M]
        return find_email(d, p["subject"]) is None and [e["subject"] for e in d["trash"]] == [p["subject"]]

    def stages(self, p):
        subj = p["subject"]

        def wrong(ev) -> list[str]:
            return [e["subject"] for e in ev.data(M)["trash"] if e["subject"] != subj]

        def act(ev):
            e = find_email(ev.data(M), subj)
            if e is None:
                return mail_open(ev, subj)   # it is in the Trash together with others: restore it first
            s = mail_overlay(ev, e["id"])
            if s is not None:
                return s
            return mail_open(ev, subj) or tap(ev, ev.skin.label("Delete"), "This is the message to delete.")
        return [Stage("restore messages deleted by mistake", lambda ev: not wrong(ev),
                      lambda ev: mail_restore(ev, wrong(ev)[0])),
                Stage(f"open the email \"{subj}\" and delete it", lambda ev: False, act)]


@register
class MailFlag(Template):
    name = "mail_flag"
    family = Family.SINGLE
    apps = (M,)
    max_steps = 12
    heldout = True

    def sample(self, rng):
        s = rng.choice(SEED)
        return {"sender": s[0], "subject": s[2]}

    def goal(self, p):
        return f"Flag the email from {p['sender']} about \"{p['subject']}\"."

    def check(self, world, p, answer):
        e = find_email(world.state.data[M], p["subject"])
        return e is not None and e["flagged"]

    def stages(self, p):
        subj = p["subject"]
        return [Stage(f"open the email \"{subj}\"", lambda ev: on_email(ev, subj),
                      lambda ev: mail_open(ev, subj)),
                Stage("flag it", lambda ev: False, lambda ev: tap(ev, "Flag", "I flag the message."))]


AIRLINES = [("United Airlines", "notifications@united.com", "UA"), ("Alaska Airlines", "itinerary@alaskaair.com", "AS"),
            ("JetBlue", "reservations@jetblue.com", "B6")]
CITIES = ["Boston", "Chicago", "Austin", "Portland", "San Diego", "Miami", "Denver"]


@register
class MailConfirmationCode(Template):
    name = "mail_confirmation_code"
    family = Family.ANSWER
    apps = (M,)
    max_steps = 12

    def sample(self, rng):
        airline, addr, code2 = rng.choice(AIRLINES)
        letters = "ABCDEFGHJKLMNPQRSTUVWXYZ"
        code = "".join(rng.choice(letters + "23456789") for _ in range(6))
        return {"airline": airline, "addr": addr, "flight": f"{code2} {rng.randint(100, 2999)}",
                "code": code, "city": rng.choice(CITIES), "ago": rng.randint(0, 6)}

    def subject(self, p):
        return f"Your {p['airline']} itinerary"

    def goal(self, p):
        return f"What is the confirmation code of my {p['airline']} flight? It's in my email."

    def setup(self, state, p):
        add_email(state.data[M], p["airline"], p["addr"], self.subject(p),
                  f"Flight {p['flight']} to {p['city']}. Confirmation code: {p['code']}. Check in opens 24 hours "
                  f"before departure.", days_ago(p["ago"]), unread=True)

    def answer(self, p):
        return p["code"]

    def stages(self, p):
        subj = self.subject(p)
        return [Stage(f"open the {p['airline']} email", lambda ev: on_email(ev, subj),
                      lambda ev: mail_open(ev, subj)),
                report_stage("the code", f"The email says the confirmation code is {p['code']}.", p["code"])]


@register
class MailAskSister(Template):
    name = "mail_ask_sister"
    family = Family.ASK_USER
    apps = (M,)
    max_steps = 18

    def sample(self, rng):
        addr = rng.choice(["emma.morgan@mail.com", "mia.morgan@work.com", "zoe.m@mail.com", "lily.morgan@mail.com"])
        subj, body = rng.choice([("Running late", "I will be 15 minutes late."),
                                 ("Happy birthday", "Happy birthday! Have a great day."),
                                 ("Sunday dinner", "I can bring dessert on Sunday.")])
        return {"to": addr, "subject": subj, "body": body}

    def goal(self, p):
        return f"Email my sister with the subject \"{p['subject']}\" saying \"{p['body']}\""

    def profile(self, p):
        return {"sister email": p["to"]}

    def check(self, world, p, answer):
        return sent_to(world, p["to"], p["subject"], p["body"])

    def stages(self, p):
        return [Stage("ask the user for their sister's email address", lambda ev: ev.knows(p["to"]),
                      lambda ev: step_ask(ev, "What is your sister's email address?",
                                          "I don't know the sister's email address and it is not on the phone."))] \
            + compose_stages(p["to"], p["subject"], p["body"])
