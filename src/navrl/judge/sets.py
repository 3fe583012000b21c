"""The three judges of a run (step, ask-user, terminal) as one part, chosen by name.

* ``oracle`` — programmatic judges of the phone world (they read the facts its snapshots
  carry; need phone-world tasks); registered by :mod:`navrl.worlds.phone`.
* ``llm`` — the step, ask-user and terminal judges through one OpenAI-compatible endpoint
  (:class:`navrl.api.ChatClient`: retries, backoff, circuit breaker). An outage or a reply
  that stays unparseable raises :class:`~navrl.judge.base.JudgeUnavailable`, which the runner
  turns into a masked trajectory (reason ``judge_unavailable``) — never a default verdict.
* ``page`` — web tasks, registered by :mod:`navrl.worlds.web`: the page's own reward or
  check is the terminal verdict (MiniWoB++, a web app's ``success_js``), steps are judged
  sparsely from the page.
* ``noisy:KEY=VALUE,...`` — an exact set (``base=``, default ``oracle``) with simulated errors:
  false positives and negatives per verdict kind, leniency, or an audit's confusion matrices
  (:mod:`navrl.judge.noisy`, docs/judges.md).
"""
from __future__ import annotations

from typing import NamedTuple

from navrl.judge.base import AskJudge, StepJudge, TerminalJudge

__all__ = ["JudgeSet", "base_kind", "judge_kinds", "make_judges"]


def judge_kinds() -> tuple[str, ...]:
    """The judge sets :func:`make_judges` builds: ``llm``, those the worlds register, and
    ``noisy:SPEC`` around one of theirs."""
    from navrl.tasks.registry import judge_kinds as world_kinds
    return ("llm", *world_kinds(), "noisy:SPEC")


def base_kind(kind: str) -> str:
    """The exact judge set a kind stands on: a ``noisy:`` kind's ``base`` (default ``oracle``),
    any other kind itself."""
    name, _, arg = kind.partition(":")
    if name != "noisy":
        return kind
    from navrl.judge.noisy import DEFAULT_BASE, NoisySpec
    return NoisySpec.parse(arg).base or DEFAULT_BASE


class JudgeSet(NamedTuple):
    """The judges one run scores with; unpacks as ``step, ask, terminal``."""

    step: StepJudge
    ask: AskJudge
    terminal: TerminalJudge
    kind: str = "custom"
    """Which set this is (``oracle``, ``llm``, ``page``, ``noisy:...`` or ``custom``), for run metadata."""


def make_judges(kind: str, client=None, terminal_client=None, config=None) -> JudgeSet:
    """The judge set ``kind`` (``llm``, one a world registers: ``oracle``, ``page``, or
    ``noisy:SPEC`` around one of those: ValueError for a bad SPEC).

    ``client`` (a :class:`navrl.api.ChatClient`) is required for ``llm``; ``terminal_client``
    optionally puts the terminal judge on a stronger model (the paper's split); ``config``
    is an :class:`navrl.judge.llm.LLMJudgeConfig`."""
    if kind.partition(":")[0] == "noisy":
        from navrl.judge.noisy import DEFAULT_BASE, NoisySpec, noisy_judge
        spec = NoisySpec.parse(kind.partition(":")[2]).with_base(DEFAULT_BASE)
        judge = noisy_judge(spec, make_judges(spec.base or DEFAULT_BASE)[:3])
        return JudgeSet(judge, judge, judge, kind=spec.text())
    if kind == "llm":
        if client is None:
            raise ValueError("the llm judges need a client (navrl.api.ChatClient)")
        from navrl.judge.llm import llm_judges
        return JudgeSet(*llm_judges(client, terminal_client, config), kind="llm")
    from navrl.tasks.registry import judge_factory
    factory = judge_factory(kind)
    if factory is None:
        raise ValueError(f"unknown judge set {kind!r}; choose from {', '.join(judge_kinds())}")
    return JudgeSet(*factory(), kind=kind)
