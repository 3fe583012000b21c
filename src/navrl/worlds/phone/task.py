"""The phone world's tasks: TaskSpec (one instance, a :class:`navrl.tasks.task.Task`) and
Template (a family of instances); docs/design.md §7b."""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from navrl.tasks.task import Family, NoExpert, TaskError, answers_match
from navrl.worlds.phone.sim import FaultConfig, PerturbConfig, PhoneWorld, WorldState

if TYPE_CHECKING:  # pragma: no cover
    from navrl.worlds.phone.expert import Stage


class Template:
    """Template × seed → TaskSpec. Subclasses set the class attributes and override the hooks."""

    name: str = ""
    family: Family = Family.SINGLE
    apps: tuple[str, ...] = ()
    max_steps: int = 30
    heldout: bool = False
    """Held-out templates appear in test suites only, never in ``train``."""

    def sample(self, rng: random.Random) -> dict:
        """Draw the instance parameters (which product, which contact ...)."""
        return {}

    def goal(self, p: dict) -> str:
        raise NotImplementedError

    def profile(self, p: dict) -> dict:
        """Hidden user facts the simulated user answers from (key -> value)."""
        return {}

    def setup(self, state: WorldState, p: dict) -> None:
        """Plant what the goal refers to in freshly initialised app data."""

    def check(self, world: PhoneWorld, p: dict, answer: str | None) -> bool:
        """Goal check over world state (and the declared answer for answer tasks).

        An answer task asks nothing of the world by default: :meth:`TaskSpec.check` compares
        the declared answer with :meth:`answer` before this is called."""
        if self.family is Family.ANSWER:
            return True
        raise NotImplementedError

    def blocked(self, world: PhoneWorld, p: dict) -> bool:
        """True once the agent stands at the unavoidable wall of a blocked task."""
        return False

    def answer(self, p: dict) -> str | None:
        """The expected answer of an answer task."""
        return None

    def stages(self, p: dict) -> "list[Stage]":
        """The expert's sub-goals in order (see navrl.worlds.phone.expert)."""
        raise NotImplementedError

    def achieved(self, start: PhoneWorld, end: PhoneWorld, p: dict, answer: str | None) -> dict | None:
        """Hindsight relabelling (:meth:`TaskSpec.hindsight`): the parameters of a goal of this
        template that an episode from ``start`` to ``end`` reached instead of ``p``'s — read
        from what the episode changed (the email it sent, the note it wrote) — or None. The
        caller keeps the result only where this template's own :meth:`check` rejects it at
        ``start`` and accepts it at ``end``. The default names none: a template without this
        hook is never relabelled."""
        return None


_REGISTRY: dict[str, Template] = {}


def register(cls: type[Template]) -> type[Template]:
    t = cls()
    if not t.name:
        raise TaskError(f"{cls.__name__} has no name")
    if t.name in _REGISTRY:
        raise TaskError(f"template {t.name!r} registered twice")
    _REGISTRY[t.name] = t
    return cls


def templates() -> dict[str, Template]:
    from navrl.worlds.phone import templates as _t  # noqa: F401  (imports register every template)
    _t.load_all()
    return dict(_REGISTRY)


def get_template(name: str) -> Template:
    ts = templates()
    if name not in ts:
        raise TaskError(f"unknown template {name!r}")
    return ts[name]


@dataclass(frozen=True)
class TaskSpec:
    """One phone-world task instance: everything needed to build its device and judge it."""

    id: str
    template: str
    seed: int
    suite: str
    skin: str
    layout: str
    goal: str
    apps: tuple[str, ...]
    family: Family
    max_steps: int
    params: dict = field(hash=False, compare=False)
    profile: dict = field(hash=False, compare=False)
    perturb: PerturbConfig = PerturbConfig()
    faults: FaultConfig = FaultConfig()

    @property
    def tpl(self) -> Template:
        return get_template(self.template)

    def make_device(self) -> PhoneWorld:
        """A fresh phone world of this task, with the task's oracle (its snapshots carry the
        facts the oracle judges read: ``navrl.worlds.phone.facts``)."""
        from navrl.worlds.phone.facts import TaskOracle
        tpl = self.tpl
        return PhoneWorld(skin=self.skin, seed=self.seed, perturb=self.perturb, faults=self.faults,
                          layout=self.layout, setup=lambda st: tpl.setup(st, self.params), profile=self.profile,
                          oracle=TaskOracle(self))

    def check(self, world: PhoneWorld, answer: str | None = None) -> bool:
        if self.family is Family.ANSWER and not answers_match(self.tpl.answer(self.params), answer):
            return False
        return self.tpl.check(world, self.params, answer)

    def blocked(self, world: PhoneWorld) -> bool:
        return self.tpl.blocked(world, self.params)

    def expert_step(self, obs: Any, device: Any, answers: list[tuple[str, str]]) -> str:
        """The scripted expert's next output on ``device`` (it reads the world, not ``obs``)."""
        from navrl.planning import Memory
        from navrl.worlds.phone.expert import expert_step
        if device is None:
            raise NoExpert("the phone world's expert needs the phone-world device in the context")
        return expert_step(self, device, Memory(list(answers))).text()

    def expert_length(self) -> int:
        """How many steps the expert takes on a fresh device of this task (memoised)."""
        from navrl.worlds.phone.expert import expert_length
        return expert_length(self)

    @property
    def expected_answer(self) -> str | None:
        return self.tpl.answer(self.params)

    def hindsight(self, final: Any, answer: str | None = None) -> "TaskSpec | None":
        """Hindsight relabelling (docs/design.md §5c): the task of this template and seed whose
        goal the episode that ended in the device snapshot ``final`` reached though this one's
        was not reached — its parameters from :meth:`Template.achieved`, accepted only where the
        template's own check rejects them on this task's fresh world and accepts them on
        ``final`` — or None (the template names no such goal, or the episode reached none)."""
        tpl = self.tpl
        if type(tpl).achieved is Template.achieved:   # most templates name none: build no world
            return None
        start, end = self.make_device(), self.make_device()
        end.restore(final)
        p = tpl.achieved(start, end, self.params, answer)
        if p is None or p == self.params:
            return None
        from dataclasses import replace
        t = replace(self, id=f"{self.id}+hindsight", goal=tpl.goal(p), params=p, profile=tpl.profile(p))
        return t if not t.check(start, answer) and t.check(end, answer) else None

    def with_(self, **kw: Any) -> "TaskSpec":
        from dataclasses import replace
        return replace(self, **kw)

    def to_dict(self) -> dict:
        return {"id": self.id, "template": self.template, "seed": self.seed, "suite": self.suite,
                "skin": self.skin, "layout": self.layout, "goal": self.goal, "apps": list(self.apps),
                "family": self.family.value, "max_steps": self.max_steps}


def make_task(template: str, seed: int, suite: str = "custom", skin: str = "ios", layout: str = "default",
              perturb: PerturbConfig | None = None, faults: FaultConfig | None = None) -> TaskSpec:
    """Instantiate ``template`` with ``seed``: the parameters depend on the seed only."""
    tpl = get_template(template)
    rng = random.Random(f"{template}/{seed}")
    p = tpl.sample(rng)
    return TaskSpec(id=f"{suite}:{template}:{skin}:{seed}", template=template, seed=seed, suite=suite, skin=skin,
                    layout=layout, goal=tpl.goal(p), apps=tuple(tpl.apps), family=tpl.family,
                    max_steps=tpl.max_steps, params=p, profile=tpl.profile(p),
                    perturb=perturb if perturb is not None else PerturbConfig(), faults=faults or FaultConfig())
