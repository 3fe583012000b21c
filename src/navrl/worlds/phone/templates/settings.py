"""Settings templates."""
from __future__ import annotations

import random

from navrl.worlds.phone.sim.apps.settings import NETWORKS, RINGTONES, TEXT_SIZES
from navrl.worlds.phone.expert import Ev, Stage, goto, report_stage, tap, type_into
from navrl.worlds.phone.task import Family, Template, register

S = "Settings"


def _display(ev: Ev) -> str:
    return "Display" if ev.skin.name == "android" else "Display & Brightness"


TOGGLES = {
    # key: (goal noun, screen, main-list label (fn of ev), toggle label fn)
    "wifi": ("Wi-Fi", "wifi", lambda ev: "Wi-Fi", lambda ev: "Wi-Fi"),
    "bluetooth": ("Bluetooth", "bluetooth", lambda ev: "Bluetooth", lambda ev: "Bluetooth"),
    "dark": ("Dark Mode", "display", _display, lambda ev: "Dark theme" if ev.skin.name == "android" else "Dark Mode"),
    "dnd": ("Do Not Disturb", "dnd", lambda ev: "Do Not Disturb", lambda ev: "Do Not Disturb"),
}


@register
class SettingsToggle(Template):
    name = "settings_toggle"
    family = Family.SINGLE
    apps = (S,)
    max_steps = 12

    def sample(self, rng: random.Random) -> dict:
        key = rng.choice(sorted(TOGGLES))
        return {"key": key, "on": rng.random() < 0.5}

    def goal(self, p: dict) -> str:
        return f"Turn {'on' if p['on'] else 'off'} {TOGGLES[p['key']][0]}."

    def setup(self, state, p) -> None:
        state.data[S][p["key"]] = not p["on"]

    def check(self, world, p, answer) -> bool:
        return world.state.data[S][p["key"]] == p["on"]

    def stages(self, p: dict) -> list[Stage]:
        noun, screen, entry, toggle = TOGGLES[p["key"]]
        return [Stage(f"open the {noun} settings", lambda ev: ev.screen() == (screen, {}),
                      lambda ev: goto(ev, S, [("main", None, None), (screen, None, entry(ev))])),
                Stage(f"switch {noun} {'on' if p['on'] else 'off'}", lambda ev: False,
                      lambda ev: tap(ev, toggle(ev), f"The {noun} switch is in the wrong position; I flip it."))]


@register
class SettingsRingtone(Template):
    name = "settings_ringtone"
    family = Family.SINGLE
    apps = (S,)
    max_steps = 15

    def sample(self, rng):
        return {"tone": rng.choice(RINGTONES[1:])}

    def goal(self, p):
        return f"Change my ringtone to {p['tone']}."

    def check(self, world, p, answer):
        return world.state.data[S]["ringtone"] == p["tone"]

    def stages(self, p):
        def sounds(ev):
            return "Sound & vibration" if ev.skin.name == "android" else "Sounds"
        return [Stage("open the Sounds settings", lambda ev: ev.screen() == ("sounds", {}),
                      lambda ev: goto(ev, S, [("main", None, None), ("sounds", None, sounds(ev))])),
                Stage(f"pick {p['tone']}", lambda ev: False,
                      lambda ev: tap(ev, p["tone"], f"I select {p['tone']} as the ringtone."))]


@register
class SettingsJoinWifi(Template):
    name = "settings_join_wifi"
    family = Family.SINGLE
    apps = (S,)
    max_steps = 15

    def sample(self, rng):
        return {"net": rng.choice(NETWORKS[1:]), "pw": rng.choice(["sunflower42", "bluebird7", "maple-99", "orbit2024"])}

    def goal(self, p):
        return f"Connect to the Wi-Fi network {p['net']}. The password is {p['pw']}."

    def check(self, world, p, answer):
        d = world.state.data[S]
        return d["network"] == p["net"] and d["passwords"].get(p["net"]) == p["pw"]

    def stages(self, p):
        net, pw = p["net"], p["pw"]

        def on_join(ev):
            return ev.screen() == ("join", {"network": net})
        return [Stage("turn Wi-Fi on", lambda ev: ev.data(S)["wifi"],
                      lambda ev: goto(ev, S, [("main", None, None), ("wifi", None, "Wi-Fi")]) or tap(ev, "Wi-Fi")),
                Stage(f"open {net}", on_join,
                      lambda ev: goto(ev, S, [("main", None, None), ("wifi", None, "Wi-Fi"),
                                              ("join", {"network": net}, net)])),
                Stage("enter the password", lambda ev: on_join(ev) and ev.world.state.fields.get(f"{S}/join/password") == pw,
                      lambda ev: type_into(ev, "Password", pw)),
                Stage("tap Join", lambda ev: False, lambda ev: tap(ev, "Join"))]


@register
class SettingsTextSize(Template):
    name = "settings_text_size"
    family = Family.SINGLE
    apps = (S,)
    max_steps = 12
    heldout = True

    def sample(self, rng):
        return {"size": rng.choice(["Small", "Large"])}

    def goal(self, p):
        return f"Make the text size {p['size']}."

    def check(self, world, p, answer):
        return world.state.data[S]["text_size"] == p["size"]

    def stages(self, p):
        return [Stage("open display settings", lambda ev: ev.screen() == ("display", {}),
                      lambda ev: goto(ev, S, [("main", None, None), ("display", None, _display(ev))])),
                Stage(f"choose {p['size']}", lambda ev: False, lambda ev: tap(ev, p["size"]))]


@register
class SettingsVersion(Template):
    name = "settings_version"
    family = Family.ANSWER
    apps = (S,)
    max_steps = 10

    def sample(self, rng):
        return {"version": rng.choice(["17.4.1", "17.5", "18.0.1", "18.1"])}

    def goal(self, p):
        return "What software version is this phone running?"

    def setup(self, state, p):
        state.data[S]["version"] = p["version"]

    def answer(self, p):
        return p["version"]

    def stages(self, p):
        def about(ev):
            return "About phone" if ev.skin.name == "android" else "About"
        return [Stage("open About", lambda ev: ev.screen() == ("about", {}),
                      lambda ev: goto(ev, S, [("main", None, None), ("about", None, about(ev))])),
                report_stage("the version", f"The Software Version row shows {p['version']}.", p["version"])]
