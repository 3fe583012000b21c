"""Multi-app templates around Contacts, Notes, Messages, Recipes and Shop."""
from __future__ import annotations

import random

from navrl.worlds.phone.sim.apps.contacts import CONTACTS
from navrl.worlds.phone.sim.apps.notes import NOTES
from navrl.worlds.phone.sim.apps.recipes import PANTRY, RECIPES
from navrl.worlds.phone.expert import Stage, tap
from navrl.worlds.phone.task import Family, Template, register
from navrl.worlds.phone.templates.changes import sent_messages
from navrl.worlds.phone.templates.contacts import open_contact, send_message, sent
from navrl.worlds.phone.templates.notes import cancel_overlay, norm, note_by_title, open_note, own_overlay
from navrl.worlds.phone.templates.recipes import open_recipe
from navrl.worlds.phone.templates.shop import in_bag, search_and_open

C, M, N, R, S = "Contacts", "Messages", "Notes", "Recipes", "Shop"
NAMES = [c[0] for c in CONTACTS]
EMAIL = {c[0]: c[2] for c in CONTACTS}


@register
class MultiContactEmail(Template):
    name = "multi_contact_email"
    family = Family.MULTI
    apps = (C, M)
    max_steps = 22

    def sample(self, rng: random.Random) -> dict:
        x, y = rng.sample(NAMES, 2)
        return {"who": x, "to": y, "email": EMAIL[x]}

    def goal(self, p):
        return f"Text {p['who']}'s email address to {p['to']}."

    def check(self, world, p, answer):
        return sent(world.state, p["to"], contains=p["email"])

    def achieved(self, start, end, p, answer):
        # a message that carries someone else's email address: "Text <whose>'s email address to <its thread>"
        for to, text in reversed(sent_messages(start, end)):
            who = next((x for x in NAMES if x != to and norm(EMAIL[x]) in norm(text)), None)
            if who is not None:
                return {"who": who, "to": to, "email": EMAIL[who]}
        return None

    def stages(self, p):
        x, y, e = p["who"], p["to"], p["email"]
        return [Stage(f"look up {x}'s email in Contacts", lambda ev: x in ev.data(C)["recent"],
                      lambda ev: open_contact(ev, x)),
                Stage(f"send it to {y} in Messages", lambda ev: False, lambda ev: send_message(ev, y, e))]


@register
class MultiNoteToMessage(Template):
    name = "multi_note_to_message"
    family = Family.MULTI
    apps = (N, M)
    max_steps = 22

    def sample(self, rng):
        t, b = rng.choice(NOTES)
        return {"title": t, "body": b, "to": rng.choice(NAMES)}

    def goal(self, p):
        return f"Send the text of my note \"{p['title']}\" to {p['to']} in Messages."

    def check(self, world, p, answer):
        return sent(world.state, p["to"], text=p["body"])

    def achieved(self, start, end, p, answer):
        # a message that is the text of one of my notes: "Send the text of my note <its title> to <its thread>"
        notes = end.state.data[N]["notes"]
        for to, text in reversed(sent_messages(start, end)):
            n = next((n for n in notes if n["body"].strip() and norm(n["body"]) == norm(text)), None)
            if n is not None:
                return {"title": n["title"], "body": n["body"], "to": to}
        return None

    def stages(self, p):
        t, b, y = p["title"], p["body"], p["to"]

        def read(ev):
            n = note_by_title(ev.state, t)
            return n is not None and n["id"] in ev.data(N)["recent"]
        return [Stage(f"read the note {t}", read, lambda ev: open_note(ev, t)),
                Stage(f"send its text to {y}", lambda ev: False, lambda ev: send_message(ev, y, b))]


SHOPPABLE = [r for r in RECIPES if not r[5]]


@register
class MultiRecipeToShop(Template):
    name = "multi_recipe_to_shop"
    family = Family.MULTI
    apps = (R, S)
    max_steps = 24

    def sample(self, rng):
        r = rng.choice(SHOPPABLE)
        ings = [i for i, _ in r[3]]
        k = rng.randrange(0, len(ings) - 1)
        prices = {i: round(rng.uniform(1.5, 9.5), 2) for i in ings}
        return {"recipe": r[0], "ings": ings, "k": k, "target": ings[k], "prices": prices}

    def goal(self, p):
        return (f"Look up which ingredients of the {p['recipe']} recipe I still need to buy, and add the first "
                f"one to my Shop bag.")

    def setup(self, state, p):
        ings, k = p["ings"], p["k"]
        pantry = state.data[R]["pantry"]
        for i in ings[:k]:
            if i not in pantry:
                pantry.append(i)
        state.data[R]["pantry"] = [i for i in pantry if i != p["target"]]
        # the Shop stocks groceries for every ingredient still to buy
        names = {x["name"] for x in state.data[S]["products"]}
        for i in ings[k:]:
            if i in PANTRY and i != p["target"]:
                continue
            if i not in names:
                state.data[S]["products"].append({"name": i, "price": p["prices"][i], "category": "Grocery",
                                                  "sizes": []})

    def check(self, world, p, answer):
        return in_bag(world, p["target"])

    def stages(self, p):
        r, t = p["recipe"], p["target"]

        def shop(ev):
            if own_overlay(ev, S):
                return cancel_overlay(ev)
            if ev.state.fg == S and ev.screen() == ("product", {"name": t}):
                return tap(ev, ev.skin.label("Add to cart"), f"{t} is the first ingredient I still need; I add it.")
            return search_and_open(ev, t)
        return [Stage(f"check the ingredients of {r}", lambda ev: r in ev.data(R)["recent"],
                      lambda ev: open_recipe(ev, r)),
                Stage(f"add {t} to the Shop bag", lambda ev: False, shop)]
