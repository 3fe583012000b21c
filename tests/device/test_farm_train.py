"""``navrl train --devices android``: PPO updates on Android devices behind an adb server
(the project's fake adb), goals from a synthesised-suite file, LLM judges on a local
OpenAI-compatible endpoint — the same Trainer code path as the phone world."""
from __future__ import annotations

import json

import pytest
import torch

from navrl.api.testing import FakeChatServer, reply
from navrl.cli.main import main
from navrl.worlds.phone.synth import SUITE_FORMAT, SUITE_VERSION
from test_farm_android import FIX, FakeAdb

torch.set_num_threads(1)
SERIALS = ("emulator-5554", "emulator-5556", "emulator-5558", "emulator-5560")


@pytest.fixture
def judge(monkeypatch):
    srv = FakeChatServer()
    srv.default = reply(json.dumps({"verdict": "success", "reason": "the screen moved on"}))
    monkeypatch.setenv("NAVRL_TEST_JUDGE_KEY", "sk-test-judge")
    monkeypatch.setenv("NAVRL_API_KEY_ENV", "NAVRL_TEST_JUDGE_KEY")
    monkeypatch.setenv("NAVRL_API_BASE", srv.url)
    monkeypatch.setenv("NAVRL_API_MODEL", "judge-model")
    yield srv
    srv.close()


def test_ppo_on_android_devices_through_adb(judge, tmp_path, quick_pointer_sft):
    adb = FakeAdb((FIX / "uiautomator_settings.xml").read_bytes(), serials=SERIALS)
    suite = tmp_path / "goals.json"
    suite.write_text(json.dumps({"format": SUITE_FORMAT, "version": SUITE_VERSION, "name": "goals", "tasks": [
        {"id": 1, "goal": "Open the Wi-Fi settings", "apps": ["Settings"]},
        {"id": 2, "goal": "Open the display settings", "apps": ["Settings"]}]}))
    run = tmp_path / "run"
    try:
        rc = main(["train", "--preset", "quick-pointer", "--init", str(quick_pointer_sft),
                   "--out", str(run), "--updates", "1", "--suite", f"synth:{suite}", "--devices", "android",
                   "--serials", ",".join(SERIALS), "--adb", f"127.0.0.1:{adb.port}",
                   "--reset", "clear:com.android.settings", "--judge-retries", "0",
                   "--set", "critic.critic_warmup_updates=0", "--set", "run.eval_episodes=2"])
    finally:
        adb.close()
    assert rc == 0
    recs = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    up = [r for r in recs if r["kind"] == "update"][0]
    assert up["masked"] == 0 and up["samples"] > 0 and up["policy_frozen"] is False
    assert "policy/pg_loss" in up and set(up["verdicts"]) <= {"success", "justified"}
    assert json.loads((run / "parts.json").read_text())["devices"] == "android"
    # the episodes really ran on the adb devices: rolled back, observed and acted on
    assert adb.commands.count("pm clear com.android.settings") >= 4
    assert any(c.startswith("uiautomator dump") for c in adb.commands)
    assert any(c.startswith(("input tap", "input swipe", "am broadcast", "input keyevent")) for c in adb.commands)
    assert judge.chat_requests                           # and were judged by the LLM endpoint
