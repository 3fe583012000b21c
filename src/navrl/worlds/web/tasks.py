"""Web tasks: the MiniWoB++ suite and user web apps as suites (layer 3).

- :class:`WebTaskSpec` is the web world's :class:`~navrl.tasks.task.Task`, with
  what the episode runner reads (``id``, ``goal``, ``max_steps``, ``family``, ``profile``,
  ``to_dict()``, ``make_device()``) plus :meth:`WebTaskSpec.web_snapshot`, the handle a
  :class:`~navrl.device.browser.backend.BrowserBackend` pool restores before an episode.
- **MiniWoB++** (:func:`miniwob_tasks`): the task pages of the installed ``miniwob``
  package, served from 127.0.0.1 and started the way its ``core.js`` expects: a seeded
  ``Math.random``, a 24 h episode limit (the page's own 10 s timeout never ends an
  episode), ``core.startEpisodeReal()``; the goal is the page's ``core.getUtterance()``
  and the reward its ``WOB_*`` globals. The page is zoomed so its 160x210 task area fills
  the phone's width; the reset between episodes is the page's own hook.
- **Scripted solutions** (:data:`MINIWOB_SCRIPTS`, package :mod:`navrl.worlds.web.miniwob_scripts`; :meth:`WebTaskSpec.expert_step`, so
  :class:`navrl.agent.planner.ExpertPlanner` plays them): for a set of
  MiniWoB tasks, policies that read the goal and the UI tree and speak navrl's Step
  language (``Tap "Submit"``), executed through the accessibility grounder like any plan.
- **User suites** (:func:`load_web_suite`): a small YAML or JSON file naming start URLs,
  allowed origins, goals and a JavaScript success check per task.
"""
from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from navrl.device.browser.app import PHONES, WebApp, WebSnapshot
from navrl.device.browser.sandbox import SandboxError, normalize_origin
from navrl.observation import Observation
from navrl.tasks.task import Family, NoExpert, TaskError
from navrl.worlds.web.miniwob_scripts import MINIWOB_SCRIPTS, MINIWOB_TASKS, MiniWoBTask

__all__ = ["CCNET_TASKS", "MINIWOB_GROUPS", "MINIWOB_NOT_RUNNING", "MINIWOB_SCRIPTS", "MINIWOB_TASKS", "MiniWoBTask",
           "TABLE_23_TASKS", "WebSuiteError", "WebTaskSpec",
           "load_web_suite", "miniwob_app", "miniwob_available", "miniwob_group", "miniwob_installed_tasks", "miniwob_task",
           "miniwob_tasks", "resolve_goal", "resolve_miniwob_names", "scripted_step"]


class WebSuiteError(TaskError):
    """A web suite file (or a web task definition) that cannot be used; says where and why."""


# ====================================================================== the task type
@dataclass(frozen=True)
class WebTaskSpec:
    """One web task instance. ``instruction`` is the goal text; None means the page states
    it (MiniWoB's utterance) and :attr:`goal` reads it from the page once, by seed.

    ``judge``: ``"reward"`` (the page's raw reward > 0 is success; MiniWoB) or ``"check"``
    (the app's ``success_js`` is truthy)."""

    id: str
    suite: str
    template: str
    seed: int
    app: WebApp
    instruction: str | None = None
    max_steps: int = 15
    family: Family = Family.SINGLE
    profile: dict = field(default_factory=dict, hash=False, compare=False)
    phone: str = "iphone"
    judge: str = "reward"
    description: str = ""
    ends_on_done: bool = False
    """The episode ends when the page reports ``done`` (MiniWoB++: every published agent's episode
    ends there); False: it ends when the agent declares completion, as on a phone."""
    step_kinds: tuple[str, ...] | None = None
    """The step kinds the page acts on (navrl.tasks.task.step_kinds_of); None: all."""

    skin = "web"
    layout = "web"

    @property
    def goal(self) -> str:
        if self.instruction is not None:
            return self.instruction
        return resolve_goal(self)

    @property
    def apps(self) -> tuple[str, ...]:
        return (self.app.name,)

    def ended(self, obs: Any) -> bool:
        """True once the page reports the task done, for a task that ``ends_on_done``."""
        return self.ends_on_done and bool((getattr(obs, "page", None) or {}).get("done"))

    def web_snapshot(self) -> WebSnapshot:
        """The start of this task's episode (what a browser pool restores)."""
        return WebSnapshot.start(self.app, self.seed, self.phone)

    def make_device(self, **kw: Any):
        """A browser device (on the process-wide Chromium) running this task."""
        from navrl.device.browser.device import BrowserDevice
        kw.setdefault("phone", self.phone)
        return BrowserDevice(self.app, self.seed, **kw)

    def expert_step(self, obs: Any, device: Any, answers: list[tuple[str, str]]) -> str:
        """The task's scripted solution on ``obs`` (NoExpert where none is written)."""
        reasoning, step, remaining = scripted_step(self, obs, device)
        return f"Reasoning: {reasoning}\nStep: {step}\nRemaining: {remaining}"

    def with_(self, **kw: Any) -> "WebTaskSpec":
        return replace(self, **kw)

    def to_dict(self) -> dict:
        return {"id": self.id, "template": self.template, "seed": self.seed, "suite": self.suite, "skin": self.skin,
                "layout": self.layout, "goal": self.goal, "apps": list(self.apps), "family": self.family.value,
                "max_steps": self.max_steps, "phone": self.phone, "judge": self.judge,
                "ends_on_done": self.ends_on_done,
                "step_kinds": None if self.step_kinds is None else list(self.step_kinds)}


