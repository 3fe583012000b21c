"""Bank templates (and the transfer expert the multi-app templates reuse)."""
from __future__ import annotations

from navrl.worlds.phone.sim.apps.bank import PAYEES, SEED_TX, last_charge
from navrl.worlds.phone.sim.apps.records import account, add_tx
from navrl.worlds.phone.sim.apps.seed import days_ago, money
from navrl.worlds.phone.expert import Ev, Stage, goto, report_stage, scroll_to, step_ask, step_complete, tap, type_into
from navrl.worlds.phone.task import Family, Template, register
from navrl.worlds.phone.templates.mail import at

B = "Bank"


def amount_text(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}"


def bank_overlay(ev: Ev):
    ov = ev.state.overlay
    if ev.state.fg != B or not ov or ov.get("owner") != B:
        return None
    return ov


def transferred(world, amount: float, src: str, dst: str) -> bool:
    return any(abs(t["amount"] - amount) < 0.005 and t["src"] == src and t["dst"] == dst
               for t in world.state.data[B]["transfers"])


def transfer_stages(amount: float | str, src: str, dst: str) -> list[Stage]:
    """Send ``amount`` (a number, or a callable of ev giving it) from ``src`` to ``dst``."""
    def amt(ev: Ev) -> float:
        return amount(ev) if callable(amount) else amount

    def on_tr(ev: Ev) -> bool:
        return at(ev, B, "transfer")

    def fv(ev: Ev, key: str) -> str:
        return ev.state.fields.get(f"{B}/transfer/{key}", "")

    def cancel(ev: Ev):
        return tap(ev, ev.skin.label("Cancel"), "This dialog is not the one I need; I cancel it.")

    def open_tr(ev: Ev):
        if bank_overlay(ev):
            return cancel(ev)
        return goto(ev, B, [("transfer", None, "Transfer")])

    def enter(ev: Ev):
        if bank_overlay(ev):
            return cancel(ev)
        return type_into(ev, "Amount", amount_text(amt(ev)))

    def pick(which: str, name: str, row: str):
        def act(ev: Ev):
            ov = bank_overlay(ev)
            if ov is not None:
                if ov["id"] == "pick" and ov["params"]["which"] == which:
                    return tap(ev, name, f"I choose {name}.")
                return cancel(ev)
            return tap(ev, row, f"I open the {row} choice.")
        return act

    def confirm(ev: Ev):
        ov = bank_overlay(ev)
        if ov is not None:
            pr = ov["params"]
            if ov["id"] == "confirm" and abs(pr["amount"] - amt(ev)) < 0.005 and pr["src"] == src and pr["dst"] == dst:
                return tap(ev, "Transfer Now", "The confirmation shows the right amount and accounts.")
            return cancel(ev)
        return tap(ev, "Confirm", "The transfer form is filled in; I confirm it.")

    return [
        Stage("open the Transfer tab", on_tr, open_tr),
        Stage("enter the amount", lambda ev: on_tr(ev) and fv(ev, "amount") == amount_text(amt(ev)), enter),
        Stage(f"choose {src} as the source", lambda ev: on_tr(ev) and (fv(ev, "src") or "Checking") == src,
              pick("src", src, "From")),
        Stage(f"choose {dst} as the destination", lambda ev: on_tr(ev) and fv(ev, "dst") == dst,
              pick("dst", dst, "To")),
        Stage("confirm the transfer", lambda ev: False, confirm),
    ]


def account_stage(name: str, desc: str | None = None) -> Stage:
    def act(ev: Ev):
        if bank_overlay(ev):
            return tap(ev, ev.skin.label("Cancel"), "I close this dialog.")
        return goto(ev, B, [("accounts", None, "Accounts"), ("account", {"name": name}, name)])
    return Stage(desc or f"open the {name} account", lambda ev: at(ev, B, "account", {"name": name})
                 and bank_overlay(ev) is None, act)


AMOUNTS = [25, 40, 50, 75, 100, 120, 150, 200, 250, 300, 45.5, 82.25, 19.99]


