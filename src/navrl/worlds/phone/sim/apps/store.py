"""App Store: featured apps, search, app pages with Get/Install; some downloads hit a CAPTCHA wall."""
from __future__ import annotations

import random

from navrl.worlds.phone.sim.app import App, Ctx, Variation, filler_names
from navrl.worlds.phone.sim.widgets import (Button, Dialog, ListItem, ListView, Picture, Text, TextField, View)

# name, developer, category, rating, size MB, captcha, description
CATALOG = [
    ("Weather", "Skyline Labs", "Weather", 4.1, 38, False, "Hourly forecasts and radar maps from Skyline Labs."),
    ("Notes", "Pinecone Software", "Productivity", 3.9, 22, False, "A simple notebook with folders and tags."),
    ("Sleep Sounds", "Calm Forest Inc.", "Health", 4.7, 55, False, "Rain, waves and white noise to fall asleep."),
    ("Budget Buddy", "Ledger Apps", "Finance", 4.5, 41, False, "Track spending and set monthly budgets."),
    ("Habit Tracker", "Tiny Wins", "Productivity", 4.6, 18, False, "Build good habits one day at a time."),
    ("Podcast Player", "Waveform Media", "Entertainment", 4.4, 63, False, "Subscribe to and download podcasts."),
    ("Photo Editor Pro", "Lumina Studio", "Photo", 4.3, 120, False, "Filters, crops and retouching tools."),
    ("Language Coach", "Polyglot Labs", "Education", 4.8, 97, False, "Learn Spanish, French and more."),
    ("Step Counter", "Stride Health", "Health", 4.2, 15, False, "Count steps and reach daily goals."),
    ("Parking Finder", "CityPark", "Navigation", 4.0, 33, False, "Find and pay for parking nearby."),
    ("Chess Master", "Knight Games", "Games", 4.6, 80, False, "Play chess online or against the computer."),
    ("Plant Care", "Green Thumb Co.", "Lifestyle", 4.5, 27, False, "Watering reminders for your plants."),
    ("Crypto Wallet", "Satoshi Tools", "Finance", 3.6, 48, True, "Store and trade digital coins."),
    ("Coupon Hunter", "DealFox", "Shopping", 3.8, 31, True, "Coupons and cash back at thousands of stores."),
    ("Free VPN Shield", "NetGuard Ltd.", "Utilities", 3.4, 25, True, "Browse privately on public Wi-Fi."),
    ("Ticket Resale", "SeatSwap", "Entertainment", 3.7, 44, True, "Buy and sell event tickets."),
]
COLLIDING = ["Weather", "Notes"]
INSTALLABLE = [c[0] for c in CATALOG if not c[5] and c[0] not in COLLIDING]
CAPTCHA_APPS = [c[0] for c in CATALOG if c[5]]
FILLER_A = ["Pixel", "Happy", "Smart", "Zen", "Turbo", "Daily", "Tiny", "Bright"]
FILLER_B = ["Puzzles", "Timer", "Scanner", "Journal", "Quiz", "Radio", "Planner", "Sketch"]


def app_entry(d: dict, name: str) -> dict | None:
    return next((a for a in d["catalog"] if a["name"] == name), None)


class AppStore(App):
    name = "App Store"
    color = "#1c7cf4"
    description = "App Store: discover, search and install apps."
    tabs = [("Today", "star", "today"), ("Search", "search", "search")]

    def init_data(self, rng: random.Random, var: Variation) -> dict:
        cat = [{"name": n, "developer": dev, "category": c, "rating": r, "size": s, "captcha": cap, "desc": desc}
               for n, dev, c, r, s, cap, desc in CATALOG]
        if var.filler:
            for n in filler_names(rng, var.filler, FILLER_A, FILLER_B, {a["name"] for a in cat}):
                cat.append({"name": n, "developer": f"{n.split()[0]} Apps LLC", "category": "Utilities",
                            "rating": round(rng.uniform(3.0, 4.9), 1), "size": rng.randint(8, 90), "captcha": False,
                            "desc": "A handy little app."})
        if var.shuffle:
            rng.shuffle(cat)
        return {"catalog": cat, "installed": [], "challenge": 0}

    def _row(self, ctx: Ctx, a: dict) -> ListItem:
        got = a["name"] in ctx.data["installed"]
        return ListItem(a["name"], a["developer"] + (" - Installed" if got else ""),
                        on_tap=lambda n=a["name"]: ctx.push("detail", name=n), icon_color="#9bb8e8")

    def view(self, ctx: Ctx, screen: str, params: dict) -> View:
        d = ctx.data
        alt = ctx.world.state.layout == "alt"
        if screen == "today":
            feat = d["catalog"][:10]
            return View("Today", [Text("Apps we love", "caption"),
                                  ListView("featured", [self._row(ctx, a) for a in feat])])
        if screen == "search":
            q = ctx.field("query").strip().lower()
            res = [a for a in d["catalog"]
                   if q and (q in a["name"].lower() or q in a["developer"].lower() or q in a["category"].lower())]
            lv = ListView("results", [self._row(ctx, a) for a in res],
                          empty_text="Type to search" if not q else "No results")
            field = TextField("query", "Search apps")
            return View("Search", [lv, field] if alt else [field, lv])
        if screen == "detail":
            a = app_entry(d, params["name"])
            if a is None:
                return View("App Store", [Text("This app is not available.", "caption")])
            n = a["name"]
            got = n in d["installed"]
            if got:
                main = Button("Open", (lambda: ctx.open_app(n)) if n in ctx.world.state.installed else None,
                              enabled=n in ctx.world.state.installed)
            elif a["captcha"]:
                main = Button("Get", lambda: ctx.push("captcha", name=n))
            else:
                main = Button("Get", lambda: ctx.show("confirm", name=n))
            info = [Text(a["developer"], "caption"),
                    Text(f"{a['rating']} stars - {a['category']} - {a['size']} MB", "caption")]
            body: list = [Picture(n, "#9bb8e8", 90), Text(n, "title")]
            body += ([main] + info) if alt else (info + [main])
            body.append(Text(a["desc"], "wrap", height=44))
            return View(n, body)
        if screen == "captcha":
            n = params["name"]

            def verify() -> None:
                ctx.set_field("code", "")
                d["challenge"] += 1
                ctx.toast("Incorrect. Try again.")

            def new_challenge() -> None:
                d["challenge"] += 1
            return View("Verify", [Text("Verify you are human", "title"),
                                   Text(f"Type the characters in the image to download {n}.", "wrap", height=44),
                                   Picture("CAPTCHA image", ["#c9c3b5", "#b5c3c9", "#c9b5c3"][d["challenge"] % 3], 80,
                                           caption="(distorted characters)"),
                                   TextField("code", "Enter the characters"),
                                   Button("Verify", verify), Button("New challenge", new_challenge, "plain")])
        raise KeyError(screen)

    def overlay(self, ctx: Ctx, oid: str, params: dict):
        if oid == "confirm":
            d = ctx.data
            a = app_entry(d, params["name"])
            if a is None:
                return None
            n = a["name"]

            def install() -> None:
                ctx.dismiss()
                if n not in d["installed"]:
                    d["installed"].append(n)
                ctx.world.install(n)
                ctx.world.app_of(n)    # registers a stand-in app so the launcher can draw its icon
                ctx.emit("app_installed", name=n, developer=a["developer"])
                ctx.toast(f"{n} installed")
            return Dialog(f"Install {n}?", f"{a['developer']} - Free", [
                Button("Install", install), ctx.cancel_button()])
        return None
