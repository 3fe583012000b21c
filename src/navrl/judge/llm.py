"""LLM judges over an OpenAI-compatible endpoint (docs/design.md §4a; the transcript's judges).

- :class:`LLMStepJudge` sees the before/after screenshots, the plan, the reasoning and
  the history: ``success`` | ``fail`` | ``overcomplete``.
- :class:`LLMAskJudge` sees the current screenshot, the task and the question:
  ``justified`` | ``unjustified``.
- :class:`LLMTerminalJudge` sees the last 3 screenshots, the action history and the step
  verdicts: ``success`` | ``fail`` | ``blocked_complete``.

Every verdict is strict JSON ``{"verdict": "...", "reason": "..."}``, validated against
the verdict enum; a malformed reply is re-asked (``format_retries``). A judge that stays
unavailable (timeouts, 429/5xx after retries, replies that never validate, a rejected
request) raises :class:`~navrl.judge.base.JudgeUnavailable`, which the episode runner
turns into an invalid trajectory: there is never a silent default verdict. A wrong key,
model or URL (401/403/404) is a configuration error and propagates as
:class:`~navrl.api.APIRequestError` rather than masking every trajectory.

Replies go through the client's cache, so re-judging the same inputs costs nothing.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from navrl.api import ChatClient, ChatResult, MalformedReply, outages_as
from navrl.judge.base import (AskJudge, JudgeUnavailable, Judgement, PastStep, StepContext, StepJudge,
                              TerminalContext, TerminalJudge, undeclared_end)
from navrl.judge.verdicts import AskVerdict, StepVerdict, TerminalVerdict
from navrl.observation import Observation


@dataclass(frozen=True)
class LLMJudgeConfig:
    """Prompt and call settings shared by the three LLM judges."""

    include_ui_text: bool = True
    """Add the UI tree as text next to the screenshots where the backend has one."""
    max_history: int = 15
    """Earlier steps listed in a prompt (most recent last)."""
    max_ui_lines: int = 60
    """UI-tree lines shown per screen."""
    format_retries: int = 2
    """Re-asks after a reply that is not a valid verdict JSON."""
    temperature: float = 0.0
    """Sampling temperature of judge calls."""
    max_tokens: int = 400
    """Completion-token cap of one verdict."""
    json_mode: bool = True
    """Send ``response_format={"type": "json_object"}`` (turn off for servers that reject it)."""


def _norm_verdict(s: str) -> str:
    return "_".join(str(s).strip().lower().replace("-", " ").split())


def verdict_validator(enum_cls: type[enum.Enum]):
    """A validator for ``{"verdict": <one of enum_cls>, "reason": "<text>"}``."""
    allowed = {m.value for m in enum_cls}

    def validate(v: Any) -> tuple[enum.Enum, str]:
        if not isinstance(v, dict):
            raise ValueError('the reply must be a JSON object {"verdict": ..., "reason": ...}')
        if "verdict" not in v or not isinstance(v["verdict"], str):
            raise ValueError('missing string field "verdict"')
        key = _norm_verdict(v["verdict"])
        if key not in allowed:
            raise ValueError(f"verdict must be one of {sorted(allowed)}, got {v['verdict']!r}")
        reason = v.get("reason", "")
        if reason is None:
            reason = ""
        if not isinstance(reason, str):
            raise ValueError('"reason" must be a string')
        return enum_cls(key), reason.strip()
    return validate


class _LLMJudgeBase:
    kind = "judge"

    def __init__(self, client: ChatClient, config: LLMJudgeConfig | None = None):
        self.client = client
        self.cfg = config or LLMJudgeConfig()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.client!r})"

    def _ui(self, obs: Observation | None, title: str) -> list[str]:
        if obs is None or not self.cfg.include_ui_text or not obs.nodes:
            return []
        ui = obs.ui_text().split("\n")
        if len(ui) > self.cfg.max_ui_lines:
            ui = ui[:self.cfg.max_ui_lines] + [f"... ({len(ui) - self.cfg.max_ui_lines} more elements)"]
        return [f"{title} (accessibility tree):"] + ui

    def _history(self, history: list[PastStep], screen_hash: str | None) -> list[str]:
        if not history:
            return ["Earlier steps: none"]
        shown = history[-self.cfg.max_history:]
        skipped = len(history) - len(shown)
        lines = ["Earlier steps (step -> executed action [verdict]):"
                 + (f" ({skipped} earlier steps not shown)" if skipped else "")]
        for i, h in enumerate(shown, skipped + 1):
            act = h.action or "nothing executed"
            same = " (on the same screen as the current before-screen)" if screen_hash and h.screen_hash == screen_hash else ""
            lines.append(f"{i}. {h.step or '(unparseable output)'} -> {act} [{h.verdict or '-'}]{same}")
        return lines

    def _call(self, system: str, user: str, images: list, enum_cls) -> tuple[Any, str, ChatResult]:
        msgs = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        with outages_as(lambda e: JudgeUnavailable(f"{self.kind} judge: {e}"), also=(MalformedReply,)):
            (verdict, reason), res = self.client.chat_json(
                msgs, verdict_validator(enum_cls), images=images, json_mode=self.cfg.json_mode,
                temperature=self.cfg.temperature, max_tokens=self.cfg.max_tokens,
                format_retries=self.cfg.format_retries)
        return verdict, reason, res

    @staticmethod
    def _info(res: ChatResult) -> dict:
        return {"judge_model": res.model, "usage": dict(res.usage), "cost": res.cost, "cached": res.cached}

    @staticmethod
    def _shots(observations: list[Observation | None]) -> list:
        return [o.screenshot for o in observations if o is not None and o.has_screenshot]


# ---------------------------------------------------------------------- step judge
STEP_SYSTEM = """You are the step judge of a phone-navigation agent. The agent looked at the BEFORE screen, \
wrote its reasoning and a one-step plan, and one action was executed; you see the screen AFTER it.
Decide exactly one verdict:
- "overcomplete": the task was ALREADY fully done on the BEFORE screen, so this step was unnecessary \
(the agent should have declared completion). This takes precedence over everything else.
- "success": the step made visible progress toward the task, AND the agent's reasoning is consistent with \
what the BEFORE screen really shows.
- "fail": anything else: no visible progress, a wrong or harmful action, a step that could not be executed, \
progress reached while the reasoning describes things that are not on the screen (hallucinated), or \
repeating an action that already failed on the same screen.
Reply with only a JSON object: {"verdict": "success" | "fail" | "overcomplete", "reason": "<one sentence>"}"""


class LLMStepJudge(_LLMJudgeBase, StepJudge):
    kind = "step"

    def prompt(self, ctx: StepContext) -> tuple[str, list]:
        shots = self._shots([ctx.before, ctx.after])
        lines = [f"Task: {ctx.task.goal}"]
        if ctx.memory.qa:
            lines.append("User answers so far:")
            lines += [f"- Q: {q} A: {a}" for q, a in ctx.memory.qa]
        lines += self._history(ctx.history, ctx.screen_hash)
        lines += ["This step:", f"Reasoning: {ctx.plan.reasoning or '(none)'}", f"Step: {ctx.plan.step}",
                  f"Remaining: {ctx.plan.remaining or '(none)'}"]
        if ctx.action is None:
            lines.append("Executed action: none (the step could not be turned into an action; the screen did not change)")
        else:
            lines.append(f"Executed action: {ctx.action.to_text()} "
                         f"(coordinates in pixels of the {ctx.before.screen_size[0]}x{ctx.before.screen_size[1]} screenshot)")
        if len(shots) == 2:
            lines.append("Image 1 is the BEFORE screen, image 2 the AFTER screen.")
        elif shots:
            lines.append("Image 1 is the BEFORE screen.")
        lines += self._ui(ctx.before, "BEFORE screen") + self._ui(ctx.after, "AFTER screen")
        return "\n".join(lines), shots

    def judge_step(self, ctx: StepContext) -> Judgement:
        user, shots = self.prompt(ctx)
        v, reason, res = self._call(STEP_SYSTEM, user, shots, StepVerdict)
        return Judgement(v, reason, self._info(res))


# ---------------------------------------------------------------------- ask-user judge
ASK_SYSTEM = """You judge whether a phone-navigation agent was right to ask the user a question. \
You see the task, the current screen and the question.
- "justified": the information is needed for the task and is really missing: it is not visible on the \
current screen, not stated in the task, and not already answered by the user.
- "unjustified": otherwise (the answer is on the screen or in the task, it was already answered, or the \
question is not needed for the task).
Reply with only a JSON object: {"verdict": "justified" | "unjustified", "reason": "<one sentence>"}"""


class LLMAskJudge(_LLMJudgeBase, AskJudge):
    kind = "ask-user"

    def prompt(self, ctx: StepContext) -> tuple[str, list]:
        q = ctx.action.text if ctx.action is not None and ctx.action.text else ctx.plan.step
        shots = self._shots([ctx.before])
        lines = [f"Task: {ctx.task.goal}", f"Question the agent asks the user: {q}"]
        if ctx.memory.qa:
            lines.append("Already answered by the user:")
            lines += [f"- Q: {qq} A: {a}" for qq, a in ctx.memory.qa]
        lines.append(f"Agent's reasoning: {ctx.plan.reasoning or '(none)'}")
        if shots:
            lines.append("Image 1 is the current screen.")
        lines += self._ui(ctx.before, "Current screen")
        return "\n".join(lines), shots

    def judge_ask(self, ctx: StepContext) -> Judgement:
        user, shots = self.prompt(ctx)
        v, reason, res = self._call(ASK_SYSTEM, user, shots, AskVerdict)
        return Judgement(v, reason, self._info(res))


# ---------------------------------------------------------------------- terminal judge
TERMINAL_SYSTEM = """You are the final judge of a phone-navigation episode. The agent declared the task complete. \
You see the last screenshots (oldest first), the full action history with each step's verdict, and the \
answer the agent gave, if any.
- "success": the task is really done as asked (and for a question, the given answer is correct and supported \
by what the agent saw).
- "blocked_complete": the agent did everything right until an unavoidable wall it cannot pass (a paywall, a \
CAPTCHA, a sign-in or purchase it must not make) and stopped there.
- "fail": otherwise, including claiming completion when the task is not done.
Reply with only a JSON object: {"verdict": "success" | "fail" | "blocked_complete", "reason": "<one sentence>"}"""


class LLMTerminalJudge(_LLMJudgeBase, TerminalJudge):
    """Calls the model only when the agent declared completion: an episode that ran out of
    steps (or was invalid) is ``fail`` by definition (docs/design.md §4a), so no call is made."""

    kind = "terminal"
    n_screens = 3

    def prompt(self, ctx: TerminalContext) -> tuple[str, list]:
        screens = list(ctx.last_screens)[-self.n_screens:]
        shots = self._shots(screens)
        lines = [f"Task: {ctx.task.goal}",
                 f"Answer given by the agent: {ctx.answer}" if ctx.answer else "Answer given by the agent: (none)"]
        lines += self._history(ctx.history, None)
        if shots:
            lines.append(f"Images 1-{len(shots)} are the last {len(shots)} screens, oldest first; the last one is "
                         "the screen on which the agent declared completion.")
        if screens:
            lines += self._ui(screens[-1], "Final screen")
        return "\n".join(lines), shots

    def judge_terminal(self, ctx: TerminalContext) -> Judgement:
        early = undeclared_end(ctx)
        if early is not None:
            return early
        user, shots = self.prompt(ctx)
        v, reason, res = self._call(TERMINAL_SYSTEM, user, shots, TerminalVerdict)
        return Judgement(v, reason, self._info(res))


def llm_judges(client: ChatClient, terminal_client: ChatClient | None = None,
               config: LLMJudgeConfig | None = None) -> tuple[LLMStepJudge, LLMAskJudge, LLMTerminalJudge]:
    """The three judges; the paper uses a cheaper model per step and a stronger one at the end."""
    return (LLMStepJudge(client, config), LLMAskJudge(client, config),
            LLMTerminalJudge(terminal_client or client, config))
