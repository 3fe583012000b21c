"""Shop templates."""
from __future__ import annotations

from navrl.worlds.phone.sim.apps.seed import money
from navrl.worlds.phone.sim.apps.shop import PRODUCTS
from navrl.worlds.phone.expert import Ev, Stage, goto, report_stage, tap, type_into, step_ask
from navrl.worlds.phone.task import Family, Template, register

S = "Shop"
SIZED = [p for p in PRODUCTS if p[3]]
UNSIZED = [p for p in PRODUCTS if not p[3]]


def in_bag(ev_or_world, name: str, size: str | None = None) -> bool:
    st = ev_or_world.state if hasattr(ev_or_world, "state") else ev_or_world
    return any(it["name"] == name and (size is None or it["size"] == size) for it in st.data[S]["bag"])


def search_and_open(ev: Ev, name: str):
    """Search for ``name`` and open its product page (None once there)."""
    if ev.screen() == ("product", {"name": name}):
        return None
    s = goto(ev, S, [("search", None, "Search")])
    if s is not None:
        # already on some product page reached otherwise? go back through goto
        return s
    q = name.split()[0] if len(name.split()) > 1 else name
    s = type_into(ev, "Search products", name)
    if s is not None:
        return s
    return tap(ev, name, f"{name} is in the results.")


def size_stage(ev: Ev, name: str, size: str):
    if ev.world.state.fields.get(f"{S}/product/size") == size:
        return None
    return tap(ev, size, f"I choose size {size}.")


def find_stage(name: str) -> Stage:
    """Search for ``name`` and open its product page."""
    return Stage(f"find {name}", lambda ev: ev.screen() == ("product", {"name": name}),
                 lambda ev: search_and_open(ev, name))


def add_stages(name: str, size: str | None = None) -> list[Stage]:
    """Find ``name``, pick ``size`` (for sized products) and add it to the bag."""
    pick = [Stage(f"pick size {size}", lambda ev: ev.world.state.fields.get(f"{S}/product/size") == size,
                  lambda ev: size_stage(ev, name, size))] if size is not None else []
    return [find_stage(name), *pick,
            Stage("add it to the bag", lambda ev: False, lambda ev: tap(ev, ev.skin.label("Add to cart")))]


@register
class ShopAddToBag(Template):
    name = "shop_add_to_bag"
    family = Family.SINGLE
    apps = (S,)
    max_steps = 15

    def sample(self, rng):
        return {"name": rng.choice(UNSIZED)[0]}

    def goal(self, p):
        return f"Add {p['name']} to my shopping bag in the Shop app."

    def check(self, world, p, answer):
        return in_bag(world, p["name"])

    def stages(self, p):
        return add_stages(p["name"])


@register
class ShopAddSized(Template):
    name = "shop_add_sized"
    family = Family.SINGLE
    apps = (S,)
    max_steps = 16

    def sample(self, rng):
        p = rng.choice(SIZED)
        return {"name": p[0], "size": rng.choice(p[3])}

    def goal(self, p):
        return f"Put {p['name']} in size {p['size']} in my bag."

    def check(self, world, p, answer):
        return in_bag(world, p["name"], p["size"])

    def stages(self, p):
        return add_stages(p["name"], p["size"])


@register
class ShopAskSize(Template):
    name = "shop_ask_size"
    family = Family.ASK_USER
    apps = (S,)
    max_steps = 18

    def sample(self, rng):
        p = rng.choice([p for p in SIZED if p[2] == "Shoes"])
        return {"name": p[0], "size": rng.choice(p[3])}

    def goal(self, p):
        return f"Add {p['name']} in my shoe size to the bag."

    def profile(self, p):
        return {"shoe size": p["size"]}

    def check(self, world, p, answer):
        return in_bag(world, p["name"], p["size"])

    def stages(self, p):
        sz = p["size"]
        return [Stage("ask the user for their shoe size", lambda ev: ev.knows(sz),
                      lambda ev: step_ask(ev, "What is your shoe size?",
                                          "The task needs the user's shoe size, which I don't know."))] \
            + add_stages(p["name"], sz)


@register
class ShopRemoveFromBag(Template):
    name = "shop_remove_from_bag"
    family = Family.SINGLE
    apps = (S,)
    max_steps = 12

    def sample(self, rng):
        items = rng.sample([p[0] for p in UNSIZED], 3)
        return {"items": items, "target": items[1]}

    def goal(self, p):
        return f"Remove {p['target']} from my bag."

    def setup(self, state, p):
        prices = {x[0]: x[1] for x in PRODUCTS}
        state.data[S]["bag"] = [{"name": n, "size": None, "price": prices[n]} for n in p["items"]]

    def check(self, world, p, answer):
        names = [it["name"] for it in world.state.data[S]["bag"]]
        return p["target"] not in names and all(n in names for n in p["items"] if n != p["target"])

    def stages(self, p):
        t = p["target"]

        def act(ev):
            ov = ev.state.overlay
            if ov and ov.get("id") == "bagitem":
                if ev.data(S)["bag"][ov["params"]["index"]]["name"] == t:
                    return tap(ev, ev.skin.label("Delete"), f"The sheet for {t} offers to remove it.")
                return tap(ev, ev.skin.label("Cancel"), "This sheet is for a different item.")
            return goto(ev, S, [("bag", None, ev.skin.label("Cart"))]) or tap(ev, t, f"I open {t} in the bag.")
        return [Stage(f"remove {t} from the bag", lambda ev: False, act)]


@register
class ShopCheckout(Template):
    name = "shop_checkout"
    family = Family.SINGLE
    apps = (S,)
    max_steps = 20

    def sample(self, rng):
        return {"name": rng.choice(UNSIZED)[0]}

    def goal(self, p):
        return f"Buy {p['name']} from the Shop app and place the order."

    def check(self, world, p, answer):
        return any(any(it["name"] == p["name"] for it in o["items"]) for o in world.state.data[S]["orders"])

    def stages(self, p):
        n = p["name"]
        return [Stage(f"add {n} to the bag", lambda ev: in_bag(ev, n),
                      lambda ev: search_and_open(ev, n) or tap(ev, ev.skin.label("Add to cart"))),
                Stage("go to checkout", lambda ev: ev.screen() == ("checkout", {}),
                      lambda ev: goto(ev, S, [("bag", None, ev.skin.label("Cart")), ("checkout", None, "Checkout")])),
                Stage("place the order", lambda ev: False, lambda ev: tap(ev, "Place Order"))]


@register
class ShopPrice(Template):
    name = "shop_price"
    family = Family.ANSWER
    apps = (S,)
    max_steps = 12

    def sample(self, rng):
        p = rng.choice(PRODUCTS)
        return {"name": p[0], "price": money(p[1])}

    def goal(self, p):
        return f"How much does {p['name']} cost in the Shop app?"

    def answer(self, p):
        return p["price"]

    def stages(self, p):
        return [find_stage(p["name"]),
                report_stage("the price", f"The product page shows {p['price']}.", p["price"])]
