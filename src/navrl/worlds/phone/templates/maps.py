"""Maps templates (and the Maps expert helpers multi-app templates reuse).

Directions in Maps ask for the destination first, so goals that name the start first
("from A to B") make the expert fill "To" with B before "From" with A.
"""
from __future__ import annotations

from navrl.worlds.phone.sim.apps.maps import DEFAULT_SAVED, MODES, PLACES, route_time
from navrl.worlds.phone.expert import Ev, ExpertStep, Stage, goto, report_stage, step_ask, tap, type_into
from navrl.worlds.phone.task import Family, Template, register

M = "Maps"
NAMES = [p[0] for p in PLACES]
COFFEE = [p[0] for p in PLACES if p[1] == "Coffee Shop"]
ADDRESS = {p[0]: p[2] for p in PLACES}


def on_place(ev: Ev, name: str) -> bool:
    return ev.state.fg == M and ev.screen() == ("place", {"name": name})


def open_place(ev: Ev, name: str) -> ExpertStep | None:
    """Search for ``name`` and open its place page (None once there)."""
    if on_place(ev, name):
        return None
    return goto(ev, M, [("search", None, "Explore")]) or type_into(ev, "Search Maps", name) or \
        tap(ev, name, f"{name} is in the results.")


def place_stage(name: str) -> Stage:
    """Open ``name``'s place page (done while it is on screen)."""
    return Stage(f"open {name}", lambda ev: on_place(ev, name), lambda ev: open_place(ev, name))


def on_route(ev: Ev, frm: str, to: str) -> bool:
    return ev.state.fg == M and ev.screen() == ("route", {"frm": frm, "to": to})


def route_set(ev_or_world, frm: str, to: str) -> bool:
    return ev_or_world.state.data[M]["route"] == {"from": frm, "to": to}


def directions_stages(frm: str, to: str) -> list[Stage]:
    """Directions from ``frm`` to ``to``: destination first, then the start."""
    def set_to(ev):
        if ev.state.fg == M and ev.screen() == ("dir_to", {}):
            return type_into(ev, "To", to, f"Maps asks for the destination first, so I enter {to}.") or \
                tap(ev, to, f"{to} is in the results; I pick it as the destination.")
        return goto(ev, M, [("search", None, "Explore"), ("dir_to", None, "Directions")])

    def to_done(ev):
        return (ev.state.fg == M and ev.screen() == ("dir_from", {"to": to})) or on_route(ev, frm, to)

    def set_from(ev):
        return type_into(ev, "From", frm, f"Now Maps asks for the start: {frm}.") or \
            tap(ev, frm, f"{frm} is in the results; I pick it as the start.")
    return [Stage(f"open Directions and set {to} as the destination", to_done, set_to),
            Stage(f"set {frm} as the starting point", lambda ev: on_route(ev, frm, to), set_from)]


def mode_stage(frm: str, to: str, mode: str) -> Stage:
    def done(ev):
        return on_route(ev, frm, to) and (ev.state.fields.get(f"{M}/route/mode") or "Drive") == mode
    return Stage(f"show the {mode} time", done, lambda ev: tap(ev, mode, f"I switch the route to {mode}."))


def _pair(rng, starts=None, ends=None) -> tuple[str, str]:
    a = rng.choice(starts or NAMES)
    b = rng.choice([n for n in (ends or NAMES) if n != a])
    return a, b


@register
class MapsDirections(Template):
    name = "maps_directions"
    family = Family.SINGLE
    apps = (M,)
    max_steps = 16

    def sample(self, rng):
        a, b = _pair(rng)
        return {"frm": a, "to": b}

    def goal(self, p):
        return f"Get directions from {p['frm']} to {p['to']} in Maps."

    def check(self, world, p, answer):
        return route_set(world, p["frm"], p["to"])

    def stages(self, p):
        return directions_stages(p["frm"], p["to"])


@register
class MapsSavePlace(Template):
    name = "maps_save_place"
    family = Family.SINGLE
    apps = (M,)
    max_steps = 12

    def sample(self, rng):
        return {"name": rng.choice([n for n in NAMES if n not in DEFAULT_SAVED])}

    def goal(self, p):
        return f"Save {p['name']} to my saved places in Maps."

    def setup(self, state, p):
        d = state.data[M]
        d["saved"] = [n for n in d["saved"] if n != p["name"]]

    def check(self, world, p, answer):
        return p["name"] in world.state.data[M]["saved"]

    def stages(self, p):
        n = p["name"]
        return [place_stage(n),
                Stage("tap Save", lambda ev: False, lambda ev: tap(ev, "Save", f"{n} is not saved yet."))]


@register
class MapsTravelTime(Template):
    name = "maps_travel_time"
    family = Family.ANSWER
    apps = (M,)
    max_steps = 18

    def sample(self, rng):
        a, b = _pair(rng)
        mode = rng.choice(["Drive", "Drive", "Transit", "Walk"])
        return {"frm": a, "to": b, "mode": mode, "time": route_time(a, b, mode)}

    def goal(self, p):
        a, b = p["frm"], p["to"]
        return {"Drive": f"How long is the drive from {a} to {b}?",
                "Transit": f"How long does it take to get from {a} to {b} by transit?",
                "Walk": f"How long would it take to walk from {a} to {b}?"}[p["mode"]]

    def answer(self, p):
        return p["time"]

    def stages(self, p):
        a, b, m = p["frm"], p["to"], p["mode"]
        return directions_stages(a, b) + [
            mode_stage(a, b, m),
            report_stage("the time", f"The {m} route from {a} to {b} takes {p['time']}.", p["time"])]


@register
class MapsAskCoffee(Template):
    name = "maps_ask_coffee"
    family = Family.ASK_USER
    apps = (M,)
    max_steps = 18

    def sample(self, rng):
        a = rng.choice([n for n in NAMES if n not in COFFEE])
        return {"frm": a, "to": rng.choice(COFFEE)}

    def goal(self, p):
        return f"Get me directions from {p['frm']} to my favorite coffee shop."

    def profile(self, p):
        return {"favorite coffee shop": p["to"]}

    def check(self, world, p, answer):
        return route_set(world, p["frm"], p["to"])

    def stages(self, p):
        return [Stage("ask which coffee shop is the favorite", lambda ev: ev.knows(p["to"]),
                      lambda ev: step_ask(ev, "What is your favorite coffee shop?",
                                          "I don't know which coffee shop the user means."))] + \
            directions_stages(p["frm"], p["to"])


@register
class MapsAddress(Template):
    name = "maps_address"
    family = Family.ANSWER
    apps = (M,)
    max_steps = 10
    heldout = True

    def sample(self, rng):
        n = rng.choice(NAMES)
        return {"name": n, "address": ADDRESS[n]}

    def goal(self, p):
        return f"What is the address of {p['name']}? Look it up in Maps."

    def answer(self, p):
        return p["address"]

    def stages(self, p):
        return [place_stage(p["name"]),
                report_stage("the address", f"The place page shows {p['address']}.", p["address"])]
