"""The SFT vs RL breakdown counts each paired episode under its family, its apps and whether
its template was trained on or held out."""
from __future__ import annotations

from navrl.worlds.phone.breakdown import breakdown_markdown, template_kind
from navrl.rollout.records import Trajectory
from navrl.worlds.phone.task import make_task


def _t(name: str, seed: int, ok: bool) -> Trajectory:
    return Trajectory(task=make_task(name, seed, suite="test-ios").to_dict(), success=ok)


def test_template_kind_tells_train_from_held_out_templates():
    assert template_kind(_t("mail_send", 1, True)) == "train template, single-app"
    assert template_kind(_t("mail_flag", 1, True)) == "held-out template, single-app"
    assert template_kind(_t("multi_contact_email", 1, True)) == "train template, multi-app"
    assert template_kind(_t("multi_weather_shop", 1, True)) == "held-out template, multi-app"
    assert template_kind(Trajectory(task={"id": "x", "template": "nope"})) == "unknown template"


def test_breakdown_rows_count_paired_successes():
    before = [_t("mail_send", 1, False), _t("mail_send", 2, True), _t("mail_flag", 3, False),
              _t("multi_contact_email", 4, False)]
    after = [_t("mail_send", 1, True), _t("mail_send", 2, True), _t("mail_flag", 3, True),
             _t("multi_contact_email", 4, False)]
    md = breakdown_markdown(before, after, "test-ios")
    assert "| train template, single-app | 2 | 50.0% (1) | 100.0% (2) | +50.0 |" in md
    assert "| held-out template, single-app | 1 | 0.0% (0) | 100.0% (1) | +100.0 |" in md
    assert "| train template, multi-app | 1 | 0.0% (0) | 0.0% (0) | +0.0 |" in md
    assert "| multi-app | 1 | 0.0% (0) | 0.0% (0) | +0.0 |" in md and "| single-app | 3 | 33.3% (1) |" in md