# ====================================================================== MiniWoB++

CCNET_TASKS: tuple[str, ...] = (
    "bisect-angle", "book-flight", "chase-circle", "choose-date", "choose-date-easy", "choose-date-medium",
    "choose-list", "circle-center", "click-button", "click-button-sequence", "click-checkboxes",
    "click-checkboxes-large", "click-checkboxes-soft", "click-checkboxes-transfer", "click-collapsible",
    "click-collapsible-2", "click-color", "click-dialog", "click-dialog-2", "click-link", "click-menu",
    "click-menu-2", "click-option", "click-pie", "click-scroll-list", "click-shades", "click-shape",
    "click-tab", "click-tab-2", "click-tab-2-easy", "click-tab-2-hard", "click-tab-2-medium", "click-test",
    "click-test-2", "click-test-transfer", "click-widget", "copy-paste", "copy-paste-2", "count-shape",
    "count-sides", "drag-box", "drag-cube", "drag-item", "drag-items", "drag-items-grid", "drag-shapes",
    "drag-sort-numbers", "email-inbox", "email-inbox-delete", "email-inbox-forward", "email-inbox-forward-nl",
    "email-inbox-forward-nl-turk", "email-inbox-important", "email-inbox-nl-turk", "email-inbox-noscroll",
    "email-inbox-reply", "email-inbox-star-reply", "enter-date", "enter-password", "enter-text",
    "enter-text-2", "enter-text-dynamic", "enter-time", "find-midpoint", "find-word", "focus-text",
    "focus-text-2", "grid-coordinate", "guess-number", "highlight-text", "highlight-text-2", "identify-shape",
    "login-user", "login-user-popup", "moving-items", "multi-layouts", "multi-orderings", "navigate-tree",
    "number-checkboxes", "read-table", "read-table-2", "resize-textarea", "right-angle", "scroll-text",
    "scroll-text-2", "search-engine", "simon-says", "simple-algebra", "simple-arithmetic", "social-media",
    "social-media-all", "social-media-some", "terminal", "text-editor", "text-transform", "tic-tac-toe",
    "unicode-test", "use-autocomplete", "use-colorwheel", "use-colorwheel-2", "use-slider", "use-slider-2",
    "use-spinner", "visual-addition",
)
"""CC-Net's 104 MiniWoB++ tasks (Humphreys et al. 2022, appendix Table 3: the rows of
``navrl/experiments/configs/miniwob_anchors.csv``). ``drag-item`` is not a page of the
installed package (which has ``drag-items``, also in the list)."""

TABLE_23_TASKS: tuple[str, ...] = (
    "click-button", "click-checkboxes", "click-dialog", "click-link", "click-option", "click-test",
    "choose-list", "enter-password", "enter-text", "focus-text", "login-user", "use-autocomplete",
    "click-tab", "click-tab-2", "click-test-2", "click-widget", "navigate-tree", "search-engine",
    "email-inbox", "social-media", "click-button-sequence", "focus-text-2", "enter-text-2",
)
"""The 23 tasks of docs/results/miniwob/results.md (``navrl experiment miniwob``'s default config)."""

