"""The one task protocol every world's tasks implement (docs/design.md §7a).

Rollout, judges, the trainer and the CLI see tasks only through :class:`Task`: an identity
(``id``, ``suite``, ``template``, ``seed``), what the agent is told (``goal``), the platform
it runs on (``skin``: ``ios``, ``android``, ``web`` ...), its budget (``max_steps``), a
fresh device set up for it (``make_device``), and — optional — an expert that knows the
next step (``expert_step``) and the hidden facts a simulated user answers from
(``profile``). Two optional members describe a world that differs from a phone's
(:func:`step_kinds_of`, :func:`world_ended`): ``step_kinds``, the step kinds its world acts
on (its action space; a MiniWoB++ page takes taps, typing and swipes), and ``ended(obs)``,
true once the world itself reports the episode over (Gymnasium's ``terminated``; a MiniWoB++
page's done), so no declared completion is needed there. A third, ``hindsight(final, answer)``,
relabels an episode (:func:`hindsight_of`). The phone world's
:class:`navrl.worlds.phone.task.TaskSpec` and the web world's
:class:`navrl.worlds.web.tasks.WebTaskSpec` are the two built-in implementations.
"""
from __future__ import annotations

import enum
from typing import Any, Protocol, runtime_checkable

__all__ = ["Family", "NoExpert", "STEP_KINDS", "Task", "TaskError", "answers_match", "hindsight_of", "step_kinds_of",
           "world_ended"]


class Family(str, enum.Enum):
    """What kind of goal a task has; judges and breakdowns read it."""

    SINGLE = "single"        # one app, a world-state goal
    MULTI = "multi"          # several apps
    ANSWER = "answer"        # the goal is a fact, reported with ``Complete: <answer>``
    ASK_USER = "ask_user"    # a needed fact is only in the user's head: asking is right
    BLOCKED = "blocked"      # ends at an unavoidable wall (paywall, CAPTCHA)


class TaskError(ValueError):
    """Unknown template, suite or malformed task."""


class NoExpert(TaskError):
    """The task has no expert (no scripted solution) for the step asked of it."""


@runtime_checkable
class Task(Protocol):
    """One task instance, as every layer above ``navrl.tasks`` sees it."""

    id: str
    """Unique within its suite; stable across runs (``suite:template:skin:seed`` for the phone world)."""
    suite: str
    """The suite it was drawn from."""
    template: str
    """The family of instances it belongs to (a template name, a MiniWoB++ task name)."""
    seed: int
    """The instance seed: the same seed gives the same task."""
    skin: str
    """The platform: ``ios``, ``android``, ``web`` ..."""
    family: Family
    max_steps: int
    profile: dict
    """Hidden user facts the simulated user answers ``ask_user`` from (empty: none)."""

    @property
    def goal(self) -> str:
        """What the agent is asked to do, in words."""
        ...

    def make_device(self) -> Any:
        """A fresh in-process device set up at this task's start (where no farm is given)."""
        ...

    def expert_step(self, obs: Any, device: Any, answers: list[tuple[str, str]]) -> str:
        """The expert's next output (``Reasoning: ... Step: ... Remaining: ...``) on this
        observation; ``device`` is the live device (privileged experts read it), ``answers``
        the user's answers so far. Raises :class:`NoExpert` where the task has none."""
        ...

    def with_(self, **kw: Any) -> "Task":
        """A copy with fields replaced (faults, perturbations, phone ...)."""
        ...

    def to_dict(self) -> dict:
        """A JSON-able record of the task (run metadata, trajectories)."""
        ...


STEP_KINDS = ("tap", "long_press", "swipe", "type", "home", "ask_user", "complete")
"""Every step kind (the action kinds of docs/design.md §2): what ``step_kinds`` chooses from."""


def step_kinds_of(task: Any) -> frozenset[str] | None:
    """The step kinds ``task``'s world acts on (its optional ``step_kinds``), or None: all of
    :data:`STEP_KINDS`. Raises TaskError for a kind that is none of them."""
    kinds = getattr(task, "step_kinds", None)
    if kinds is None:
        return None
    out = frozenset(kinds)
    bad = sorted(out - set(STEP_KINDS))
    if bad:
        raise TaskError(f"{getattr(task, 'id', task)}: unknown step kinds {bad}; choose from {list(STEP_KINDS)}")
    return out


def world_ended(task: Any, obs: Any) -> bool:
    """True when ``task``'s world reports the episode over on ``obs`` (its optional
    ``ended(obs)``); False for worlds that wait for the agent to declare completion."""
    ended = getattr(task, "ended", None)
    return bool(ended(obs)) if ended is not None else False


def hindsight_of(task: Any, final: Any, answer: str | None) -> Any:
    """Hindsight relabelling: the task (same world and seed, another goal) that an episode of
    ``task`` ending in the device snapshot ``final`` with ``answer`` reached though ``task``'s
    own goal was not reached, accepted by that task's own checker — ``task``'s optional
    ``hindsight(final, answer)`` — or None (the world has no such member, or names no goal)."""
    relabel = getattr(task, "hindsight", None)
    return relabel(final, answer) if relabel is not None and final is not None else None


def answers_match(expected: str | None, given: str | None) -> bool:
    """Answer comparison: case, spacing, currency signs and trailing punctuation ignored."""
    if expected is None:
        return True
    if given is None:
        return False

    def norm(s: str) -> str:
        s = s.lower().strip().strip(".!").replace(",", "").replace("$", "").replace("°", "")
        return " ".join(s.split())
    e, g = norm(expected), norm(given)
    return e == g or (len(e) >= 2 and e in g.split(" ")) or (len(e) >= 3 and e in g)
