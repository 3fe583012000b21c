"""``navrl report``: one self-contained page from a run's metrics — what it shows for a damaged
or fully masked run, and the exploration diagnostics each update logs (or why they are absent)."""
from __future__ import annotations

import json


def _pointer_trainer(tmp_path, name, samples):
    from navrl.experiments.pipeline import build_policy
    from navrl.rl.presets import get_preset
    from navrl.rl.trainer import Trainer
    p = get_preset("quick-pointer", {"run.diagnostics_samples": samples, "rollout.tasks_per_update": 3,
                                     "rollout.rollouts_per_task": 3, "critic.critic_warmup_updates": 0})
    return Trainer(build_policy(p, 0), p.train, tmp_path / name)


def _write(run, *records, tail: bytes = b"") -> None:
    run.mkdir(parents=True, exist_ok=True)
    (run / "metrics.jsonl").write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records) + tail)


UPD = [{"kind": "update", "update": u, "success": 0.1 * u, "masked_fraction": 0.0} for u in (1, 2, 3)]


def test_report_works_on_a_truncated_file_and_shows_an_outage_as_such(tmp_path, caplog) -> None:
    from navrl.report.html import build_report
    ev = {"kind": "eval", "update": 3, "test-ios": {"suite": "test-ios", "n": 0, "successes": 0, "success": None,
                                                     "ci_low": None, "ci_high": None, "masked": 8,
                                                     "mean_length": None}}
    _write(tmp_path, *UPD, {"kind": "update", "update": 4, "success": None, "all_masked": True}, ev,
           tail=b"\x00\x00\x00")
    with caplog.at_level("WARNING", logger="navrl.metrics"):
        path = build_report(tmp_path)
    html = path.read_text()
    assert "Learning curves" in html and "all 8 masked" in html and "0.0%" not in html
    assert sum("truncated" in r.getMessage() for r in caplog.records) == 1


def test_the_report_plots_the_diagnostics_or_says_why_not(tmp_path):
    from navrl.report.html import build_report, diagnostics_curves
    tr = _pointer_trainer(tmp_path, "r", 64)
    tr.train_step()
    page = build_report(tmp_path / "r").read_text()
    assert "<h2>Exploration diagnostics</h2><p>What each update" in page
    assert diagnostics_curves([{"update": 1, "success": 0.5}]) is None
    # an exploring run's behaviour gap is drawn beside the zero-advantage share
    fig = diagnostics_curves([{"update": u, "diag": {"zero_advantage_steps": 0.3,
                                                     "behaviour_gap": {"outside_clip": 0.1 * u, "kl": 0.2}}}
                              for u in (1, 2)])
    assert [list(ln.get_ydata()) for ln in fig.axes[2].lines] == [[0.3, 0.3], [0.1, 0.2]]
    old = tmp_path / "old"
    old.mkdir()
    (old / "metrics.jsonl").write_text(json.dumps({"kind": "update", "update": 1, "success": 0.5}) + "\n")
    assert "Not logged by this run" in build_report(old).read_text()
