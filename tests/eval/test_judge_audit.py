"""``navrl judge audit``: an audit of a judge with known error rates recovers them within their
95% intervals (the noisy judge, and an LLM judge on a local OpenAI-compatible endpoint that
answers at random), its tables agree with its own verdict pairs, its matrices rebuild the
judge as ``noisy:audit=PATH``; an endpoint that is down, answers garbage or refuses the key ends
it with one line, a non-zero exit and no audit written; a bad ``--judge noisy:`` spec is exit 2.
Also: a noisy judge drives the rewards of ``navrl eval``, and a trainer under one is evaluated
by its exact judge."""
from __future__ import annotations

import json
import random
import socket
import subprocess
from types import SimpleNamespace

import pytest

from clirun import run_navrl
from navrl.api.testing import FakeChatServer, raw, reply, status
from navrl.cli.main import main

SECRET = "sk-audit-SECRET-0123456789"
OUT_FILES = ("audit.json", "audit.html", "verdicts.jsonl")


def inside(r: dict, p: float) -> bool:
    lo, hi = r["ci95"]
    return lo <= p <= hi


@pytest.fixture(scope="module")
def noisy_audit(tmp_path_factory):
    """An audit of the noisy judge (step FP 0.2, FN 0.1) over ~500 steps of a mixed planner."""
    out = tmp_path_factory.mktemp("audit") / "noisy"
    rc = main(["judge", "audit", "--judge", "noisy:step_fp=0.2,step_fn=0.1,terminal_fp=0.5,seed=4",
               "--suite", "test-ios", "-n", "40", "--planner", "mix:0.4", "--out", str(out)])
    assert rc == 0
    return out, json.loads((out / "audit.json").read_text())


def test_an_audit_of_the_noisy_judge_recovers_its_error_rates(noisy_audit):
    _, a = noisy_audit
    st = a["step"]
    assert st["n"] >= 300 and st["false_positive"]["n"] >= 100 and st["false_negative"]["n"] >= 100
    assert inside(st["false_positive"], 0.2) and inside(st["false_negative"], 0.1), (st["false_positive"],
                                                                                     st["false_negative"])
    assert inside(st["lenient"], 0.2)          # no leniency configured: plausible failed steps meet the plain FP
    assert 0.5 < st["kappa"] < 0.9
    assert a["ask"]["accuracy"]["rate"] == 1.0 and a["terminal"]["false_negative"]["rate"] == 0.0
    t = a["terminal"]
    assert t["false_positive"]["n"] >= 4 and 0 < t["false_positive"]["rate"] < 1   # 0.5 on a few episodes
    assert a["reference"] == "oracle" and a["judge"].startswith("noisy:") and a["verdicts"]["unavailable"] == 0
    assert a["cost"]["usd"] == 0.0 and a["cost"]["models"] == []


def test_the_tables_agree_with_the_verdict_pairs(noisy_audit):
    out, a = noisy_audit
    pairs = [json.loads(line) for line in (out / "verdicts.jsonl").read_text().splitlines()]
    assert len(pairs) == a["verdicts"]["asked"]
    steps = [p for p in pairs if p["kind"] == "step"]
    for e in ("success", "fail", "overcomplete"):
        for j in ("success", "fail", "overcomplete"):
            assert a["step"]["matrix"][e][j] == sum(p["exact"] == e and p["judged"] == j for p in steps)
    neg = [p for p in steps if p["exact"] != "success"]
    assert a["step"]["false_positive"]["k"] == sum(p["judged"] == "success" for p in neg)
    assert a["step"]["plausible_fail"]["success"] == sum(p["plausible"] and p["judged"] == "success" for p in steps)
    term = [p for p in pairs if p["kind"] == "terminal"]
    assert a["terminal"]["n"] == sum(p["declared"] for p in term)
    assert a["terminal"]["undeclared"] + a["terminal"]["n"] == a["episodes"]["valid"]
    # the worst disagreements come first: most reward moved
    sev = [w["severity"] for w in a["worst"]]
    assert len(sev) == 10 and sev == sorted(sev, reverse=True) and sev[0] == 3.0
    html = (out / "audit.html").read_text()
    assert html.count("data:image/png;base64,") >= 10 and "The 10 worst disagreements" in html


def test_an_audit_rebuilds_the_judge_it_measured(noisy_audit):
    """``noisy:audit=PATH``: the error model is the audit's matrices, row by row."""
    from navrl.judge.sets import make_judges
    out, a = noisy_audit
    js = make_judges(f"noisy:audit={out / 'audit.json'}")
    m, st = js.step.model, a["step"]
    fail, plaus = st["matrix"]["fail"], st["plausible_fail"]
    assert m.rate("step", "success", "fail") == pytest.approx(st["false_negative"]["rate"])
    assert m.rate("step", "fail", "success") == pytest.approx(
        (fail["success"] - plaus["success"]) / (sum(fail.values()) - sum(plaus.values())))
    assert m.rate("step", "fail_plausible", "success") == pytest.approx(st["lenient"]["rate"])


