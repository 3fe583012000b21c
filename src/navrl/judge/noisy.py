"""A simulated imperfect judge: an exact judge's verdicts passed through an error model.

``make_judges("noisy:step_fp=0.1,step_fn=0.1,lenient=0.3,seed=0")`` (``--judge noisy:...``)
wraps an exact judge set (``base=``, default the phone world's ``oracle``; the command line
fills in the suite's own) and corrupts what it says, so that RL under an imperfect judge can be
measured against the same judge without errors (docs/judges.md):

* ``step_fp`` — a step the exact judge does not call ``success`` (``fail`` or ``overcomplete``)
  is judged ``success``; ``step_fn`` — a ``success`` step is judged ``fail``;
* ``ask_fp`` / ``ask_fn`` — the same for ask-user verdicts (positive: ``justified``);
* ``terminal_fp`` / ``terminal_fn`` — the same for the terminal verdict of an episode that
  declared completion (positive: ``success``); an episode that did not declare it is ``fail``
  without a look, as for every judge (docs/design.md §4a), and stays so;
* ``lenient`` — leniency toward plausible-looking steps: a failed step whose after-screen is a
  screen the episode had already seen (going back and forth, undo/redo, re-opening a screen)
  is judged ``success`` with probability ``lenient``, on top of ``step_fp``: in all
  ``lenient + (1 - lenient) * step_fp``.

Or ``noisy:audit=PATH/audit.json``: the error model is the audited judge's confusion matrices
(``navrl judge audit``), row by row: the exact verdict picks a row, the judged verdict is drawn
from that row's observed frequencies (a row the audit never saw is left error-free).

Every draw is a hash of (seed, verdict kind, task id, step index, the before-screen and the
action), so a rerun or a resumed run draws the same errors, and an identical step of a sibling
rollout is judged identically, as by a deterministic (temperature-0) LLM judge.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from navrl.judge.base import AskJudge, Judgement, StepContext, StepJudge, TerminalContext, TerminalJudge
from navrl.judge.verdicts import AskVerdict, EndReason, StepVerdict, TerminalVerdict
from navrl.observation import ui_hash

__all__ = ["AUDIT_FORMAT", "DEFAULT_BASE", "ErrorModel", "NoisyJudge", "NoisySpec", "looks_plausible", "noisy_judge"]

AUDIT_FORMAT = "navrl-judge-audit-1"
"""The ``format`` of an ``audit.json`` written by ``navrl judge audit``."""

DEFAULT_BASE = "oracle"
"""The exact judge set a noisy judge corrupts when its spec names none (the phone world's;
``--judge noisy:...`` on the command line takes the suite's own)."""

RATES = ("step_fp", "step_fn", "ask_fp", "ask_fn", "terminal_fp", "terminal_fn", "lenient")
KEYS = ("audit", *RATES, "seed", "base")
EXAMPLE = "noisy:step_fp=0.1,step_fn=0.1,lenient=0.3,seed=0 (or noisy:audit=PATH/audit.json)"

PLAUSIBLE_FAIL = "fail_plausible"
"""The step row of failed steps that look plausible (:func:`looks_plausible`)."""

POSITIVE = {"step": StepVerdict.SUCCESS.value, "ask": AskVerdict.JUSTIFIED.value,
            "terminal": TerminalVerdict.SUCCESS.value}
"""The verdict that counts as positive per kind: false positives judge it where the exact judge does not."""

VERDICTS: dict[str, tuple[str, ...]] = {"step": tuple(v.value for v in StepVerdict),
                                        "ask": tuple(v.value for v in AskVerdict),
                                        "terminal": tuple(v.value for v in TerminalVerdict)}


def looks_plausible(ctx: StepContext) -> bool:
    """A step that looks like progress without being any: something was executed and the
    screen changed, to one the episode had already seen (back and forth, undo/redo,
    re-opening a screen). Lenient judges fall for these."""
    if ctx.action is None or ctx.after is None:
        return False
    after = ui_hash(ctx.after)
    return after != ctx.screen_hash and any(h.screen_hash == after for h in ctx.history)


def uniform(*parts: object) -> float:
    """A number in [0, 1) fixed by ``parts`` (the same in every process and run)."""
    h = hashlib.blake2b("\x1f".join(str(p) for p in parts).encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") / 2.0 ** 64


# ---------------------------------------------------------------------- the spec
class NoisySpec(NamedTuple):
    """What follows ``noisy:`` in a judge kind, checked."""

    rates: dict[str, float]
    """Given error rates by name (:data:`RATES`); empty with ``audit``."""
    audit: str | None = None
    """Path of the ``audit.json`` whose confusion matrices are the error model."""
    seed: int = 0
    base: str | None = None
    """The exact judge set corrupted (a world's: ``oracle``, ``page``); None: not said."""

    @staticmethod
    def parse(arg: str) -> "NoisySpec":
        """``KEY=VALUE,...`` (the part after ``noisy:``); ValueError with one clear line."""
        if not arg.strip():
            raise ValueError(f"the noisy judge needs its error rates, e.g. {EXAMPLE}")
        seen: dict[str, str] = {}
        for item in arg.split(","):
            key, eq, value = (s.strip() for s in item.partition("="))
            if not eq or not key or not value:
                raise ValueError(f"noisy judge: {item.strip()!r} is not KEY=VALUE (e.g. {EXAMPLE})")
            if key not in KEYS:
                raise ValueError(f"noisy judge: unknown setting {key!r} (known: {', '.join(KEYS)})")
            if key in seen:
                raise ValueError(f"noisy judge: {key} is given twice")
            seen[key] = value
        rates = {}
        for k in RATES:
            if k in seen:
                try:
                    r = float(seen[k])
                except ValueError:
                    raise ValueError(f"noisy judge: {k}={seen[k]} is not a number") from None
                if not 0.0 <= r <= 1.0:   # NaN fails too
                    raise ValueError(f"noisy judge: {k}={seen[k]} must be a rate in [0, 1]")
                rates[k] = r
        try:
            seed = int(seen.get("seed", "0"))
        except ValueError:
            raise ValueError(f"noisy judge: seed={seen['seed']} is not an integer") from None
        base = seen.get("base")
        if base is not None:
            _check_base(base)
        audit = seen.get("audit")
        if audit is not None and rates:
            raise ValueError(f"noisy judge: audit=PATH takes every rate from the audit; drop {', '.join(rates)}")
        return NoisySpec(rates, audit, seed, base)

    def model(self) -> "ErrorModel":
        """The error model: the rates given, or the audit's matrices (ValueError for a bad audit file)."""
        return ErrorModel.from_audit(self.audit) if self.audit is not None else ErrorModel.from_rates(**self.rates)

    def with_base(self, base: str) -> "NoisySpec":
        """The spec standing on ``base`` unless it names its own (ValueError: not an exact judge set)."""
        return self._replace(base=_check_base(self.base or base))

    def text(self) -> str:
        """The canonical kind (fixed key order), as runs record it."""
        items = [f"audit={self.audit}"] if self.audit is not None else []
        items += [f"{k}={self.rates[k]:g}" for k in RATES if k in self.rates]
        items += [f"seed={self.seed}"] + ([f"base={self.base}"] if self.base else [])
        return "noisy:" + ",".join(items)


def _check_base(base: str) -> str:
    if base.partition(":")[0] in ("llm", "noisy"):
        raise ValueError(f"noisy judge: base={base}: the noisy judge corrupts an exact judge set (a world's, such as "
                         "oracle), and this one is not")
    return base


# ---------------------------------------------------------------------- the error model
Rows = dict[str, dict[str, float]]
"""Exact verdict -> {judged verdict: probability}."""


def _flip_row(stay: str, to: str, p: float) -> dict[str, float]:
    return {stay: 1.0 - p, to: p} if stay != to else {stay: 1.0}


@dataclass(frozen=True)
class ErrorModel:
    """Per verdict kind (``step``, ``ask``, ``terminal``): exact verdict -> the distribution of
    the judged verdict. The step kind has one more row, :data:`PLAUSIBLE_FAIL`."""

    rows: dict[str, Rows]
    notes: tuple[str, ...] = field(default=())
    """What the model could not know (rows an audit never saw)."""

    @staticmethod
    def from_rates(step_fp: float = 0.0, step_fn: float = 0.0, ask_fp: float = 0.0, ask_fn: float = 0.0,
                   terminal_fp: float = 0.0, terminal_fn: float = 0.0, lenient: float = 0.0) -> "ErrorModel":
        s, f, o = (v.value for v in (StepVerdict.SUCCESS, StepVerdict.FAIL, StepVerdict.OVERCOMPLETE))
        step = {s: _flip_row(s, f, step_fn), f: _flip_row(f, s, step_fp), o: _flip_row(o, s, step_fp),
                PLAUSIBLE_FAIL: _flip_row(f, s, lenient + (1.0 - lenient) * step_fp)}
        j, u = AskVerdict.JUSTIFIED.value, AskVerdict.UNJUSTIFIED.value
        ask = {j: _flip_row(j, u, ask_fn), u: _flip_row(u, j, ask_fp)}
        ts, tf, tb = (v.value for v in TerminalVerdict)
        terminal = {ts: _flip_row(ts, tf, terminal_fn), tf: _flip_row(tf, ts, terminal_fp),
                    tb: _flip_row(tb, ts, terminal_fp)}
        return ErrorModel({"step": step, "ask": ask, "terminal": terminal})

    @staticmethod
    def from_audit(path: str | Path) -> "ErrorModel":
        """The confusion matrices of an ``audit.json`` (a directory: its ``audit.json``) as
        row frequencies. ValueError when the file is not a readable audit."""
        p = Path(path)
        if p.is_dir():
            p = p / "audit.json"
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ValueError(f"noisy judge: audit={path}: cannot read it ({getattr(e, 'strerror', None) or e})") \
                from None
        if not isinstance(data, dict) or data.get("format") != AUDIT_FORMAT:
            raise ValueError(f"noisy judge: audit={path} is not an audit.json of navrl judge audit")
        rows: dict[str, Rows] = {}
        notes = []
        fail = StepVerdict.FAIL.value
        try:
            for kind, labels in VERDICTS.items():
                matrix = _matrix(data[kind]["matrix"], labels)
                if kind == "step":
                    plausible = {v: _count(data[kind]["plausible_fail"].get(v, 0)) for v in labels}
                    matrix[fail] = {v: matrix[fail][v] - plausible[v] for v in labels}
                    if min(matrix[fail].values()) < 0:
                        raise ValueError("plausible_fail counts exceed the fail row")
                    matrix[PLAUSIBLE_FAIL] = plausible
                rows[kind] = {}
                for exact, counts in matrix.items():
                    n = sum(counts.values())
                    stay = fail if exact == PLAUSIBLE_FAIL else exact
                    if n == 0:
                        rows[kind][exact] = {stay: 1.0}
                        notes.append(f"{kind} {exact}: never seen in the audit, left error-free")
                    else:
                        rows[kind][exact] = {v: c / n for v, c in counts.items() if c}
        except (KeyError, TypeError, AttributeError, ValueError) as e:
            raise ValueError(f"noisy judge: audit={path} has no usable confusion matrices ({type(e).__name__}: {e})") \
                from None
        return ErrorModel(rows, tuple(notes))

    def rate(self, kind: str, exact: str, judged: str) -> float:
        """P(judged | exact) for verdict kind ``kind``."""
        return self.rows[kind][exact].get(judged, 0.0)

    def draw(self, kind: str, exact: str, u: float) -> str:
        """The judged verdict for a uniform number ``u``: inverse CDF over the row, in verdict order."""
        row = self.rows[kind][exact]
        acc = 0.0
        for v in VERDICTS[kind]:
            acc += row.get(v, 0.0)
            if u < acc:
                return v
        return max(row, key=lambda v: row[v])   # rounding: the row's likeliest verdict


def _count(x: Any) -> int:
    if isinstance(x, bool) or not isinstance(x, int) or x < 0:
        raise ValueError(f"{x!r} is not a count")
    return x


def _matrix(m: dict, labels: tuple[str, ...]) -> dict[str, dict[str, int]]:
    return {e: {v: _count(m.get(e, {}).get(v, 0)) for v in labels} for e in labels}


# ---------------------------------------------------------------------- the judge
class NoisyJudge(StepJudge, AskJudge, TerminalJudge):
    """The three judges of ``base`` (step, ask, terminal) with :class:`ErrorModel` errors.

    Each judgement keeps the exact verdict in ``info["exact"]`` and says in
    ``info["noisy"]`` whether the error model changed it."""

    def __init__(self, base: tuple[StepJudge, AskJudge, TerminalJudge], model: ErrorModel, seed: int = 0):
        self.base_step, self.base_ask, self.base_terminal = base[:3]
        self.model, self.seed = model, seed
        self.wants_snapshots = any(getattr(j, "wants_snapshots", False) for j in (self.base_step, self.base_terminal))

    def __repr__(self) -> str:
        return f"NoisyJudge(seed={self.seed}, base={type(self.base_step).__name__})"

    def _corrupt(self, kind: str, j: Judgement, row: str, *key: object) -> Judgement:
        exact = j.verdict.value
        v = self.model.draw(kind, row, uniform(self.seed, kind, *key))
        info = {**j.info, "exact": exact, "noisy": v != exact}
        if v == exact:
            return Judgement(j.verdict, j.reason, info)
        enum_cls = type(j.verdict)
        return Judgement(enum_cls(v), f"{j.reason} (simulated judge error: {exact} judged {v})", info)

    def judge_step(self, ctx: StepContext) -> Judgement:
        j = self.base_step.judge_step(ctx)
        row = j.verdict.value
        if j.verdict is StepVerdict.FAIL and looks_plausible(ctx):
            row = PLAUSIBLE_FAIL
        return self._corrupt("step", j, row, ctx.task.id, len(ctx.history), ctx.screen_hash,
                             ctx.action.to_text() if ctx.action is not None else "", ctx.plan.step)

    def judge_ask(self, ctx: StepContext) -> Judgement:
        j = self.base_ask.judge_ask(ctx)
        return self._corrupt("ask", j, j.verdict.value, ctx.task.id, len(ctx.history), ctx.screen_hash,
                             ctx.action.to_text() if ctx.action is not None else "", ctx.plan.step)

    def judge_terminal(self, ctx: TerminalContext) -> Judgement:
        j = self.base_terminal.judge_terminal(ctx)
        if not ctx.end.finished:   # fail without a look, for every judge
            return j
        last = ui_hash(ctx.last_screens[-1]) if ctx.last_screens else ""
        return self._corrupt("terminal", j, j.verdict.value, ctx.task.id, len(ctx.history), last, ctx.answer or "")


def noisy_judge(spec: NoisySpec, base: tuple[StepJudge, AskJudge, TerminalJudge]) -> NoisyJudge:
    """The noisy judge ``spec`` describes around the exact judges ``base``."""
    return NoisyJudge(base, spec.model(), spec.seed)
