"""`navrl experiment paper-table --quick` runs end to end and writes a well-formed table."""
from __future__ import annotations

import csv
import json
import re

import pytest

from clirun import run_navrl
from navrl.experiments.paper_table import TableConfig
from navrl.rl.config import ConfigError


def test_quick_paper_table_end_to_end(tmp_path) -> None:
    out = tmp_path / "pt"
    r = run_navrl("experiment", "paper-table", "--quick", "--out", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    md = (out / "results.md").read_text()
    rows = list(csv.DictReader((out / "results.csv").open()))
    methods = ["PPO (dense)", "PPO terminal-only", "GiGPPO", "GRPO", "GiGPO", "GRPO cautionary reward"]
    suites = ["test-ios", "test-android"]                # two suites keep the test short
    # every method at every evaluated update on every suite, plus the SFT row
    have = {(x["method"], int(x["update"]), x["suite"]) for x in rows}
    assert {("SFT", 0, s) for s in suites} <= have
    assert {(m, u, s) for m in methods for u in (1, 2) for s in suites} <= have
    assert {(x["method"], x["seed"]) for x in rows if x["method"] != "SFT"} == {(m, k) for m in methods for k in "01"}
    for x in rows:
        assert 0.0 <= float(x["ci_low"]) <= float(x["success"]) <= float(x["ci_high"]) <= 1.0
    # the markdown table: a header with the suites and one row per method and checkpoint
    main, _, paired = md.partition("Differences in success")
    table = [ln for ln in main.splitlines() if ln.startswith("| ")]
    assert len([ln for ln in paired.splitlines() if ln.startswith("| ") and " - SFT @0 |" in ln]) == 6 * 2 * 2
    assert table[0].startswith("| method | updates | test-ios | test-android | mean length")
    assert len(table) == 1 + 1 + 2 * len(methods)      # header + SFT + two checkpoints per method
    # RL rows: mean over the two seeds, then each seed's value
    assert all(len(re.findall(r"\| \d+\.\d \(\d+\.\d / \d+\.\d\) ", ln)) == 2 for ln in table[2:]), table
    comps = json.loads((out / "results.json").read_text())["comparisons"]
    assert {(c["method"], c["vs"], c["suite"]) for c in comps} >= {(m, "SFT", s) for m in methods for s in suites}
    assert all(c["tasks"] == 3 and c["ci_low"] <= c["difference"] <= c["ci_high"] for c in comps)
    assert "paired 95% interval" in md
    assert (out / "success_vs_updates.png").stat().st_size > 1000
    assert (out / "length_vs_updates.png").stat().st_size > 1000
    # the transcript's comparisons, measured: dense @1 vs terminal-only @2, GiGPPO's updates to
    # reach PPO, both critics' explained variance before each update, the cautionary reward
    found = json.loads((out / "results.json").read_text())["findings"]
    assert found["dense_vs_terminal"]["n"] == 1
    assert set(found["explained_variance_before"]) == {"PPO (dense)", "GiGPPO"}
    assert found["reward_effect"][0]["vs"] == "GRPO"
    ev = json.loads((out / "results.json").read_text())["explained_variance_before"]
    assert set(ev) == {f"{r}-s{k}" for r in ("ppo-dense", "ppo-terminal-only", "gigppo") for k in "01"} and all(len(v) == 2 for v in ev.values())
    assert "Dense PPO after 1 updates" in md and "explained_variance.png" in md
    ff = json.loads((out / "results.json").read_text())["failures_fixed"]
    assert [r["method"] for r in ff] == methods and "Share of SFT's failures each method fixes" in md
    assert (out / "explained_variance.png").stat().st_size > 1000


def test_bad_table_config_is_a_clear_error(tmp_path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("preset: demo\nupdates: 4\neval_at: [0, 9]\nmethods: [{name: x, estimator: ppo}]\n")
    with pytest.raises(ConfigError, match="eval_at"):
        TableConfig.load(bad)
    bad.write_text("preset: demo\nmethods: [{name: x, estimator: nope}]\n")
    with pytest.raises(ConfigError):
        TableConfig.load(bad)
    r = run_navrl("experiment", "paper-table", "--config", str(bad))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1


def test_paired_comparisons_match_tasks_and_use_the_paired_interval() -> None:
    from navrl.experiments.paper_table import Method, paired_comparisons
    from navrl.eval import paired_difference_interval
    cfg = TableConfig(preset="quick", updates=2, eval_at=[0, 2], eval_episodes=4, suites=["test-ios"],
                      methods=[Method("A", "ppo"), Method("B", "grpo")])
    sft = {"t1": True, "t2": False, "t3": False, "t4": False}
    a = {"t1": True, "t2": True, "t3": True, "t4": False}
    b = {"t1": False, "t2": True, "t3": False, "t4": False}
    comps = paired_comparisons(cfg, {("SFT", None, 0, "test-ios"): sft, ("A", 0, 2, "test-ios"): a,
                                     ("B", 0, 2, "test-ios"): b})
    by = {(c["method"], c["vs"]): c for c in comps}
    c = by[("A", "SFT")]
    assert (c["tasks"], c["only_method"], c["only_vs"], c["difference"]) == (4, 2, 0, 0.5)
    assert (c["ci_low"], c["ci_high"]) == paired_difference_interval(1, 2, 0, 1)
    c = by[("B", "A")]                                   # method vs method, same tasks
    assert (c["only_method"], c["only_vs"], c["difference"]) == (0, 2, -0.5)
    assert (c["ci_low"], c["ci_high"]) == paired_difference_interval(1, 0, 2, 1)


@pytest.mark.parametrize("text,match", [
    ("preset: quick\nupdates: abc\nmethods: [{name: x, estimator: ppo}]\n", "updates: input should be a valid integer"),
    ("preset: quick\nupdates: 2\neval_at: 5\nmethods: [{name: x, estimator: ppo}]\n", "eval_at: input should be a valid list"),
    ("preset: quick\nupdates: [2\n", r"YAML syntax error \(line 3, column 1\)"),
    ("preset: quick\nmethods: [{name: x, estimator: ppo, lr: 3}]\n", "methods.0.lr"),
])
def test_table_config_schema_errors_name_the_field(tmp_path, text, match) -> None:
    p = tmp_path / "t.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=match):
        TableConfig.load(p)


def test_a_ppo_ptx_preset_trains_on_the_sft_stage_demonstrations(tmp_path, monkeypatch) -> None:
    """With a preset that keeps a supervised term (sft_coef > 0, as `demo` does), every
    method's trainer gets the SFT stage's demonstrations and logs the supervised loss."""
    from navrl.experiments import paper_table
    from navrl.experiments.paper_table import Method, run_paper_table
    real = paper_table.get_preset
    monkeypatch.setattr(paper_table, "get_preset",
                        lambda name, over=None: real(name, {**(over or {}), "policy.sft_coef": 1.0,
                                                            "critic.critic_warmup_updates": 0}))
    cfg = TableConfig(preset="quick", updates=1, eval_at=[0, 1], eval_episodes=2, suites=["test-ios"],
                      methods=[Method("PPO", "ppo")], rl_seeds=[0])
    run_paper_table(cfg, tmp_path, log=lambda *_: None)
    ups = [json.loads(x) for x in (tmp_path / "runs" / "ppo-s0" / "metrics.jsonl").read_text().splitlines()]
    ups = [u for u in ups if u["kind"] == "update"]
    assert len(ups) == 1 and ups[0]["policy/sft_loss"] > 0


def test_share_of_sft_failures_fixed_is_the_gain_over_what_sft_left() -> None:
    from navrl.eval import failures_fixed
    from navrl.experiments.paper_table import TRANSCRIPT_FAILURES_FIXED, Method, failures_fixed_rows
    # the transcript's figures: 17 -> 32.4% fixes 18.6% of the failures, 4.7 -> 32.8% fixes 29.5%
    (b1, r1), (b2, r2) = TRANSCRIPT_FAILURES_FIXED.values()
    assert round(100 * failures_fixed(b1, r1), 1) == 18.6 and round(100 * failures_fixed(b2, r2), 1) == 29.5
    assert failures_fixed(0.5, 0.25) == -0.5            # worse than SFT: negative
    assert failures_fixed(1.0, 1.0) is None and failures_fixed(None, 0.3) is None
    cfg = TableConfig(preset="quick", updates=2, eval_at=[0, 2], eval_episodes=4, suites=["test-ios", "test-android"],
                      methods=[Method("A", "ppo")])
    rows = [{"method": "SFT", "seed": "", "update": 0, "suite": "test-ios", "success": 0.5},
            {"method": "SFT", "seed": "", "update": 0, "suite": "test-android", "success": 0.2},
            {"method": "A", "seed": 0, "update": 2, "suite": "test-ios", "success": 0.6},
            {"method": "A", "seed": 1, "update": 2, "suite": "test-ios", "success": 0.8},   # mean 0.7
            {"method": "A", "seed": 0, "update": 2, "suite": "test-android", "success": None},  # all masked
            {"method": "A", "seed": 1, "update": 2, "suite": "test-android", "success": 0.6}]
    (r,) = failures_fixed_rows(cfg, rows)
    assert r["update"] == 2 and abs(r["test-ios"] - 0.4) < 1e-12 and abs(r["test-android"] - 0.5) < 1e-12
