"""PhoneWorld: the embedded, deterministic simulated phone (a :class:`Device`)."""
from __future__ import annotations

import copy
import pickle
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Protocol

from PIL import Image

from navrl.actions import Action, ActionKind
from navrl.device.base import ActResult, Device, DeviceError, Health
from navrl.worlds.phone.sim.app import App, Ctx
from navrl.worlds.phone.sim.appdata import AppData, seed_key
from navrl.worlds.phone.sim.config import FaultConfig, PerturbConfig
from navrl.worlds.phone.sim.launcher import LAUNCHER_NS, launcher_view
from navrl.worlds.phone.sim.layout import ChromeHooks, layout
from navrl.worlds.phone.sim.render import render
from navrl.worlds.phone.sim.skin import Skin, get_skin
from navrl.worlds.phone.sim.widgets import Button, Dialog, Frame, Sheet, Text, View
from navrl.observation import Observation, UINode

POPUPS = [
    # (title, message, dismiss label, other label)
    ("Enjoying {app}?", "Tap a star to rate it on the App Store.", "Not Now", "Rate"),
    ("Turn on notifications?", "{app} would like to send you notifications.", "Don't Allow", "Allow"),
    ("Get 20% off", "Upgrade to {app} Plus today and save.", "No Thanks", "Upgrade"),
    ("What's new in {app}", "A fresh look and faster search.", "Close", "Learn More"),
]
CONSENT = ("We value your privacy", "{app} uses cookies to personalise content.", "Reject All", "Accept All")


class WorldRng(random.Random):
    """The world's ``random.Random`` (the same draws), cheap to snapshot and restore: it
    keeps its pickled state while it draws nothing (a world draws only when an app opens or a
    screen is pushed under perturbations), and a restored one unpickles its state on its
    first draw (a restore that is only read never pays for it)."""

    _packed: bytes | None = None      # pickled getstate(), valid until the next draw
    _pending: bytes | None = None     # restored, not loaded yet

    def seed(self, *args: Any, **kw: Any) -> None:
        self._packed = self._pending = None
        super().seed(*args, **kw)

    def _load(self) -> None:
        pending, self._pending = self._pending, None
        random.Random.setstate(self, pickle.loads(pending))   # type: ignore[arg-type]

    def random(self) -> float:
        if self._pending is not None:
            self._load()
        self._packed = None
        return super().random()

    def getrandbits(self, k: int) -> int:
        if self._pending is not None:
            self._load()
        self._packed = None
        return super().getrandbits(k)

    def getstate(self) -> tuple:
        if self._pending is not None:
            self._load()
        return super().getstate()

    def setstate(self, state: tuple) -> None:
        self._packed = self._pending = None
        super().setstate(state)

    def __reduce__(self) -> tuple:
        packed = self._pending if self._pending is not None else self._packed
        if packed is None:
            packed = self._packed = pickle.dumps(super().getstate(), protocol=pickle.HIGHEST_PROTOCOL)
        return _world_rng, (packed,)


def _world_rng(packed: bytes) -> WorldRng:
    r = WorldRng.__new__(WorldRng)
    r._pending = r._packed = packed
    return r


class PhoneSnapshot(bytes):
    """A phone world's snapshot: the pickled :class:`WorldState` (``bytes``, so anything that
    stores, hashes or restores snapshots is unchanged), plus ``oracle``: what the world's
    oracle knows about that state (None without one). Pickles with both (Ray hosts send it)."""

    oracle: Any = None

    def __reduce__(self) -> tuple:
        return _phone_snapshot, (bytes(self), self.oracle)


def _phone_snapshot(state: bytes, oracle: Any) -> PhoneSnapshot:
    s = PhoneSnapshot(state)
    if oracle is not None:
        s.oracle = oracle
    return s


class WorldOracle(Protocol):
    """Facts about a world's state for oracle judges, computed where the world lives (the
    task layer implements it: ``navrl.worlds.phone.facts``)."""

    def facts(self, world: "PhoneWorld", state: bytes) -> Any:
        """The facts about ``world``'s current state (``state``: its pickle, for scratch copies)."""

    def advance(self, facts: Any, action: Action, world: "PhoneWorld") -> Any | None:
        """The facts after ``action`` took the world from the state of ``facts`` to its current
        one, when they follow cheaply from ``facts``; None to compute them afresh."""


_APPS: list[App] | None = None


def _default_apps() -> list[App]:
    """Every app, one shared instance each (apps keep no state: it all lives in the world's)."""
    global _APPS
    if _APPS is None:
        from navrl.worlds.phone.sim.apps import all_apps
        _APPS = all_apps()
    return _APPS


_VALID: set[PerturbConfig] = set()


def _validated(p: PerturbConfig) -> PerturbConfig:
    if p not in _VALID:
        p.validate()
        _VALID.add(p)
    return p


