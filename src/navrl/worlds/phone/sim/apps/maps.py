"""Maps: search places, place pages (address, category, Directions, Save), saved places, directions.

Like Apple Maps, directions ask for the destination first ("To"), then the start ("From"),
then show the route with travel time and distance per mode. Times come from the places'
coordinates (km on a local plane), so they are deterministic.
"""
from __future__ import annotations

import math
import random

from navrl.worlds.phone.sim.app import App, Ctx, Variation
from navrl.worlds.phone.sim.widgets import Button, ListItem, ListView, Picture, Row, Segmented, Text, \
    TextField, View

PLACES = [
    # name, category, address, x, y (km)
    ("Apple Park", "Landmark", "1 Apple Park Way, Cupertino", 0.0, 0.0),
    ("Santa Clara Caltrain Station", "Train Station", "1001 Railroad Ave, Santa Clara", 8.1, 5.2),
    ("Philz Coffee", "Coffee Shop", "20686 Stevens Creek Blvd, Cupertino", 1.1, -0.6),
    ("Blue Bottle Coffee", "Coffee Shop", "456 University Ave, Palo Alto", -6.8, 11.9),
    ("Peet's Coffee", "Coffee Shop", "10123 N Wolfe Rd, Cupertino", 1.4, 0.8),
    ("Starbucks Reserve", "Coffee Shop", "377 Santana Row, San Jose", 10.5, -0.8),
    ("Memorial Park", "Park", "21975 San Fernando Ave, Cupertino", -0.9, -1.4),
    ("Rancho San Antonio Park", "Park", "22500 Cristo Rey Dr, Cupertino", -3.7, 0.9),
    ("Central Park", "Park", "909 Kiely Blvd, Santa Clara", 6.3, 3.2),
    ("Vasona Lake Park", "Park", "333 Blossom Hill Rd, Los Gatos", 4.9, -7.6),
    ("Stanford University", "University", "450 Jane Stanford Way, Stanford", -8.9, 10.8),
    ("San Jose Airport", "Airport", "1701 Airport Blvd, San Jose", 11.8, 6.9),
    ("Levi's Stadium", "Stadium", "4900 Marie P DeBartolo Way, Santa Clara", 8.8, 11.1),
    ("Googleplex", "Office", "1600 Amphitheatre Pkwy, Mountain View", -4.6, 11.0),
    ("Westfield Valley Fair", "Shopping Mall", "2855 Stevens Creek Blvd, Santa Clara", 8.7, 1.6),
    ("Computer History Museum", "Museum", "1401 N Shoreline Blvd, Mountain View", -4.2, 9.9),
    ("Cupertino Library", "Library", "10800 Torre Ave, Cupertino", 1.0, -1.1),
    ("Whole Foods Market", "Grocery", "20955 Stevens Creek Blvd, Cupertino", 0.6, -0.5),
]
FILLER = [("Taqueria", "Restaurant"), ("Sushi House", "Restaurant"), ("Pizza Corner", "Restaurant"),
          ("Gas Station", "Gas"), ("Pharmacy", "Pharmacy"), ("Bike Shop", "Shop"), ("Bakery", "Bakery"),
          ("Hardware Store", "Shop"), ("Noodle Bar", "Restaurant"), ("Car Wash", "Service")]
STREETS = ["El Camino Real", "Stevens Creek Blvd", "De Anza Blvd", "Homestead Rd", "Lawrence Expy"]
MY_LOCATION = "My Location"
HERE = (0.4, 0.3)
MODES = ["Drive", "Transit", "Walk"]
DEFAULT_SAVED = ["Cupertino Library", "Whole Foods Market"]


def distance_km(a: tuple[float, float], b: tuple[float, float]) -> float:
    """Road distance: straight line times a detour factor, one decimal."""
    return round(math.hypot(a[0] - b[0], a[1] - b[1]) * 1.3 + 0.4, 1)


def minutes(dist: float, mode: str) -> int:
    if mode == "Drive":
        return round(dist / 42 * 60) + 3
    if mode == "Transit":
        return round(dist / 20 * 60) + 9
    return round(dist / 5 * 60)


def fmt_minutes(m: int) -> str:
    return f"{m} min" if m < 60 else f"{m // 60} hr {m % 60} min"


def coords(d: dict, name: str) -> tuple[float, float]:
    if name == MY_LOCATION:
        return HERE
    p = next(p for p in d["places"] if p["name"] == name)
    return p["x"], p["y"]


def travel(d: dict, frm: str, to: str, mode: str) -> tuple[str, float]:
    """(formatted time, km) from ``frm`` to ``to`` by ``mode``."""
    km = distance_km(coords(d, frm), coords(d, to))
    return fmt_minutes(minutes(km, mode)), km


def route_time(frm: str, to: str, mode: str) -> str:
    """Travel time between two seeded places (templates use it for answers)."""
    pos = {p[0]: (p[3], p[4]) for p in PLACES}
    pos[MY_LOCATION] = HERE
    return fmt_minutes(minutes(distance_km(pos[frm], pos[to]), mode))


