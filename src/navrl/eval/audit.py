"""Auditing a judge: its verdicts against an exact judge's on the very same steps.

A planner plays tasks whose suite has an exact judge (the phone world's oracle). Every step is
scored by the exact judge, which drives the episode (its verdicts go into the history and the
rewards, as in any run), and the judge under audit is asked the same question on the same
context: the step verdict, the ask-user verdict where the step asks, the terminal verdict at
the end. :func:`run_audit` collects the pairs; :meth:`Audit.summary` turns them into confusion
matrices per verdict kind, accuracy, Cohen's kappa, false-positive and false-negative rates,
leniency toward plausible-looking failed steps, the false-success rate on failed episodes,
tokens, dollars and latency per verdict; every rate with its 95% Wilson interval
(``navrl judge audit``, docs/judges.md).

A judge under audit that cannot answer (:class:`~navrl.judge.base.JudgeUnavailable`: an
endpoint down, replies that never parse) is counted, not scored; beyond ``max_unavailable`` of
the verdicts asked the audit stops with :class:`~navrl.errors.Outage`: there is no honest
result. A rejected request (wrong key, model or URL) ends it at once
(:class:`~navrl.api.APIRequestError`).
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.planner import Planner
from navrl.errors import Outage
from navrl.eval.intervals import wilson_interval
from navrl.judge.base import (AskJudge, JudgeUnavailable, Judgement, StepContext, StepJudge, TerminalContext,
                              TerminalJudge)
from navrl.judge.noisy import AUDIT_FORMAT, POSITIVE, VERDICTS, looks_plausible
from navrl.judge.rewards import DEFAULT_REWARDS
from navrl.judge.verdicts import AskVerdict, EndReason, StepVerdict, TerminalVerdict
from navrl.observation import Observation
from navrl.rollout.records import Trajectory
from navrl.rollout.runner import EpisodeRunner
from navrl.tasks.task import Task

__all__ = ["Audit", "AuditJudge", "Disagreement", "VerdictPair", "cohen_kappa", "confusion", "pair_records", "run_audit"]

Judges = Sequence[Any]
"""(step, ask, terminal) judges: a :class:`navrl.judge.sets.JudgeSet` or a tuple."""

_KIND_RANK = {"terminal": 0, "step": 1, "ask": 2}


@dataclass
class VerdictPair:
    """One question put to both judges: what the exact judge said and what the audited one did."""

    kind: str                  # step | ask | terminal
    task: str
    t: int                     # step index (terminal: the episode's length)
    exact: str
    judged: str | None         # None: the judge under audit could not answer (``error``)
    plausible: bool = False    # step: a failed step that looks plausible (navrl.judge.noisy.looks_plausible)
    declared: bool = True      # terminal: the episode declared completion (else it is fail without a look)
    reason: str = ""           # the audited judge's reason
    exact_reason: str = ""
    step: str = ""             # the plan's step (terminal: the declared answer)
    action: str | None = None
    latency_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    cached: bool = False
    model: str = ""
    error: str = ""

    @property
    def agrees(self) -> bool:
        return self.judged == self.exact

    @property
    def severity(self) -> float:
        """How much reward the disagreement moves under the default table (docs/design.md §4b)."""
        if self.judged is None or self.agrees:
            return 0.0
        r = DEFAULT_REWARDS
        if self.kind == "step":
            return abs(r.step(StepVerdict(self.judged)) - r.step(StepVerdict(self.exact)))
        if self.kind == "ask":
            return abs(r.ask(AskVerdict(self.judged)) - r.ask(AskVerdict(self.exact)))
        done = EndReason.COMPLETE
        return abs(r.terminal(TerminalVerdict(self.judged), done) - r.terminal(TerminalVerdict(self.exact), done))


@dataclass
class Disagreement:
    """A disagreement kept for the page: the pair and its screens (PNG; ``before`` is None
    where there is one screen only)."""

    pair: VerdictPair
    before_png: bytes | None
    after_png: bytes | None


def _png(obs: Observation | None) -> bytes | None:
    if obs is None or not obs.has_screenshot:
        return None
    try:
        return obs.png
    except ValueError:
        return None


class AuditJudge(StepJudge, AskJudge, TerminalJudge):
    """The exact judges score the episode; the judges under audit are asked the same questions.

    ``keep``: how many of the worst disagreements keep their screens (most reward moved
    first, terminal before step before ask, then in order of appearance)."""

    def __init__(self, exact: Judges, audited: Judges, *, keep: int = 10, max_unavailable: float = 0.05,
                 min_asked: int = 20, on_pair: Callable[["VerdictPair"], None] | None = None):
        self.exact, self.audited = tuple(exact[:3]), tuple(audited[:3])
        self.keep, self.max_unavailable, self.min_asked = keep, max_unavailable, min_asked
        self.on_pair = on_pair
        self.pairs: list[VerdictPair] = []
        self.worst: list[tuple[tuple, Disagreement]] = []
        self.wants_snapshots = any(getattr(j, "wants_snapshots", False)
                                   for j in (self.exact[0], self.exact[2], self.audited[0], self.audited[2]))

    # ------------------------------------------------------------------ the judges
    def judge_step(self, ctx: StepContext) -> Judgement:
        ref = self.exact[0].judge_step(ctx)
        self._ask("step", lambda: self.audited[0].judge_step(ctx), ref, ctx.task, len(ctx.history),
                  plausible=ref.verdict is StepVerdict.FAIL and looks_plausible(ctx), step=ctx.plan.step,
                  action=ctx.action.to_text() if ctx.action is not None else None,
                  screens=lambda: (ctx.before, ctx.after))
        return ref

    def judge_ask(self, ctx: StepContext) -> Judgement:
        ref = self.exact[1].judge_ask(ctx)
        self._ask("ask", lambda: self.audited[1].judge_ask(ctx), ref, ctx.task, len(ctx.history), step=ctx.plan.step,
                  action=ctx.action.to_text() if ctx.action is not None else None,
                  screens=lambda: (None, ctx.before))
        return ref

    def judge_terminal(self, ctx: TerminalContext) -> Judgement:
        ref = self.exact[2].judge_terminal(ctx)
        if ctx.end is EndReason.INVALID:   # masked: infrastructure, nothing to audit
            return ref
        shots = list(ctx.last_screens)
        self._ask("terminal", lambda: self.audited[2].judge_terminal(ctx), ref, ctx.task, len(ctx.history),
                  declared=ctx.end.finished, step=ctx.answer or "",
                  screens=lambda: (shots[-2] if len(shots) > 1 else None, shots[-1] if shots else None))
        return ref

    # ------------------------------------------------------------------ bookkeeping
    def _ask(self, kind: str, call: Callable[[], Judgement], ref: Judgement, task: Task, t: int,
             screens: Callable[[], tuple[Observation | None, Observation | None]], **kw: Any) -> None:
        pair = VerdictPair(kind, task.id, t, ref.verdict.value, None, exact_reason=ref.reason, **kw)
        t0 = time.perf_counter()
        try:
            j = call()
        except JudgeUnavailable as e:
            pair.error = str(e)
            self.pairs.append(pair)
            self.check_available()
        else:
            pair.latency_s = time.perf_counter() - t0
            pair.judged, pair.reason = j.verdict.value, j.reason
            info = j.info or {}
            usage = info.get("usage") or {}
            pair.prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)
            pair.completion_tokens = int(usage.get("completion_tokens", 0) or 0)
            pair.cost = float(info.get("cost", 0.0) or 0.0)
            pair.cached, pair.model = bool(info.get("cached", False)), str(info.get("judge_model", "") or "")
            self.pairs.append(pair)
            if not pair.agrees:
                self._remember(pair, screens)
        if self.on_pair is not None:
            self.on_pair(pair)

    def _remember(self, pair: VerdictPair, screens: Callable[[], tuple]) -> None:
        key = (-pair.severity, _KIND_RANK[pair.kind], len(self.pairs))
        if len(self.worst) >= self.keep and key >= self.worst[-1][0]:
            return   # not among the worst: its screens are never rendered
        before, after = screens()
        self.worst.append((key, Disagreement(pair, _png(before), _png(after))))
        self.worst.sort(key=lambda kv: kv[0])
        del self.worst[self.keep:]

    @property
    def unavailable(self) -> int:
        return sum(p.judged is None for p in self.pairs)

    def check_available(self, final: bool = False) -> None:
        """Outage when the judge under audit failed more than ``max_unavailable`` of the verdicts
        asked (once ``min_asked`` were asked, or at the end)."""
        asked, missing = len(self.pairs), self.unavailable
        if not missing or (asked < self.min_asked and not final):
            return
        if missing / asked > self.max_unavailable:
            first = next(p.error for p in self.pairs if p.judged is None)   # the cause; later ones say "circuit open"
            raise Outage(f"the judge under audit could not answer {missing} of {asked} verdicts "
                         f"(more than {100 * self.max_unavailable:g}% allowed), first: {first}; no audit written")


# ---------------------------------------------------------------------- statistics
def _rate(k: int, n: int) -> dict:
    """A rate with its 95% Wilson interval (None where nothing was counted)."""
    if n == 0:
        return {"rate": None, "k": 0, "n": 0, "ci95": None}
    lo, hi = wilson_interval(k, n)
    return {"rate": k / n, "k": k, "n": n, "ci95": [lo, hi]}


def confusion(pairs: Sequence[VerdictPair], labels: Sequence[str]) -> dict[str, dict[str, int]]:
    """exact verdict -> judged verdict -> count."""
    m = {e: {v: 0 for v in labels} for e in labels}
    for p in pairs:
        m[p.exact][p.judged] += 1   # type: ignore[index]
    return m


def cohen_kappa(matrix: dict[str, dict[str, int]]) -> float | None:
    """Cohen's kappa of a square confusion matrix; None where it is undefined (one class only)."""
    labels = list(matrix)
    n = sum(sum(r.values()) for r in matrix.values())
    if n == 0:
        return None
    po = sum(matrix[v][v] for v in labels) / n
    pe = sum(sum(matrix[v].values()) * sum(matrix[e][v] for e in labels) for v in labels) / (n * n)
    return None if pe >= 1.0 else (po - pe) / (1.0 - pe)


