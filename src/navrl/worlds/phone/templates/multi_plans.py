"""Multi-app templates that plan around the phone's Weather, Maps and Calendar.

Weather -> Calendar (picnic on the first sunny day), Maps -> Calendar (an event titled
with the drive time) and Weather -> Shop (a rain coat if it will rain).
"""
from __future__ import annotations

from navrl.worlds.phone.sim.apps.calendar import TIMES, day, long_date
from navrl.worlds.phone.sim.apps.maps import PLACES, route_time
from navrl.worlds.phone.sim.apps.shop import PRODUCTS
from navrl.worlds.phone.sim.apps.weather import CONDITIONS, SAVED, day_label, set_day, weekday
from navrl.worlds.phone.expert import Stage, goto, tap
from navrl.worlds.phone.task import Family, Template, register
from navrl.worlds.phone.templates.calendar import C, create_stages, has_event
from navrl.worlds.phone.templates.maps import M, directions_stages, route_set
from navrl.worlds.phone.templates.shop import in_bag, search_and_open, size_stage
from navrl.worlds.phone.templates.weather import W, ensure_saved, forecast_stage

S = "Shop"
NAMES = [p[0] for p in PLACES]
DRY = [c for c in CONDITIONS if c not in ("Rain", "Showers", "Thunderstorms")]


@register
class MultiWeatherPicnic(Template):
    name = "multi_weather_picnic"
    family = Family.MULTI
    apps = (W, C)
    max_steps = 26

    def sample(self, rng):
        k = rng.randint(1, 5)
        not_sunny = [c for c in CONDITIONS if c != "Sunny"]
        conds = [rng.choice(not_sunny) for _ in range(k)] + ["Sunny"] + \
            [rng.choice(CONDITIONS) for _ in range(6 - k)]
        return {"city": rng.choice(SAVED), "k": k, "conds": conds, "time": rng.choice(TIMES)}

    def goal(self, p):
        return (f"Find the first sunny day this week in {p['city']} in the Weather app, then schedule a Picnic "
                f"on that day at {p['time']} in my calendar.")

    def setup(self, state, p):
        ensure_saved(state, p["city"])
        wx = state.data[W]["wx"][p["city"]]
        for i, c in enumerate(p["conds"]):
            set_day(wx, i, cond=c)
        d = state.data[C]
        d["events"] = [e for e in d["events"] if "picnic" not in e["title"].lower()]

    def check(self, world, p, answer):
        return has_event(world, "Picnic", day(p["k"]), p["time"])

    def stages(self, p):
        date = day(p["k"])
        st = forecast_stage(p["city"])
        st = Stage(f"find the first sunny day in {p['city']} ({day_label(p['k'])})", st.done, st.act)
        return [st] + create_stages("Picnic", date, p["time"])


@register
class MultiDriveEvent(Template):
    name = "multi_maps_drive_event"
    family = Family.MULTI
    apps = (M, C)
    max_steps = 34

    def sample(self, rng):
        a = rng.choice(NAMES)
        b = rng.choice([n for n in NAMES if n != a])
        dur = route_time(a, b, "Drive")
        return {"frm": a, "to": b, "dur": dur, "date": day(rng.randint(1, 30)), "time": rng.choice(TIMES),
                "title": f"Drive to {b} - {dur}"}

    def goal(self, p):
        return (f"Check in Maps how long the drive from {p['frm']} to {p['to']} takes, then add a calendar event "
                f"on {long_date(p['date'])} at {p['time']} titled \"Drive to {p['to']} - \" followed by that "
                f"drive time as Maps shows it.")

    def setup(self, state, p):
        state.data[M]["route"] = None

    def check(self, world, p, answer):
        return has_event(world, p["title"], p["date"], p["time"])

    def stages(self, p):
        a, b = p["frm"], p["to"]
        look = [Stage(s.desc, lambda ev, s=s: route_set(ev, a, b) or s.done(ev), s.act)
                for s in directions_stages(a, b)]
        return look + create_stages(p["title"], p["date"], p["time"])


@register
class MultiWeatherShop(Template):
    name = "multi_weather_shop"
    family = Family.MULTI
    apps = (W, S)
    max_steps = 30
    heldout = True

    def sample(self, rng):
        rain = rng.random() < 0.5
        coat = next(x for x in PRODUCTS if x[0] == "Rain Coat")
        return {"city": rng.choice(SAVED), "k": rng.randint(1, 6), "rain": rain,
                "cond": "Rain" if rain else rng.choice(DRY), "size": rng.choice(coat[3])}

    def goal(self, p):
        return (f"Check the Weather app: if it will rain in {p['city']} on {weekday(p['k'])}, buy a Rain Coat in "
                f"size {p['size']} from the Shop; if not, buy Sunglasses instead.")

    def setup(self, state, p):
        ensure_saved(state, p["city"])
        set_day(state.data[W]["wx"][p["city"]], p["k"], cond=p["cond"])

    def _want(self, p):
        return ("Rain Coat", p["size"]) if p["rain"] else ("Sunglasses", None)

    def check(self, world, p, answer):
        want, size = self._want(p)
        other = "Sunglasses" if p["rain"] else "Rain Coat"
        items = [it for o in world.state.data[S]["orders"] for it in o["items"]]
        return any(it["name"] == want and (size is None or it["size"] == size) for it in items) and \
            not any(it["name"] == other for it in items)

    def stages(self, p):
        n, size = self._want(p)
        st = forecast_stage(p["city"])
        look = Stage(f"check {p['city']} on {weekday(p['k'])} ({p['cond']})", st.done, st.act)

        def on_product(ev):
            return ev.state.fg == S and ev.screen() == ("product", {"name": n})
        other = "Sunglasses" if p["rain"] else "Rain Coat"

        def remove_other(ev):
            ov = ev.state.overlay
            if ov and ov.get("owner") == S and ev.state.fg == S:
                if ov.get("id") == "bagitem" and ev.data(S)["bag"][ov["params"]["index"]]["name"] == other:
                    return tap(ev, ev.skin.label("Delete"), f"The sheet for {other} offers to remove it.")
                return tap(ev, ev.skin.label("Cancel"), "This sheet is not for the item I need to remove.")
            return goto(ev, S, [("bag", None, ev.skin.label("Cart"))]) or \
                tap(ev, other, f"{other} is in the bag but is not what the forecast calls for.")
        stages = [look, Stage(f"find {n} in the Shop", lambda ev: in_bag(ev, n, size) or on_product(ev),
                              lambda ev: search_and_open(ev, n))]
        if size:
            stages.append(Stage(f"pick size {size}", lambda ev: in_bag(ev, n, size) or (
                on_product(ev) and ev.state.fields.get(f"{S}/product/size") == size),
                lambda ev: size_stage(ev, n, size)))
        stages += [
            Stage(f"add {n} to the bag", lambda ev: in_bag(ev, n, size),
                  lambda ev: tap(ev, ev.skin.label("Add to cart"), f"I add {n} to the bag.")),
            Stage("go to checkout", lambda ev: ev.state.fg == S and ev.screen() == ("checkout", {}) and
                  not in_bag(ev, other),
                  lambda ev: remove_other(ev) if in_bag(ev, other) else
                  goto(ev, S, [("bag", None, ev.skin.label("Cart")), ("checkout", None, "Checkout")])),
            Stage("place the order", lambda ev: False, lambda ev: tap(ev, "Place Order")),
        ]
        return stages
