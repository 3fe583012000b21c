"""App Store templates (an unseen app: test-unseen suite)."""
from __future__ import annotations

import random

from navrl.worlds.phone.sim.apps.store import CAPTCHA_APPS, CATALOG, COLLIDING, INSTALLABLE
from navrl.worlds.phone.expert import Ev, ExpertStep, Stage, goto, report_stage, tap, type_into
from navrl.worlds.phone.task import Family, Template, register
from navrl.worlds.phone.templates.notes import cancel_overlay, own_overlay

A = "App Store"


def on_page(ev: Ev, screen: str, name: str) -> bool:
    return ev.state.fg == A and ev.screen() == (screen, {"name": name}) and ev.state.loading is None


def open_page(ev: Ev, name: str) -> ExpertStep | None:
    """Search the App Store for ``name`` and open its page (None once there)."""
    if on_page(ev, "detail", name):
        return None
    if own_overlay(ev, A):
        return cancel_overlay(ev)
    s = goto(ev, A, [("search", None, "Search")])
    if s is not None:
        return s
    return type_into(ev, "Search apps", name, f"I search the store for {name}.") or \
        tap(ev, name, f"{name} is in the results; I open its page.")


def get_app(ev: Ev, name: str) -> ExpertStep | None:
    ov = own_overlay(ev, A)
    if ov is not None:
        if ov["id"] == "confirm" and ov["params"].get("name") == name:
            return tap(ev, "Install", f"I confirm installing {name}.")
        return cancel_overlay(ev)
    return open_page(ev, name) or tap(ev, "Get", f"I tap Get to download {name}.")


@register
class StoreInstall(Template):
    name = "store_install"
    family = Family.SINGLE
    apps = (A,)
    max_steps = 14

    def sample(self, rng: random.Random) -> dict:
        return {"name": rng.choice(INSTALLABLE)}

    def goal(self, p):
        return f"Install the {p['name']} app from the App Store."

    def check(self, world, p, answer):
        return p["name"] in world.state.installed

    def stages(self, p):
        return [Stage(f"install {p['name']}", lambda ev: False, lambda ev: get_app(ev, p["name"]))]


@register
class StoreCaptcha(Template):
    name = "store_captcha"
    family = Family.BLOCKED
    apps = (A,)
    max_steps = 14

    def sample(self, rng):
        return {"name": rng.choice(CAPTCHA_APPS)}

    def goal(self, p):
        return f"Download {p['name']} from the App Store."

    def check(self, world, p, answer):
        return p["name"] in world.state.installed

    def blocked(self, world, p):
        st = world.state
        return st.fg == A and world.current_screen() == ("captcha", {"name": p["name"]}) \
            and st.loading != f"{A}/captcha"

    def stages(self, p):
        return [Stage(f"download {p['name']}", lambda ev: False, lambda ev: get_app(ev, p["name"]))]


@register
class StoreDeveloper(Template):
    name = "store_developer"
    family = Family.ANSWER
    apps = (A,)
    max_steps = 12
    heldout = True

    def sample(self, rng):
        n = rng.choice(COLLIDING) if rng.random() < 0.5 else rng.choice(INSTALLABLE + CAPTCHA_APPS)
        return {"name": n, "dev": next(c[1] for c in CATALOG if c[0] == n)}

    def goal(self, p):
        return f"Who is the developer of the {p['name']} app listed in the App Store?"

    def answer(self, p):
        return p["dev"]

    def stages(self, p):
        n = p["name"]
        return [Stage(f"open the store page of {n}", lambda ev: on_page(ev, "detail", n) and not own_overlay(ev, A),
                      lambda ev: open_page(ev, n)),
                report_stage("the developer", f"The page says it is made by {p['dev']}.", p["dev"])]
