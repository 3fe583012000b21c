"""The noisy judge (navrl.judge.noisy): its error rates hit their configured values (binomial
checks on thousands of distinct judgements), its draws are the same in every run and process
and differ between seeds, a failed step that goes back to a screen already seen meets the
leniency, an undeclared end stays fail, specs are checked with one clear line, and an audit's
confusion matrices become its error model."""
from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

from navrl.actions import Action
from navrl.agent.plan import Plan
from navrl.eval.intervals import wilson_interval
from navrl.judge.base import AskJudge, Judgement, PastStep, StepContext, StepJudge, TerminalContext, TerminalJudge
from navrl.judge.noisy import AUDIT_FORMAT, ErrorModel, NoisyJudge, NoisySpec, looks_plausible, noisy_judge
from navrl.judge.sets import base_kind, make_judges
from navrl.judge.verdicts import AskVerdict, EndReason, StepVerdict, TerminalVerdict
from navrl.observation import Observation, UINode, ui_hash
from navrl.planning import Memory

N = 4000
Z = 3.29   # 99.9% two-sided: the configured rate must lie in the interval of what was drawn


def screen(name: str) -> Observation:
    return Observation((UINode("1", "button", name, (0, 0, 10, 10)),), "App", (100, 100), "ios")


class Fixed(StepJudge, AskJudge, TerminalJudge):
    """An exact judge that always says the same."""

    wants_snapshots = True

    def __init__(self, step=StepVerdict.SUCCESS, ask=AskVerdict.JUSTIFIED, terminal=TerminalVerdict.SUCCESS):
        self.step, self.ask, self.terminal = step, ask, terminal

    def judge_step(self, ctx):
        return Judgement(self.step, "exact")

    def judge_ask(self, ctx):
        return Judgement(self.ask, "exact")

    def judge_terminal(self, ctx):
        if ctx.end is not EndReason.COMPLETE:
            return Judgement(TerminalVerdict.FAIL, "undeclared")
        return Judgement(self.terminal, "exact")

    @property
    def set(self):
        return (self, self, self)


def step_ctx(i: int, plausible: bool = False) -> StepContext:
    before, after = screen(f"before {i}"), screen(f"after {i}")
    history = [PastStep("earlier", "tap(1, 1)", ui_hash(after) if plausible else "elsewhere", "success")]
    return StepContext(SimpleNamespace(id=f"task-{i}"), before, after, Plan("r", 'Tap "x"', ""), Action.tap(5, 5),
                       history, Memory(), ui_hash(before))


def term_ctx(i: int, end: EndReason = EndReason.COMPLETE) -> TerminalContext:
    return TerminalContext(SimpleNamespace(id=f"task-{i}"), end, None, [screen(f"final {i}")], [])


def rate_ok(k: int, n: int, p: float) -> bool:
    lo, hi = wilson_interval(k, n, z=Z)
    return lo <= p <= hi


def flips(judge: NoisyJudge, calls, exact: str) -> int:
    return sum(call(i).verdict.value != exact for i, call in enumerate(calls))


RATES = dict(step_fp=0.15, step_fn=0.1, ask_fp=0.2, ask_fn=0.05, terminal_fp=0.3, terminal_fn=0.12, lenient=0.4)


@pytest.mark.parametrize("exact_step, plausible, expected", [
    (StepVerdict.SUCCESS, False, RATES["step_fn"]),
    (StepVerdict.FAIL, False, RATES["step_fp"]),
    (StepVerdict.OVERCOMPLETE, False, RATES["step_fp"]),
    (StepVerdict.FAIL, True, RATES["lenient"] + (1 - RATES["lenient"]) * RATES["step_fp"]),
    (StepVerdict.SUCCESS, True, RATES["step_fn"]),          # leniency is about failed steps only
])
def test_step_error_rates_hit_their_configured_values(exact_step, plausible, expected):
    j = NoisyJudge(Fixed(step=exact_step).set, ErrorModel.from_rates(**RATES), seed=3)
    verdicts = [j.judge_step(step_ctx(i, plausible)) for i in range(N)]
    k = sum(v.verdict is not exact_step for v in verdicts)
    assert rate_ok(k, N, expected), (k / N, expected)
    # an error turns a non-success into success and a success into fail, nothing else
    wrong = {v.verdict for v in verdicts if v.verdict is not exact_step}
    assert wrong == ({StepVerdict.FAIL} if exact_step is StepVerdict.SUCCESS else {StepVerdict.SUCCESS})
    assert all(v.info["exact"] == exact_step.value and v.info["noisy"] == (v.verdict is not exact_step)
               for v in verdicts)