class Maps(App):
    name = "Maps"
    color = "#30b94d"
    description = "Maps: search places, see addresses, save places, get directions with drive, transit and walk times."
    tabs = [("Explore", "search", "search"), ("Saved", "star", "saved")]

    def init_data(self, rng: random.Random, var: Variation) -> dict:
        places = [{"name": n, "category": c, "address": a, "x": x, "y": y} for n, c, a, x, y in PLACES]
        if var.filler:
            for n, c in rng.sample(FILLER, min(var.filler, len(FILLER))):
                places.append({"name": n, "category": c,
                               "address": f"{rng.randint(100, 9999)} {rng.choice(STREETS)}",
                               "x": round(rng.uniform(-8, 12), 1), "y": round(rng.uniform(-8, 12), 1)})
        if var.shuffle:
            rng.shuffle(places)
        return {"places": places, "saved": list(DEFAULT_SAVED), "route": None, "routes": []}

    @staticmethod
    def matches(d: dict, q: str, exclude: str | None = None) -> list[dict]:
        q = q.strip().lower()
        if not q:
            return []
        return [p for p in d["places"] if p["name"] != exclude and (q in p["name"].lower() or
                                                                    q in p["category"].lower())]

    def view(self, ctx: Ctx, screen: str, params: dict) -> View:
        d = ctx.data
        tabs = [("Explore", "search"), ("Saved", "star")]
        if screen == "search":
            q = ctx.field("query")
            res = self.matches(d, q) if q.strip() else d["places"]
            items = [ListItem(p["name"], p["category"], on_tap=lambda n=p["name"]: ctx.push("place", name=n))
                     for p in res]
            body = [TextField("query", "Search Maps"), Button("Directions", lambda: ctx.push("dir_to"), "plain"),
                    Text("Results" if q.strip() else "Nearby", "caption"),
                    ListView("results", items, empty_text="No results")]
            if ctx.world.state.layout != "alt":
                body.insert(0, Picture("Map", "#cfe8c9", 90))
            return View("Maps", body, tabs=tabs)
        if screen == "saved":
            items = [ListItem(n, next((p["category"] for p in d["places"] if p["name"] == n), ""),
                              on_tap=lambda n=n: ctx.push("place", name=n)) for n in d["saved"]]
            return View("Saved", [ListView("saved", items, empty_text="No saved places")], tabs=tabs, active_tab=1)
        if screen == "place":
            n = params["name"]
            p = next(p for p in d["places"] if p["name"] == n)
            saved = n in d["saved"]

            def toggle() -> None:
                if n in d["saved"]:
                    d["saved"].remove(n)
                    ctx.toast("Removed from Saved")
                else:
                    d["saved"].append(n)
                    ctx.emit("place_saved", name=n)
                    ctx.toast("Saved")
            km = distance_km(HERE, (p["x"], p["y"]))
            return View(n, [Picture(n, "#cfe8c9", 90), Text(n, "title"), Text(p["category"], "caption"),
                            Text(p["address"]), Text(f"{km} km away", "caption"),
                            Row([Button("Directions", lambda: ctx.push("dir_from", to=n)),
                                 Button("Remove from Saved" if saved else "Save", toggle, "plain")])])
        if screen == "dir_to":
            q = ctx.field("to")
            items = [ListItem(p["name"], p["address"], on_tap=lambda n=p["name"]: ctx.push("dir_from", to=n))
                     for p in self.matches(d, q)]
            return View("Directions", [Text("Where to?", "caption"), TextField("to", "To"),
                                       ListView("results", items, empty_text="Search for a destination")])
        if screen == "dir_from":
            to = params["to"]
            q = ctx.field("from")

            def choose(frm: str) -> None:
                d["route"] = {"from": frm, "to": to}
                d["routes"].append({"from": frm, "to": to})
                ctx.emit("route_shown", frm=frm, to=to)
                ctx.push("route", frm=frm, to=to)
            items = [ListItem(MY_LOCATION, "Current location", on_tap=lambda: choose(MY_LOCATION))]
            items += [ListItem(p["name"], p["address"], on_tap=lambda n=p["name"]: choose(n))
                      for p in self.matches(d, q, exclude=to)]
            return View("Directions", [Text(f"To: {to}", "caption"), TextField("from", "From"),
                                       ListView("results", items)])
        if screen == "route":
            frm, to = params["frm"], params["to"]
            mode = ctx.field("mode") or "Drive"
            t, km = travel(d, frm, to, mode)

            def pick(i: int) -> None:
                ctx.set_field("mode", MODES[i])
            via = {"Drive": "Fastest route", "Transit": "Bus and train", "Walk": "Mostly flat"}[mode]
            return View("Route", [Text(f"From: {frm}", "caption"), Text(f"To: {to}", "caption"),
                                  Segmented(MODES, MODES.index(mode), pick),
                                  Text(t, "big"), Text(f"{km} km - {via}"),
                                  Button("Go", lambda: ctx.toast(f"Starting {mode.lower()} directions"))])
        raise KeyError(screen)