def _kind_block(kind: str, pairs: list[VerdictPair]) -> dict:
    labels = VERDICTS[kind]
    pos = POSITIVE[kind]
    answered = [p for p in pairs if p.judged is not None]
    scored = [p for p in answered if p.declared] if kind == "terminal" else answered
    m = confusion(scored, labels)
    neg = [p for p in scored if p.exact != pos]
    block: dict[str, Any] = {
        "n": len(scored), "unavailable": len(pairs) - len(answered), "labels": list(labels), "matrix": m,
        "accuracy": _rate(sum(m[v][v] for v in labels), len(scored)), "kappa": cohen_kappa(m),
        "false_positive": _rate(sum(p.judged == pos for p in neg), len(neg)),
        "false_negative": _rate(sum(p.exact == pos and p.judged != pos for p in scored),
                                sum(p.exact == pos for p in scored))}
    if kind == "step":
        plaus = [p for p in scored if p.plausible]
        block["plausible_fail"] = {v: sum(p.judged == v for p in plaus) for v in labels}
        block["lenient"] = _rate(sum(p.judged == pos for p in plaus), len(plaus))
    if kind == "terminal":
        failed = [p for p in answered if p.exact != pos]
        block["undeclared"] = sum(not p.declared for p in answered)
        block["false_success_failed_episodes"] = _rate(sum(p.judged == pos for p in failed), len(failed))
    return block


