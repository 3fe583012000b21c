"""Contacts and Messages templates (and the helpers multi-app templates reuse)."""
from __future__ import annotations

import random

from navrl.worlds.phone.sim.apps.contacts import CONTACTS, THREADS, contact, digits, thread_of
from navrl.worlds.phone.expert import Ev, ExpertStep, Stage, findable, goto, report_stage, step_ask, tap, type_into
from navrl.worlds.phone.task import Family, Template, register
from navrl.worlds.phone.templates.changes import sent_messages
from navrl.worlds.phone.templates.notes import cancel_overlay, clear_field, norm, own_overlay

C = "Contacts"
M = "Messages"
NAMES = [c[0] for c in CONTACTS]
THREADED = [t[0] for t in THREADS]


# ------------------------------------------------------------------------------ helpers
def open_contact(ev: Ev, name: str) -> ExpertStep | None:
    """Navigate to ``name``'s contact card (None once there)."""
    if own_overlay(ev, C):
        return cancel_overlay(ev)
    if ev.state.fg == C and ev.screen() == ("contact", {"name": name}):
        return None
    if ev.state.fg != C or ev.screen() == ("main", {}):
        s = goto(ev, C, [("main", None, None)])
        if s is not None:
            return s
        if not findable(ev, name):
            s = clear_field(ev, "Search contacts")
            if s is not None:
                return s
    return goto(ev, C, [("main", None, None), ("contact", {"name": name}, name)])


def on_contact(ev: Ev, name: str) -> bool:
    return ev.state.fg == C and ev.screen() == ("contact", {"name": name}) and ev.state.loading is None


def sent(state, to: str, text: str | None = None, contains: str | None = None) -> bool:
    """A message from me to ``to`` equal to ``text`` (or containing ``contains``)."""
    t = thread_of(state.data[M], to)
    if t is None:
        return False
    for m in t["messages"]:
        if m["from"] != "me":
            continue
        if text is not None and norm(m["text"]) == norm(text):
            return True
        if contains is not None and norm(contains) in norm(m["text"]):
            return True
    return False


def send_message(ev: Ev, to: str, text: str) -> ExpertStep | None:
    """Send ``text`` to ``to``: in their conversation when one exists, else as a new message."""
    if thread_of(ev.data(M), to) is not None:
        if not (ev.state.fg == M and ev.screen() == ("thread", {"name": to})):
            return goto(ev, M, [("main", None, None), ("thread", {"name": to}, to)])
        return type_into(ev, "Message", text) or tap(ev, "Send", f"I send the message to {to}.")
    if ev.state.fg == M and ev.screen() == ("thread", {"name": to}):
        # a fresh conversation opened from the contact card
        return type_into(ev, "Message", text) or tap(ev, "Send", f"I send the message to {to}.")
    s = goto(ev, M, [("main", None, None), ("new", None, "New Message")])
    if s is not None:
        return s
    return (type_into(ev, "To", to, f"I address the message to {to}.") or type_into(ev, "Message", text)
            or tap(ev, "Send", f"I send the message to {to}."))


# ------------------------------------------------------------------------------ Contacts
NEW_FIRST = ["Riley", "Zoe", "Felix", "Iris", "Hugo", "Lena", "Mateo", "Clara", "Nora", "Theo"]
NEW_LAST = ["Moreno", "Fischer", "Okafor", "Santos", "Lindqvist", "Varga", "Castillo", "Nakamura"]


