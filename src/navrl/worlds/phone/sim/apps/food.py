"""QuickBite: food ordering. Restaurants, search, menus, a cart, Place order, past orders.

Placing an order also drops a receipt into Mail and a card charge into Bank (when those
apps are installed), so the three stay consistent the way a real phone's do.
"""
from __future__ import annotations

import random

from navrl.worlds.phone.sim.app import App, Ctx, Variation
from navrl.worlds.phone.sim.apps.records import add_email, add_tx, food_merchant, food_receipt
from navrl.worlds.phone.sim.apps.seed import (DELIVERY_FEE, RESTAURANTS, TODAY, make_order, money, seed_orders,
                                          short_date)
from navrl.worlds.phone.sim.widgets import Button, Dialog, ListItem, ListView, Sheet, Text, TextField, View

DRINKS = {"Starbucks": ["Caffe Latte", "Iced Caramel Macchiato", "Cold Brew", "Matcha Latte", "Pink Drink",
                        "Chai Tea Latte"]}
FILLER_NAMES = ["Golden Dragon", "Burger Barn", "Taco Town", "Noodle House", "Curry Corner", "Bagel Bros",
                "Poke Place", "Falafel King", "Wing Stop", "Pho 99"]
FILLER_DISHES = ["House Special", "Combo Plate", "Side Salad", "Soup of the Day", "Fountain Drink"]


def order_titles(orders: list[dict]) -> dict[int, str]:
    """Row label of each order in the Orders list: "Chipotle - Jun 13" (made unique with the id)."""
    out: dict[int, str] = {}
    seen: set[str] = set()
    for o in sorted(orders, key=lambda o: (o["date"], o["id"]), reverse=True):
        t = f"{o['restaurant']} - {short_date(o['date'])}"
        if t in seen:
            t = f"{t} #{o['id']}"
        seen.add(t)
        out[o["id"]] = t
    return out


def last_order(data: dict, restaurant: str | None = None) -> dict | None:
    os_ = [o for o in data["orders"] if restaurant is None or o["restaurant"] == restaurant]
    return max(os_, key=lambda o: (o["date"], o["id"]), default=None)