MINIWOB_NOT_RUNNING: dict[str, str] = {
    "book-flight": "no reward in random play (a long form, a date picker, Search, then Book); not shown to run",
    "book-flight-nodelay": "no reward in random play (as book-flight); not shown to run",
    "chase-circle": "real-time: the circle moves on its own",
    "click-pie": "a reset shows another page: the pie is still growing when the episode starts",
    "drag-items": "not shown to run: a swipe from an item is a mouse drag now, but a drop onto the last item's centre lands on either side of it (jQuery UI sortable), so no script shows a reward",
    "drag-items-grid": "not shown to run (as drag-items; the grid also places by the last move's sideways direction)",
    "form-sequence-3": "a reset in place shows another page: its start code appends to the last episode's inputs",
    "guess-number": "no reward in random play (needs digits typed until the guess is right); not shown to run",
    "hover-shape": "no reward in random play: needs a mouse hover, which a tap is not",
    "moving-items": "real-time: the items move on their own",
    "order-food": "a reset shows another page: an image is in the tree on one start and not on another",
    "simon-says": "real-time: the sequence is shown as timed flashes",
    "social-media-all": "no reward in random play (not looked into); not shown to run",
    "social-media-some": "no reward in random play (not looked into); not shown to run",
    "stock-market": "real-time: the price changes on its own",
    "tic-tac-toe": "no reward in random play: its board's cells are empty boxes (no text, no picture), not in the UI tree",
    "terminal": "real-time (a blinking cursor), and it needs the Enter key, which navrl's type action does not send",
}
"""Task pages of the installed package that do not run in navrl's Chromium device with a
deterministic reward, and why (``bench/miniwob_probe.py``; docs/results/miniwob/breadth.md).
Naming one in ``--tasks`` still runs it; the groups ``all`` and ``ccnet`` leave them out."""

MINIWOB_GROUPS: dict[str, str] = {
    "all": "every task page of the installed package that runs with a deterministic reward",
    "ccnet": "CC-Net's 104 tasks, those the installed package has and that run",
    "table23": "the 23 tasks of docs/results/miniwob/results.md (navrl experiment miniwob), as they were",
    "scripted": "the tasks with a scripted solution (the suite's default)",
}
"""Names ``--tasks`` takes besides task names (:func:`miniwob_group`)."""


def miniwob_group(name: str) -> tuple[str, ...]:
    """The tasks of group ``name`` (:data:`MINIWOB_GROUPS`), in a fixed order. ``all`` and
    ``ccnet`` hold only pages of the installed package that run (none of
    :data:`MINIWOB_NOT_RUNNING`); ``table23`` and ``scripted`` are fixed lists (the committed
    run's 23 tasks keep the two of them that are not shown to run)."""
    if name not in MINIWOB_GROUPS:
        raise TaskError(f"unknown MiniWoB task group {name!r} (groups: {', '.join(MINIWOB_GROUPS)})")
    if name in ("table23", "scripted"):
        return TABLE_23_TASKS if name == "table23" else tuple(MINIWOB_TASKS)
    installed = set(miniwob_installed_tasks())
    pick = sorted(installed) if name == "all" else CCNET_TASKS
    return tuple(t for t in pick if t in installed and t not in MINIWOB_NOT_RUNNING)


def resolve_miniwob_names(names: Any) -> tuple[str, ...]:
    """Task names with group names (:data:`MINIWOB_GROUPS`) expanded, in order, each once;
    empty -> the suite's default (the scripted tasks). Any page of the installed package is a
    task; anything else raises :class:`TaskError`."""
    out: dict[str, None] = {}
    installed: set[str] | None = None
    for x in names or ():
        if x in MINIWOB_GROUPS:
            out.update(dict.fromkeys(miniwob_group(x)))
            continue
        if x not in MINIWOB_TASKS:
            installed = set(miniwob_installed_tasks()) if installed is None else installed
            if x not in installed:
                raise TaskError(f"unknown MiniWoB task {x!r}: neither a group ({', '.join(MINIWOB_GROUPS)}) nor a "
                                f"page of the installed miniwob package ({len(installed)} pages)")
        out[x] = None
    return tuple(out) or tuple(MINIWOB_TASKS)


