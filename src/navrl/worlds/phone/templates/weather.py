"""Weather templates (and the Weather expert helpers multi-app templates reuse)."""
from __future__ import annotations

from navrl.worlds.phone.sim.apps.weather import ADD_CITY, CITIES, CONDITIONS, SAVED, day_label, set_day, weekday
from navrl.worlds.phone.expert import Ev, ExpertStep, Stage, goto, report_stage, step_ask, tap, type_into
from navrl.worlds.phone.task import Family, Template, register

W = "Weather"
BASE = dict(CITIES)


def on_city(ev: Ev, city: str) -> bool:
    return ev.state.fg == W and ev.screen() == ("city", {"name": city})


def open_city(ev: Ev, city: str) -> ExpertStep | None:
    """Open ``city``'s forecast from the list (the city must be saved)."""
    if on_city(ev, city):
        return None
    return goto(ev, W, [("cities", None, None), ("city", {"name": city}, city)])


def add_city(ev: Ev, city: str) -> ExpertStep | None:
    """Search for ``city`` and add it (ends by tapping the result)."""
    if ev.state.fg == W and ev.screen() == ("add", {}):
        return type_into(ev, "Search for a city", city) or tap(ev, city, f"{city} is in the results; I add it.")
    return goto(ev, W, [("cities", None, None), ("add", None, ADD_CITY)])


def is_saved(ev_or_world, city: str) -> bool:
    return city in ev_or_world.state.data[W]["saved"]


def ensure_saved(state, city: str) -> None:
    if city not in state.data[W]["saved"]:
        state.data[W]["saved"].append(city)


def add_stages(city: str) -> list[Stage]:
    return [Stage(f"add {city} to the city list", lambda ev: is_saved(ev, city), lambda ev: add_city(ev, city))]


def city_stage(city: str, desc: str | None = None) -> Stage:
    """Open ``city``'s forecast (done while it is on screen)."""
    return Stage(desc or f"open the {city} forecast", lambda ev: on_city(ev, city), lambda ev: open_city(ev, city))


def forecast_stage(city: str, extra_done=None) -> Stage:
    """Look at ``city``'s forecast (done once it was opened, or when ``extra_done`` holds)."""
    def done(ev):
        return on_city(ev, city) or (city in ev.data(W)["viewed"] and ev.state.fg != W) or \
            bool(extra_done and extra_done(ev))
    return Stage(f"open the {city} forecast", done, lambda ev: open_city(ev, city))


@register
class WeatherAddCity(Template):
    name = "weather_add_city"
    family = Family.SINGLE
    apps = (W,)
    max_steps = 12

    def sample(self, rng):
        return {"city": rng.choice([c for c, _ in CITIES if c not in SAVED])}

    def goal(self, p):
        return f"Add {p['city']} to my cities in the Weather app."

    def setup(self, state, p):
        d = state.data[W]
        d["saved"] = [c for c in d["saved"] if c != p["city"]]

    def check(self, world, p, answer):
        return is_saved(world, p["city"])

    def stages(self, p):
        return add_stages(p["city"])


@register
class WeatherAskHometown(WeatherAddCity):
    """Add a city as in weather_add_city, but the goal names it only as the user's hometown."""

    name = "weather_ask_hometown"
    family = Family.ASK_USER
    max_steps = 14

    def goal(self, p):
        return "Add my hometown to the Weather app."

    def profile(self, p):
        return {"hometown": p["city"]}

    def stages(self, p):
        return [Stage("ask the user for their hometown", lambda ev: ev.knows(p["city"]),
                      lambda ev: step_ask(ev, "Which city is your hometown?",
                                          "I don't know which city the user's hometown is."))] + super().stages(p)


@register
class WeatherHigh(Template):
    name = "weather_high"
    family = Family.ANSWER
    apps = (W,)
    max_steps = 10

    def sample(self, rng):
        city = rng.choice(SAVED)
        return {"city": city, "day": rng.randint(1, 6), "hi": BASE[city] + rng.randint(-8, 8)}

    def goal(self, p):
        return f"What's the high temperature in {p['city']} on {weekday(p['day'])}?"

    def setup(self, state, p):
        ensure_saved(state, p["city"])
        set_day(state.data[W]["wx"][p["city"]], p["day"], hi=p["hi"])

    def answer(self, p):
        return str(p["hi"])

    def stages(self, p):
        return [city_stage(p["city"]),
                report_stage("the high", f"The {day_label(p['day'])} row shows a high of {p['hi']}.", f"{p['hi']} F")]


@register
class WeatherCondition(Template):
    name = "weather_condition"
    family = Family.ANSWER
    apps = (W,)
    max_steps = 10
    heldout = True

    def sample(self, rng):
        return {"city": rng.choice(SAVED), "day": rng.randint(1, 6), "cond": rng.choice(CONDITIONS)}

    def goal(self, p):
        return f"What will the weather be like in {p['city']} on {weekday(p['day'])}?"

    def setup(self, state, p):
        ensure_saved(state, p["city"])
        set_day(state.data[W]["wx"][p["city"]], p["day"], cond=p["cond"])

    def answer(self, p):
        return p["cond"]

    def stages(self, p):
        return [city_stage(p["city"]),
                report_stage("the forecast", f"The {day_label(p['day'])} row says {p['cond']}.", p["cond"])]


@register
class WeatherNow(Template):
    name = "weather_now"
    family = Family.ANSWER
    apps = (W,)
    max_steps = 14

    def sample(self, rng):
        city = rng.choice([c for c, _ in CITIES])
        hi = BASE[city] + rng.randint(-6, 6)
        return {"city": city, "hi": hi, "temp": hi - rng.randint(0, 7)}

    def goal(self, p):
        return f"What's the temperature in {p['city']} right now?"

    def setup(self, state, p):
        wx = state.data[W]["wx"][p["city"]]
        set_day(wx, 0, hi=p["hi"])
        wx["temp"] = p["temp"]

    def answer(self, p):
        return str(p["temp"])

    def stages(self, p):
        c = p["city"]
        return add_stages(c) + [
            city_stage(c, f"open {c}"),
            report_stage("the temperature", f"{c} shows {p['temp']} F right now.", f"{p['temp']} F")]