@pytest.mark.parametrize("exact_ask, expected", [(AskVerdict.JUSTIFIED, RATES["ask_fn"]),
                                                 (AskVerdict.UNJUSTIFIED, RATES["ask_fp"])])
def test_ask_error_rates(exact_ask, expected):
    j = NoisyJudge(Fixed(ask=exact_ask).set, ErrorModel.from_rates(**RATES), seed=3)
    k = sum(j.judge_ask(step_ctx(i)).verdict is not exact_ask for i in range(N))
    assert rate_ok(k, N, expected), (k / N, expected)


@pytest.mark.parametrize("exact_term, expected", [(TerminalVerdict.SUCCESS, RATES["terminal_fn"]),
                                                  (TerminalVerdict.FAIL, RATES["terminal_fp"]),
                                                  (TerminalVerdict.BLOCKED_COMPLETE, RATES["terminal_fp"])])
def test_terminal_error_rates_on_declared_completions(exact_term, expected):
    j = NoisyJudge(Fixed(terminal=exact_term).set, ErrorModel.from_rates(**RATES), seed=3)
    k = sum(j.judge_terminal(term_ctx(i)).verdict is not exact_term for i in range(N))
    assert rate_ok(k, N, expected), (k / N, expected)


def test_an_undeclared_end_stays_fail_without_a_look():
    j = NoisyJudge(Fixed().set, ErrorModel.from_rates(terminal_fp=1.0, terminal_fn=1.0), seed=0)
    for end in (EndReason.BUDGET, EndReason.INVALID):
        assert all(j.judge_terminal(term_ctx(i, end)).verdict is TerminalVerdict.FAIL for i in range(200))
    assert all(j.judge_terminal(term_ctx(i)).verdict is TerminalVerdict.FAIL for i in range(200))   # fn = 1


def test_rates_of_zero_and_one_are_exact():
    never = NoisyJudge(Fixed(step=StepVerdict.FAIL).set, ErrorModel.from_rates(), seed=0)
    always = NoisyJudge(Fixed(step=StepVerdict.FAIL).set, ErrorModel.from_rates(step_fp=1.0), seed=0)
    assert all(never.judge_step(step_ctx(i, True)).verdict is StepVerdict.FAIL for i in range(500))
    assert all(always.judge_step(step_ctx(i)).verdict is StepVerdict.SUCCESS for i in range(500))


def _verdicts(seed: int) -> list[str]:
    j = NoisyJudge(Fixed(step=StepVerdict.FAIL).set, ErrorModel.from_rates(**RATES), seed=seed)
    return [j.judge_step(step_ctx(i, i % 3 == 0)).verdict.value for i in range(600)]


def test_draws_are_deterministic_per_seed_and_differ_between_seeds():
    a, b = _verdicts(7), _verdicts(7)
    assert a == b
    assert a != _verdicts(8)
    j = NoisyJudge(Fixed(step=StepVerdict.FAIL).set, ErrorModel.from_rates(step_fp=0.5), seed=1)
    ctx = step_ctx(42)
    assert len({j.judge_step(ctx).verdict for _ in range(20)}) == 1   # the same step, the same verdict


def test_draws_are_the_same_in_another_process():
    """Hash seeding (not Python's per-process hash()): a resumed run draws the same errors."""
    code = ("import sys; sys.path.insert(0, %r); import test_noisy_judge as t; print(','.join(t._verdicts(7)))"
            % str(__import__("pathlib").Path(__file__).parent))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**__import__("os").environ, "PYTHONHASHSEED": "12345"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().split(",") == _verdicts(7)


def test_plausible_means_back_to_a_screen_already_seen():
    assert looks_plausible(step_ctx(0, plausible=True))
    assert not looks_plausible(step_ctx(0, plausible=False))
    ctx = step_ctx(0, plausible=True)
    ctx.after = ctx.before                       # nothing changed: not plausible-looking, plainly no progress
    ctx.history.append(PastStep("x", "tap(1, 1)", ctx.screen_hash, "fail"))
    assert not looks_plausible(ctx)
    ctx = step_ctx(0, plausible=True)
    ctx.action = None                            # nothing executed
    assert not looks_plausible(ctx)


