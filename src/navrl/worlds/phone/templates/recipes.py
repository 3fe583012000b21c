"""Recipes templates (an unseen app: test-unseen suite)."""
from __future__ import annotations

import random

from navrl.worlds.phone.sim.apps.recipes import RECIPES, recipe
from navrl.worlds.phone.expert import (Ev, ExpertStep, Stage, goto, report_stage, scroll_to, step_complete, step_swipe, tap,
                                type_into)
from navrl.worlds.phone.task import Family, Template, register
from navrl.worlds.phone.templates.notes import cancel_overlay, long_press, own_overlay

R = "Recipes"
FREE = [r[0] for r in RECIPES if not r[5]]
PREMIUM = [r[0] for r in RECIPES if r[5]]


def search_list(ev: Ev, name: str) -> ExpertStep | None:
    """On the Recipes tab with ``name`` typed into search (None once there)."""
    if own_overlay(ev, R):
        return cancel_overlay(ev)
    s = goto(ev, R, [("list", None, "Recipes")])
    if s is not None:
        return s
    return type_into(ev, "Search recipes", name, f"I search for {name}.")


def on_screen(ev: Ev, screen: str, name: str) -> bool:
    return ev.state.fg == R and ev.screen() == (screen, {"name": name}) and ev.state.loading is None \
        and own_overlay(ev, R) is None


def open_recipe(ev: Ev, name: str) -> ExpertStep | None:
    """Search for ``name`` and open it (its page, or the paywall); None once there."""
    r = recipe(ev.data(R), name)
    if r is None:
        return step_complete(ev, f"{name} is no longer in the app, so I can't go on.")
    target = "paywall" if r["premium"] else "recipe"
    if on_screen(ev, target, name):
        return None
    if ev.state.fg == R and ev.screen() == (target, {"name": name}) and own_overlay(ev, R) is not None:
        return cancel_overlay(ev)
    return search_list(ev, name) or tap(ev, name, f"{name} is in the results; I open it.")


def recipe_stage(name: str) -> Stage:
    """Open the free recipe ``name`` (done while its page is on screen)."""
    return Stage(f"open {name}", lambda ev: on_screen(ev, "recipe", name), lambda ev: open_recipe(ev, name))


@register
class RecipesDeleteThree(Template):
    name = "recipes_delete_three"
    family = Family.SINGLE
    apps = (R,)
    max_steps = 30

    def sample(self, rng: random.Random) -> dict:
        return {"names": rng.sample(FREE, 3)}

    def goal(self, p):
        a, b, c = p["names"]
        return f"Delete the recipes {a}, {b} and {c} from the Recipes app."

    def check(self, world, p, answer):
        d = world.state.data[R]
        left = {r["name"] for r in d["recipes"]}
        return not (left & set(p["names"])) and all(n in left for n, *_ in RECIPES if n not in p["names"])

    def stages(self, p):
        def delete_one(name):
            def act(ev):
                d = ev.data(R)
                ov = own_overlay(ev, R)
                if ov is not None:
                    if ov["id"] == "menu" and ov["params"].get("name") == name:
                        return tap(ev, ev.skin.label("Delete"), f"The menu for {name} offers Delete.")
                    return cancel_overlay(ev)
                s = search_list(ev, name)
                if s is not None:
                    return s
                if d["revealed"] == name and ev.visible(ev.skin.label("Delete")):
                    return tap(ev, ev.skin.label("Delete"), f"The Delete button for {name} is showing.")
                if not ev.visible(name):
                    s = scroll_to(ev, name)
                    if s is not None:
                        return s
                    return long_press(ev, name, f"I long-press {name} for its options.")
                return step_swipe(ev, "left", f"I swipe {name} left to reveal its Delete button.", on=name)
            return act
        return [Stage(f"delete {n}", (lambda ev, n=n: recipe(ev.data(R), n) is None), delete_one(n))
                for n in p["names"]] + [
            Stage("stop", lambda ev: False,
                  lambda ev: step_complete(ev, "The three recipes are gone, but so are others; I can't undo that."))]


@register
class RecipesPremium(Template):
    name = "recipes_premium"
    family = Family.BLOCKED
    apps = (R,)
    max_steps = 14

    def sample(self, rng):
        return {"name": rng.choice(PREMIUM), "ask": rng.choice(["how long it takes", "its ingredients",
                                                                 "its first step"])}

    def goal(self, p):
        return f"Open the {p['name']} recipe in the Recipes app and tell me {p['ask']}."

    def check(self, world, p, answer):
        return False

    def blocked(self, world, p):
        st = world.state
        return st.fg == R and world.current_screen() == ("paywall", {"name": p["name"]}) \
            and st.loading != f"{R}/paywall"

    def stages(self, p):
        n = p["name"]
        return [Stage(f"open {n}", lambda ev: False, lambda ev: open_recipe(ev, n))]


@register
class RecipesFavorite(Template):
    name = "recipes_favorite"
    family = Family.SINGLE
    apps = (R,)
    max_steps = 14
    heldout = True

    def sample(self, rng):
        return {"name": rng.choice(FREE)}

    def goal(self, p):
        return f"Add {p['name']} to my favorites in the Recipes app."

    def check(self, world, p, answer):
        r = recipe(world.state.data[R], p["name"])
        return r is not None and r["fav"]

    def stages(self, p):
        return [recipe_stage(p["name"]),
                Stage("favorite it", lambda ev: False, lambda ev: tap(ev, "Favorite", "I tap Favorite."))]


@register
class RecipesTime(Template):
    name = "recipes_time"
    family = Family.ANSWER
    apps = (R,)
    max_steps = 12

    def sample(self, rng):
        n = rng.choice(FREE)
        return {"name": n, "minutes": next(r[1] for r in RECIPES if r[0] == n)}

    def goal(self, p):
        return f"How many minutes does the {p['name']} recipe take?"

    def answer(self, p):
        return f"{p['minutes']} min"

    def stages(self, p):
        return [recipe_stage(p["name"]),
                report_stage("the time", f"The recipe says {p['minutes']} min.", f"{p['minutes']} min")]
