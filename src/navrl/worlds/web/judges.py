"""Judges for web tasks, from the page's own verdict (layer 5).

A browser observation (:class:`~navrl.device.browser.device.WebObservation`) carries
``page``: what the app itself says about the task, read in the same call as the UI tree.
MiniWoB++ pages report ``done`` and a raw reward (their ``WOB_*`` globals); a user suite's
JavaScript check reports ``success``. Once a page reports ``done`` the device keeps that
result for the rest of the episode, so nothing the agent does afterwards changes it.

- :class:`PageTerminalJudge`: ``success`` when the agent declared completion (or the page
  ended the episode: a MiniWoB++ task ``ends_on_done``) and the page agrees (raw reward > 0,
  or the success check holds); otherwise ``fail``.
- :class:`PageStepJudge`: a sparse oracle step judge: ``overcomplete`` for any step taken
  after the page already reported the task done, ``success`` for the step that finishes
  it, ``fail`` otherwise. For dense rewards wrap an LLM step judge in
  :class:`DoneAwareStepJudge` (the page still decides ``overcomplete``, the LLM the rest).
- :class:`FieldsStepJudge`: the page step judge's verdicts, and ``success`` for a step after
  which more text fields hold a value the goal quotes (QWeb's potential: dense rewards for
  forms without a model; the ``page-fields`` judge set).
- :class:`ProfileAskJudge`: asking is justified only for facts in the task's hidden profile
  that the goal does not state (MiniWoB tasks have none: asking is never justified).

:func:`web_judges` builds the triple the episode runner takes.
"""
from __future__ import annotations

import re

from navrl.judge.base import (AskJudge, JudgeUnavailable, Judgement, StepContext, StepJudge, TerminalContext,
                              TerminalJudge, undeclared_end)
from navrl.judge.verdicts import AskVerdict, EndReason, StepVerdict, TerminalVerdict
from navrl.observation import Observation
from navrl.tasks.user import UNKNOWN, ProfileUser

__all__ = ["DoneAwareStepJudge", "FieldsStepJudge", "PageStepJudge", "PageTerminalJudge", "ProfileAskJudge",
           "WebCheckError", "fields_holding_goal_values", "goal_values", "page_result", "web_judges"]


class WebCheckError(ValueError):
    """A task's JavaScript success check throws in the page: a configuration error, not a
    verdict (raised, never turned into a silent ``fail``)."""


def _page(obs: Observation | None) -> dict | None:
    if obs is None:
        return None
    p = getattr(obs, "page", None)
    return p if isinstance(p, dict) else None


def page_result(task, obs: Observation | None) -> tuple[bool, str] | None:
    """(done, why) by the page's own account on ``obs``; None when ``obs`` carries no page
    state (not a browser observation). Raises WebCheckError when the success check throws."""
    p = _page(obs)
    if p is None:
        return None
    mode = getattr(task, "judge", "reward")
    if mode == "check":
        if p.get("check_error"):
            raise WebCheckError(f"{getattr(task, 'id', task)}: the success check throws in the page: {p['check_error']}")
        if "success" not in p:
            raise WebCheckError(f"{getattr(task, 'id', task)}: the app has no success check")
        return (bool(p["success"]), "the success check holds" if p["success"] else "the success check does not hold")
    if not p.get("done"):
        return False, "the page has not finished the task"
    raw = p.get("raw_reward")
    try:
        r = float(raw)
    except (TypeError, ValueError):
        r = 0.0
    why = f"the page's reward is {r:g}" + (f" ({p['reason']})" if p.get("reason") else "")
    return r > 0, why


class PageTerminalJudge(TerminalJudge):
    """Terminal verdict from the page (MiniWoB's raw reward > 0, or the suite's JS check)."""

    def judge_terminal(self, ctx: TerminalContext) -> Judgement:
        early = undeclared_end(ctx)
        if early is not None:
            return early
        last = ctx.last_screens[-1] if ctx.last_screens else None
        res = page_result(ctx.task, last)
        if res is None:
            raise JudgeUnavailable("the last screen carries no page state (not a browser observation, or lost "
                                   "in transport)")
        ok, why = res
        info = {"page": dict(_page(last) or {})}
        ended = "the page ended the episode" if ctx.end is EndReason.DONE else None
        if ok:
            return Judgement(TerminalVerdict.SUCCESS, f"{ended or 'declared complete'} and {why}", info)
        return Judgement(TerminalVerdict.FAIL, f"{ended or 'completion claimed'} but {why}", info)


class PageStepJudge(StepJudge):
    """Sparse step verdicts from the page: overcomplete / the finishing step / fail."""

    def judge_step(self, ctx: StepContext) -> Judgement:
        before = page_result(ctx.task, ctx.before)
        if before is None:
            raise JudgeUnavailable("the before-screen carries no page state")
        if before[0] or (_page(ctx.before) or {}).get("done"):
            return Judgement(StepVerdict.OVERCOMPLETE, "the page had already finished the task")
        if ctx.action is None:
            return Judgement(StepVerdict.FAIL, "nothing was executed")
        after = page_result(ctx.task, ctx.after)
        if after is not None and after[0]:
            return Judgement(StepVerdict.SUCCESS, f"this step finished the task: {after[1]}")
        if after is not None and (_page(ctx.after) or {}).get("done"):
            return Judgement(StepVerdict.FAIL, f"this step ended the task wrongly: {after[1]}")
        return Judgement(StepVerdict.FAIL, "no progress the page confirms")


