"""QuickBite templates (and the food-ordering expert helpers the multi-app templates reuse)."""
from __future__ import annotations

from navrl.worlds.phone.sim.apps.food import DRINKS, order_titles
from navrl.worlds.phone.sim.apps.records import add_email, add_tx, food_merchant, food_receipt
from navrl.worlds.phone.sim.apps.seed import RESTAURANTS, SEED_ORDERS, days_ago, make_order, money, price_of
from navrl.worlds.phone.expert import Ev, Stage, goto, step_ask, step_complete, tap
from navrl.worlds.phone.task import Family, Template, register
from navrl.worlds.phone.templates.mail import at

Q = "QuickBite"
MENU = {r[0]: [m[0] for m in r[4]] for r in RESTAURANTS}


def plant_order(state, oid: int, restaurant: str, items: list[tuple[str, int]], date: str,
                receipt_total: float | None = None, charge_total: float | None = None) -> dict:
    """Plant a past QuickBite order with its Mail receipt and Bank charge (amounts overridable)."""
    o = make_order(oid, restaurant, [(n, q, price_of(restaurant, n)) for n, q in items], date)
    state.data[Q]["orders"].append(o)
    if "Mail" in state.data:
        r = dict(o, total=o["total"] if receipt_total is None else receipt_total)
        add_email(state.data["Mail"], **food_receipt(r), unread=True)
    if "Bank" in state.data:
        add_tx(state.data["Bank"], "Checking", food_merchant(restaurant),
               -(o["total"] if charge_total is None else charge_total), date, adjust=False)
    return o


def sample_order(rng, restaurant: str | None = None) -> tuple[str, list[tuple[str, int]]]:
    r = restaurant or rng.choice(sorted(MENU))
    dishes = rng.sample(MENU[r], rng.randint(1, 3))
    return r, [(d, 1 if rng.random() < 0.8 else 2) for d in dishes]


def food_overlay(ev: Ev, want: tuple[str, str] | None = None):
    """Answer QuickBite's own sheets and dialogs: add ``want`` = (restaurant, dish), cancel the rest."""
    ov = ev.state.overlay
    if ev.state.fg != Q or not ov or ov.get("owner") != Q:
        return None
    i, pr = ov["id"], ov["params"]
    if i == "placed":
        return tap(ev, "OK", "The order confirmation is showing; I close it.")
    if want is not None and (pr.get("restaurant"), pr.get("dish")) == want:
        if i == "dish":
            return tap(ev, ev.skin.label("Add to cart"), f"I add {want[1]} to the cart.")
        if i == "newcart":
            return tap(ev, "New Cart", "The cart holds another restaurant's items; I start a new cart.")
    return tap(ev, ev.skin.label("Cancel"), "I don't need this; I cancel it.")


def in_cart(ev_or_world, restaurant: str, dish: str) -> bool:
    st = ev_or_world.state
    c = st.data[Q]["cart"]
    return c["restaurant"] == restaurant and any(it["name"] == dish for it in c["items"])


def placed(world, restaurant: str, dishes: list[str] | None = None, exact: list[tuple[str, int]] | None = None) -> bool:
    for e in world.state.events:
        if e.get("app") != Q or e.get("kind") != "food_order_placed":
            continue
        o = e["order"]
        if o["restaurant"] != restaurant:
            continue
        names = [it["name"] for it in o["items"]]
        if dishes is not None and not all(d in names for d in dishes):
            continue
        if exact is not None and sorted((it["name"], it["qty"]) for it in o["items"]) != sorted(exact):
            continue
        return True
    return False


def checkout_stages(why: str) -> list[Stage]:
    """Open the cart and place the order (``why``: the reason given for placing it)."""
    return [Stage("open the cart", lambda ev: at(ev, Q, "cart") and ev.state.overlay is None,
                  lambda ev: food_overlay(ev) or goto(ev, Q, [("cart", None, "Cart")])),
            Stage("place the order", lambda ev: False, lambda ev: food_overlay(ev) or tap(ev, "Place Order", why))]


def open_order(ev: Ev, oid: int):
    """Go to order ``oid``'s page, closing QuickBite's sheets first (None once there)."""
    s = food_overlay(ev)
    if s is not None:
        return s
    title = order_titles(ev.data(Q)["orders"])[oid]
    return goto(ev, Q, [("orders", None, "Orders"), ("order", {"id": oid}, title)])


