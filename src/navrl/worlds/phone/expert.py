"""The phone world's scripted expert.

A task's expert is a list of :class:`Stage` s (sub-goals). On every screen the expert
first clears interruptions (pop-ups, consent sheets, loading screens, open menus), then
acts on the first stage that is not done yet. Stage actions are written with the
navigation helpers below (:func:`goto`, :func:`tap`, :func:`type_into` ...), which work
from world state and the visible UI tree, so the expert recovers from any state: a
wrong app, a scrolled list, a screen several levels deep.

``remaining_steps`` replays the expert on a copy of the world and counts its steps: the
oracle step judge's notion of progress is that this number goes down.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from navrl.actions import Action
from navrl.worlds.phone.sim import PhoneWorld
from navrl.worlds.phone.sim.world import CONSENT, POPUPS
from navrl.lru import BoundedCache
from navrl.observation import Observation, UINode
# Memory's home is navrl.planning (agents and judges read it too); imported here so that
# navrl.worlds.phone.expert.Memory keeps working
from navrl.planning import Memory, Plan
from navrl.worlds.phone.task import Family, TaskSpec
from navrl.tasks.user import ProfileUser


class ExpertStuck(RuntimeError):
    """The expert found no way forward (a bug in a template or app)."""


@dataclass(frozen=True)
class ExpertStep:
    """One expert decision: planner-format text plus a structured intent.

    ``intent``: ("tap", label) | ("long_press", label) | ("type", text) |
    ("swipe", direction, label-or-None) | ("home",) | ("ask", question) |
    ("complete", answer-or-None)
    """

    reasoning: str
    step: str
    remaining: str
    intent: tuple

    def text(self) -> str:
        return Plan(self.reasoning, self.step, self.remaining).text()


class Ev:
    """What an expert stage sees: the world, its current UI tree, the task, the memory."""

    def __init__(self, world: PhoneWorld, task: TaskSpec, memory: Memory):
        self.world, self.task, self.memory = world, task, memory
        self.obs: Observation = world.observe()
        self.p = task.params

    @property
    def state(self):
        return self.world.state

    @property
    def skin(self):
        return self.world.skin

    def data(self, app: str) -> dict:
        return self.world.state.data[app]

    def screen(self) -> tuple[str, dict] | None:
        return self.world.current_screen()

    def node(self, label: str, role: str | None = None) -> UINode | None:
        for n in self.obs.nodes:
            if n.label == label and (role is None or n.role == role):
                return n
        return None

    def visible(self, label: str) -> bool:
        return self.node(label) is not None

    def knows(self, value: str) -> bool:
        """True when the user already told us ``value``."""
        return any(a.strip().lower() == str(value).strip().lower() for a in self.memory.answers())

    def where(self) -> str:
        if self.world.state.fg is None:
            return "I am on the home screen"
        title = next((n.label for n in self.obs.nodes if n.role == "header"), self.world.state.fg)
        return f"I am in {self.world.state.fg} on the \"{title}\" screen"


# ------------------------------------------------------------------------------ steps
def _q(s: str) -> str:
    return '"' + s.replace('"', "'") + '"'


def step_tap(ev: Ev, label: str, why: str) -> ExpertStep:
    return ExpertStep(f"{ev.where()}. {why}", f"Tap {_q(label)}", "", ("tap", label))


def step_long_press(ev: Ev, label: str, why: str) -> ExpertStep:
    return ExpertStep(f"{ev.where()}. {why}", f"Long press {_q(label)}", "", ("long_press", label))


def step_type(ev: Ev, text: str, why: str) -> ExpertStep:
    return ExpertStep(f"{ev.where()}. {why}", f"Type {_q(text)}", "", ("type", text))


def step_swipe(ev: Ev, direction: str, why: str, on: str | None = None) -> ExpertStep:
    s = f"Swipe {direction}" + (f" on {_q(on)}" if on else "")
    return ExpertStep(f"{ev.where()}. {why}", s, "", ("swipe", direction, on))


def step_home(ev: Ev, why: str) -> ExpertStep:
    return ExpertStep(f"{ev.where()}. {why}", "Go home", "", ("home",))


def step_ask(ev: Ev, question: str, why: str) -> ExpertStep:
    return ExpertStep(f"{ev.where()}. {why}", f"Ask user: {question}", "", ("ask", question))


def step_complete(ev: Ev, why: str, answer: str | None = None) -> ExpertStep:
    return ExpertStep(f"{ev.where()}. {why}", "Complete" + (f": {answer}" if answer else ""), "",
                      ("complete", answer))


# ------------------------------------------------------------------------------ helpers
def tap(ev: Ev, label: str, why: str = "") -> ExpertStep:
    """Tap ``label`` if it is on screen, else scroll the list that holds it."""
    why = why or f"I need to tap {_q(label)}."
    if ev.visible(label):
        return step_tap(ev, label, why)
    s = scroll_to(ev, label)
    if s is not None:
        return s
    if ev.visible("More options") and not ev.state.overflow:
        return step_tap(ev, "More options", f"What I need ({label}) is in the overflow menu.")
    raise ExpertStuck(f"{label!r} is not reachable; {ev.where()}")


def scroll_to(ev: Ev, label: str) -> ExpertStep | None:
    for region in ev.world.frame().scrolls:
        i = region.index.get(label)
        if i is None:
            continue
        if i > region.last_visible:
            return step_swipe(ev, "up", f"What I need ({label}) is further down the list, so I scroll.")
        if i < region.first_visible:
            return step_swipe(ev, "down", f"What I need ({label}) is further up the list, so I scroll back.")
    return None


def findable(ev: Ev, label: str) -> bool:
    return ev.visible(label) or any(label in r.index for r in ev.world.frame().scrolls)


def back(ev: Ev, why: str = "I need to go back.") -> ExpertStep:
    lab = ev.skin.back_label
    if ev.visible(lab):
        return step_tap(ev, lab, why)
    if ev.skin.system_back and ev.visible("Back"):
        return step_tap(ev, "Back", why)
    return step_home(ev, why)


def open_app(ev: Ev, app: str) -> ExpertStep | None:
    """None when ``app`` is already in front."""
    st = ev.state
    if st.fg == app:
        return None
    if st.fg is not None:
        return step_home(ev, f"I need {app}, so I go to the home screen first.")
    if ev.node(app, "icon"):
        return step_tap(ev, app, f"I can open {app} from the home screen.")
    # not on this page / layout: use app search
    field_ = ev.obs.focused_node()
    if ev.node(app, "cell"):
        return step_tap(ev, app, f"{app} is in the search results.")
    if field_ is None or field_.label != "Search":
        return step_tap(ev, "Search", f"I don't see {app}; I will search for it.")
    if field_.value and field_.value != app:
        return step_tap(ev, "Clear text", "The search box has other text in it.")
    return step_type(ev, app, f"I search for {app}.")


PathEntry = tuple  # (screen name, params subset dict or None, label to tap to get there)


def goto(ev: Ev, app: str, path: Sequence[PathEntry]) -> ExpertStep | None:
    """Navigate to the screen at the end of ``path`` inside ``app``; None when there.

    ``path[0]`` is a root screen: (root, None, tab label or None). Each later entry is
    reached by tapping its label on the screen before it.
    """
    s = open_app(ev, app)
    if s is not None:
        return s
    stack = ev.state.stacks[app]

    def same(entry, target) -> bool:
        name, params = entry
        tname, tparams = target[0], target[1] or {}
        return name == tname and all(params.get(k) == v for k, v in tparams.items())

    k = 0
    while k < len(stack) and k < len(path) and same(stack[k], path[k]):
        k += 1
    if k == len(stack) == len(path):
        return None
    if k < len(stack):
        if k == 0 and len(stack) == 1:
            label = path[0][2]
            if label is None:
                raise ExpertStuck(f"no way to the root {path[0][0]} of {app}")
            return tap(ev, label, f"I switch to the {label} tab.")
        return back(ev, "This is not the screen I need, so I go back.")
    nxt = path[k]
    return tap(ev, nxt[2], f"I open {_q(nxt[2])}.")


def type_into(ev: Ev, field_label: str, text: str, why: str = "") -> ExpertStep | None:
    """Focus the field labelled ``field_label`` and make its value ``text``; None when done."""
    n = ev.node(field_label, "textfield")
    if n is None:
        raise ExpertStuck(f"no field {field_label!r} on {ev.where()}")
    val = n.value or ""
    if val == text:
        return None
    if not n.focused:
        return step_tap(ev, field_label, f"I tap the {field_label} field to type into it.")
    if val and not text.startswith(val):
        return step_tap(ev, "Clear text", "The field holds the wrong text; I clear it.")
    return step_type(ev, text[len(val):], why or f"I type {_q(text)}.")


def field_value(ev: Ev, field_label: str) -> str:
    n = ev.node(field_label, "textfield")
    return (n.value or "") if n else ""


def interruption(ev: Ev) -> ExpertStep | None:
    """Pop-ups, consent sheets, loading screens and stray menus come first."""
    st = ev.state
    ov = st.overlay
    if ov is not None and ov.get("owner") == "world":
        if ov["id"] == "consent":
            return step_tap(ev, CONSENT[2], "A privacy sheet covers the app; I decline it to continue.")
        dis = POPUPS[ov["params"]["variant"]][2]
        return step_tap(ev, dis, "A pop-up is in the way; I dismiss it.")
    if st.loading and ev.visible("Retry"):
        return step_tap(ev, "Retry", "The screen is still loading; I retry.")
    return None


@dataclass
class Stage:
    """One sub-goal: ``desc`` (for the Remaining plan), ``done`` and ``act``."""

    desc: str
    done: Callable[[Ev], bool]
    act: Callable[[Ev], ExpertStep | None]


def report_stage(what: str, why: str, answer: str) -> Stage:
    """The last stage of an answer task, "report ``what``": ``Complete: answer``, because ``why``."""
    return Stage(f"report {what}", lambda ev: False, lambda ev: step_complete(ev, why, answer))


def _remaining(stages: list[Stage], i: int, ev: Ev) -> str:
    rest = [s.desc for s in stages[i + 1:] if not s.done(ev)]
    return "; ".join(rest + ["declare the task complete"]) if rest else "declare the task complete"


def expert_step(task: TaskSpec, world: PhoneWorld, memory: Memory | None = None) -> ExpertStep:
    """The expert's next step from the current state."""
    memory = memory or Memory()
    ev = Ev(world, task, memory)
    tpl = task.tpl
    if task.family is Family.ANSWER:
        pass  # answer tasks end in their last stage with Complete: <answer>
    elif task.check(world):
        return step_complete(ev, "The task is done.")._replace_remaining("nothing; the task is done")
    if tpl.blocked(world, task.params):
        return step_complete(ev, "An unavoidable wall (a paywall or CAPTCHA) blocks the task; I can't go further.")\
            ._replace_remaining("nothing I can do past this wall")
    s = interruption(ev)
    stages = tpl.stages(task.params)
    first_open = next((i for i, st in enumerate(stages) if not st.done(ev)), len(stages))
    if s is not None:
        return s._replace_remaining(_remaining(stages, first_open - 1, ev) if first_open < len(stages) else
                                    "declare the task complete")
    for i in range(first_open, len(stages)):
        st = stages[i]
        if i > first_open and st.done(ev):
            continue
        s = st.act(ev)
        if s is not None:
            if ev.state.overflow and not (s.intent[0] == "tap" and ev.visible(s.intent[1])):
                s = step_tap(ev, ev.skin.label("Cancel"), "A menu I don't need is open; I close it.")
            return s._replace_remaining(_remaining(stages, i, ev))
    raise ExpertStuck(f"{task.id}: all stages done but the goal check fails on {ev.where()}")


