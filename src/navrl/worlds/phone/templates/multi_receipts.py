"""Multi-app templates across QuickBite, Mail and Bank: orders, receipts and charges."""
from __future__ import annotations

from navrl.worlds.phone.sim.apps.mail import find_email
from navrl.worlds.phone.sim.apps.records import add_email, add_tx, food_receipt, shop_merchant, shop_receipt
from navrl.worlds.phone.sim.apps.seed import days_ago, make_order, money, price_of
from navrl.worlds.phone.expert import Ev, Stage, step_complete, tap
from navrl.worlds.phone.task import Family, Template, register
from navrl.worlds.phone.templates.bank import B, account_stage, transfer_stages, transferred
from navrl.worlds.phone.templates.food import Q, food_overlay, plant_order, sample_order, view_order_stage
from navrl.worlds.phone.templates.mail import CONTACTS, M, compose_stages, mail_open, on_email, sent_to
from navrl.worlds.phone.templates.mail import carries
from navrl.worlds.phone.templates.changes import sent_emails

PLANTED = 4826   # id of the planted order (below QuickBite's next_id, above the seeded ones)


def total_of(restaurant: str, items) -> float:
    return make_order(0, restaurant, [(n, q, price_of(restaurant, n)) for n, q in items], "")["total"]


def read_stage(subject_of, desc: str) -> Stage:
    """Open a (planted, unread) email; done once it has been read."""
    def done(ev: Ev) -> bool:
        e = find_email(ev.data(M), subject_of(ev))
        return e is not None and not e["unread"]
    return Stage(desc, done, lambda ev: mail_open(ev, subject_of(ev)))


def receipt_subject(restaurant: str, oid: int) -> str:
    return food_receipt({"restaurant": restaurant, "id": oid, "date": "2024-06-14", "items": [], "total": 0})["subject"]


@register
class ReceiptsMatch(Template):
    name = "receipts_match"
    family = Family.ANSWER
    apps = (Q, M, B)
    max_steps = 24

    def sample(self, rng):
        _, items = sample_order(rng, "Chipotle")
        total = total_of("Chipotle", items)
        odd = rng.choice([None, None, "receipt", "charge"])
        off = rng.choice([1.00, 2.50, 3.15, 0.90, 4.20])
        return {"items": items, "total": total, "odd": odd,
                "receipt": round(total + off, 2) if odd == "receipt" else total,
                "charge": round(total + off, 2) if odd == "charge" else total}

    def goal(self, p):
        return ("Find my most recent Chipotle order in QuickBite, its receipt in Mail and the matching charge in my "
                "Bank app. Do all three amounts match? Answer yes or no.")

    def setup(self, state, p):
        plant_order(state, PLANTED, "Chipotle", p["items"], days_ago(1), receipt_total=p["receipt"],
                    charge_total=p["charge"])

    def answer(self, p):
        return "No" if p["odd"] else "Yes"

    def stages(self, p):
        subj = receipt_subject("Chipotle", PLANTED)

        def bank_seen(ev: Ev) -> bool:
            return "Checking" in ev.data(B)["opened"]

        def report(ev: Ev):
            a = self.answer(p)
            why = (f"The order says {money(p['total'])}, the receipt {money(p['receipt'])} and the bank charge "
                   f"{money(p['charge'])}; " + ("they all match." if a == "Yes" else "they don't all match."))
            return food_overlay(ev) or step_complete(ev, why, a)
        return [view_order_stage(lambda ev: PLANTED, "open the latest Chipotle order in QuickBite"),
                read_stage(lambda ev: subj, "open its receipt in Mail"),
                Stage("find the charge in the Checking account", bank_seen, account_stage("Checking").act),
                Stage("compare the three amounts and answer", lambda ev: False, report)]


SUBJECTS = ["QuickBite total", "Dinner cost", "Food order total", "What I owe you"]


