"""The records apps write into Mail's and Bank's data: messages and card transactions.

Mail and Bank write them for themselves (their seed data, a sent message, a transfer);
QuickBite writes a receipt into Mail and a charge into Bank when an order is placed.
The receipts and charges seeded for past QuickBite and Shop orders (:mod:`.seed`) are
made with the same functions, so an order, its receipt and its charge always agree;
task set-ups plant records the same way. This module imports no app.
"""
from __future__ import annotations

from navrl.worlds.phone.sim.apps.seed import describe_items, money, short_date


# ---------------------------------------------------------------------------------- Mail
def food_receipt(order: dict) -> dict:
    """The Mail receipt QuickBite sends for ``order`` (kwargs for :func:`add_email`)."""
    return {"sender": "QuickBite", "addr": "receipts@quickbite.com",
            "subject": f"Your {order['restaurant']} order (#{order['id']})",
            "body": f"Thanks for ordering from {order['restaurant']} on {short_date(order['date'])}. "
                    f"Items: {describe_items(order)}. Order total: {money(order['total'])}.",
            "date": order["date"]}


def shop_receipt(oid: int, item: str, total: float, date: str) -> dict:
    return {"sender": "Shop", "addr": "orders@shop.com", "subject": f"Shop order #{oid} receipt",
            "body": f"Thanks for shopping with us. {item}. Total charged: {money(total)}. "
                    f"Order date {short_date(date)}.", "date": date}


def add_email(d: dict, sender: str, addr: str, subject: str, body: str, date: str, unread: bool = False,
              flagged: bool = False) -> dict:
    """Append a message to the inbox (subjects are row labels, so they are kept unique)."""
    subjects = {e["subject"] for e in d["emails"] + d["trash"]}
    base, k = subject, 2
    while subject in subjects:
        subject = f"{base} ({k})"
        k += 1
    e = {"id": d["next_id"], "sender": sender, "addr": addr, "subject": subject, "body": body, "date": date,
         "unread": unread, "flagged": flagged}
    d["next_id"] += 1
    d["emails"].append(e)
    return e


# ---------------------------------------------------------------------------------- Bank
def shop_merchant(oid: int) -> str:
    return f"SHOP.COM #{oid}"


def food_merchant(restaurant: str) -> str:
    return f"QuickBite*{restaurant}"


def account(d: dict, name: str) -> dict:
    return next(a for a in d["accounts"] if a["name"] == name)


def add_tx(d: dict, acct: str, merchant: str, amount: float, date: str, adjust: bool = True) -> dict:
    """Post a transaction (negative: a charge). ``adjust`` moves the balance too."""
    a = account(d, acct)
    tx = {"seq": d["next_seq"], "merchant": merchant, "amount": round(amount, 2), "date": date}
    d["next_seq"] += 1
    a["tx"].append(tx)
    if adjust:
        a["balance"] = round(a["balance"] + amount, 2)
    return tx