class QuickBite(App):
    name = "QuickBite"
    color = "#e4572e"
    description = "Food delivery: browse and search restaurants, add dishes to the cart, place orders, see past orders."
    tabs = [("Browse", "browse", "home"), ("Search", "search", "search"), ("Cart", "cart", "cart"),
            ("Orders", "orders", "orders")]

    def init_data(self, rng: random.Random, var: Variation) -> dict:
        rests = [{"name": n, "cuisine": c, "eta": e, "rating": r, "menu": [{"name": d, "price": p} for d, p in m]}
                 for n, c, e, r, m in RESTAURANTS]
        if var.filler:
            for n in rng.sample(FILLER_NAMES, min(var.filler, len(FILLER_NAMES))):
                menu = [{"name": d, "price": round(rng.uniform(3, 16), 2)} for d in rng.sample(FILLER_DISHES, 4)]
                rests.append({"name": n, "cuisine": "New", "eta": rng.randint(15, 50),
                              "rating": round(rng.uniform(3.6, 4.9), 1), "menu": menu})
        if var.shuffle:
            rng.shuffle(rests)
        return {"restaurants": rests, "cart": {"restaurant": None, "items": []}, "orders": seed_orders(),
                "next_id": 4830, "opened": [], "address": "221 Pine St, Apt 4"}

    # -------------------------------------------------------------------------- helpers
    def rest(self, ctx: Ctx, name: str) -> dict:
        return next(r for r in ctx.data["restaurants"] if r["name"] == name)

    def _tabs(self, ctx: Ctx) -> list[tuple[str, str]]:
        return [(t[0], t[1]) for t in self.tabs]

    def _rest_rows(self, ctx: Ctx, rests: list[dict]) -> list[ListItem]:
        return [ListItem(r["name"], f"{r['cuisine']} | {r['eta']} min | {r['rating']}",
                         on_tap=lambda n=r["name"]: ctx.push("restaurant", name=n), icon_color="#f4a259")
                for r in rests]

    def _add(self, ctx: Ctx, restaurant: str, dish: str, price: float) -> None:
        cart = ctx.data["cart"]
        if cart["items"] and cart["restaurant"] != restaurant:
            ctx.show("newcart", restaurant=restaurant, dish=dish, price=price)
            return
        cart["restaurant"] = restaurant
        for it in cart["items"]:
            if it["name"] == dish:
                it["qty"] += 1
                break
        else:
            cart["items"].append({"name": dish, "qty": 1, "price": price})
        ctx.emit("food_added", restaurant=restaurant, dish=dish)
        ctx.dismiss()
        ctx.toast(f"Added {dish}")

    def _place(self, ctx: Ctx) -> None:
        d = ctx.data
        cart = d["cart"]
        if not cart["items"]:
            ctx.toast("Your cart is empty")
            return
        oid = d["next_id"]
        d["next_id"] += 1
        order = make_order(oid, cart["restaurant"], [(it["name"], it["qty"], it["price"]) for it in cart["items"]],
                           TODAY)
        d["orders"].append(order)
        d["cart"] = {"restaurant": None, "items": []}
        ctx.emit("food_order_placed", order=dict(order))
        data = ctx.world.state.data
        if "Mail" in data:
            add_email(data["Mail"], **food_receipt(order), unread=True)
        if "Bank" in data:
            add_tx(data["Bank"], "Checking", food_merchant(order["restaurant"]), -order["total"], TODAY)
        ctx.show("placed", id=oid, total=order["total"])

    # -------------------------------------------------------------------------- screens
    def view(self, ctx: Ctx, screen: str, params: dict) -> View:
        d = ctx.data
        alt = ctx.world.state.layout == "alt"
        if screen == "home":
            rows = self._rest_rows(ctx, d["restaurants"])
            head = Text(f"Deliver to {d['address']}", "caption")
            body = [ListView("restaurants", rows, item_height=52), head] if alt else \
                [head, Text("Restaurants near you", "title"), ListView("restaurants", rows, item_height=52)]
            return View("QuickBite", body, tabs=self._tabs(ctx))
        if screen == "search":
            q = ctx.field("query").strip().lower()
            res = [r for r in d["restaurants"] if q and (q in r["name"].lower() or q in r["cuisine"].lower()
                                                         or any(q in m["name"].lower() for m in r["menu"]))]
            return View("Search", [TextField("query", "Search restaurants or dishes"),
                                   ListView("results", self._rest_rows(ctx, res),
                                            empty_text="Type to search" if not q else "No results")],
                        tabs=self._tabs(ctx), active_tab=1)
        if screen == "restaurant":
            r = self.rest(ctx, params["name"])
            rows = [ListItem(m["name"], money(m["price"]),
                             on_tap=lambda m=m: ctx.show("dish", restaurant=r["name"], dish=m["name"],
                                                         price=m["price"]))
                    for m in r["menu"]]
            info = Text(f"{r['cuisine']} | {r['eta']} min | Rating {r['rating']}", "caption")
            n_cart = sum(it["qty"] for it in d["cart"]["items"])
            cart_btn = Button(f"View Cart ({n_cart})", lambda: ctx.reset("cart"), style="plain",
                              enabled=n_cart > 0)
            body = [info, Text("Menu", "title"), ListView("menu", rows, item_height=52), cart_btn]
            if alt:
                body = [info, cart_btn, ListView("menu", rows, item_height=52)]
            return View(r["name"], body)
        if screen == "cart":
            cart = d["cart"]
            rows = [ListItem(it["name"], f"{it['qty']} x {money(it['price'])}",
                             on_tap=lambda i=i: ctx.show("cartitem", index=i))
                    for i, it in enumerate(cart["items"])]
            sub = round(sum(it["qty"] * it["price"] for it in cart["items"]), 2)
            body: list = [Text(cart["restaurant"] or "Cart", "title"),
                          ListView("cart", rows, item_height=52, empty_text="Your cart is empty")]
            if cart["items"]:
                body += [Text(f"Subtotal {money(sub)}   Delivery {money(DELIVERY_FEE)}", "caption"),
                         Text(f"Total {money(sub + DELIVERY_FEE)}")]
            body.append(Button("Place Order", lambda: self._place(ctx), enabled=bool(cart["items"])))
            return View("Cart", body, tabs=self._tabs(ctx), active_tab=2)
        if screen == "orders":
            titles = order_titles(d["orders"])
            rows = []
            for o in sorted(d["orders"], key=lambda o: (o["date"], o["id"]), reverse=True):
                def open_(o=o) -> None:
                    if o["id"] not in d["opened"]:
                        d["opened"].append(o["id"])
                    ctx.push("order", id=o["id"])
                rows.append(ListItem(titles[o["id"]], f"{money(o['total'])} | {len(o['items'])} item"
                                     + ("s" if len(o["items"]) > 1 else ""), on_tap=open_))
            return View("Orders", [ListView("orders", rows, item_height=52, empty_text="No orders yet")],
                        tabs=self._tabs(ctx), active_tab=3)
        if screen == "order":
            o = next(o for o in d["orders"] if o["id"] == params["id"])
            rows = [ListItem(it["name"], f"{it['qty']} x {money(it['price'])}") for it in o["items"]]

            def reorder(o=o) -> None:
                d["cart"] = {"restaurant": o["restaurant"],
                             "items": [{"name": it["name"], "qty": it["qty"], "price": it["price"]}
                                       for it in o["items"]]}
                ctx.emit("food_reorder", id=o["id"])
                ctx.reset("cart")
            return View(f"Order #{o['id']}", [
                Text(o["restaurant"], "title"), Text(f"Delivered {short_date(o['date'])}", "caption"),
                ListView("items", rows, item_height=48),
                Text(f"Subtotal {money(o['subtotal'])}   Delivery {money(o['fee'])}", "caption"),
                Text(f"Total {money(o['total'])}"),
                Button("Reorder", reorder, style="plain")])
        raise KeyError(screen)

    def overlay(self, ctx: Ctx, oid: str, params: dict):
        d = ctx.data
        if oid == "dish":
            r, dish, price = params["restaurant"], params["dish"], params["price"]
            return Sheet(dish, [Button(ctx.L("Add to cart"), lambda: self._add(ctx, r, dish, price)),
                                ctx.cancel_button()], message=money(price))
        if oid == "newcart":
            def fresh() -> None:
                d["cart"] = {"restaurant": None, "items": []}
                self._add(ctx, params["restaurant"], params["dish"], params["price"])
            return Dialog("Start a new cart?", f"Your cart has items from {d['cart']['restaurant']}.",
                          [Button("New Cart", fresh, "destructive"), ctx.cancel_button()])
        if oid == "cartitem":
            i = params["index"]
            if i >= len(d["cart"]["items"]):
                return None
            it = d["cart"]["items"][i]

            def remove() -> None:
                d["cart"]["items"].pop(i)
                if not d["cart"]["items"]:
                    d["cart"]["restaurant"] = None
                ctx.dismiss()
            return Sheet(it["name"], ctx.delete_buttons(remove))
        if oid == "placed":
            def done() -> None:
                ctx.dismiss()
                ctx.reset("orders")
            return Dialog("Order placed", f"Order #{params['id']} ({money(params['total'])}) is being prepared.",
                          [Button("OK", done)])
        return None