@register
class ContactsAdd(Template):
    name = "contacts_add"
    family = Family.SINGLE
    apps = (C,)
    max_steps = 16

    def sample(self, rng: random.Random) -> dict:
        return {"first": rng.choice(NEW_FIRST), "last": rng.choice(NEW_LAST),
                "phone": f"555-{rng.randint(200, 989)}-{rng.randint(1000, 9999)}"}

    def goal(self, p):
        return f"Add {p['first']} {p['last']} to my contacts with the phone number {p['phone']}."

    def check(self, world, p, answer):
        c = contact(world.state.data[C], f"{p['first']} {p['last']}")
        return c is not None and digits(c["phone"]) == digits(p["phone"])

    def stages(self, p):
        first, last, phone = p["first"], p["last"], p["phone"]
        full = f"{first} {last}"

        def on(ev, screen, params=None):
            return ev.state.fg == C and ev.screen() == (screen, params or {}) and ev.state.loading is None

        def fv(ev, screen, k):
            return ev.state.fields.get(f"{C}/{screen}/{k}", "")

        def act(ev):
            if own_overlay(ev, C):
                return cancel_overlay(ev)
            if contact(ev.data(C), full) is not None:
                # it exists with the wrong number: fix it on the edit screen
                if not on(ev, "edit", {"name": full}):
                    if not on_contact(ev, full):
                        return open_contact(ev, full)
                    return tap(ev, "Edit", "The contact exists with a wrong number; I edit it.")
                return type_into(ev, "Phone", phone) or tap(ev, ev.skin.label("Save"), "I save the change.")
            if not on(ev, "add"):
                return goto(ev, C, [("main", None, None), ("add", None, "Add Contact")])
            for lab, k, v in (("First name", "first", first), ("Last name", "last", last), ("Phone", "phone", phone)):
                if fv(ev, "add", k) != v:
                    return type_into(ev, lab, v)
            if fv(ev, "add", "email"):
                return clear_field(ev, "Email")
            return tap(ev, ev.skin.label("Save"), "Everything is filled in; I save the contact.")
        return [Stage(f"add {full} with {phone}", lambda ev: False, act)]


@register
class ContactsPhone(Template):
    name = "contacts_phone"
    family = Family.ANSWER
    apps = (C,)
    max_steps = 12

    def sample(self, rng):
        i = rng.randrange(len(CONTACTS))
        return {"name": CONTACTS[i][0], "phone": CONTACTS[i][1]}

    def goal(self, p):
        return f"What is {p['name']}'s phone number?"

    def answer(self, p):
        return p["phone"]

    def stages(self, p):
        n = p["name"]
        return [Stage(f"open {n}'s contact card", lambda ev: on_contact(ev, n) and own_overlay(ev, C) is None,
                      lambda ev: open_contact(ev, n)),
                report_stage("the number", f"The card shows the phone number {p['phone']}.", p["phone"])]


@register
class ContactsEditEmail(Template):
    name = "contacts_edit_email"
    family = Family.SINGLE
    apps = (C,)
    max_steps = 16
    heldout = True

    def sample(self, rng):
        n = rng.choice(NAMES)
        first = n.split()[0].lower()
        return {"name": n, "email": f"{first}.{rng.choice(['work', 'home', 'new'])}{rng.randint(1, 99)}@"
                                    f"{rng.choice(['mail.com', 'example.net', 'inbox.org'])}"}

    def goal(self, p):
        return f"Change {p['name']}'s email address to {p['email']}."

    def check(self, world, p, answer):
        c = contact(world.state.data[C], p["name"])
        return c is not None and c["email"].strip().lower() == p["email"]

    def stages(self, p):
        n, e = p["name"], p["email"]

        def on_edit(ev):
            return ev.state.fg == C and ev.screen() == ("edit", {"name": n}) and ev.state.loading is None

        def act(ev):
            if own_overlay(ev, C):
                return cancel_overlay(ev)
            if not on_edit(ev):
                if not on_contact(ev, n):
                    return open_contact(ev, n)
                return tap(ev, "Edit", f"I edit {n}'s card.")
            return type_into(ev, "Email", e) or tap(ev, ev.skin.label("Save"), "I save the new email address.")
        return [Stage(f"change {n}'s email", lambda ev: False, act)]


