"""Settings: Wi-Fi, Bluetooth, display, sounds, Do Not Disturb, About."""
from __future__ import annotations

import random

from navrl.worlds.phone.sim.app import App, Ctx, Variation
from navrl.worlds.phone.sim.widgets import (Button, ListItem, ListView, Segmented, Text, TextField, Toggle, View)

NETWORKS = ["HomeNet", "CoffeeBar", "Office-5G", "Guest", "Linksys-204", "Airport_Free", "Netgear77", "TheLAN"]
RINGTONES = ["Reflection", "Radar", "Beacon", "Chimes", "Circuit", "Constellation", "Cosmic", "Crystals",
             "Hillside", "Illuminate", "Night Owl", "Opening", "Playtime", "Presto", "Radiate", "Ripples",
             "Sencha", "Signal", "Silk", "Slow Rise", "Stargaze", "Summit", "Twinkle", "Uplift", "Waves"]
DEVICES = ["AirPods Pro", "Car Audio", "JBL Flip 5", "Apple Watch", "Magic Keyboard"]
TEXT_SIZES = ["Small", "Medium", "Large"]


class Settings(App):
    name = "Settings"
    color = "#8e8e93"
    description = "Phone settings: Wi-Fi, Bluetooth, display and dark mode, sounds and ringtone, Do Not Disturb, about."
    root = "main"

    def init_data(self, rng: random.Random, var: Variation) -> dict:
        nets = list(NETWORKS)
        tones = list(RINGTONES)
        if var.shuffle:
            rng.shuffle(nets)
        if var.filler:
            nets += [f"DIRECT-{rng.randint(10, 99)}-HP" for _ in range(var.filler)]
        return {"wifi": True, "network": "HomeNet", "networks": nets, "passwords": {},
                "bluetooth": False, "paired": list(DEVICES[:3]), "connected": None,
                "dark": False, "text_size": "Medium", "ringtone": "Reflection", "ringtones": tones,
                "dnd": False, "version": "17.4.1", "device_name": "Alex's iPhone", "storage": "64 GB"}

    def view(self, ctx: Ctx, screen: str, params: dict) -> View:
        d = ctx.data
        android = ctx.skin.name == "android"
        if screen == "main":
            disp = "Display" if android else "Display & Brightness"
            items = [
                ListItem("Wi-Fi", trailing=d["network"] if d["wifi"] and d["network"] else ("Off" if not d["wifi"] else "Not Connected"),
                         on_tap=lambda: ctx.push("wifi")),
                ListItem("Bluetooth", trailing="On" if d["bluetooth"] else "Off", on_tap=lambda: ctx.push("bluetooth")),
                ListItem(disp, on_tap=lambda: ctx.push("display")),
                ListItem("Sounds" if not android else "Sound & vibration", on_tap=lambda: ctx.push("sounds")),
                ListItem("Do Not Disturb", trailing="On" if d["dnd"] else "Off", on_tap=lambda: ctx.push("dnd")),
                ListItem("About" if not android else "About phone", on_tap=lambda: ctx.push("about")),
            ]
            if ctx.world.state.layout == "alt":
                items = items[::-1]
            return View("Settings", [ListView("sections", items, item_height=48)])
        if screen == "wifi":
            def set_wifi(v: bool) -> None:
                d["wifi"] = v
            body: list = [Toggle("Wi-Fi", d["wifi"], set_wifi)]
            if d["wifi"]:
                body.append(Text("Networks", "caption"))
                body.append(ListView("networks", [
                    ListItem(n, trailing="Connected" if n == d["network"] else "",
                             on_tap=(lambda n=n: ctx.push("join", network=n)) if n != d["network"] else None)
                    for n in d["networks"]], item_height=44))
            return View("Wi-Fi", body)
        if screen == "join":
            net = params["network"]

            def join() -> None:
                pw = ctx.field("password")
                d["passwords"][net] = pw
                if pw:
                    d["network"] = net
                    ctx.emit("wifi_joined", network=net, password=pw)
                    ctx.pop()
                else:
                    ctx.toast("Enter the password")
            return View(f"Join {net}", [Text(f"Enter the password for \"{net}\"", "caption"),
                                        TextField("password", "Password", secure=True),
                                        Button("Join", join)])
        if screen == "bluetooth":
            def set_bt(v: bool) -> None:
                d["bluetooth"] = v
                if not v:
                    d["connected"] = None

            body = [Toggle("Bluetooth", d["bluetooth"], set_bt)]
            if d["bluetooth"]:
                def connect(n: str) -> None:
                    d["connected"] = n
                body.append(Text("My Devices", "caption"))
                body.append(ListView("devices", [ListItem(n, trailing="Connected" if d["connected"] == n else "Not Connected",
                                                          on_tap=lambda n=n: connect(n)) for n in d["paired"]]))
            return View("Bluetooth", body)
        if screen == "display":
            def set_dark(v: bool) -> None:
                d["dark"] = v

            def set_size(i: int) -> None:
                d["text_size"] = TEXT_SIZES[i]
            return View("Display" if android else "Display & Brightness",
                        [Toggle("Dark Mode" if not android else "Dark theme", d["dark"], set_dark),
                         Text("Text Size", "caption"),
                         Segmented(TEXT_SIZES, TEXT_SIZES.index(d["text_size"]), set_size)])
        if screen == "sounds":
            return View("Sounds", [Text("Ringtone", "caption"), ListView("tones", [
                ListItem(t, trailing="Selected" if t == d["ringtone"] else "",
                         on_tap=lambda t=t: d.__setitem__("ringtone", t)) for t in d["ringtones"]], item_height=44)])
        if screen == "dnd":
            return View("Do Not Disturb", [Toggle("Do Not Disturb", d["dnd"], lambda v: d.__setitem__("dnd", v)),
                                           Text("Silence calls and notifications.", "caption")])
        if screen == "about":
            return View("About", [ListView("about", [
                ListItem("Name", trailing=d["device_name"]), ListItem("Software Version", trailing=d["version"]),
                ListItem("Storage", trailing=d["storage"]), ListItem("Model", trailing="Phone 15")], item_height=44)])
        raise KeyError(screen)