# ---------------------------------------------------------------------- the spec
@pytest.mark.parametrize("spec, message", [
    ("", "needs its error rates"),
    ("bad=1", "unknown setting 'bad'"),
    ("step_fp", "is not KEY=VALUE"),
    ("step_fp=", "is not KEY=VALUE"),
    ("step_fp=0.1,step_fp=0.2", "given twice"),
    ("step_fp=abc", "is not a number"),
    ("step_fp=1.5", "must be a rate in [0, 1]"),
    ("lenient=-0.1", "must be a rate in [0, 1]"),
    ("terminal_fn=nan", "must be a rate in [0, 1]"),
    ("seed=1.5", "is not an integer"),
    ("base=llm", "corrupts an exact judge set"),
    ("audit=x.json,step_fp=0.1", "takes every rate from the audit"),
])
def test_bad_specs_say_what_is_wrong_in_one_line(spec, message):
    with pytest.raises(ValueError) as e:
        NoisySpec.parse(spec)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_make_judges_builds_it_around_the_oracle_in_canonical_form():
    js = make_judges("noisy:lenient=0.3,step_fn=0.1,step_fp=0.1")
    assert js.kind == "noisy:step_fp=0.1,step_fn=0.1,lenient=0.3,seed=0,base=oracle"
    assert js.step is js.ask is js.terminal and js.step.wants_snapshots   # the oracle reads snapshots
    assert make_judges(js.kind).kind == js.kind
    assert base_kind(js.kind) == "oracle" and base_kind("llm") == "llm"
    with pytest.raises(ValueError, match="unknown judge set 'nosuch'"):
        make_judges("noisy:step_fp=0.1,base=nosuch")
    with pytest.raises(ValueError, match="corrupts an exact judge set"):   # a suite judged by llm has none
        NoisySpec.parse("step_fp=0.1").with_base("llm")
    assert NoisySpec.parse("step_fp=0.1,base=oracle").with_base("llm").base == "oracle"


# ---------------------------------------------------------------------- from an audit
def _audit(tmp_path, step, plausible, ask, terminal, fmt=AUDIT_FORMAT):
    p = tmp_path / "audit.json"
    p.write_text(json.dumps({"format": fmt, "step": {"matrix": step, "plausible_fail": plausible},
                             "ask": {"matrix": ask}, "terminal": {"matrix": terminal}}))
    return p


def test_an_audits_confusion_matrices_become_the_error_model(tmp_path):
    step = {"success": {"success": 80, "fail": 20}, "fail": {"success": 30, "fail": 70},
            "overcomplete": {"success": 1, "fail": 1, "overcomplete": 2}}
    p = _audit(tmp_path, step, {"success": 6, "fail": 4}, {"justified": {"justified": 9, "unjustified": 1}},
               {"success": {"success": 3, "fail": 1}, "fail": {"success": 2, "fail": 2}})
    m = ErrorModel.from_audit(p)
    assert m.rate("step", "success", "fail") == pytest.approx(0.2)
    assert m.rate("step", "fail", "success") == pytest.approx(24 / 90)         # plausible ones taken out
    assert m.rate("step", "fail_plausible", "success") == pytest.approx(0.6)
    assert m.rate("step", "overcomplete", "fail") == pytest.approx(0.25)
    assert m.rate("ask", "justified", "unjustified") == pytest.approx(0.1)
    assert m.rate("terminal", "fail", "success") == pytest.approx(0.5)
    assert m.rate("ask", "unjustified", "unjustified") == 1.0                  # never seen: left error-free
    assert any("ask unjustified" in n for n in m.notes)
    assert ErrorModel.from_audit(tmp_path).rows == m.rows                      # a directory: its audit.json
    js = make_judges(f"noisy:audit={p},seed=2")
    assert js.kind == f"noisy:audit={p},seed=2,base=oracle"
    # the drawn frequencies follow the audit's
    j = noisy_judge(NoisySpec.parse(f"audit={p}"), Fixed(step=StepVerdict.SUCCESS).set)
    k = sum(j.judge_step(step_ctx(i)).verdict is StepVerdict.FAIL for i in range(N))
    assert rate_ok(k, N, 0.2)


@pytest.mark.parametrize("content", ["not json", "[]", json.dumps({"format": "other"}),
                                     json.dumps({"format": AUDIT_FORMAT}),
                                     json.dumps({"format": AUDIT_FORMAT, "step": {"matrix": {"success": {"fail": -1}},
                                                                                "plausible_fail": {}},
                                                 "ask": {"matrix": {}}, "terminal": {"matrix": {}}}),
                                     json.dumps({"format": AUDIT_FORMAT, "step": {"matrix": {}, "plausible_fail":
                                                                                {"success": 3}},
                                                 "ask": {"matrix": {}}, "terminal": {"matrix": {}}})])
def test_a_bad_audit_file_is_one_clear_error(tmp_path, content):
    p = tmp_path / "audit.json"
    p.write_text(content)
    with pytest.raises(ValueError) as e:
        ErrorModel.from_audit(p)
    assert f"audit={p}" in str(e.value)
    with pytest.raises(ValueError, match="cannot read it"):
        ErrorModel.from_audit(tmp_path / "missing.json")