MINIWOB_ROOT = "miniwob:html"
MINIWOB_WIDTH = 160

# MiniWoB's page hooks. Trusted code (navrl's), with ``seed`` in scope.
_MINIWOB_START = """
if (typeof core === 'undefined' || typeof Math.seedrandom !== 'function') throw new Error('not a MiniWoB page');
if (window.__navrl) window.__navrl.closePicker();
if (document.activeElement && document.activeElement !== document.body && document.activeElement.blur) document.activeElement.blur();
if (window.jQuery) { try { window.jQuery('.ui-autocomplete').hide(); } catch (e) {} }
if (seed === null || seed === undefined) Math.seedrandom(); else Math.seedrandom(seed);
core.EPISODE_MAX_TIME = 24 * 3600 * 1000;
core.setDataMode('train');
if (core.cover_div) core.cover_div.onclick = null;
core.startEpisodeReal();
if (core.cover_div) core.cover_div.onclick = null;
// a reset in place keeps what the last episode scrolled (social-media's feed): start at the top
for (const el of (document.getElementById('wrap') || document.body).querySelectorAll('*'))
  if (el.scrollTop || el.scrollLeft) { el.scrollTop = 0; el.scrollLeft = 0; }
// the countdown display of a day-long episode: a repaint a second that costs an idle
// emulated phone ~0.08 core (16 pages: 1.5 of 2 cores) and changes nothing the task needs
if (core.CD_TIMER !== null) { clearInterval(core.CD_TIMER); core.CD_TIMER = null; }
window.scrollTo(0, 0);
const wait = (ms) => new Promise((r) => (window.__navrl ? window.__navrl.setTimeout : setTimeout)(r, ms));
for (let i = 0; i < 200 && !WOB_TASK_READY; i++) await wait(10);
// pictures that the page's styles show (CSS content or background images: email-inbox's star,
// trash and send icons) load when first drawn, and until then take no width; load them all once
// (1 s at most; cached after) so no observation shows an icon before it has its size
if (!window.__navrlPictures) {
  const urls = new Set();
  for (const sheet of Array.from(document.styleSheets)) {
    let rules = [];
    try { rules = Array.from(sheet.cssRules || []); } catch (e) { continue; }   // another origin's sheet
    for (const r of rules)
      for (const m of (r.cssText || '').matchAll(/url\\("?([^")]+\\.(?:png|jpe?g|gif|svg|webp))"?\\)/gi))
        urls.add(new URL(m[1], sheet.href || location.href).href);
  }
  window.__navrlPictures = Promise.all(Array.from(urls, (u) => { const im = new Image(); im.src = u; return im.decode().catch(() => null); }));
}
await Promise.race([window.__navrlPictures, wait(1000)]);
if (window.__navrl) await window.__navrl.settle(2000);
"""
_MINIWOB_STATE = """
return { done: !!WOB_DONE_GLOBAL, reward: WOB_REWARD_GLOBAL, raw_reward: WOB_RAW_REWARD_GLOBAL,
         reason: WOB_REWARD_REASON === null || WOB_REWARD_REASON === undefined ? null : String(WOB_REWARD_REASON),
         utterance: (typeof core !== 'undefined' && core.getUtterance) ? core.getUtterance() : null };
"""
_MINIWOB_CSS = "#reward-display, #click-canvas, #attention-canvas { display: none !important; }"


def miniwob_available() -> str | None:
    """None when the ``miniwob`` package (its HTML pages) is installed, else why not."""
    try:
        d = Path(miniwob_app("click-test").local_directory() or "")
    except ValueError as e:
        return f"{e} (pip install 'navrl[browser]')"
    if not (d / "miniwob" / "click-test.html").is_file():
        return f"the miniwob package has no task pages under {d}"
    return None


def miniwob_installed_tasks() -> list[str]:
    """Names of every MiniWoB++ task page the installed ``miniwob`` package ships (sorted;
    empty when the package is missing)."""
    try:
        d = Path(miniwob_app("click-test").local_directory() or "") / "miniwob"
    except ValueError:
        return []
    return sorted(p.stem for p in d.glob("*.html"))