def _replace_remaining(self: ExpertStep, remaining: str) -> ExpertStep:
    return ExpertStep(self.reasoning, self.step, remaining[:1].upper() + remaining[1:], self.intent)


ExpertStep._replace_remaining = _replace_remaining  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------ execution
def intent_action(obs: Observation, intent: tuple) -> Action | None:
    """Turn an expert intent into a device action on ``obs`` (None for ask/complete)."""
    kind = intent[0]
    if kind in ("tap", "long_press"):
        want = "tap" if kind == "tap" else "long_press"
        cands = [n for n in obs.nodes if n.label == intent[1]]
        n = next((n for n in cands if want in n.actions), cands[0] if cands else None)
        if n is None:
            raise ExpertStuck(f"{intent[1]!r} not on screen")
        x, y = n.center
        return Action.tap(x, y) if kind == "tap" else Action.long_press(x, y)
    if kind == "type":
        return Action.type(intent[1])
    if kind == "swipe":
        if intent[2]:
            n = next(n for n in obs.nodes if n.label == intent[2])
            return Action.swipe(intent[1], *n.center)
        return Action.swipe(intent[1])
    if kind == "home":
        return Action.home()
    return None


@dataclass
class ExpertRun:
    steps: list[ExpertStep]
    success: bool
    answer: str | None
    blocked: bool


