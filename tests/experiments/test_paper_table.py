"""`navrl experiment paper-table --quick` runs end to end and writes a well-formed table."""
from __future__ import annotations

import csv
import subprocess
import sys

import pytest

from navrl.experiments.paper_table import TableConfig
from navrl.rl.config import ConfigError


def test_quick_paper_table_end_to_end(tmp_path) -> None:
    out = tmp_path / "pt"
    r = subprocess.run([sys.executable, "-m", "navrl.cli.main", "experiment", "paper-table", "--quick",
                        "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    md = (out / "results.md").read_text()
    rows = list(csv.DictReader((out / "results.csv").open()))
    methods = ["PPO (dense)", "PPO terminal-only", "GiGPPO", "GRPO", "GiGPO", "GRPO cautionary reward"]
    suites = ["test-ios", "test-android", "test-unseen"]
    # every method at every evaluated update on every suite, plus the SFT row
    have = {(x["method"], int(x["update"]), x["suite"]) for x in rows}
    assert {("SFT", 0, s) for s in suites} <= have
    assert {(m, 2, s) for m in methods for s in suites} <= have
    for x in rows:
        assert 0.0 <= float(x["ci_low"]) <= float(x["success"]) <= float(x["ci_high"]) <= 1.0
    # the markdown table: a header with the suites and one row per method and checkpoint
    table = [ln for ln in md.splitlines() if ln.startswith("| ")]
    assert table[0].startswith("| method | updates | test-ios | test-android | test-unseen")
    assert len(table) == 1 + 1 + len(methods)          # header + SFT + one checkpoint per method
    assert (out / "success_vs_updates.png").stat().st_size > 1000
    assert (out / "length_vs_updates.png").stat().st_size > 1000


def test_bad_table_config_is_a_clear_error(tmp_path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("preset: demo\nupdates: 4\neval_at: [0, 9]\nmethods: [{name: x, estimator: ppo}]\n")
    with pytest.raises(ConfigError, match="eval_at"):
        TableConfig.load(bad)
    bad.write_text("preset: demo\nmethods: [{name: x, estimator: nope}]\n")
    with pytest.raises(ConfigError):
        TableConfig.load(bad)
    r = subprocess.run([sys.executable, "-m", "navrl.cli.main", "experiment", "paper-table", "--config",
                        str(bad)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
