"""Bank: accounts with balances, transactions, recent charges, transfers to accounts and payees."""
from __future__ import annotations

import random

from navrl.worlds.phone.sim.app import App, Ctx, Variation
from navrl.worlds.phone.sim.apps.records import account, add_tx, food_merchant, shop_merchant
from navrl.worlds.phone.sim.apps.seed import SHOP_RECEIPTS, TODAY, days_ago, money, seed_orders, short_date
from navrl.worlds.phone.sim.widgets import Button, Dialog, ListItem, ListView, Sheet, Text, TextField, View

ACCOUNTS = [("Checking", "4821", 3482.17), ("Savings", "9034", 12650.00)]
PAYEES = ["Jordan Lee", "Sam Rivera", "Oak Street Apartments", "Mom"]

SEED_TX = [
    # account, merchant, amount, days ago
    ("Checking", "Oak Street Apartments", -1850.00, 14),
    ("Checking", "Whole Foods Market", -86.42, 12),
    ("Checking", "ACME CORP Payroll", 2400.00, 8),
    ("Checking", "Shell Gas", -48.10, 7),
    ("Checking", "Netflix", -15.49, 9),
    ("Checking", "Spotify", -10.99, 6),
    ("Checking", "Trader Joe's", -54.37, 4),
    ("Checking", "Uber", -23.80, 3),
    ("Checking", "CVS Pharmacy", -12.68, 1),
    ("Savings", "Interest Payment", 10.54, 15),
    ("Savings", "Transfer from Checking", 500.00, 14),
]
FILLER_MERCHANTS = ["Target", "Walgreens", "Chevron", "Lyft", "Costco", "Home Depot", "Apple.com", "Hulu",
                    "Safeway", "Best Buy", "Petco", "Dunkin"]


def signed(x: float) -> str:
    return ("-" if x < 0 else "+") + money(abs(x))


def tx_order(txs: list[dict]) -> list[dict]:
    return sorted(txs, key=lambda t: (t["date"], t["seq"]), reverse=True)


def last_charge(d: dict, merchant: str) -> dict | None:
    txs = [t for a in d["accounts"] for t in a["tx"] if t["merchant"] == merchant]
    return tx_order(txs)[0] if txs else None


def parse_amount(s: str) -> float | None:
    try:
        v = round(float(s.strip().replace("$", "").replace(",", "")), 2)
    except ValueError:
        return None
    return v if v > 0 else None