@register
class BankTransferSavings(Template):
    name = "bank_transfer_savings"
    family = Family.SINGLE
    apps = (B,)
    max_steps = 16

    def sample(self, rng):
        to_sav = rng.random() < 0.7
        return {"amount": rng.choice(AMOUNTS), "src": "Checking" if to_sav else "Savings",
                "dst": "Savings" if to_sav else "Checking"}

    def goal(self, p):
        return f"Transfer {money(p['amount'])} from my {p['src'].lower()} to my {p['dst'].lower()} account."

    def check(self, world, p, answer):
        return transferred(world, p["amount"], p["src"], p["dst"])

    def stages(self, p):
        return transfer_stages(p["amount"], p["src"], p["dst"])


@register
class BankPayPayee(Template):
    name = "bank_pay_payee"
    family = Family.SINGLE
    apps = (B,)
    max_steps = 16

    def sample(self, rng):
        return {"amount": rng.choice(AMOUNTS), "payee": rng.choice(PAYEES),
                "src": "Checking" if rng.random() < 0.8 else "Savings"}

    def goal(self, p):
        return f"Send {money(p['amount'])} to {p['payee']} from my {p['src'].lower()} account."

    def check(self, world, p, answer):
        return transferred(world, p["amount"], p["src"], p["payee"])

    def stages(self, p):
        return transfer_stages(p["amount"], p["src"], p["payee"])


@register
class BankBalance(Template):
    name = "bank_balance"
    family = Family.ANSWER
    apps = (B,)
    max_steps = 10

    def sample(self, rng):
        acct = rng.choice(["Checking", "Savings"])
        return {"account": acct, "balance": round(rng.uniform(800, 9000) if acct == "Checking"
                                                   else rng.uniform(5000, 25000), 2)}

    def goal(self, p):
        return f"What is my {p['account'].lower()} balance?"

    def setup(self, state, p):
        account(state.data[B], p["account"])["balance"] = p["balance"]

    def answer(self, p):
        return money(p["balance"])

    def stages(self, p):
        return [account_stage(p["account"]),
                report_stage("the balance", f"The {p['account']} balance is {money(p['balance'])}.",
                             money(p["balance"]))]


CHARGE_MERCHANTS = [m for a, m, amt, _ in SEED_TX if a == "Checking" and amt < 0 and m != "Oak Street Apartments"]


@register
class BankLastCharge(Template):
    name = "bank_last_charge"
    family = Family.ANSWER
    apps = (B,)
    max_steps = 12
    heldout = True

    def sample(self, rng):
        return {"merchant": rng.choice(CHARGE_MERCHANTS), "amount": round(rng.uniform(5, 95), 2)}

    def goal(self, p):
        return f"How much was my most recent {p['merchant']} charge?"

    def setup(self, state, p):
        add_tx(state.data[B], "Checking", p["merchant"], -p["amount"], days_ago(0), adjust=False)

    def answer(self, p):
        return money(p["amount"])

    def stages(self, p):
        m = p["merchant"]

        def report(ev: Ev):
            s = scroll_to(ev, m)
            if s is not None:
                return s
            t = last_charge(ev.data(B), m)
            return step_complete(ev, f"The newest {m} row shows {money(-t['amount'])}.", money(p["amount"]))
        return [account_stage("Checking", "open the Checking account"),
                Stage("find the newest charge and report it", lambda ev: False, report)]


@register
class BankAskSavings(Template):
    name = "bank_ask_savings"
    family = Family.ASK_USER
    apps = (B,)
    max_steps = 18

    def sample(self, rng):
        return {"amount": rng.choice([100, 150, 200, 250, 300, 400, 500])}

    def goal(self, p):
        return "Move my usual monthly savings amount from checking to savings."

    def profile(self, p):
        return {"monthly savings amount": f"${p['amount']}"}

    def check(self, world, p, answer):
        return transferred(world, p["amount"], "Checking", "Savings")

    def stages(self, p):
        return [Stage("ask the user how much they save each month", lambda ev: ev.knows(f"${p['amount']}"),
                      lambda ev: step_ask(ev, "What is your monthly savings amount?",
                                          "The amount is only known to the user."))] \
            + transfer_stages(p["amount"], "Checking", "Savings")