def test_an_existing_audit_is_not_replaced_without_overwrite(noisy_audit, capsys):
    out, _ = noisy_audit
    before = (out / "audit.json").read_text()
    assert main(["judge", "audit", "--judge", "noisy:step_fp=0.5", "-n", "2", "--out", str(out)]) == 2
    assert "already holds a run" in capsys.readouterr().err
    assert (out / "audit.json").read_text() == before


# ---------------------------------------------------------------------- an LLM judge on an endpoint
def _random_judge(p_positive: float, seed: int = 0):
    """Replies with a verdict independent of the screens: positive with probability p."""
    rng = random.Random(seed)

    def respond(req):
        system = req["messages"][0]["content"]
        pos, neg = (("justified", "unjustified") if "ask the user" in system else ("success", "fail"))
        v = pos if rng.random() < p_positive else neg
        return reply(json.dumps({"verdict": v, "reason": "scripted"}), prompt_tokens=300, completion_tokens=12)
    return respond


@pytest.fixture
def endpoint(tmp_path, monkeypatch):
    s = FakeChatServer()
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"judge-m": [1.0, 2.0]}))
    monkeypatch.setenv("NAVRL_API_BASE", s.url)
    monkeypatch.setenv("NAVRL_API_MODEL", "judge-m")
    monkeypatch.setenv("NAVRL_API_KEY_ENV", "NAVRL_AUDIT_KEY")
    monkeypatch.setenv("NAVRL_AUDIT_KEY", SECRET)
    monkeypatch.setenv("NAVRL_API_PRICES", str(prices))
    yield s
    s.close()


def test_an_audit_of_an_llm_judge_with_scripted_errors(endpoint, tmp_path):
    """The endpoint says success 70% of the time whatever the screen: FP 0.7, FN 0.3, kappa ~0;
    tokens, dollars and latency are counted per verdict."""
    endpoint.responder = _random_judge(0.7)
    out = tmp_path / "llm"
    assert main(["judge", "audit", "--judge", "llm", "-n", "30", "--planner", "mix:0.4", "--out", str(out)]) == 0
    a = json.loads((out / "audit.json").read_text())
    st = a["step"]
    assert st["n"] >= 250
    assert inside(st["false_positive"], 0.7) and inside(st["false_negative"], 0.3)
    assert abs(st["kappa"]) < 0.15
    calls = len(endpoint.chat_requests)
    # one call a verdict; an episode that did not declare completion is failed without a call
    assert calls == st["n"] + a["ask"]["n"] + a["terminal"]["n"]
    assert a["verdicts"]["answered"] == calls + a["terminal"]["undeclared"]
    assert a["terminal"]["n"] == sum("final judge" in r["body"]["messages"][0]["content"]
                                     for r in endpoint.chat_requests)
    c = a["cost"]
    assert c["models"] == ["judge-m"] and c["prompt_tokens"] == 300 * calls and c["completion_tokens"] == 12 * calls
    assert c["usd"] == pytest.approx(calls * (300 * 1.0 + 12 * 2.0) / 1e6)
    assert a["latency_s"]["step"]["n"] == st["n"] and a["latency_s"]["step"]["mean"] > 0
    assert a["judge_model"] == "judge-m"
    assert SECRET not in (out / "audit.json").read_text() + (out / "verdicts.jsonl").read_text()
    assert SECRET not in (out / "audit.html").read_text()


def test_an_unpriced_model_has_no_dollar_figure(endpoint, tmp_path, monkeypatch):
    monkeypatch.delenv("NAVRL_API_PRICES")
    endpoint.responder = _random_judge(0.5)
    out = tmp_path / "unpriced"
    assert main(["judge", "audit", "--judge", "llm", "-n", "3", "--planner", "expert", "--out", str(out)]) == 0
    c = json.loads((out / "audit.json").read_text())["cost"]
    assert c["usd"] is None and c["unpriced_models"] == ["judge-m"] and c["prompt_tokens"] > 0


# ---------------------------------------------------------------------- bad endpoints, bad specs
def _closed_port_url() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}/v1"


def _cli(args: list[str], env: dict) -> subprocess.CompletedProcess:
    return run_navrl(*args, env=env)