def miniwob_app(name: str) -> WebApp:
    """The :class:`WebApp` of MiniWoB task ``name`` (any page of the package, not only the suite's)."""
    if not re.fullmatch(r"[a-z0-9][a-z0-9\-]*", name):
        raise TaskError(f"not a MiniWoB task name: {name!r}")
    return WebApp(name=f"miniwob/{name}", start_url=f"miniwob/{name}.html", local_root=MINIWOB_ROOT,
                  content_width=MINIWOB_WIDTH, css=_MINIWOB_CSS, start_js=_MINIWOB_START, state_js=_MINIWOB_STATE,
                  reset_in_place=True, reload_every=0, mobile_viewport=True, settle_timer_ms=1000, settle_max_ms=2000)


MINIWOB_STEP_KINDS = ("tap", "type", "swipe")
"""MiniWoB++'s action space in navrl's step kinds: no task asks for a long press, going home,
asking a user or declaring completion (the page ends the episode itself). DOM-Q-NET and
CC-Net act with clicks, typing (and CC-Net's scrolls and drags) alike."""


def miniwob_task(name: str, seed: int, phone: str = "iphone", suite: str = "miniwob",
                 max_steps: int | None = None) -> WebTaskSpec:
    """Instance ``seed`` of MiniWoB++ task ``name``: its episode ends when the page reports done,
    and the page acts on taps, typing and swipes only (:data:`MINIWOB_STEP_KINDS`)."""
    t = MINIWOB_TASKS.get(name)
    steps = max_steps or (t.max_steps if t else 15)
    return WebTaskSpec(id=f"{suite}:{name}:{phone}:{seed}", suite=suite, template=name, seed=seed,
                       app=miniwob_app(name), instruction=None, max_steps=steps, phone=phone, judge="reward",
                       description=t.description if t else "", ends_on_done=True, step_kinds=MINIWOB_STEP_KINDS)