def run_expert(task: TaskSpec, world: PhoneWorld | None = None, memory: Memory | None = None,
               max_steps: int | None = None, user: ProfileUser | None = None,
               on_step: Callable[[ExpertStep, Observation], None] | None = None) -> ExpertRun:
    """Let the expert play ``task`` (on ``world`` if given, else a fresh device)."""
    world = world or task.make_device()
    memory = memory or Memory()
    user = user or ProfileUser()
    cap = max_steps if max_steps is not None else task.max_steps
    steps: list[ExpertStep] = []
    for _ in range(cap):
        s = expert_step(task, world, memory)
        steps.append(s)
        if on_step is not None:
            on_step(s, world.observe())
        if s.intent[0] == "complete":
            ans = s.intent[1]
            return ExpertRun(steps, task.check(world, ans), ans, task.blocked(world))
        if s.intent[0] == "ask":
            memory.qa.append((s.intent[1], user.answer(task, s.intent[1])))
            continue
        act = intent_action(world.observe(), s.intent)
        world.act(act)
    return ExpertRun(steps, False, None, task.blocked(world))


def remaining_steps(task: TaskSpec, world: PhoneWorld, memory: Memory | None = None, cap: int = 60) -> int:
    """Steps the expert needs from the current state (the final Complete included).

    Runs on a scratch copy, so ``world`` is untouched. ``cap`` when the expert can't finish.
    """
    return expert_remaining(task, world.scratch(), memory, cap)[0]