def _latency(pairs: list[VerdictPair]) -> dict:
    xs = sorted(p.latency_s for p in pairs if p.judged is not None and not p.cached)
    if not xs:
        return {"n": 0, "mean": None, "p50": None, "p95": None, "max": None}

    def q(f: float) -> float:
        return xs[min(len(xs) - 1, max(0, math.ceil(f * len(xs)) - 1))]
    return {"n": len(xs), "mean": sum(xs) / len(xs), "p50": q(0.5), "p95": q(0.95), "max": xs[-1]}


@dataclass
class Audit:
    """What :func:`run_audit` measured: every verdict pair, the worst disagreements with their
    screens, the episodes."""

    pairs: list[VerdictPair]
    worst: list[Disagreement]
    trajectories: list[Trajectory] = field(repr=False, default_factory=list)
    elapsed_s: float = 0.0

    def summary(self, meta: dict | None = None, price_known: Callable[[str], bool] | None = None) -> dict:
        """The ``audit.json`` record. ``price_known(model)``: whether the price table knows a
        model; the dollar total is None where a model's price is unknown."""
        pairs = self.pairs
        answered = [p for p in pairs if p.judged is not None]
        models = sorted({p.model for p in answered if p.model})
        unpriced = [m for m in models if price_known is not None and not price_known(m)]
        usd = None if unpriced else sum(p.cost for p in answered)
        tokens = sum(p.prompt_tokens + p.completion_tokens for p in answered)
        valid = [t for t in self.trajectories if t.valid]
        out: dict[str, Any] = {
            "format": AUDIT_FORMAT, **(meta or {}),
            "episodes": {"n": len(self.trajectories), "valid": len(valid),
                         "exact_success": _rate(sum(t.success for t in valid), len(valid))},
            "verdicts": {"asked": len(pairs), "answered": len(answered), "unavailable": len(pairs) - len(answered),
                         "disagreements": sum(not p.agrees for p in answered)},
        }
        for kind in VERDICTS:
            out[kind] = _kind_block(kind, [p for p in pairs if p.kind == kind])
        out["cost"] = {
            "models": models, "cached": sum(p.cached for p in answered),
            "prompt_tokens": sum(p.prompt_tokens for p in answered),
            "completion_tokens": sum(p.completion_tokens for p in answered),
            "tokens_per_verdict": tokens / len(answered) if answered else None,
            "usd": usd, "usd_per_verdict": usd / len(answered) if usd is not None and answered else None,
            "unpriced_models": unpriced}
        out["latency_s"] = {"all": _latency(pairs), **{k: _latency([p for p in pairs if p.kind == k]) for k in VERDICTS}}
        out["elapsed_s"] = self.elapsed_s
        out["worst"] = [_pair_dict(d.pair) for d in self.worst]
        return out


