"""The home screen: app icon grid and app search (with App Store suggestions)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from navrl.worlds.phone.sim.widgets import Grid, ListItem, ListView, TextField, View

if TYPE_CHECKING:  # pragma: no cover
    from navrl.worlds.phone.sim.world import PhoneWorld

LAUNCHER_NS = "Launcher/home"


def launcher_view(world: "PhoneWorld") -> View:
    st = world.state
    query = st.fields.get(f"{LAUNCHER_NS}/query", "").strip()
    body: list = [TextField("query", "Search", label="Search")]
    if query:
        q = query.lower()
        items = [ListItem(name, "App", on_tap=(lambda n=name: world._open_app(n, None, {})),
                          icon_color=world.app_of(name).color)
                 for name in st.installed if q in name.lower()]
        store = world.state.data.get("App Store", {}).get("catalog", [])
        for app in store:
            if q in app["name"].lower() and app["name"] not in st.installed:
                items.append(ListItem(f"{app['name']} - App Store", app.get("developer", "App Store"),
                                      on_tap=(lambda n=app["name"]: world._open_app("App Store", "detail",
                                                                                      {"name": n}))))
        body.append(ListView("results", items, empty_text="No results"))
    else:
        order = list(st.installed)
        if st.layout == "alt":
            order = sorted(order, key=lambda n: (len(n), n))
        cols = 3 if st.layout == "alt" else 4
        body.append(Grid([(n, world.app_of(n).color, (lambda n=n: world._open_app(n, None, {}))) for n in order],
                         cols=cols))
    return View("Home", body, chrome=False)