# ------------------------------------------------------------------------------ Messages
TEXTS = ["Running ten minutes behind", "Happy birthday! Have a great day", "Can you call me when you are free?",
         "Thanks for dinner last night", "Do you want to grab lunch tomorrow?", "The keys are under the mat",
         "See you at the station at 6", "Got the tickets for Saturday"]


@register
class MessagesSend(Template):
    name = "messages_send"
    family = Family.SINGLE
    apps = (M,)
    max_steps = 14

    def sample(self, rng):
        return {"to": rng.choice(NAMES), "text": rng.choice(TEXTS)}

    def goal(self, p):
        return f"Send a message to {p['to']} saying \"{p['text']}\"."

    def check(self, world, p, answer):
        return sent(world.state, p["to"], p["text"])

    def achieved(self, start, end, p, answer):
        # the last message the episode sent: "Send a message to <its thread> saying <its text>"
        done = [(to, text) for to, text in sent_messages(start, end) if text.strip()]
        return {"to": done[-1][0], "text": done[-1][1].strip()} if done else None

    def stages(self, p):
        return [Stage(f"send the message to {p['to']}", lambda ev: False,
                      lambda ev: send_message(ev, p["to"], p["text"]))]


@register
class MessagesAskSister(Template):
    name = "messages_ask_sister"
    family = Family.ASK_USER
    apps = (M,)
    max_steps = 16

    TEXT = "I'm running late"

    def sample(self, rng):
        return {"sister": rng.choice(NAMES)}

    def goal(self, p):
        return "Text my sister that I'm running late."

    def profile(self, p):
        return {"sister name": p["sister"]}

    def check(self, world, p, answer):
        return sent(world.state, p["sister"], contains="running late")

    def stages(self, p):
        s = p["sister"]
        return [Stage("ask the user who their sister is", lambda ev: ev.knows(s),
                      lambda ev: step_ask(ev, "What is your sister's name?",
                                          "I don't know who the user's sister is, and the contacts don't say.")),
                Stage(f"text {s}", lambda ev: False, lambda ev: send_message(ev, s, self.TEXT))]


FACTS = [
    # (my question, their reply, goal, answer)
    ("What time is the meeting tomorrow?", "It moved to 3 pm", "What time did {n} say the meeting is?", "3 pm"),
    ("Which gate are you at?", "Gate B12, boarding soon", "Which gate did {n} text me they are at?", "B12"),
    ("What is the wifi password at your place?", "It is sunflower22",
     "What Wi-Fi password did {n} send me in Messages?", "sunflower22"),
    ("Where should we meet?", "Meet me at Central Station", "Where did {n} say we should meet?", "Central Station"),
    ("How much do I owe you for the tickets?", "You owe me 24 dollars",
     "How many dollars did {n} say I owe for the tickets?", "24"),
]


@register
class MessagesRead(Template):
    name = "messages_read"
    family = Family.ANSWER
    apps = (M,)
    max_steps = 12
    heldout = True

    def sample(self, rng):
        return {"who": rng.choice([n for n in NAMES if n not in THREADED]), "i": rng.randrange(len(FACTS)),
                "pos": rng.randrange(0, 4)}

    def goal(self, p):
        return FACTS[p["i"]][2].format(n=p["who"])

    def setup(self, state, p):
        q, a, _, _ = FACTS[p["i"]]
        t = {"with": p["who"], "messages": [{"from": "me", "text": q}, {"from": p["who"], "text": a}]}
        state.data[M]["threads"].insert(p["pos"], t)

    def answer(self, p):
        return FACTS[p["i"]][3]

    def stages(self, p):
        w = p["who"]

        def there(ev):
            return ev.state.fg == M and ev.screen() == ("thread", {"name": w}) and ev.state.loading is None
        return [Stage(f"open the conversation with {w}", there,
                      lambda ev: goto(ev, M, [("main", None, None), ("thread", {"name": w}, w)])),
                report_stage("the answer", f"{w} wrote \"{FACTS[p['i']][1]}\".", FACTS[p["i"]][3])]
