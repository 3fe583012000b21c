"""Recipes: recipe list with search, recipe detail (ingredients, steps), favourites,
delete by swiping a row left or by long press, and Premium recipes behind a paywall."""
from __future__ import annotations

import random

from navrl.worlds.phone.sim.app import App, Ctx, Variation, filler_names
from navrl.worlds.phone.sim.widgets import (Button, Dialog, ListItem, ListView, Picture, Row, Segmented, Sheet, Text,
                                        TextField, View)

# name, minutes, serves, [(ingredient, quantity)], [steps], premium
RECIPES = [
    ("Broccoli Cheddar Soup", 35, 4,
     [("Broccoli", "2 heads"), ("Cheddar Cheese", "2 cups"), ("Onion", "1"), ("Chicken Stock", "4 cups"),
      ("Heavy Cream", "1 cup"), ("Butter", "3 tbsp")],
     ["Melt the butter and soften the onion", "Add the stock and broccoli and simmer 20 min",
      "Blend half, stir in cream and cheese"], False),
    ("Garlic Butter Shrimp", 20, 2,
     [("Shrimp", "1 lb"), ("Garlic", "4 cloves"), ("Butter", "4 tbsp"), ("Lemon", "1"), ("Parsley", "1 bunch")],
     ["Melt the butter with the garlic", "Cook the shrimp 2 min per side", "Finish with lemon and parsley"], False),
    ("Lemon Herb Chicken", 45, 4,
     [("Chicken Thighs", "6"), ("Lemon", "2"), ("Thyme", "4 sprigs"), ("Garlic", "3 cloves"),
      ("Olive Oil", "3 tbsp")],
     ["Marinate the chicken in lemon, thyme and garlic", "Roast at 200 C for 35 min", "Rest 5 min and serve"],
     False),
    ("Mushroom Risotto", 40, 4,
     [("Arborio Rice", "1.5 cups"), ("Mushrooms", "300 g"), ("Vegetable Stock", "5 cups"), ("Parmesan", "1 cup"),
      ("White Wine", "1/2 cup"), ("Shallot", "1")],
     ["Brown the mushrooms", "Toast the rice with the shallot", "Add stock a ladle at a time",
      "Stir in the parmesan"], False),
    ("Chickpea Curry", 30, 4,
     [("Chickpeas", "2 cans"), ("Coconut Milk", "1 can"), ("Curry Paste", "3 tbsp"), ("Spinach", "2 cups"),
      ("Onion", "1"), ("Rice", "2 cups")],
     ["Fry the onion and curry paste", "Add chickpeas and coconut milk", "Wilt in the spinach, serve on rice"],
     False),
    ("Banana Bread", 70, 8,
     [("Bananas", "3 ripe"), ("Flour", "2 cups"), ("Sugar", "3/4 cup"), ("Eggs", "2"), ("Butter", "1/2 cup"),
      ("Baking Soda", "1 tsp")],
     ["Mash the bananas", "Mix in the wet, then the dry ingredients", "Bake at 175 C for 60 min"], False),
    ("Caprese Salad", 10, 2,
     [("Tomatoes", "3"), ("Mozzarella", "250 g"), ("Basil", "1 bunch"), ("Balsamic Glaze", "2 tbsp"),
      ("Olive Oil", "2 tbsp")],
     ["Slice the tomatoes and mozzarella", "Layer with basil", "Drizzle oil and glaze"], False),
    ("Beef Tacos", 25, 4,
     [("Ground Beef", "1 lb"), ("Taco Shells", "8"), ("Lettuce", "1 head"), ("Salsa", "1 jar"),
      ("Sour Cream", "1 cup"), ("Taco Seasoning", "1 packet")],
     ["Brown the beef with the seasoning", "Warm the shells", "Fill and top with lettuce, salsa and cream"],
     False),
    ("Pad Thai", 30, 3,
     [("Rice Noodles", "200 g"), ("Tofu", "1 block"), ("Bean Sprouts", "2 cups"), ("Peanuts", "1/3 cup"),
      ("Fish Sauce", "3 tbsp"), ("Eggs", "2")],
     ["Soak the noodles", "Fry the tofu and scramble the eggs", "Toss everything with the sauce"], False),
    ("Shakshuka", 25, 2,
     [("Eggs", "4"), ("Crushed Tomatoes", "1 can"), ("Red Pepper", "1"), ("Cumin", "1 tsp"), ("Feta", "1/2 cup")],
     ["Cook the pepper with the cumin", "Add tomatoes and simmer", "Crack in the eggs and cover"], False),
    ("Pesto Pasta", 15, 2,
     [("Spaghetti", "200 g"), ("Pesto", "1/2 cup"), ("Cherry Tomatoes", "1 cup"), ("Pine Nuts", "2 tbsp"),
      ("Parmesan", "1/4 cup")],
     ["Boil the pasta", "Toss with pesto and tomatoes", "Top with pine nuts and parmesan"], False),
    ("Greek Salad", 15, 4,
     [("Cucumber", "1"), ("Tomatoes", "4"), ("Feta", "200 g"), ("Kalamata Olives", "1/2 cup"),
      ("Red Onion", "1/2")],
     ["Chop the vegetables", "Add olives and feta", "Dress with oil and oregano"], False),
    ("Tomato Basil Soup", 35, 4,
     [("Crushed Tomatoes", "2 cans"), ("Basil", "1 bunch"), ("Garlic", "3 cloves"), ("Vegetable Stock", "2 cups"),
      ("Heavy Cream", "1/2 cup")],
     ["Saute the garlic", "Simmer tomatoes with stock 20 min", "Blend with basil and cream"], False),
    ("Blueberry Pancakes", 20, 4,
     [("Flour", "1.5 cups"), ("Blueberries", "1 cup"), ("Milk", "1.25 cups"), ("Eggs", "1"),
      ("Maple Syrup", "to serve")],
     ["Whisk the batter", "Fold in the blueberries", "Cook on a hot griddle"], False),
    ("Veggie Stir Fry", 20, 3,
     [("Bell Peppers", "2"), ("Snap Peas", "2 cups"), ("Carrots", "2"), ("Soy Sauce", "3 tbsp"),
      ("Ginger", "1 inch"), ("Rice", "2 cups")],
     ["Slice the vegetables", "Stir fry on high heat", "Add soy and ginger, serve on rice"], False),
    # Premium: behind the paywall
    ("Truffle Tagliatelle", 30, 2,
     [("Tagliatelle", "250 g"), ("Truffle Oil", "1 tbsp"), ("Parmesan", "1/2 cup")], ["Secret"], True),
    ("Lobster Bisque", 90, 4,
     [("Lobster", "2"), ("Heavy Cream", "1 cup"), ("Brandy", "1/4 cup")], ["Secret"], True),
    ("Beef Wellington", 150, 6,
     [("Beef Tenderloin", "1 kg"), ("Puff Pastry", "1 sheet"), ("Mushrooms", "500 g")], ["Secret"], True),
    ("Seared Scallops", 25, 2,
     [("Scallops", "8"), ("Butter", "2 tbsp"), ("Lemon", "1")], ["Secret"], True),
]
PANTRY = ["Salt", "Olive Oil", "Garlic", "Onion", "Butter", "Eggs", "Flour", "Sugar", "Rice", "Milk"]
FILLER_A = ["Quick", "Easy", "Spicy", "Smoky", "Crispy", "Creamy", "Rustic", "Summer"]
FILLER_B = ["Lentil Bowl", "Noodle Salad", "Bean Chili", "Corn Fritters", "Potato Hash", "Rice Bowl",
            "Veggie Wraps", "Tuna Melt"]