class Bank(App):
    name = "Bank"
    color = "#117a65"
    description = "Banking: checking and savings balances, transactions and recent charges, transfers to accounts or payees."
    tabs = [("Accounts", "accounts", "accounts"), ("Transfer", "transfer", "transfer"),
            ("Activity", "activity", "activity")]

    def init_data(self, rng: random.Random, var: Variation) -> dict:
        d: dict = {"accounts": [{"name": n, "number": num, "balance": b, "tx": []} for n, num, b in ACCOUNTS],
                   "payees": list(PAYEES), "transfers": [], "next_seq": 1, "opened": []}
        for acct, m, amt, ago in SEED_TX:
            add_tx(d, acct, m, amt, days_ago(ago), adjust=False)
        for o in seed_orders():
            add_tx(d, "Checking", food_merchant(o["restaurant"]), -o["total"], o["date"], adjust=False)
        for oid, _, total, date in SHOP_RECEIPTS:
            add_tx(d, "Checking", shop_merchant(oid), -total, date, adjust=False)
        if var.filler:
            for m in rng.sample(FILLER_MERCHANTS, min(var.filler, len(FILLER_MERCHANTS))):
                add_tx(d, "Checking", m, -round(rng.uniform(4, 120), 2), days_ago(rng.randint(2, 20)), adjust=False)
        if var.shuffle:
            rng.shuffle(d["payees"])
        return d

    # -------------------------------------------------------------------------- helpers
    def _tx_rows(self, txs: list[dict], with_acct: dict | None = None) -> list[ListItem]:
        rows = []
        for t in tx_order(txs):
            where = f"{with_acct[t['seq']]} | " if with_acct else ""
            rows.append(ListItem(t["merchant"], f"{where}{short_date(t['date'])} | {signed(t['amount'])}",
                                 icon_color="#117a65" if t["amount"] > 0 else None))
        return rows

    def _confirm(self, ctx: Ctx) -> None:
        d = ctx.data
        amt = parse_amount(ctx.field("amount"))
        src = ctx.field("src") or "Checking"
        dst = ctx.field("dst")
        if amt is None:
            ctx.toast("Enter an amount")
        elif not dst:
            ctx.toast("Choose who to send to")
        elif dst == src:
            ctx.toast("Choose two different accounts")
        elif amt > account(d, src)["balance"]:
            ctx.toast("Insufficient funds")
        else:
            ctx.show("confirm", amount=amt, src=src, dst=dst)

    def _transfer(self, ctx: Ctx, amount: float, src: str, dst: str) -> None:
        d = ctx.data
        is_acct = any(a["name"] == dst for a in d["accounts"])
        add_tx(d, src, f"Transfer to {dst}", -amount, TODAY)
        if is_acct:
            add_tx(d, dst, f"Transfer from {src}", amount, TODAY)
        rec = {"amount": amount, "src": src, "dst": dst, "date": TODAY}
        d["transfers"].append(rec)
        ctx.emit("bank_transfer", **rec)
        ctx.dismiss()
        ctx.reset("transfer")
        ctx.toast(f"Sent {money(amount)} to {dst}")

    # -------------------------------------------------------------------------- screens
    def view(self, ctx: Ctx, screen: str, params: dict) -> View:
        d = ctx.data
        tabs = [(t[0], t[1]) for t in self.tabs]
        if screen == "accounts":
            rows = []
            for a in d["accounts"]:
                def open_(a=a) -> None:
                    if a["name"] not in d["opened"]:
                        d["opened"].append(a["name"])
                    ctx.push("account", name=a["name"])
                rows.append(ListItem(a["name"], f"...{a['number']} | {money(a['balance'])}", on_tap=open_,
                                     icon_color="#117a65"))
            total = Text(f"Total {money(sum(a['balance'] for a in d['accounts']))}", "caption")
            lst = ListView("accounts", rows, item_height=56)
            body = [lst, total] if ctx.world.state.layout == "alt" else [Text("Good morning, Alex", "title"),
                                                                          total, lst]
            return View("Accounts", body, tabs=tabs)
        if screen == "account":
            a = account(d, params["name"])
            return View(a["name"], [Text(money(a["balance"]), "big"),
                                    Text(f"Available balance | ...{a['number']}", "caption"),
                                    Text("Transactions", "title"),
                                    ListView("tx", self._tx_rows(a["tx"]), item_height=52,
                                             empty_text="No transactions")])
        if screen == "activity":
            where = {t["seq"]: a["name"] for a in d["accounts"] for t in a["tx"]}
            charges = [t for a in d["accounts"] for t in a["tx"] if t["amount"] < 0]
            return View("Recent Charges", [ListView("charges", self._tx_rows(charges, where), item_height=52,
                                                    empty_text="No charges")], tabs=tabs, active_tab=2)
        if screen == "transfer":
            src = ctx.field("src") or "Checking"
            dst = ctx.field("dst")
            route = ListView("route", [ListItem("From", trailing=f"{src} {money(account(d, src)['balance'])}",
                                                on_tap=lambda: ctx.show("pick", which="src")),
                                       ListItem("To", trailing=dst or "Choose",
                                                on_tap=lambda: ctx.show("pick", which="dst"))], item_height=52)
            amount = TextField("amount", "Amount")
            body = [Text("Amount to send", "caption"), amount, route] if ctx.world.state.layout != "alt" else \
                [route, Text("Amount to send", "caption"), amount]
            body.append(Button("Confirm", lambda: self._confirm(ctx)))
            return View("Transfer", body, tabs=tabs, active_tab=1)
        raise KeyError(screen)

    def overlay(self, ctx: Ctx, oid: str, params: dict):
        d = ctx.data
        if oid == "pick":
            which = params["which"]
            names = [a["name"] for a in d["accounts"]] + (d["payees"] if which == "dst" else [])

            def pick(n: str) -> None:
                ctx.set_field(which, n)
                ctx.dismiss()
            return Sheet("Transfer from" if which == "src" else "Transfer to",
                         [Button(n, lambda n=n: pick(n), "plain") for n in names]
                         + [ctx.cancel_button()])
        if oid == "confirm":
            amt, src, dst = params["amount"], params["src"], params["dst"]
            return Dialog("Confirm transfer", f"Send {money(amt)} from {src} to {dst}?",
                          [Button("Transfer Now", lambda: self._transfer(ctx, amt, src, dst)),
                           ctx.cancel_button()])
        return None
