"""Shop: browse, search, product pages with sizes, a bag/cart and checkout."""
from __future__ import annotations

import random

from navrl.worlds.phone.sim.app import App, Ctx, Variation
from navrl.worlds.phone.sim.apps.seed import money
from navrl.worlds.phone.sim.widgets import (Button, Dialog, ListItem, ListView, Picture, Row, Segmented, Sheet,
                                        Text, TextField, View)

PRODUCTS = [
    # name, price, category, sizes
    ("Running Shoes", 89.99, "Shoes", ["7", "8", "9", "10", "11"]),
    ("Trail Sneakers", 109.00, "Shoes", ["8", "9", "10", "11"]),
    ("Leather Boots", 149.50, "Shoes", ["8", "9", "10"]),
    ("Wool Socks", 12.99, "Accessories", []),
    ("Denim Jacket", 79.00, "Clothing", ["S", "M", "L", "XL"]),
    ("Rain Coat", 129.00, "Clothing", ["S", "M", "L"]),
    ("Cotton T-Shirt", 19.99, "Clothing", ["S", "M", "L", "XL"]),
    ("Yoga Mat", 34.95, "Fitness", []),
    ("Water Bottle", 24.00, "Fitness", []),
    ("Wireless Earbuds", 59.99, "Electronics", []),
    ("Phone Charger", 19.00, "Electronics", []),
    ("Backpack", 64.00, "Accessories", []),
    ("Sunglasses", 45.00, "Accessories", []),
    ("Coffee Mug", 14.50, "Home", []),
    ("Desk Lamp", 39.99, "Home", []),
    ("Throw Pillow", 22.00, "Home", []),
]
FILLER = ["Canvas Tote", "Bucket Hat", "Hiking Poles", "Travel Pillow", "Bike Light", "Key Ring",
          "Lunch Box", "Beanie", "Gym Towel", "Notebook Set"]


class Shop(App):
    name = "Shop"
    color = "#ff9500"
    description = "Online store: search products, pick sizes, add them to the bag or cart, check out and pay."
    tabs = [("Featured", "home", "home"), ("Search", "search", "search"), ("Bag", "bag", "bag")]

    def init_data(self, rng: random.Random, var: Variation) -> dict:
        prods = [{"name": n, "price": p, "category": c, "sizes": s} for n, p, c, s in PRODUCTS]
        if var.filler:
            for n in rng.sample(FILLER, min(var.filler, len(FILLER))):
                prods.append({"name": n, "price": round(rng.uniform(5, 60), 2), "category": "New", "sizes": []})
        if var.shuffle:
            rng.shuffle(prods)
        return {"products": prods, "bag": [], "orders": [], "address": "1 Infinite Loop, Cupertino",
                "favorites": []}

    def product(self, ctx: Ctx, name: str) -> dict:
        return next(p for p in ctx.data["products"] if p["name"] == name)

    def view(self, ctx: Ctx, screen: str, params: dict) -> View:
        d = ctx.data
        bag_label = ctx.L("Cart")
        if screen == "home":
            return View("Shop", [Text("Featured", "title"), ListView("featured", [
                ListItem(p["name"], money(p["price"]), on_tap=lambda n=p["name"]: ctx.push("product", name=n))
                for p in d["products"]])], tabs=[("Featured", "home"), ("Search", "search"), (bag_label, "bag")])
        if screen == "search":
            q = ctx.field("query").strip().lower()
            res = [p for p in d["products"] if q and (q in p["name"].lower() or q in p["category"].lower())]
            return View("Search", [TextField("query", "Search products"), ListView("results", [
                ListItem(p["name"], money(p["price"]), on_tap=lambda n=p["name"]: ctx.push("product", name=n))
                for p in res], empty_text="Type to search" if not q else "No results")],
                tabs=[("Featured", "home"), ("Search", "search"), (bag_label, "bag")], active_tab=1)
        if screen == "product":
            p = self.product(ctx, params["name"])
            sel = ctx.world.state.fields.get(ctx.key("size"), "")
            body: list = [Picture(p["name"], "#f4a259", 110), Text(p["name"], "title"), Text(money(p["price"])),]
            if p["sizes"]:
                def pick(i: int, p=p) -> None:
                    ctx.set_field("size", p["sizes"][i])
                body += [Text("Size" + ("" if sel else " - select one"), "caption"),
                         Segmented(p["sizes"], p["sizes"].index(sel) if sel in p["sizes"] else -1, pick)]

            def add(p=p) -> None:
                if p["sizes"] and not sel:
                    ctx.toast("Please select a size")
                    return
                d["bag"].append({"name": p["name"], "size": sel or None, "price": p["price"]})
                ctx.emit("added_to_bag", name=p["name"], size=sel or None)
                ctx.toast(f"Added to {bag_label}")

            fav = p["name"] in d["favorites"]

            def toggle_fav(p=p) -> None:
                if p["name"] in d["favorites"]:
                    d["favorites"].remove(p["name"])
                else:
                    d["favorites"].append(p["name"])
            body += [Row([Button(ctx.L("Add to cart"), add),
                          Button("Unfavorite" if fav else "Favorite", toggle_fav, style="plain")])]
            return View(p["name"], body)
        if screen == "bag":
            items = []
            for i, it in enumerate(d["bag"]):
                sub = money(it["price"]) + (f" · Size {it['size']}" if it["size"] else "")
                items.append(ListItem(it["name"], sub, on_tap=lambda i=i: ctx.show("bagitem", index=i)))
            total = sum(it["price"] for it in d["bag"])
            return View(bag_label, [ListView("bag", items, empty_text=f"Your {bag_label.lower()} is empty"),
                                    Text(f"Total {money(total)}"),
                                    Button("Checkout", (lambda: ctx.push("checkout")), enabled=bool(d["bag"]))],
                        tabs=[("Featured", "home"), ("Search", "search"), (bag_label, "bag")], active_tab=2)
        if screen == "checkout":
            total = sum(it["price"] for it in d["bag"])

            def place() -> None:
                order = {"id": 1000 + len(d["orders"]) + 1, "items": [dict(it) for it in d["bag"]],
                         "total": round(total, 2)}
                d["orders"].append(order)
                d["bag"].clear()
                ctx.emit("order_placed", order=order)
                ctx.show("placed", id=order["id"])
            return View("Checkout", [Text("Ship to", "caption"), Text(d["address"]),
                                     Text("Pay with", "caption"), Text("Visa **** 4242"),
                                     Text(f"Total {money(total)}", "title"),
                                     Button("Place Order", place, enabled=bool(d["bag"]))])
        raise KeyError(screen)

    def overlay(self, ctx: Ctx, oid: str, params: dict):
        if oid == "placed":
            def done() -> None:
                ctx.dismiss()
                ctx.reset("home")
            return Dialog("Order placed", f"Order #{params['id']} is on its way.", [Button("OK", done)])
        if oid == "bagitem":
            i = params["index"]
            it = ctx.data["bag"][i]

            def remove() -> None:
                ctx.data["bag"].pop(i)
                ctx.dismiss()
            return Sheet(it["name"], ctx.delete_buttons(remove))
        return None
