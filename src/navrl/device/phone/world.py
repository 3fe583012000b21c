"""PhoneWorld: the embedded, deterministic simulated phone (a :class:`Device`)."""
from __future__ import annotations

import pickle
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from PIL import Image

from navrl.actions import Action, ActionKind
from navrl.device.base import ActResult, Device, DeviceError, Health
from navrl.device.phone.app import App, Ctx, Variation
from navrl.device.phone.config import FaultConfig, PerturbConfig
from navrl.device.phone.launcher import LAUNCHER_NS, launcher_view
from navrl.device.phone.layout import ChromeHooks, layout
from navrl.device.phone.render import render
from navrl.device.phone.skin import Skin, get_skin
from navrl.device.phone.widgets import Button, Dialog, Frame, Sheet, Text, View
from navrl.observation import Observation, UINode

POPUPS = [
    # (title, message, dismiss label, other label)
    ("Enjoying {app}?", "Tap a star to rate it on the App Store.", "Not Now", "Rate"),
    ("Turn on notifications?", "{app} would like to send you notifications.", "Don't Allow", "Allow"),
    ("Get 20% off", "Upgrade to {app} Plus today and save.", "No Thanks", "Upgrade"),
    ("What's new in {app}", "A fresh look and faster search.", "Close", "Learn More"),
]
CONSENT = ("We value your privacy", "{app} uses cookies to personalise content.", "Reject All", "Accept All")


@dataclass
class WorldState:
    """Everything that changes. Plain data: a snapshot is this object pickled."""

    skin: str
    layout: str
    seed: int
    installed: list[str]
    data: dict[str, dict]
    rng: random.Random
    profile: dict = field(default_factory=dict)
    fg: str | None = None
    stacks: dict[str, list[tuple[str, dict]]] = field(default_factory=dict)
    fields: dict[str, str] = field(default_factory=dict)
    focus: str | None = None
    scroll: dict[str, int] = field(default_factory=dict)
    overlay: dict | None = None
    overflow: bool = False
    toast: str | None = None
    loading: str | None = None          # "App/screen" still loading
    opened: list[str] = field(default_factory=list)   # apps opened this episode (consent shows once)
    events: list[dict] = field(default_factory=list)
    steps: int = 0
    flags: dict = field(default_factory=dict)          # free-form marks (e.g. paywall seen)


class GenericApp(App):
    """Stand-in for an app installed from the App Store."""

    def __init__(self, name: str):
        self.name, self.color, self.description = name, "#5b6b7f", f"{name} (installed from the App Store)"

    def view(self, ctx: Ctx, screen: str, params: dict) -> View:
        return View(self.name, [Text(f"Welcome to {self.name}", "title"), Text("Sign in to get started.")])