@dataclass
class WorldState:
    """Everything that changes. Plain data: a snapshot is this object pickled."""

    skin: str
    layout: str
    seed: int
    installed: list[str]
    data: AppData                       # app -> its data (a mapping; copied from seed data on first read)
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

    ``oracle`` (optional, a :class:`WorldOracle`; tasks pass theirs) computes facts about
    the current state for oracle judges — goal met, the expert's remaining steps — where the
    world lives: :meth:`snapshot` attaches them to the snapshot it returns
    (:class:`PhoneSnapshot`), so a judge reads them instead of rebuilding and replaying the
    world. After an action the oracle may derive the new facts from the old ones (the
    expert's own next action: one step fewer) instead of computing them afresh.
    """

    def __init__(self, apps: Iterable[App] | None = None, skin: str = "ios", seed: int = 0,
                 perturb: PerturbConfig | None = None, faults: FaultConfig | None = None,
                 layout: str = "default", setup: Callable[[WorldState], None] | None = None,
                 profile: dict | None = None, oracle: "WorldOracle | None" = None):
        if apps is None:
            apps = _default_apps()
        self.apps: dict[str, App] = {a.name: a for a in apps}
        self.skin: Skin = get_skin(skin)
        self.platform = skin
        self.perturb = _validated(perturb if perturb is not None else PerturbConfig())
        self.faults = faults or FaultConfig()
        if layout not in ("default", "alt"):
            raise ValueError(f"unknown layout {layout!r}; choose 'default' or 'alt'")
        p = self.perturb
        # each app's starting data is drawn once per (app, seed, perturbation, layout), when a
        # world first reads it, and copied into the world then (navrl.worlds.phone.sim.appdata)
        apps_ = self.apps
        data = AppData({name: (seed_key(apps_[name], seed, p.shuffle, p.filler, layout), apps_[name])
                        for name in sorted(apps_)})
        self.state = WorldState(skin=skin, layout=layout, seed=seed, installed=list(self.apps), data=data,
                                rng=WorldRng(seed), profile=dict(profile or {}))
        if setup is not None:
            setup(self.state)
        self._fault_rng = random.Random(f"faults/{seed}")
        self._dead: str | None = None
        self._frame: Frame | None = None
        self._closed = False
        self.oracle = oracle
        self._version = 0                       # bumped by every act and restore
        self._facts: tuple[int, Any] | None = None   # (version, the oracle's facts about that state)

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
        prev = self._current_facts()
        self._version += 1
        self._facts = None
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
        if prev is not None:
            nxt = self.oracle.advance(prev, action, self)   # type: ignore[union-attr]
            if nxt is not None:
                self._facts = (self._version, nxt)
        return res

    def snapshot(self) -> "PhoneSnapshot":
        """The state, pickled (apps whose data the world never read go as their seed keys),
        with the oracle's facts about it when the world has an oracle."""
        snap = PhoneSnapshot(self.state_bytes())
        if self.oracle is not None:
            snap.oracle = self.oracle_facts(snap)
        return snap

    def state_bytes(self) -> bytes:
        """The pickled state alone (no oracle facts): what a scratch copy restores from."""
        return pickle.dumps(self.state, protocol=pickle.HIGHEST_PROTOCOL)

    def oracle_facts(self, state: bytes | None = None) -> Any:
        """The oracle's facts about the current state (computed once per state); ``state``:
        its pickle, when the caller has it already."""
        facts = self._current_facts()
        if facts is None:
            if self.oracle is None:
                raise ValueError("this phone world has no oracle")
            facts = self.oracle.facts(self, state if state is not None else self.state_bytes())
            self._facts = (self._version, facts)
        return facts

    def scratch(self, state: bytes | None = None) -> "PhoneWorld":
        """A copy of this world at its current state (or at ``state``) for imagining what
        would happen: no infrastructure faults, no oracle; the world itself is untouched."""
        w = copy.copy(self)
        w.apps = dict(self.apps)
        w.faults = type(self.faults)()       # without faults the copy never draws from the shared _fault_rng
        w.oracle, w._facts, w._dead, w._frame, w._closed = None, None, None, None, False
        w.__dict__.pop("_observed", None)
        w.state = pickle.loads(state if state is not None else self.state_bytes())
        return w

    def _current_facts(self) -> Any:
        f = self._facts
        return f[1] if f is not None and f[0] == self._version else None

    def restore(self, snapshot: object) -> None:
        if not isinstance(snapshot, (bytes, bytearray)):
            raise TypeError("PhoneWorld.restore needs a snapshot from PhoneWorld.snapshot()")
        self.state = pickle.loads(snapshot)
        self._dead = None
        self._frame = None
        self._version += 1
        facts = getattr(snapshot, "oracle", None)
        self._facts = (self._version, facts) if facts is not None and self.oracle is not None else None

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