class DoneAwareStepJudge(StepJudge):
    """``overcomplete`` from the page when the task was already done before the step;
    every other step goes to ``inner`` (an :class:`~navrl.judge.llm.LLMStepJudge` for dense
    rewards), so no model call is spent on steps the page can judge."""

    def __init__(self, inner: StepJudge):
        self.inner = inner

    def judge_step(self, ctx: StepContext) -> Judgement:
        before = page_result(ctx.task, ctx.before)
        if before is not None and (before[0] or (_page(ctx.before) or {}).get("done")):
            return Judgement(StepVerdict.OVERCOMPLETE, "the page had already finished the task")
        return self.inner.judge_step(ctx)


def _norm(s: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", s.lower()))


_QUOTED = re.compile(r'"([^"]+)"')


def goal_values(goal: str) -> frozenset[str]:
    """The values a goal quotes (``Enter "Kanesha" into the text field``: "kanesha"), normalised
    as :func:`_norm` (case and punctuation aside): what a form field may have to hold."""
    return frozenset(v for v in (_norm(q) for q in _QUOTED.findall(goal)) if v)


def fields_holding_goal_values(goal: str | frozenset[str], obs: Observation | None) -> int:
    """How many text fields of ``obs`` hold a value ``goal`` quotes (``goal``: its text, or its
    :func:`goal_values` already read; 0 for no observation)."""
    want = goal_values(goal) if isinstance(goal, str) else goal
    if not want or obs is None:
        return 0
    return sum(1 for n in obs.nodes if n.role == "textfield" and n.value and _norm(n.value) in want)


class FieldsStepJudge(StepJudge):
    """Dense step verdicts for forms: :class:`PageStepJudge`'s, and ``success`` for a step after
    which more text fields hold a value the goal quotes than before it — QWeb's potential from
    the instruction's fields matched on the page (Gur et al. 2019), so typing the asked value
    is rewarded where it happens, not only when a later Submit ends the task. Fields are
    compared case-blind: the page's reward still decides a value asked in another case. A step
    that empties or spoils such a field is ``fail`` with its reason."""

    def __init__(self) -> None:
        self.page = PageStepJudge()

    def judge_step(self, ctx: StepContext) -> Judgement:
        j = self.page.judge_step(ctx)
        if j.verdict is not StepVerdict.FAIL or ctx.action is None or (_page(ctx.after) or {}).get("done"):
            return j
        want = goal_values(ctx.task.goal)
        before, after = fields_holding_goal_values(want, ctx.before), fields_holding_goal_values(want, ctx.after)
        if after > before:
            return Judgement(StepVerdict.SUCCESS, f"{after} text field(s) now hold a value the goal quotes "
                                                  f"({before} before)")
        if after < before:
            return Judgement(StepVerdict.FAIL, f"a text field no longer holds the value the goal quotes "
                                               f"({before} -> {after})")
        return j


class ProfileAskJudge(AskJudge):
    """Justified only when the task's hidden profile answers the question with a fact that
    is not already in the goal or in an earlier answer."""

    def __init__(self) -> None:
        self.user = ProfileUser()

    def judge_ask(self, ctx: StepContext) -> Judgement:
        q = ctx.action.text if ctx.action is not None and ctx.action.text else ""
        ans = self.user.answer(ctx.task, q)
        if ans == UNKNOWN:
            return Judgement(AskVerdict.UNJUSTIFIED, "the task states everything the user could say")
        if any(_norm(a) == _norm(ans) for a in ctx.memory.answers()):
            return Judgement(AskVerdict.UNJUSTIFIED, "already answered")
        if _norm(ans) and _norm(ans) in _norm(ctx.task.goal):
            return Judgement(AskVerdict.UNJUSTIFIED, "the goal already says it")
        return Judgement(AskVerdict.JUSTIFIED, "the information was missing")


def web_judges(step: str = "page", client=None, config=None) -> tuple[StepJudge, AskJudge, TerminalJudge]:
    """(step, ask-user, terminal) judges for web tasks.

    ``step="page"``: :class:`PageStepJudge` (sparse, free); ``step="fields"``:
    :class:`FieldsStepJudge` (dense where the goal quotes values for form fields, free);
    ``step="llm"``: the LLM step judge
    behind :class:`DoneAwareStepJudge` for dense rewards (needs ``client``, a
    :class:`navrl.api.ChatClient`), with the LLM ask-user judge. The terminal verdict always
    comes from the page."""
    if step == "page":
        return PageStepJudge(), ProfileAskJudge(), PageTerminalJudge()
    if step == "fields":
        return FieldsStepJudge(), ProfileAskJudge(), PageTerminalJudge()
    if step == "llm":
        if client is None:
            raise ValueError("the LLM step judge needs a client (navrl.api.ChatClient)")
        from navrl.judge.llm import LLMAskJudge, LLMStepJudge
        return DoneAwareStepJudge(LLMStepJudge(client, config)), LLMAskJudge(client, config), PageTerminalJudge()
    raise ValueError(f"step judge must be 'page', 'fields' or 'llm', got {step!r}")