class PhoneWorld(Device):
    """A simulated phone.

    ``setup`` (optional) is called once with the fresh state after apps initialised
    their data; task templates use it to plant records their goal refers to.
    """

    def __init__(self, apps: Iterable[App] | None = None, skin: str = "ios", seed: int = 0,
                 perturb: PerturbConfig | None = None, faults: FaultConfig | None = None,
                 layout: str = "default", setup: Callable[[WorldState], None] | None = None,
                 profile: dict | None = None):
        if apps is None:
            from navrl.device.phone.apps import all_apps
            apps = all_apps()
        self.apps: dict[str, App] = {a.name: a for a in apps}
        self.skin: Skin = get_skin(skin)
        self.platform = skin
        self.perturb = (perturb if perturb is not None else PerturbConfig()).validate()
        self.faults = faults or FaultConfig()
        if layout not in ("default", "alt"):
            raise ValueError(f"unknown layout {layout!r}; choose 'default' or 'alt'")
        rng = random.Random(seed)
        data: dict[str, dict] = {}
        for name in sorted(self.apps):
            app_rng = random.Random(f"{seed}/{name}")
            var = Variation(shuffle=app_rng.random() < self.perturb.shuffle,
                            filler=(app_rng.randint(3, 8) if app_rng.random() < self.perturb.filler else 0),
                            layout=layout, seed=seed)
            data[name] = self.apps[name].init_data(app_rng, var)
        self.state = WorldState(skin=skin, layout=layout, seed=seed, installed=list(self.apps), data=data,
                                rng=rng, profile=dict(profile or {}))
        if setup is not None:
            setup(self.state)
        self._fault_rng = random.Random(f"faults/{seed}")
        self._dead: str | None = None
        self._frame: Frame | None = None
        self._closed = False

    # ------------------------------------------------------------------ Device protocol
    def observe(self) -> Observation:
        self._check_alive()
        frame = self.frame()
        cached = self.__dict__.get("_observed")
        if cached is not None and cached[0] is frame:
            return cached[1]      # nothing changed since the last look (the expert looks often)
        els = frame.elements[-frame.n_modal:] if frame.modal else frame.elements
        nodes = tuple(
            UINode(e.node_id, e.role, e.label, e.bounds, e.enabled, e.focused, e.value,
                   actions=tuple(a for a, h in (("tap", e.on_tap or (e.kind == "field")),
                                                ("long_press", e.on_long_press), ("swipe", e.on_swipe)) if h))
            for e in els if e.role is not None)
        skin = self.skin
        obs = Observation(nodes=nodes, app=self.state.fg, screen_size=(skin.width, skin.height),
                          platform=skin.name, render=lambda f=frame: render(f, skin.accent, skin.name))
        self._observed = (frame, obs)
        return obs

    def screenshot(self) -> Image.Image:
        return render(self.frame(), self.skin.accent, self.skin.name)

    def act(self, action: Action) -> ActResult:
        self._check_alive()
        action.validate((self.skin.width, self.skin.height))
        if not action.is_device_action:
            raise ValueError(f"{action.kind.value} is an episode action, not a device action")
        self._maybe_lose_device()
        frame = self.frame()
        st = self.state
        st.steps += 1
        st.toast = None
        k = action.kind
        res = ActResult(False, "nothing there")
        if k is ActionKind.HOME:
            self._go_home()
            res = ActResult(True, "home")
        elif k in (ActionKind.TAP, ActionKind.LONG_PRESS):
            want = "tap" if k is ActionKind.TAP else "long_press"
            e = frame.hit(action.x, action.y, want)
            if e is not None:
                if e.kind == "field" and want == "tap":
                    self._focus(e.data["key"])
                    res = ActResult(True, f"focused {e.label}")
                else:
                    h = e.on_tap if want == "tap" else e.on_long_press
                    if h is not None:
                        if st.overflow and e.label != "More options":
                            st.overflow = False
                        h()
                        res = ActResult(True, f"{want} {e.label}")
            elif st.overflow:
                st.overflow = False
                res = ActResult(True, "closed menu")
        elif k is ActionKind.SWIPE:
            res = self._swipe(frame, action)
        elif k is ActionKind.TYPE:
            if st.focus is None:
                res = ActResult(False, "no focused field")
            else:
                st.fields[st.focus] = st.fields.get(st.focus, "") + action.text
                res = ActResult(True, "typed")
        self._frame = None
        return res

    def snapshot(self) -> bytes:
        return pickle.dumps(self.state, protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, snapshot: object) -> None:
        if not isinstance(snapshot, (bytes, bytearray)):
            raise TypeError("PhoneWorld.restore needs a snapshot from PhoneWorld.snapshot()")
        self.state = pickle.loads(snapshot)
        self._dead = None
        self._frame = None

    def health(self) -> Health:
        if self._closed:
            return Health(False, "closed")
        if self._dead:
            return Health(False, self._dead)
        return Health(True, "ok", {"steps": self.state.steps, "fg": self.state.fg})

    def close(self) -> None:
        self._closed = True

    # ------------------------------------------------------------------ frame
    def frame(self) -> Frame:
        if self._frame is None:
            self._frame = self._build_frame()
        return self._frame

    def current_screen(self) -> tuple[str, dict] | None:
        st = self.state
        if st.fg is None:
            return None
        return st.stacks[st.fg][-1]

    def app_of(self, name: str) -> App:
        app = self.apps.get(name)
        if app is None:
            app = self.apps[name] = GenericApp(name)
        return app

    def _build_frame(self) -> Frame:
        st = self.state
        hooks = ChromeHooks(go_home=self._go_home, system_back=self._system_back, open_overflow=self._open_overflow,
                            focus=self._focus, field_value=lambda k: st.fields.get(k, ""), focused_key=st.focus,
                            scroll_offset=lambda k: st.scroll.get(k, 0), overflow_open=st.overflow,
                            close_overflow=self._close_overflow, clear_field=self._clear_field)
        if st.fg is None:
            return layout(launcher_view(self), self.skin, hooks, LAUNCHER_NS)
        app = self.app_of(st.fg)
        screen, params = st.stacks[st.fg][-1]
        ns = f"{app.name}/{screen}"
        if st.loading == ns:
            view = View(app.name, [Text("Loading...", "title"), Text("This is taking longer than usual.", "caption"),
                                   Button("Retry", self._finish_loading)])
        else:
            view = app.view(Ctx(self, app, screen, params), screen, params)
        depth = len(st.stacks[st.fg])
        if app.tabs and depth == 1:
            roots = [t[2] for t in app.tabs]
            if view.tabs is None:
                view.tabs = [(t[0], t[1]) for t in app.tabs]
            view.active_tab = roots.index(screen) if screen in roots else 0
            if view.on_tab is None:
                view.on_tab = lambda i, a=app: self._reset_stack(a.name, a.tabs[i][2], {})
        if depth > 1 and view.on_back is None:
            view.on_back = lambda a=app: self._pop(a.name)
        ov = st.overlay
        if ov is not None:
            if ov["owner"] == "world":
                view.overlay = self._world_overlay(ov)
            elif ov["owner"] == app.name:
                view.overlay = app.overlay(Ctx(self, app, screen, params), ov["id"], ov["params"])
        if st.toast:
            view.toast = st.toast
        return layout(view, self.skin, hooks, ns)

    def _world_overlay(self, ov: dict) -> Dialog | Sheet:
        app = self.state.fg or ""
        if ov["id"] == "consent":
            t, m, dis, other = CONSENT
            return Sheet(t.format(app=app), [Button(other, self._dismiss_overlay, "primary"),
                                             Button(dis, self._dismiss_overlay, "plain")],
                         message=m.format(app=app))
        t, m, dis, other = POPUPS[ov["params"]["variant"]]
        return Dialog(t.format(app=app), m.format(app=app),
                      [Button(other, self._dismiss_overlay, "primary"), Button(dis, self._dismiss_overlay, "plain")])

    # ------------------------------------------------------------------ state changes
    def _check_alive(self) -> None:
        if self._closed:
            raise DeviceError("device_closed", "the device was closed")
        if self._dead:
            raise DeviceError(self._dead, "the device is not answering")

    def _maybe_lose_device(self) -> None:
        f = self.faults
        if not f.any:
            return
        if (f.lose_at_step is not None and self.state.steps >= f.lose_at_step) or \
                (f.device_lost > 0 and self._fault_rng.random() < f.device_lost):
            self._dead = "device_lost"
            raise DeviceError("device_lost", "connection to the device dropped")

    def _go_home(self) -> None:
        st = self.state
        st.fg, st.overlay, st.overflow, st.focus = None, None, False, None
        st.fields.pop(f"{LAUNCHER_NS}/query", None)

    def _system_back(self) -> None:
        st = self.state
        if st.overflow:
            st.overflow = False
        elif st.overlay is not None:
            st.overlay = None
        elif st.fg is None:
            st.fields.pop(f"{LAUNCHER_NS}/query", None)
            st.focus = None
        elif len(st.stacks[st.fg]) > 1:
            self._pop(st.fg)
        else:
            self._go_home()

    def _open_overflow(self) -> None:
        self.state.overflow = True

    def _close_overflow(self) -> None:
        self.state.overflow = False

    def _dismiss_overlay(self) -> None:
        self.state.overlay = None

    def _focus(self, key: str) -> None:
        self.state.focus = key

    def _clear_field(self, key: str) -> None:
        self.state.fields[key] = ""

    def _finish_loading(self) -> None:
        self.state.loading = None

    def _open_app(self, name: str, screen: str | None, params: dict) -> None:
        st = self.state
        if name not in st.installed:
            raise ValueError(f"unknown app {name!r}")
        app = self.app_of(name)
        if self.faults.app_never_loads > 0 and self._fault_rng.random() < self.faults.app_never_loads:
            self._dead = "app_never_loads"
            raise DeviceError("app_never_loads", f"{name} never finished launching")
        st.fg, st.overlay, st.overflow, st.focus = name, None, False, None
        st.fields.pop(f"{LAUNCHER_NS}/query", None)
        if name not in st.stacks:
            st.stacks[name] = [(app.root_screens()[0], {})]
        if screen is not None:
            st.stacks[name] = [(app.root_screens()[0], {})] + ([(screen, dict(params))]
                                                               if screen not in app.root_screens() else [])
        first = name not in st.opened
        if first:
            st.opened.append(name)
        p = self.perturb
        if first and p.consent > 0 and st.rng.random() < p.consent:
            st.overlay = {"owner": "world", "id": "consent", "params": {}}
        elif p.popup > 0 and st.rng.random() < p.popup:
            st.overlay = {"owner": "world", "id": "popup", "params": {"variant": st.rng.randrange(len(POPUPS))}}

    def _push(self, app: str, screen: str, params: dict) -> None:
        st = self.state
        st.stacks[app].append((screen, dict(params)))
        st.focus = None
        if self.perturb.loading > 0 and st.rng.random() < self.perturb.loading:
            st.loading = f"{app}/{screen}"

    def _pop(self, app: str) -> None:
        st = self.state
        stack = st.stacks[app]
        if len(stack) > 1:
            screen, _ = stack.pop()
            self._clear_screen_state(f"{app}/{screen}")
        st.focus = None
        st.loading = None

    def _reset_stack(self, app: str, screen: str, params: dict) -> None:
        st = self.state
        for s, _ in st.stacks.get(app, []):
            self._clear_screen_state(f"{app}/{s}")
        st.stacks[app] = [(screen, dict(params))]
        st.focus = None
        st.loading = None

    def _clear_screen_state(self, ns: str) -> None:
        st = self.state
        pre = ns + "/"
        for d in (st.fields, st.scroll):
            for k in [k for k in d if k.startswith(pre)]:
                del d[k]

    def _swipe(self, frame: Frame, a: Action) -> ActResult:
        st = self.state
        if a.x is not None and a.y is not None and not frame.modal:
            for e in reversed(frame.elements):
                if e.on_swipe is not None and e.contains(a.x, a.y):
                    if e.on_swipe(a.direction):
                        return ActResult(True, f"swiped {a.direction} on {e.label}")
        region = frame.scroll_at(a.x, a.y)
        if region is None or a.direction not in ("up", "down"):
            return ActResult(False, "nothing to scroll")
        step = region.page if a.direction == "up" else -region.page
        new = min(max(0, region.offset + step), region.max_offset)
        if new == region.offset:
            return ActResult(False, "already at the end")
        st.scroll[region.key] = new
        return ActResult(True, f"scrolled {a.direction}")

    # ------------------------------------------------------------------ helpers for tasks
    def install(self, name: str) -> None:
        if name not in self.state.installed:
            self.state.installed.append(name)