def order_stages(restaurant: str, dish) -> list[Stage]:
    """Add ``dish`` (a name, or a callable of ev giving it) from ``restaurant`` and place the order."""
    def dn(ev: Ev) -> str:
        return dish(ev) if callable(dish) else dish

    def add(ev: Ev):
        s = food_overlay(ev, (restaurant, dn(ev)))
        if s is not None:
            return s
        return goto(ev, Q, [("home", None, "Browse"), ("restaurant", {"name": restaurant}, restaurant)]) \
            or tap(ev, dn(ev), f"{dn(ev)} is on the menu.")
    return [Stage("add the dish to the cart", lambda ev: in_cart(ev, restaurant, dn(ev)), add),
            *checkout_stages("The cart is right; I place the order.")]


def view_order_stage(oid_of, desc: str = "open the order in QuickBite") -> Stage:
    """Open an order's page (``oid_of(ev)`` gives its id); done once it was opened this episode."""
    return Stage(desc, lambda ev: oid_of(ev) in ev.data(Q)["opened"], lambda ev: open_order(ev, oid_of(ev)))


@register
class FoodOrder(Template):
    name = "food_order"
    family = Family.SINGLE
    apps = (Q,)
    max_steps = 16

    def sample(self, rng):
        r = rng.choice(sorted(MENU))
        return {"restaurant": r, "dish": rng.choice(MENU[r])}

    def goal(self, p):
        return f"Order {p['dish']} from {p['restaurant']} on QuickBite."

    def check(self, world, p, answer):
        return placed(world, p["restaurant"], [p["dish"]])

    def stages(self, p):
        return order_stages(p["restaurant"], p["dish"])


@register
class FoodLastTotal(Template):
    name = "food_last_total"
    family = Family.ANSWER
    apps = (Q,)
    max_steps = 10

    def sample(self, rng):
        r, items = sample_order(rng)
        return {"restaurant": r, "items": items, "ago": rng.randint(0, 1)}

    def goal(self, p):
        return "How much was my last QuickBite order?"

    def setup(self, state, p):
        plant_order(state, 4825, p["restaurant"], p["items"], days_ago(p["ago"]))

    def total(self, p) -> str:
        return money(make_order(0, p["restaurant"], [(n, q, price_of(p["restaurant"], n)) for n, q in p["items"]],
                                "")["total"])

    def answer(self, p):
        return self.total(p)

    def stages(self, p):
        def report(ev: Ev):
            return food_overlay(ev) or step_complete(
                ev, f"The latest order, from {p['restaurant']}, came to {self.total(p)}.", self.total(p))
        return [view_order_stage(lambda ev: 4825, "open the most recent order"),
                Stage("report its total", lambda ev: False, report)]


@register
class FoodUsualDrink(Template):
    name = "food_usual_drink"
    family = Family.ASK_USER
    apps = (Q,)
    max_steps = 18

    def sample(self, rng):
        return {"restaurant": "Starbucks", "drink": rng.choice(DRINKS["Starbucks"])}

    def goal(self, p):
        return f"Order my usual drink from {p['restaurant']} on QuickBite."

    def profile(self, p):
        return {"usual drink": p["drink"]}

    def check(self, world, p, answer):
        return placed(world, p["restaurant"], [p["drink"]])

    def stages(self, p):
        return [Stage("ask the user what their usual drink is", lambda ev: ev.knows(p["drink"]),
                      lambda ev: step_ask(ev, "What is your usual drink?", "Only the user knows their usual drink."))] \
            + order_stages(p["restaurant"], p["drink"])


@register
class FoodReorder(Template):
    name = "food_reorder"
    family = Family.SINGLE
    apps = (Q,)
    max_steps = 16
    heldout = True

    def sample(self, rng):
        oid, r, items, _ = rng.choice(SEED_ORDERS)
        return {"restaurant": r, "id": oid, "items": [list(x) for x in items]}

    def goal(self, p):
        return f"Reorder my last {p['restaurant']} order on QuickBite."

    def check(self, world, p, answer):
        return placed(world, p["restaurant"], exact=[tuple(x) for x in p["items"]])

    def stages(self, p):
        r = p["restaurant"]
        want = sorted(tuple(x) for x in p["items"])

        def cart_ok(ev: Ev) -> bool:
            c = ev.data(Q)["cart"]
            return c["restaurant"] == r and sorted((it["name"], it["qty"]) for it in c["items"]) == want

        def reorder(ev: Ev):
            return open_order(ev, p["id"]) or tap(ev, "Reorder", "This is the last order from there; I reorder it.")
        return [Stage(f"reorder the last {r} order", cart_ok, reorder),
                *checkout_stages("The cart matches; I place the order.")]