def _pair_dict(p: VerdictPair) -> dict:
    return {**asdict(p), "severity": p.severity}


def pair_records(audit: Audit) -> list[dict]:
    """Every verdict pair as a plain dict (``verdicts.jsonl``)."""
    return [_pair_dict(p) for p in audit.pairs]


def run_audit(planner: Planner, tasks: list[Task], exact: Judges, audited: Judges, *, batch_size: int = 16,
              progress: Callable[[int], None] | None = None, on_pair: Callable[[VerdictPair], None] | None = None,
              max_unavailable: float = 0.05, keep: int = 10) -> Audit:
    """Play ``tasks`` with ``planner`` (each on its own in-process device), scored by the
    ``exact`` judges, asking the ``audited`` judges the same questions. Outage when the audited
    judge fails too often or nothing could be compared; APIRequestError passes through."""
    judge = AuditJudge(exact, audited, keep=keep, max_unavailable=max_unavailable, on_pair=on_pair)
    runner = EpisodeRunner(planner, AccessibilityGrounder(), judge, judge, judge)
    t0 = time.perf_counter()
    trajs: list[Trajectory] = []
    for i in range(0, len(tasks), batch_size):
        trajs += runner.run(tasks[i:i + batch_size], on_step=progress)
    judge.check_available(final=True)
    if not any(p.judged is not None for p in judge.pairs):
        masked = sum(not t.valid for t in trajs)
        raise Outage(f"nothing to audit: no verdict was compared ({masked} of {len(trajs)} episodes masked)")
    return Audit(judge.pairs, [d for _, d in judge.worst], trajs, time.perf_counter() - t0)