@register
class EmailFoodTotal(Template):
    name = "email_food_total"
    family = Family.MULTI
    apps = (Q, M)
    max_steps = 26

    def sample(self, rng):
        r, items = sample_order(rng)
        name, addr = rng.choice(CONTACTS)
        return {"restaurant": r, "items": items, "total": total_of(r, items), "name": name, "to": addr,
                "subject": rng.choice(SUBJECTS)}

    def goal(self, p):
        return (f"Email the total of my last QuickBite order to {p['name']} ({p['to']}) with the subject "
                f"\"{p['subject']}\".")

    def setup(self, state, p):
        plant_order(state, PLANTED, p["restaurant"], p["items"], days_ago(0))

    def check(self, world, p, answer):
        return sent_to(world, p["to"], p["subject"], money(p["total"]))

    def achieved(self, start, end, p, answer):
        # the order's total emailed, to someone or with a subject other than the goal's
        for m in reversed(sent_emails(start, end)):
            if m["subject"] and carries(m["body"], money(p["total"])):
                name = next((n for n, a in CONTACTS if a.lower() == m["to"].lower()), None)
                if name is not None:
                    return {**p, "name": name, "to": m["to"], "subject": m["subject"]}
        return None

    def stages(self, p):
        body = f"My last QuickBite order came to {money(p['total'])}."
        # the check asks only that the body carries the total: so does the expert's stage
        return [view_order_stage(lambda ev: PLANTED, "look up the last order's total in QuickBite")] + \
            compose_stages(p["to"], p["subject"], body, body_ok=lambda b: carries(b, money(p["total"])))


@register
class TransferShopReceipt(Template):
    name = "transfer_shop_receipt"
    family = Family.MULTI
    apps = (M, B)
    max_steps = 26

    def sample(self, rng):
        item, price = rng.choice([("Yoga Mat", 34.95), ("Denim Jacket", 79.00), ("Desk Lamp", 39.99),
                                  ("Running Shoes", 89.99), ("Sunglasses", 45.00), ("Coffee Mug", 14.50)])
        qty = rng.choice([1, 1, 2])
        return {"oid": rng.randint(1050, 1090), "item": item, "qty": qty, "total": round(price * qty, 2)}

    def goal(self, p):
        return "Transfer the amount of my latest Shop receipt in Mail from checking to savings."

    def subject(self, p) -> str:
        return shop_receipt(p["oid"], "", 0, "2024-06-14")["subject"]

    def setup(self, state, p):
        what = p["item"] if p["qty"] == 1 else f"{p['qty']} x {p['item']}"
        add_email(state.data[M], **shop_receipt(p["oid"], what, p["total"], days_ago(1)), unread=True)
        add_tx(state.data[B], "Checking", shop_merchant(p["oid"]), -p["total"], days_ago(1), adjust=False)
        shop = state.data.get("Shop")
        if shop is not None and isinstance(shop.get("orders"), list):
            shop["orders"].append({"id": p["oid"], "items": [{"name": p["item"], "size": None,
                                                              "price": round(p["total"] / p["qty"], 2)}] * p["qty"],
                                   "total": p["total"]})

    def check(self, world, p, answer):
        return transferred(world, p["total"], "Checking", "Savings")

    def stages(self, p):
        subj = self.subject(p)
        return [read_stage(lambda ev: subj, "read the latest Shop receipt in Mail")] + \
            transfer_stages(p["total"], "Checking", "Savings")


@register
class FlagFoodReceipt(Template):
    name = "flag_food_receipt"
    family = Family.MULTI
    apps = (Q, M)
    max_steps = 20
    heldout = True

    def sample(self, rng):
        r, items = sample_order(rng)
        return {"restaurant": r, "items": items}

    def goal(self, p):
        return "In Mail, flag the receipt of my most recent QuickBite order."

    def setup(self, state, p):
        plant_order(state, PLANTED, p["restaurant"], p["items"], days_ago(1))

    def check(self, world, p, answer):
        e = find_email(world.state.data[M], receipt_subject(p["restaurant"], PLANTED))
        return e is not None and e["flagged"]

    def stages(self, p):
        subj = receipt_subject(p["restaurant"], PLANTED)

        return [view_order_stage(lambda ev: PLANTED, "see which order is the most recent in QuickBite"),
                Stage("open its receipt in Mail", lambda ev: on_email(ev, subj), lambda ev: mail_open(ev, subj)),
                Stage("flag it", lambda ev: False, lambda ev: tap(ev, "Flag", "This is the matching receipt."))]
