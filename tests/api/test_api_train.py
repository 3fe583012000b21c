"""``navrl train --judge llm``: PPO updates on the phone world scored by LLM judges behind a
local OpenAI-compatible server; an outage or garbage masks trajectories and is counted."""
from __future__ import annotations

import json

import pytest
import torch

from navrl.cli.main import main

from fake_api import KEY_ENV, SECRET, reply, status

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def sft_path(quick_pointer_sft):
    return quick_pointer_sft


@pytest.fixture
def judge_env(fake_server, api_key, monkeypatch):
    monkeypatch.setenv("NAVRL_API_BASE", fake_server.url)
    monkeypatch.setenv("NAVRL_API_MODEL", "judge-model")
    monkeypatch.setenv("NAVRL_API_KEY_ENV", KEY_ENV)
    return fake_server


def _kind(body: dict) -> str:
    system = body["messages"][0]["content"]
    if '"justified"' in system:
        return "ask"
    return "terminal" if "blocked_complete" in system else "step"


class Judge:
    """Verdicts from the server: "success" for every step and ask while ``broken`` is False;
    when broken, garbage and HTTP 500 in turn."""

    def __init__(self):
        self.broken, self.kinds, self.bad = False, [], 0

    def __call__(self, body):
        kind = _kind(body)
        self.kinds.append(kind)
        if self.broken:
            self.bad += 1
            return reply("I think it went well!") if self.bad % 2 else status(500)
        return reply(json.dumps({"verdict": "justified" if kind == "ask" else "success", "reason": "looks right"}))


def _records(run) -> list[dict]:
    return [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]


def test_train_with_llm_judges_uses_their_verdicts_and_masks_an_outage(judge_env, sft_path, tmp_path, capsys):
    judge = Judge()
    judge_env.responder = judge
    run = tmp_path / "run"
    args = ["train", "--preset", "quick-pointer", "--out", str(run), "--judge", "llm", "--judge-retries", "0",
            "--set", "run.eval_episodes=2"]
    assert main([*args, "--init", str(sft_path), "--updates", "1"]) == 0
    first = [r for r in _records(run) if r["kind"] == "update"][0]
    # the server's verdicts, not the oracle's: every judged step is a success, none masked
    assert first["masked"] == 0 and set(first["verdicts"]) == {"success"}
    assert first["verdicts"]["success"] > 0 and first["mean_return"] > 0 and "step" in judge.kinds
    assert json.loads((run / "parts.json").read_text()) == {"suite": "train", "tasks": None, "judge": "llm",
                                                            "devices": "phone", "preset": "quick-pointer",
                                                            "sft_demo_tasks": None}
    # the endpoint breaks (garbage, HTTP 500): every trajectory of the next update is masked and counted
    judge.broken = True
    assert main([*args, "--resume", "--updates", "2"]) == 0
    ups = [r for r in _records(run) if r["kind"] == "update"]
    assert len(ups) == 2
    second = ups[1]
    assert second["masked"] == 4 and second["masked_reasons"] == {"judge_unavailable": 4}
    assert second["success"] is None and second["all_masked"] is True and second["masked_total"] == 4
    assert judge.bad >= 2
    assert "not measured" in capsys.readouterr().out    # the closing evaluation: an outage, not 0%
    assert api_key_never_logged(run)


def api_key_never_logged(run) -> bool:
    return all(SECRET not in p.read_text(errors="replace") for p in run.rglob("*") if p.is_file()
               and p.suffix in (".json", ".jsonl", ".txt"))


def test_judge_llm_without_an_endpoint_is_one_line_and_exit_2(sft_path, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("NAVRL_API_BASE", raising=False)
    monkeypatch.delenv("NAVRL_API_MODEL", raising=False)
    rc = main(["train", "--preset", "quick-pointer", "--init", str(sft_path), "--out", str(tmp_path / "r"),
               "--judge", "llm"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "--judge llm" in err[0] and "NAVRL_API_BASE" in err[0]
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())   # nothing written


@pytest.mark.parametrize("argv, words", [
    (["--judge", "oracle", "--suite", "miniwob"], "phone-world suite"),
    (["--judge", "page"], "--judge page scores miniwob, web:PATH.yaml, not --suite train"),
    (["--devices", "browser"], "--devices browser runs miniwob, web:PATH.yaml, not --suite train"),
    (["--suite", "nowhere"], "unknown --suite"),
    (["--suite", "web:/no/such.yaml"], "no such file"),
    (["--tasks", "click-test"], "--tasks click-test: not a template of suite train"),
    (["--suite", "miniwob", "--phone", "nokia"], "--phone"),
    (["--devices", "android"], "--serials"),
    (["--faults", "device_lost=0.1", "--devices", "android", "--serials", "a"], "--faults"),
])
def test_impossible_part_combinations_are_refused_before_anything_runs(argv, words, sft_path, tmp_path, capsys):
    rc = main(["train", "--preset", "quick-pointer", "--init", str(sft_path), "--out", str(tmp_path / "r"), *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and words in err[0], err
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())   # nothing written