def recipe(d: dict, name: str) -> dict | None:
    return next((r for r in d["recipes"] if r["name"] == name), None)


class Recipes(App):
    name = "Recipes"
    color = "#5cb85c"
    description = "Recipes: browse and search recipes, ingredients and steps, favourites; Premium recipes."
    tabs = [("Recipes", "list", "list"), ("Favorites", "star", "favorites")]

    def init_data(self, rng: random.Random, var: Variation) -> dict:
        rs = [{"name": n, "minutes": m, "serves": s, "ingredients": [list(x) for x in ing], "steps": list(st),
               "premium": pr, "fav": False} for n, m, s, ing, st, pr in RECIPES]
        if var.filler:
            for n in filler_names(rng, var.filler, FILLER_A, FILLER_B, {r["name"] for r in rs}):
                rs.append({"name": n, "minutes": rng.choice([15, 20, 25, 30]), "serves": 2,
                           "ingredients": [["Rice", "1 cup"], ["Salt", "1 pinch"]],
                           "steps": ["Cook everything together", "Season and serve"], "premium": False, "fav": False})
        if var.shuffle:
            rng.shuffle(rs)
        return {"recipes": rs, "pantry": list(PANTRY), "revealed": None, "recent": []}

    # -- actions ---------------------------------------------------------------------------------
    def _open(self, ctx: Ctx, name: str) -> None:
        d = ctx.data
        d["revealed"] = None
        r = recipe(d, name)
        if r is None:
            return
        if r["premium"]:
            ctx.push("paywall", name=name)
            return
        ctx.opened(name)
        ctx.push("recipe", name=name)

    def _delete(self, ctx: Ctx, name: str) -> None:
        d = ctx.data
        r = recipe(d, name)
        if r is not None:
            d["recipes"].remove(r)
            ctx.emit("recipe_deleted", name=name)
            ctx.toast(f"Deleted {name}")
        d["revealed"] = None

    def _fav(self, ctx: Ctx, name: str) -> None:
        r = recipe(ctx.data, name)
        if r is not None:
            r["fav"] = not r["fav"]
            ctx.toast("Added to Favorites" if r["fav"] else "Removed from Favorites")

    def _reveal(self, name: str, d: dict) -> None:
        d["revealed"] = name

    def _rows(self, ctx: Ctx, rs: list[dict]) -> list[ListItem]:
        d = ctx.data
        items = []
        for r in rs:
            n = r["name"]
            sub = f"{r['minutes']} min" + (" - Premium" if r["premium"] else "") + (" - Favorite" if r["fav"] else "")
            tb = Button(ctx.L("Delete"), lambda n=n: self._delete(ctx, n), "destructive") \
                if d["revealed"] == n else None
            items.append(ListItem(n, sub, on_tap=lambda n=n: self._open(ctx, n),
                                  on_long_press=lambda n=n: ctx.show("menu", name=n),
                                  on_swipe_left=lambda n=n: self._reveal(n, d), trailing_button=tb,
                                  icon_color="#e0b341" if r["premium"] else "#8fcf8f"))
        return items

    # -- screens ---------------------------------------------------------------------------------
    def view(self, ctx: Ctx, screen: str, params: dict) -> View:
        d = ctx.data
        alt = ctx.world.state.layout == "alt"
        if screen == "list":
            q = ctx.field("query").strip().lower()
            rs = [r for r in d["recipes"] if not q or q in r["name"].lower()]
            lv = ListView("recipes", self._rows(ctx, rs), empty_text="No recipes" if not q else "No matching recipes")
            search = TextField("query", "Search recipes")
            return View("Recipes", [lv, search] if alt else [search, lv])
        if screen == "favorites":
            rs = [r for r in d["recipes"] if r["fav"]]
            return View("Favorites", [ListView("favs", self._rows(ctx, rs), empty_text="No favorites yet")])
        if screen == "recipe":
            r = recipe(d, params["name"])
            if r is None:
                return View("Recipes", [Text("This recipe was deleted.", "caption")])
            n = r["name"]
            tab = ctx.field("tab") or "Ingredients"
            opts = ["Ingredients", "Steps"]

            def pick(i: int) -> None:
                ctx.set_field("tab", opts[i])
            if tab == "Steps":
                items = [ListItem(f"{i + 1}. {s}") for i, s in enumerate(r["steps"])]
            else:
                items = [ListItem(ing, f"{qty} - {'in pantry' if ing in d['pantry'] else 'need to buy'}")
                         for ing, qty in r["ingredients"]]
            fav = Button("Unfavorite" if r["fav"] else "Favorite", lambda: self._fav(ctx, n), "plain")
            info = Text(f"{r['minutes']} min - serves {r['serves']}", "caption")
            body: list = [Picture(n, "#a8d5a2", 90), Text(n, "title")]
            body += [Row([fav]), info] if alt else [info, Row([fav])]
            body += [Segmented(opts, opts.index(tab), pick), ListView("content", items, item_height=48)]
            return View(n, body)
        if screen == "paywall":
            name = params["name"]
            return View("Premium", [Picture("Recipes Premium", "#e0b341", 100),
                                    Text("Subscribe to unlock", "title"),
                                    Text(f"{name} is a Premium recipe. Subscribe for $4.99 a month to see it.",
                                         "wrap", height=48),
                                    Button("Start free trial", lambda: ctx.show("trial")),
                                    Button("Not now", ctx.pop, "plain")])
        raise KeyError(screen)

    def overlay(self, ctx: Ctx, oid: str, params: dict):
        if oid == "trial":
            return Dialog("Payment method needed", "Add a card in your account to start the free trial.",
                          [Button("OK", ctx.dismiss)])
        if oid == "menu":
            r = recipe(ctx.data, params["name"])
            if r is None:
                return None
            n = r["name"]

            def fav() -> None:
                ctx.dismiss()
                self._fav(ctx, n)

            def delete() -> None:
                ctx.dismiss()
                self._delete(ctx, n)
            return Sheet(n, [Button("Unfavorite" if r["fav"] else "Favorite", fav, "plain"),
                             *ctx.delete_buttons(delete)])
        return None
