"""The pointer planner through the whole CLI: sft -> train -> eval --policy -> demo -> report."""
from __future__ import annotations

import json

import pytest

from clirun import run_navrl


def _cli(*args, timeout=600):
    return run_navrl(*args)


@pytest.fixture(scope="module")
def sft_pt(tmp_path_factory):
    out = tmp_path_factory.mktemp("psft")
    r = _cli("sft", "--preset", "quick-pointer", "--out", str(out))
    assert r.returncode == 0, r.stderr
    meta = json.loads((out / "sft.json").read_text())
    assert meta["planner"] == "pointer" and meta["heldout_loss_after"] < meta["heldout_loss_before"]
    return out / "sft.pt"


def test_train_then_eval_policy(tmp_path, sft_pt):
    run = tmp_path / "run"
    r = _cli("train", "--preset", "quick-pointer", "--init", str(sft_pt), "--out", str(run))
    assert r.returncode == 0, r.stderr
    ups = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [u["update"] for u in ups if u["kind"] == "update"] == [1, 2]
    assert ups[1]["samples"] > 0 and ups[1]["policy_frozen"] is False
    for target in (str(sft_pt), str(run)):        # sft.pt and a trainer run directory
        out = tmp_path / ("eval-" + str(abs(hash(target))))
        r = _cli("eval", "--policy", target, "--suite", "test-ios", "-n", "4", "--out", str(out))
        assert r.returncode == 0, r.stderr
        res = json.loads((out / "results.json").read_text())
        assert res["n"] == 4 and res["masked"] == 0
        steps = [json.loads(x) for x in (out / "trajectories.jsonl").read_text().splitlines()]
        assert steps
    r = _cli("eval", "--policy", str(tmp_path / "nope.pt"), "-n", "2")
    assert r.returncode == 2 and "--policy" in r.stderr and "Traceback" not in r.stderr


def test_demo_quick_pointer_prints_the_table(tmp_path):
    out = tmp_path / "demo"
    r = _cli("demo", "--preset", "quick-pointer", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "SFT of the pointer planner" in r.stdout
    summary = json.loads((out / "rl" / "summary.json").read_text())
    assert set(summary) >= {"test-ios", "test-android", "minutes"}
    for s in ("test-ios", "test-android"):      # the share of SFT's failures fixed is the gain over what SFT left
        g = summary[s]
        if g["sft"] < 1.0:
            assert abs(g["sft_failures_fixed"] * (1 - g["sft"]) - (g["rl"] - g["sft"])) < 1e-9
    html = (out / "rl" / "report.html").read_text()
    assert "SFT vs RL on the same evaluation tasks" in html and "<table>" in html
    md = (out / "rl" / "breakdown.md").read_text()
    assert "| task family |" in md and "| perturbations met (SFT episode) |" in md