def miniwob_tasks(n: int | None = None, seed: int = 0, names: list[str] | None = None,
                  phone: str = "iphone") -> list[WebTaskSpec]:
    """The first ``n`` instances of the ``miniwob`` suite (default: two per task), tasks taken
    round-robin; ``seed`` selects a different, non-overlapping block of instance seeds.
    ``names`` may name any page of the installed package, scripted or not, and groups
    (:data:`MINIWOB_GROUPS`: ``all``, ``ccnet``, ``table23``, ``scripted``)."""
    names = list(resolve_miniwob_names(names))
    n = 2 * len(names) if n is None else n
    base = seed * 100_000
    return [miniwob_task(names[i % len(names)], base + i // len(names), phone=phone) for i in range(n)]


class _GoalResolver:
    """Reads page-stated goals (MiniWoB utterances) once per (app, seed), on one tab per app."""

    def __init__(self) -> None:
        self.cache: dict[tuple, str] = {}
        self.devices: dict[WebApp, Any] = {}
        self.lock = threading.Lock()

    def goal(self, task: WebTaskSpec) -> str:
        from navrl.device.browser.device import STATED_GOALS
        key = (task.app, task.seed)
        g = self.cache.get(key) or STATED_GOALS.get((task.app.start_url, task.seed))
        if g is not None:     # the episode's own device read it at its start (or it was read before)
            return g
        with self.lock:
            g = self.cache.get(key)
            if g is not None:
                return g
            from navrl.device.base import DeviceError
            from navrl.device.browser.device import BrowserDevice
            dev = self.devices.get(task.app)
            try:
                if dev is None:
                    dev = self.devices[task.app] = BrowserDevice(phone=task.phone, screenshots="off")
                dev.restore(WebSnapshot.start(task.app, task.seed, task.phone))
                g = dev.evaluate("(() => { const s = document.getElementById('query'); "
                                 "return s ? s.textContent.replace(/\\s+/g, ' ').trim() : null; })()")
            except DeviceError as e:
                self.devices.pop(task.app, None)
                raise TaskError(f"{task.id}: could not read the goal from the page: {e}") from e
            if not g:
                raise TaskError(f"{task.id}: the page states no goal")
            self.cache[key] = g
            return g


_resolver = _GoalResolver()


def resolve_goal(task: WebTaskSpec) -> str:
    """The goal a page states for ``task`` (MiniWoB: ``core.getUtterance()`` after the seeded start)."""
    return _resolver.goal(task)


def scripted_step(task: WebTaskSpec, obs: Observation, device: Any = None) -> tuple[str, str, str]:
    """(reasoning, step, remaining) of the scripted solution of ``task`` on ``obs`` (``device``:
    the episode's browser device, for the scripts that read the page)."""
    page = getattr(obs, "page", None) or {}
    if page.get("done"):
        return ("The page reports the task finished.", "Complete", "nothing; the task is done")
    fn = MINIWOB_SCRIPTS.get(task.template)
    if fn is None:
        raise NoExpert(f"no scripted solution for {task.template!r}")
    step = fn(task.goal, obs, device)
    return (f"Following the instruction: {task.goal}", step, "finish the task, then declare it complete")


# ====================================================================== user suites
_SUITE_KEYS = {"name", "phone", "start_url", "allowed_origins", "max_steps", "tasks", "zoom_width", "setup",
               "settle_ms", "description"}
_TASK_KEYS = {"id", "goal", "start_url", "allowed_origins", "success", "max_steps", "profile", "family", "phone",
              "setup", "zoom_width", "settle_ms", "description", "seed"}


def _load_mapping(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise WebSuiteError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise WebSuiteError(f"{path}: cannot read: {e}") from None
    if path.suffix.lower() == ".json":
        try:
            d = json.loads(text)
        except json.JSONDecodeError as e:
            raise WebSuiteError(f"{path}: not valid JSON: {e}") from None
    else:
        import yaml
        try:
            d = yaml.safe_load(text)
        except yaml.YAMLError as e:
            first = str(e).strip().splitlines()
            raise WebSuiteError(f"{path}: not valid YAML: {' '.join(first[:3])}") from None
    if not isinstance(d, dict):
        raise WebSuiteError(f"{path}: the top level must be a mapping with a 'tasks' list")
    return d


def load_web_suite(path: str | Path, phone: str | None = None) -> list[WebTaskSpec]:
    """The tasks of a web suite file (YAML or JSON)::

        name: my-shop                                  # default: the file name
        phone: iphone                                  # iphone | pixel | a Playwright device
        start_url: http://127.0.0.1:8000/              # suite defaults; a task may override
        allowed_origins: [http://127.0.0.1:8000]       # default: the start URL's origin
        max_steps: 15
        tasks:
          - id: add-to-cart
            goal: Put the red running shoes in the cart.
            start_url: http://127.0.0.1:8000/shop.html
            success: document.querySelector('#cart-count').textContent.trim() === '1'
            profile: {shoe size: "42"}                 # facts only the simulated user knows

    ``success`` is JavaScript evaluated in the page after every step: an expression, or a
    function body with ``return``; truthy means done. Anything malformed raises
    :class:`WebSuiteError` naming the file, the task and the problem.
    """
    p = Path(path)
    d = _load_mapping(p)
    where = str(p)
    unknown = sorted(set(d) - _SUITE_KEYS)
    if unknown:
        raise WebSuiteError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_SUITE_KEYS))})")
    name = d.get("name", p.stem)
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\-]*", name):
        raise WebSuiteError(f"{where}: 'name' must be a short identifier (letters, digits, - _ .), got {name!r}")
    tasks = d.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        raise WebSuiteError(f"{where}: 'tasks' must be a non-empty list")
    out: list[WebTaskSpec] = []
    seen: set[str] = set()
    for i, t in enumerate(tasks, 1):
        if not isinstance(t, dict):
            raise WebSuiteError(f"{where}: task {i} must be a mapping")
        tid = t.get("id", f"task-{i}")
        here = f"{where}: task {i} ({tid!r})" if "id" in t else f"{where}: task {i}"
        if not isinstance(tid, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\-]*", tid):
            raise WebSuiteError(f"{here}: 'id' must be a short identifier, got {tid!r}")
        if tid in seen:
            raise WebSuiteError(f"{here}: duplicate id {tid!r}")
        seen.add(tid)
        unknown = sorted(set(t) - _TASK_KEYS)
        if unknown:
            raise WebSuiteError(f"{here}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_TASK_KEYS))})")

        def get(key: str, default: Any = None) -> Any:
            return t[key] if key in t else d.get(key, default)
        goal = t.get("goal")
        if not isinstance(goal, str) or not goal.strip():
            raise WebSuiteError(f"{here}: 'goal' must be a non-empty string")
        success = t.get("success")
        if not isinstance(success, str) or not success.strip():
            raise WebSuiteError(f"{here}: 'success' must be a JavaScript expression (a non-empty string)")
        _check_js(success, f"{here}: 'success'")
        setup = get("setup", "")
        if not isinstance(setup, str):
            raise WebSuiteError(f"{here}: 'setup' must be JavaScript (a string)")
        if setup:
            _check_js(setup, f"{here}: 'setup'")
        url = get("start_url")
        if not isinstance(url, str) or not re.match(r"^https?://[^/\s]+", url):
            raise WebSuiteError(f"{here}: 'start_url' must be an http(s) URL, got {url!r}")
        origins = get("allowed_origins", [])
        if isinstance(origins, str):
            origins = [origins]
        if not isinstance(origins, list) or not all(isinstance(o, str) for o in origins):
            raise WebSuiteError(f"{here}: 'allowed_origins' must be a list of origins")
        try:
            origins = [normalize_origin(o) for o in origins]
        except SandboxError as e:
            raise WebSuiteError(f"{here}: {e}") from None
        steps = get("max_steps", 15)
        if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= 1000:
            raise WebSuiteError(f"{here}: 'max_steps' must be an integer from 1 to 1000, got {steps!r}")
        prof = t.get("profile") or {}
        if not isinstance(prof, dict):
            raise WebSuiteError(f"{here}: 'profile' must be a mapping of facts")
        fam_s = t.get("family", "ask_user" if prof else "single")
        try:
            fam = Family(fam_s)
        except ValueError:
            raise WebSuiteError(f"{here}: 'family' must be one of {[f.value for f in Family]}, got {fam_s!r}") from None
        ph = phone or get("phone", "iphone")
        if not isinstance(ph, str) or not ph:
            raise WebSuiteError(f"{here}: 'phone' must be {' or '.join(PHONES)} or a Playwright device name")
        zw = get("zoom_width")
        if zw is not None and (isinstance(zw, bool) or not isinstance(zw, int) or zw <= 0):
            raise WebSuiteError(f"{here}: 'zoom_width' must be a positive integer (CSS pixels)")
        settle = get("settle_ms", 1000)
        if isinstance(settle, bool) or not isinstance(settle, int) or not 0 <= settle <= 60_000:
            raise WebSuiteError(f"{here}: 'settle_ms' must be an integer from 0 to 60000")
        seed = t.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise WebSuiteError(f"{here}: 'seed' must be an integer")
        try:
            app = WebApp(name=f"{name}/{tid}", start_url=url, allowed_origins=tuple(origins), success_js=success,
                         start_js=setup, content_width=zw, settle_timer_ms=settle, settle_max_ms=max(2000, 2 * settle))
        except (ValueError, SandboxError) as e:
            raise WebSuiteError(f"{here}: {e}") from None
        out.append(WebTaskSpec(id=f"{name}:{tid}:{ph}:{seed}", suite=name, template=tid, seed=seed, app=app,
                               instruction=goal.strip(), max_steps=steps, family=fam,
                               profile={str(k): str(v) for k, v in prof.items()}, phone=ph, judge="check",
                               description=str(t.get("description", ""))))
    return out


def _check_js(src: str, where: str) -> None:
    """Cheap static checks of a JavaScript snippet (the browser reports real syntax errors)."""
    pairs = {")": "(", "]": "[", "}": "{"}
    stack: list[str] = []
    quote: str | None = None
    esc = False
    for ch in src:
        if quote:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == quote:
                quote = None
            continue
        if ch in "\"'`":
            quote = ch
        elif ch in "([{":
            stack.append(ch)
        elif ch in pairs:
            if not stack or stack.pop() != pairs[ch]:
                raise WebSuiteError(f"{where}: unbalanced {ch!r} in {src[:60]!r}")
    if quote or stack:
        raise WebSuiteError(f"{where}: unterminated {'string' if quote else repr(stack[-1])} in {src[:60]!r}")