def expert_remaining(task: TaskSpec, scratch: PhoneWorld, memory: Memory | None = None,
                     cap: int = 60) -> tuple[int, tuple[Action, ...]]:
    """:func:`remaining_steps` played on ``scratch`` itself (it is changed: pass a copy
    without infrastructure faults), and the expert's device actions on its way up to its
    first ask or complete (empty when it can't finish). The expert is deterministic, so the
    state its first action leads to needs exactly one step fewer, and so on down the path."""
    path: list[Action] = []
    open_path = [True]

    def follow(s: ExpertStep, obs: Observation) -> None:
        if open_path[0]:
            if s.intent[0] in ("ask", "complete"):
                open_path[0] = False
            else:
                path.append(intent_action(obs, s.intent))
    try:
        run = run_expert(task, scratch, (memory or Memory()).copy(), max_steps=cap, on_step=follow)
    except ExpertStuck:      # the agent made the task impossible (e.g. deleted what it needed)
        return cap, ()
    if not (run.success or run.blocked):
        return cap, ()
    return len(run.steps), tuple(path)


def expert_walk(task: TaskSpec):
    """Play the expert on a fresh device of ``task``: yields ``(obs, step, memory)`` for every
    step (the memory as it was when the step was chosen); asks are answered by the task's
    hidden profile. Used to crawl screens (vocabularies, tokenizers)."""
    world, mem = task.make_device(), Memory()
    user = ProfileUser()
    for _ in range(task.max_steps):
        obs = world.observe()
        s = expert_step(task, world, mem)
        yield obs, s, mem.copy()
        if s.intent[0] == "complete":
            return
        if s.intent[0] == "ask":
            mem.qa.append((s.intent[1], user.answer(task, s.intent[1])))
            continue
        world.act(intent_action(obs, s.intent))


_EXPERT_LENGTHS: BoundedCache[str, int] = BoundedCache(100_000)


def expert_length(task: TaskSpec) -> int:
    """How many steps the expert takes on a fresh device of ``task`` (memoised by task id)."""
    n = _EXPERT_LENGTHS.get(task.id)
    if n is None:
        n = _EXPERT_LENGTHS.put(task.id, sum(1 for _ in expert_walk(task)))
    return n