@pytest.mark.parametrize("case, code", [("down", 3), ("garbage-body", 3), ("garbage-verdict", 3), ("401", 2)])
def test_a_bad_endpoint_ends_the_audit_with_one_line_and_no_audit(case, code, tmp_path):
    server = FakeChatServer()
    try:
        url = _closed_port_url() if case == "down" else server.url
        server.default = {"down": None, "garbage-body": raw(b"<html>502 Bad Gateway</html>"),
                          "garbage-verdict": reply("Looks good to me!"), "401": status(401)}[case]
        out = tmp_path / case
        r = _cli(["judge", "audit", "--judge", "llm", "--judge-retries", "0", "-n", "10", "--planner", "expert",
                  "--out", str(out)],
                 {"NAVRL_API_BASE": url, "NAVRL_API_MODEL": "judge-m", "NAVRL_API_KEY_ENV": "NAVRL_AUDIT_KEY",
                  "NAVRL_AUDIT_KEY": SECRET})
    finally:
        server.close()
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == code, r.stderr
    assert len(lines) == 1 and lines[0].startswith("navrl: error:"), r.stderr
    assert "Traceback" not in r.stderr and SECRET not in r.stderr + r.stdout
    if code == 3:
        assert "could not answer" in lines[0] and "no audit written" in lines[0]
    else:
        assert "401" in lines[0]
    assert not any((out / f).exists() for f in OUT_FILES)


@pytest.mark.parametrize("args", [
    ["judge", "audit", "--judge", "noisy:bad=1"],
    ["judge", "audit", "--judge", "noisy:step_fp=1.5"],
    ["judge", "audit", "--judge", "noisy:audit=/nonexistent/audit.json"],
    ["judge", "audit", "--judge", "noisy:step_fp=0.1,base=page"],      # the phone world has no page judge
    ["judge", "audit", "--judge", "noisy:step_fp=0.1", "--planner", "mix:7"],
    ["judge", "audit", "--judge", "noisy:step_fp=0.1", "--planner", "nonsense"],
    ["judge", "audit", "--judge", "noisy:step_fp=0.1", "--suite", "synth:/nonexistent.json"],
    ["eval", "-n", "2", "--judge", "noisy:bad=1"],
    ["train", "--preset", "quick", "--judge", "noisy:bad=1"],
    ["judge", "audit", "--judge", "llm"],                                 # no endpoint configured
    ["judge"],
])
def test_bad_judge_flags_are_one_line_and_exit_2(args, tmp_path):
    out = tmp_path / "out"
    r = _cli(args + (["--out", str(out)] if len(args) > 1 else []), {"NAVRL_API_BASE": ""})
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("navrl: error:"), r.stderr
    assert not any((out / f).exists() for f in OUT_FILES + ("results.json", "metrics.jsonl"))


# ---------------------------------------------------------------------- the noisy judge in the loop
def test_a_noisy_judge_drives_the_rewards_of_an_evaluation(tmp_path, capsys):
    out = tmp_path / "ev"
    assert main(["eval", "--agent", "expert", "-n", "6", "--judge", "noisy:terminal_fn=1", "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["successes"] == 0 and res["terminal"].get("fail") == 6   # every success judged a failure
    exact = tmp_path / "exact"
    assert main(["eval", "--agent", "expert", "-n", "6", "--out", str(exact)]) == 0
    assert json.loads((exact / "results.json").read_text())["successes"] >= 3


def test_a_trainer_under_a_noisy_judge_is_evaluated_by_its_exact_judge():
    from navrl.agent.grounders.accessibility import AccessibilityGrounder
    from navrl.agent.planner import ExpertPlanner
    from navrl.eval import evaluate_trainer
    from navrl.judge.sets import make_judges
    trainer = SimpleNamespace(policy=ExpertPlanner(), devices=None, grounder=AccessibilityGrounder(), logger=None,
                              cfg=SimpleNamespace(run=SimpleNamespace(eval_episodes=4, eval_suites=("test-ios",),
                                                                      seed=0)),
                              tasks=SimpleNamespace(suite="test-ios", name="test-ios"),
                              judges=make_judges("noisy:terminal_fn=1,terminal_fp=1"))
    res = evaluate_trainer(trainer)["test-ios"]
    assert res.successes >= 2      # the oracle's verdicts: the noisy one would have failed every success


def test_a_trained_planner_can_be_audited_from_its_checkpoint(tmp_path):
    from navrl.experiments.pipeline import build_tiny_policy, save_policy
    from navrl.rl.presets import get_preset
    sft = save_policy(build_tiny_policy(get_preset("quick")), tmp_path / "sft" / "sft.pt")
    out = tmp_path / "ckpt"
    assert main(["judge", "audit", "--judge", "noisy:step_fp=0.5", "-n", "3", "--planner", str(sft),
                 "--out", str(out)]) == 0
    a = json.loads((out / "audit.json").read_text())
    assert a["planner"] == str(sft) and a["episodes"]["n"] == 3
    assert a["verdicts"]["answered"] >= 3      # at least every episode's ending
