"""Weather: saved cities with current conditions, a 7-day forecast per city, add a city by search.

Forecasts are drawn from the world seed; the forecast starts on the Calendar's TODAY.
"""
from __future__ import annotations

import datetime as _dt
import random

from navrl.worlds.phone.sim.app import App, Ctx, Variation
from navrl.worlds.phone.sim.apps.calendar import TODAY
from navrl.worlds.phone.sim.widgets import Button, ListItem, ListView, Text, TextField, View

# city, typical high (F)
CITIES = [("Cupertino", 78), ("San Francisco", 66), ("New York", 80), ("London", 68), ("Paris", 72),
          ("Tokyo", 79), ("Seattle", 70), ("Chicago", 77), ("Miami", 89), ("Denver", 82), ("Sydney", 63),
          ("Berlin", 71), ("Boston", 76), ("Austin", 92), ("Toronto", 74), ("Rome", 84), ("Madrid", 88),
          ("Dubai", 104), ("Mumbai", 90), ("Mexico City", 75), ("Vancouver", 69), ("Dublin", 63)]
SAVED = ["Cupertino", "San Francisco", "New York", "London"]
CONDITIONS = ["Sunny", "Partly Cloudy", "Cloudy", "Rain", "Showers", "Thunderstorms", "Windy", "Fog"]
ADD_CITY = "Add City"


def day_label(i: int) -> str:
    """Forecast row title for day ``i`` (0 = today): "Today", "Tue Jun 11", ..."""
    if i == 0:
        return "Today"
    d = TODAY + _dt.timedelta(days=i)
    return f"{d:%a} {d:%b} {d.day}"


def weekday(i: int) -> str:
    return f"{TODAY + _dt.timedelta(days=i):%A}"


def make_forecast(rng: random.Random, base: int) -> dict:
    days = []
    for _ in range(7):
        cond = rng.choice(CONDITIONS)
        hi = base + rng.randint(-6, 6) - (5 if cond in ("Rain", "Showers", "Thunderstorms") else 0)
        days.append({"cond": cond, "hi": hi, "lo": hi - rng.randint(8, 18)})
    t0 = days[0]
    return {"temp": rng.randint(t0["lo"] + 2, t0["hi"]), "days": days}


def set_day(wx: dict, i: int, cond: str | None = None, hi: int | None = None) -> None:
    """Plant a forecast value (templates use it); keeps low < high and today's temp in range."""
    dd = wx["days"][i]
    if cond is not None:
        dd["cond"] = cond
    if hi is not None:
        span = max(6, dd["hi"] - dd["lo"])
        dd["hi"], dd["lo"] = hi, hi - span
    if i == 0:
        wx["temp"] = min(max(wx["temp"], dd["lo"]), dd["hi"])


class Weather(App):
    name = "Weather"
    color = "#34aadc"
    description = "Weather: current temperature and conditions for saved cities, 7-day forecasts, add cities."
    root = "cities"

    def init_data(self, rng: random.Random, var: Variation) -> dict:
        wx = {c: make_forecast(rng, base) for c, base in CITIES}
        saved = list(SAVED)
        if var.filler:
            saved += rng.sample([c for c, _ in CITIES if c not in saved], min(var.filler, 6))
        if var.shuffle:
            rng.shuffle(saved)
        return {"saved": saved, "wx": wx, "viewed": []}

    def view(self, ctx: Ctx, screen: str, params: dict) -> View:
        d = ctx.data
        if screen == "cities":
            def open_city(c: str) -> None:
                if c not in d["viewed"]:
                    d["viewed"].append(c)
                ctx.push("city", name=c)
            items = [ListItem(c, d["wx"][c]["days"][0]["cond"], on_tap=lambda c=c: open_city(c),
                              trailing=f"{d['wx'][c]['temp']} F") for c in d["saved"]]
            return View("Weather", [ListView("cities", items, item_height=56, empty_text="No cities")],
                        fab=Button(ADD_CITY, lambda: ctx.push("add")))
        if screen == "city":
            c = params["name"]
            wx = d["wx"][c]
            t0 = wx["days"][0]
            head = [Text(f"{wx['temp']} F", "big"), Text(t0["cond"]), Text(f"H:{t0['hi']}  L:{t0['lo']}", "caption")]
            rows = ListView("forecast", [ListItem(day_label(i), x["cond"], trailing=f"H:{x['hi']} L:{x['lo']}")
                                         for i, x in enumerate(wx["days"])], item_height=52)
            cap = Text("7-Day Forecast", "caption")
            body = [cap, rows] + head if ctx.world.state.layout == "alt" else head + [cap, rows]
            return View(c, body)
        if screen == "add":
            q = ctx.field("query").strip().lower()
            res = [c for c, _ in CITIES if q and q in c.lower()]

            def add(c: str) -> None:
                if c not in d["saved"]:
                    d["saved"].append(c)
                    ctx.emit("city_added", name=c)
                    ctx.toast(f"Added {c}")
                else:
                    ctx.toast(f"{c} is already in your list")
                ctx.pop()
            return View(ADD_CITY, [TextField("query", "Search for a city"), ListView("results", [
                ListItem(c, "Added" if c in d["saved"] else "", on_tap=lambda c=c: add(c)) for c in res],
                empty_text="Type a city name" if not q else "No results")])
        raise KeyError(screen)

